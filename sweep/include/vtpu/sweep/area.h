#pragma once
// A first-order die-area estimate of a config, for sweeps that trade performance against
// silicon. Calibrated on the TPU v1 floor plan (Jouppi et al., ISCA 2017: a die under
// 331 mm^2 in 28 nm, unified buffer 29%, matrix unit 24%, accumulators 6%) and scaled by
// the square of the process node; docs/sweeps.md gives the formula and its limits.
#include "vtpu/config/config.h"

namespace vtpu::sweep {

struct AreaEstimate {
  double mxu_mm2 = 0;             // PEs of every MXU of every core
  double unified_buffer_mm2 = 0;  // SRAM
  double accumulators_mm2 = 0;    // SRAM
  double weight_fifo_mm2 = 0;     // SRAM, weight_fifo_tiles tiles per MXU
  double other_mm2 = 0;           // everything else, in TPU v1's proportion to the above
  double total_mm2 = 0;           // per chip
};

AreaEstimate estimate_area(const config::Config& cfg);

// On-chip buffer bytes per chip: unified buffer, accumulators and weight FIFOs of every core.
uint64_t onchip_bytes(const config::Config& cfg);

}  // namespace vtpu::sweep
