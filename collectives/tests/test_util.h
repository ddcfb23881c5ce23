#pragma once
// Helpers for the collectives' tests: small systems of tiny chips, and runs in a child
// process (SystemC allows one simulation per process).
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vtpu/collectives/collectives.h"
#include "vtpu/support/child_process.h"

namespace vtpu::collectives::testing {

// tiny-8x8 chips joined by slow links (2 GB/s = 2 bytes per cycle at 1 GHz, 100 ns latency,
// 10 ns router delay, 1 KiB packets), so that the chips' vector units and memories keep up
// with two links per dimension and large-message behaviour shows at a MiB.
inline config::Config small(std::vector<uint32_t> shape, bool wrap = true) {
  config::Config c = config::load_preset("tiny-8x8");
  uint32_t n = 1, links = 0;
  for (uint32_t d : shape) n *= d, links += d >= 3 ? 2 : d == 2 ? 1 : 0;
  c.name = fmt::format("tiny-8x8-{}", fmt::join(shape, "x"));
  c.system.chips = n;
  c.ici.shape = std::move(shape);
  c.ici.wraparound = wrap;
  c.ici.links = links;
  c.ici.link_bandwidth_gbytes_per_s = 2;
  c.ici.link_latency_ns = 100;
  c.ici.router_delay_ns = 10;
  c.ici.packet_bytes = 1024;
  c.memory.bandwidth_gbytes_per_s = 128;
  return c;
}

// What a run measured, as plain numbers the parent can read back.
struct Figures {
  double seconds = 0, beta = 0, alpha = 0, busbw = 0;
  uint64_t cycles = 0, simulated = 0;
  bool checked = false;
  char mismatch[256] = {};
  char error[512] = {};
};

inline Figures run_in_child(const config::Config& cfg, Spec s, RunOptions o = {}) {
  std::string got = vtpu::run_in_child(
      [&] {
        Figures f;
        Outcome out = run(cfg, s, o);
        f.seconds = out.seconds, f.beta = out.bound.beta_s, f.alpha = out.bound.alpha_s, f.busbw = out.bus_bandwidth;
        f.cycles = out.system.total_cycles, f.simulated = out.system.chips.size(), f.checked = out.checked;
        std::strncpy(f.mismatch, out.mismatch.c_str(), sizeof f.mismatch - 1);
        return std::string(reinterpret_cast<const char*>(&f), sizeof f);
      },
      [](const std::exception& e) {
        Figures f;
        std::strncpy(f.error, e.what(), sizeof f.error - 1);
        return std::string(reinterpret_cast<const char*>(&f), sizeof f);
      },
      "");
  Figures f;
  if (got.size() == sizeof f) std::memcpy(&f, got.data(), sizeof f);
  else std::strcpy(f.error, "the child crashed");
  return f;
}

// Bigger cases run when VTPU_MULTICHIP_FULL=1 (docs/collectives.md, "Tests").
inline bool full_suite() {
  const char* v = std::getenv("VTPU_MULTICHIP_FULL");
  return v && std::string(v) == "1";
}

}  // namespace vtpu::collectives::testing
