#pragma once
// Where the matrix unit's cycles go, in the categories of TPU v1's performance counters
// (Jouppi et al., ISCA 2017, Table 3), computed from a run's trace. docs/reports.md, "MXU
// cycle breakdown", defines every share.
#include <cstdint>

#include "vtpu/isa/program.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::sim {

struct MxuBreakdown {
  uint64_t cycles = 0;  // the run's total cycles
  // Shares of the cycles (per MXU, averaged over the MXUs); the first four add up to 1.
  double array_active = 0;  // a row enters the array
  double weight_stall = 0;  // idle, a matmul waits for its tile, which is not shifting yet
  double weight_shift = 0;  // idle, a matmul waits for its tile, which is shifting in
  double non_matrix = 0;    // idle otherwise
  // Shares of the cycles the sequencer stalls (they overlap the four above).
  double raw_stalls = 0;    // waiting on a flag of a matmul or a vector operation
  double input_stalls = 0;  // waiting on a flag of a DMA transfer
};

// The breakdown of a run simulated with SimOptions::record_trace. Throws InternalError
// when `run` has no trace.
MxuBreakdown mxu_breakdown(const RunResult& run, const isa::Program& program);

}  // namespace vtpu::sim
