// The area model of docs/sweeps.md ("Area estimate").
#include "vtpu/sweep/area.h"

#include <algorithm>

namespace vtpu::sweep {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// TPU v1 (Jouppi et al., ISCA 2017, floor plan): die < 331 mm^2 in 28 nm.
constexpr double kDie = 331.0, kNode = 28.0;
constexpr double kPeInt8 = 0.24 * kDie / 65536.0;                  // matrix unit 24%, 256 x 256 PEs
constexpr double kUbPerMiB = 0.29 * kDie / 24.0;                   // unified buffer 29%, 24 MiB
constexpr double kAccPerMiB = 0.06 * kDie / 4.0;                   // accumulators 6%, 4 MiB
// The rest of the die (41%: I/O, DRAM and host interfaces, activation pipeline, control, and
// TPU v1's 256 KiB weight FIFO, which the floor plan does not show apart) is taken to grow
// with the datapath it serves: this share of the matrix unit and SRAM.
constexpr double kOtherPerDatapath = 0.41 / 0.59;
// A PE that also multiplies bf16 (fp32 accumulate) against an int8-only one: yosys cell
// counts of rtl/src/vtpu_pe.sv, docs/area.md (3332 / 799).
constexpr double kBf16PeFactor = 3332.0 / 799.0;

uint64_t widest_element(const config::Config& cfg) {
  uint32_t w = 1;
  for (config::DType t : cfg.core.mxu.dtypes) w = std::max(w, config::dtype_bytes(t));
  return w;
}

uint64_t weight_fifo_bytes_per_mxu(const config::Config& cfg) {
  const auto& m = cfg.core.mxu;
  return uint64_t(m.weight_fifo_tiles) * m.rows * m.cols * widest_element(cfg);
}

}  // namespace

uint64_t onchip_bytes(const config::Config& cfg) {
  uint64_t per_core = cfg.core.unified_buffer.bytes +
                      uint64_t(cfg.core.mxu.count) * (config::accumulator_bytes(cfg) + weight_fifo_bytes_per_mxu(cfg));
  return per_core * cfg.system.cores_per_chip;
}

AreaEstimate estimate_area(const config::Config& cfg) {
  const auto& m = cfg.core.mxu;
  bool bf16 = std::find(m.dtypes.begin(), m.dtypes.end(), config::DType::kBf16) != m.dtypes.end();
  double node = (cfg.energy.node_nm / kNode) * (cfg.energy.node_nm / kNode);
  double cores = cfg.system.cores_per_chip, mxus = double(m.count) * cores;
  AreaEstimate a;
  a.mxu_mm2 = node * mxus * double(m.rows) * m.cols * kPeInt8 * (bf16 ? kBf16PeFactor : 1.0);
  a.unified_buffer_mm2 = node * cores * double(cfg.core.unified_buffer.bytes) / kMiB * kUbPerMiB;
  a.accumulators_mm2 = node * mxus * double(config::accumulator_bytes(cfg)) / kMiB * kAccPerMiB;
  a.weight_fifo_mm2 = node * mxus * double(weight_fifo_bytes_per_mxu(cfg)) / kMiB * kUbPerMiB;
  a.other_mm2 = kOtherPerDatapath * (a.mxu_mm2 + a.unified_buffer_mm2 + a.accumulators_mm2 + a.weight_fifo_mm2);
  a.total_mm2 = a.mxu_mm2 + a.unified_buffer_mm2 + a.accumulators_mm2 + a.weight_fifo_mm2 + a.other_mm2;
  return a;
}

}  // namespace vtpu::sweep
