#pragma once
// Collectives as programs run on the simulator: the plans and programs of plan.h, the inputs
// a run gives every chip, and the outputs checked against what the collective means.
#include <cstdint>
#include <string>
#include <vector>

#include "vtpu/collectives/plan.h"
#include "vtpu/sim/system.h"

namespace vtpu::collectives {

// The inputs a run gives chip `chip` (small integers, so that sums in any order are exact)
// and the output the collective must produce from them on chip `chip`.
std::vector<uint8_t> input_of(const Plan& p, uint32_t chip, uint64_t seed);
std::vector<uint8_t> expected_output(const Plan& p, uint32_t chip, uint64_t seed);

struct RunOptions {
  bool symmetric = false;     // estimate by symmetry: chip 0 alone (cycles, no outputs)
  bool data = true;           // inputs and outputs; off: time on zeros without reading results
  uint64_t seed = 1;
  bool record_trace = false;
};
struct Outcome {
  Plan plan;
  Bound bound;
  sim::SystemResult system;
  double seconds = 0;               // simulated time of the collective
  double algorithm_bandwidth = 0;   // bytes / s
  double bus_bandwidth = 0;         // bytes / s
  std::string mismatch;             // first wrong output (empty: all right, or not checked)
  bool checked = false;
};
// Plans, emits and simulates the collective; with data, checks every chip's output against
// expected_output. SystemC allows one simulation per process.
Outcome run(const config::Config& cfg, const Spec& spec, const RunOptions& o = {});

// The figures of run(), from a forked child process, so that one process can simulate many
// times (benchmarks, tests). `error` holds what the child threw.
struct Summary {
  double seconds = 0, beta_s = 0, alpha_s = 0, bus_bandwidth = 0;
  uint64_t cycles = 0, simulated_chips = 0;
  bool checked = false;
  double cpu_s = 0, peak_rss_mib = 0;  // of the child
  std::string mismatch, error;
};
Summary run_isolated(const config::Config& cfg, const Spec& spec, const RunOptions& o = {});

}  // namespace vtpu::collectives
