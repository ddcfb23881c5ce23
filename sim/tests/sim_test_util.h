#pragma once
// Helpers for simulator tests. SystemC allows one simulation per process, so each run
// happens in a forked child that sends back what the test needs.
#include <gtest/gtest.h>
#include "vtpu/support/child_process.h"

#include <functional>
#include <string>

#include "vtpu/config/config.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::sim::testing {

// Runs fn in a child process and returns what it wrote; "EXCEPTION: msg" if it threw.
inline std::string in_child(const std::function<std::string()>& fn) {
  return run_in_child(
      fn,
      [](const std::exception& e) {
        return std::string(dynamic_cast<const SimError*>(&e) ? "SIMERROR: " : "EXCEPTION: ") + e.what();
      },
      "EXCEPTION: child crashed");
}

// Runs an assembly program on a config; the callback turns the result into text.
inline std::string run_asm(const config::Config& cfg, const std::string& text,
                           const std::function<std::string(const RunResult&)>& report,
                           std::map<std::string, std::vector<uint8_t>> inputs = {}, SimOptions opt = {}) {
  return in_child([&] {
    isa::Program p = isa::assemble(text, "test.s");
    fill_missing_inputs(p, 1, inputs);
    return report(simulate(cfg, p, inputs, opt));
  });
}

inline std::string run_asm(const std::string& preset, const std::string& text,
                           const std::function<std::string(const RunResult&)>& report,
                           std::map<std::string, std::vector<uint8_t>> inputs = {}, SimOptions opt = {}) {
  return run_asm(config::load_preset(preset), text, report, std::move(inputs), opt);
}

// docs/microarch.md, "Unified buffer: banks and ports", written out again for the tests:
// cycles of one group of accesses given as (address, bytes) ranges.
inline uint64_t expected_bank_cycles(const config::Config& cfg, const std::vector<std::pair<uint64_t, uint64_t>>& reads,
                                     const std::vector<std::pair<uint64_t, uint64_t>>& writes) {
  const auto& u = cfg.core.unified_buffer;
  uint64_t worst = 0;
  for (int w = 0; w < 2; ++w) {
    std::map<uint64_t, uint64_t> per_bank;
    for (auto [a, n] : w ? writes : reads)
      for (uint64_t block = a / u.row_bytes; block * u.row_bytes < a + n; ++block) per_bank[block % u.banks]++;
    uint64_t ports = w ? u.write_ports : u.read_ports;
    for (auto [bank, hits] : per_bank) worst = std::max(worst, (hits + ports - 1) / ports);
  }
  return worst;
}
}  // namespace vtpu::sim::testing
