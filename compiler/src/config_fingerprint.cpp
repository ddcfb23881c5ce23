// compiler::config_fingerprint: the config as code generation sees it. Keep the list equal
// to what compiler/src reads from the config; compiler/tests/test_config_fingerprint.cpp
// perturbs every schema key and fails when a key left out here changes a program.
#include <cstring>

#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

uint64_t config_fingerprint(const config::Config& cfg) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64
  auto mix = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 0x100000001b3ull;
  };
  auto u = [&](uint64_t v) { mix(&v, sizeof v); };
  auto d = [&](double v) { mix(&v, sizeof v); };
  const auto& mxu = cfg.core.mxu;
  u(mxu.count), u(mxu.rows), u(mxu.cols), u(mxu.input_latency_cycles), u(mxu.output_latency_cycles);
  u(mxu.weight_shift_cycles);
  u(mxu.dtypes.size());
  for (config::DType t : mxu.dtypes) u(uint64_t(t));
  const auto& ub = cfg.core.unified_buffer;
  u(ub.bytes), u(ub.banks), u(ub.row_bytes), u(ub.alignment_bytes);
  u(cfg.core.accumulators.rows);
  const auto& vec = cfg.core.vector;
  const auto& lat = vec.latency_cycles;  // every class: the epilogue schedule reads each op's
  u(vec.lanes), u(vec.sublanes), u(lat.alu), u(lat.multiply), u(lat.transcendental), u(lat.reduce), u(lat.rescale);
  u(lat.convert), u(lat.pool);
  u(cfg.memory.bytes);
  // The schedule's estimate and the layer bounds read bandwidth and clock only as bytes per
  // cycle, in these two spellings (codegen.cpp).
  d(cfg.memory.bandwidth_gbytes_per_s * 1e3 / cfg.clock_mhz);
  d(cfg.memory.bandwidth_gbytes_per_s * 1e9 / (cfg.clock_mhz * 1e6));
  return h;
}

}  // namespace vtpu::compiler
