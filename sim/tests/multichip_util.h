#pragma once
// Helpers for multi-chip tests: small systems built from a tiny chip, assembly per chip,
// each run in its own child process (SystemC allows one simulation per process).
#include <fmt/format.h>

#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sim_test_util.h"
#include "vtpu/config/topology.h"
#include "vtpu/sim/system.h"

namespace vtpu::sim::testing {

// tiny-8x8 chips (16-byte unified-buffer rows, 1 GHz) in a torus or mesh of `shape`, with
// round link figures: 8 GB/s = 8 bytes per cycle, 100 ns latency, 10 ns router delay,
// 256-byte packets.
inline config::Config small_system(std::vector<uint32_t> shape, bool wrap = true) {
  config::Config c = config::load_preset("tiny-8x8");
  uint32_t n = 1;
  for (uint32_t d : shape) n *= d;
  const uint32_t links = config::links_needed(shape);
  c.name = "mc-test";
  c.system.chips = n;
  c.ici.shape = std::move(shape);
  c.ici.wraparound = wrap;
  c.ici.links = links;
  c.ici.link_bandwidth_gbytes_per_s = 8;
  c.ici.link_latency_ns = 100;
  c.ici.router_delay_ns = 10;
  c.ici.packet_bytes = 256;
  c.ici.buffer_packets = 32;
  c.ici.max_in_flight = 8;
  return c;
}

// Runs one assembly program per chip; `report` turns the result into text for the parent.
inline std::string run_system(const config::Config& cfg, const std::vector<std::string>& programs,
                              const std::function<std::string(const SystemResult&)>& report,
                              SystemOptions opt = {}) {
  return in_child([&] {
    std::vector<ChipRun> runs;
    for (size_t i = 0; i < programs.size(); ++i) {
      ChipRun r;
      r.program = isa::assemble(programs[i], fmt::format("chip{}.s", i));
      fill_missing_inputs(r.program, 1 + i, r.inputs);
      runs.push_back(std::move(r));
    }
    return report(simulate_system(cfg, runs, opt));
  });
}

// "key=value" lines, as the children print them.
inline std::map<std::string, uint64_t> parse_values(const std::string& s) {
  std::map<std::string, uint64_t> m;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos && line.find("ERROR") == std::string::npos && line.find("EXCEPTION") == std::string::npos)
      m[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
  }
  return m;
}

inline const LinkStats& link_between(const SystemResult& r, uint32_t from, uint32_t to) {
  for (const LinkStats& l : r.links)
    if (l.from == from && l.to == to) return l;
  throw InternalError(fmt::format("no link {} -> {}", from, to));
}

inline uint64_t stall(const SystemResult& r, size_t chip, StallReason why) {
  return r.chips[chip].stats.total.stall[size_t(why)];
}

}  // namespace vtpu::sim::testing
