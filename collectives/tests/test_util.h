#pragma once
// Helpers for the collectives' tests: small systems of tiny chips, and runs in a child
// process (SystemC allows one simulation per process).
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "vtpu/collectives/collectives.h"
#include "vtpu/config/topology.h"
#include <gtest/gtest.h>

namespace vtpu::collectives::testing {

// tiny-8x8 chips joined by slow links (2 GB/s = 2 bytes per cycle at 1 GHz, 100 ns latency,
// 10 ns router delay, 1 KiB packets), so that the chips' vector units and memories keep up
// with two links per dimension and large-message behaviour shows at a MiB. All 63 sync flags,
// as the TPU v4 presets: a 3-D torus all-reduce names 43 (docs/collectives.md, "Flags").
inline config::Config small(std::vector<uint32_t> shape, bool wrap = true) {
  config::Config c = config::load_preset("tiny-8x8");
  uint32_t n = 1;
  for (uint32_t d : shape) n *= d;
  const uint32_t links = config::links_needed(shape);
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
  c.core.scalar.sync_flags = 63;
  return c;
}

// One collective case of a parameterized test.
struct Case {
  const char* name;
  std::vector<uint32_t> shape;
  bool wrap;
  Kind kind;
  isa::Dtype dtype;
  uint64_t bytes;
};

inline std::string case_name(const ::testing::TestParamInfo<Case>& i) { return i.param.name; }

// Bigger cases run when VTPU_MULTICHIP_FULL=1 (docs/collectives.md, "Tests").
inline bool full_suite() {
  const char* v = std::getenv("VTPU_MULTICHIP_FULL");
  return v && std::string(v) == "1";
}

}  // namespace vtpu::collectives::testing
