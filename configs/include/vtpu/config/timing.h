#pragma once
// The chip's timing rules derived from a Config, written once: the simulator models them
// (sim/src/machine.cpp) and the compiler's scheduler estimates with them
// (compiler/codegen/scheduler.cpp). docs/microarch.md states them.
#include <cstdint>

#include "vtpu/config/config.h"
#include "vtpu/isa/isa.h"

namespace vtpu::config {

// Cycles from a matmul's issue to its last result row in the accumulators, beyond its B
// input rows' stream: in + R + C - 2 + out (input latency, the array's fill through R rows
// and drain through C columns, output latency).
uint64_t mxu_fill_drain_cycles(const Config& c);

// Cycles after a matmul that swaps in new weights issues until the next tile's weights are
// in the shadow registers: the shadow frees when the first row enters (input latency),
// then the shift takes core.mxu.weight_shift_cycles.
uint64_t mxu_swap_to_next_weights_cycles(const Config& c);

// A vector operation's latency by its class (core.vector.latency_cycles): issue to its
// last row written.
uint32_t vector_latency(const Config& c, isa::OpClass op_class);

// The vector unit's issue stage takes `sublanes` rows per step, a row of mxu.cols lanes in
// ceil(cols / lanes) passes: an operation over `rows` rows takes vector_steps steps of
// vector_lane_passes cycles, banks aside (the simulator adds bank conflicts per step).
uint64_t vector_lane_passes(const Config& c);
uint64_t vector_steps(const Config& c, uint64_t rows);
uint64_t vector_issue_cycles(const Config& c, uint64_t rows);  // steps x lane passes

// HBM bytes per cycle at the memory's full bandwidth (memory.bandwidth_gbytes_per_s at
// clock_mhz, all channels together).
double hbm_bytes_per_cycle(const Config& c);

// Bundles in one instruction window (docs/microarch.md, "Instruction memory"):
// core.scalar.imem_bundles, or half of it (rounded down) with core.scalar.imem_prefetch,
// whose memory holds the running window and the next one.
uint64_t imem_window_bundles(const Config& c);

// Cycles a window takes to come from memory: its bytes at the memory's full bandwidth plus
// one access latency. 0 when a program of `program_bundles` bundles fits the instruction
// memory whole (it is loaded before the start). The simulator and the RTL core's harness
// both take it from here.
uint64_t imem_fetch_cycles(const Config& c, uint64_t program_bundles);

}  // namespace vtpu::config
