// Timing rules derived from a Config (vtpu/config/timing.h).
#include "vtpu/config/timing.h"

#include <algorithm>
#include <cmath>

namespace vtpu::config {
namespace {
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
}  // namespace

uint64_t mxu_fill_drain_cycles(const Config& c) {
  const auto& m = c.core.mxu;
  return uint64_t(m.input_latency_cycles) + m.rows + m.cols - 2 + m.output_latency_cycles;
}

uint64_t mxu_swap_to_next_weights_cycles(const Config& c) {
  return uint64_t(c.core.mxu.input_latency_cycles) + c.core.mxu.weight_shift_cycles;
}

uint32_t vector_latency(const Config& c, isa::OpClass op_class) {
  const auto& l = c.core.vector.latency_cycles;
  switch (op_class) {
    case isa::OpClass::VecMul: return l.multiply;
    case isa::OpClass::VecTranscendental: return l.transcendental;
    case isa::OpClass::VecReduce: return l.reduce;
    case isa::OpClass::VecRescale: return l.rescale;
    case isa::OpClass::VecConvert: return l.convert;
    case isa::OpClass::VecPool: return l.pool;
    case isa::OpClass::VecAlu: case isa::OpClass::VecMove: return l.alu;
    default: return 0;  // not a vector operation
  }
}

uint64_t vector_lane_passes(const Config& c) { return ceil_div(c.core.mxu.cols, std::max<uint32_t>(1, c.core.vector.lanes)); }

uint64_t vector_steps(const Config& c, uint64_t rows) { return ceil_div(rows, std::max<uint32_t>(1, c.core.vector.sublanes)); }

uint64_t vector_issue_cycles(const Config& c, uint64_t rows) { return vector_steps(c, rows) * vector_lane_passes(c); }

double hbm_bytes_per_cycle(const Config& c) { return c.memory.bandwidth_gbytes_per_s * 1e3 / c.clock_mhz; }

uint64_t imem_window_bundles(const Config& c) {
  const uint64_t all = c.core.scalar.imem_bundles;
  return c.core.scalar.imem_prefetch ? std::max<uint64_t>(1, all / 2) : all;
}

uint64_t imem_fetch_cycles(const Config& c, uint64_t program_bundles) {
  if (program_bundles <= c.core.scalar.imem_bundles) return 0;
  return uint64_t(std::ceil(double(imem_window_bundles(c)) * isa::kBundleBytes / hbm_bytes_per_cycle(c))) +
         uint64_t(std::ceil(c.memory.access_latency_ns * c.clock_mhz / 1e3));
}

}  // namespace vtpu::config
