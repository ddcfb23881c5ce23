// Epilogues, weights and requantization: bias rows, epilogue phases, RESCALE parameters, weight tiles (docs/compiler.md, "Code generation").
#include <mutex>

#include "codegen_internal.h"
#include "vtpu/support/clones.h"
#include "vtpu/support/parallel.h"

namespace vtpu::compiler::codegen {

// INT8: the symmetric per-tensor scale of an activation (real = q * scale).
float Codegen::scale(Value v) const {
  auto it = scales_.find(v.getAsOpaquePointer());
  if (it == scales_.end()) throw InternalError("no calibration scale for an activation");
  return it->second;
}

// A real multiplier as TOSA's (multiplier, shift): m * 2^-shift, m in [2^30, 2^31).
std::pair<int64_t, int64_t> Codegen::fixed_point(double M) {
  if (!(M > 0)) return {0, 31};
  int64_t shift = 30 - int64_t(std::floor(std::log2(M)));
  shift = std::clamp<int64_t>(shift, 2, 62);
  int64_t m = std::llround(std::ldexp(M, int(shift)));
  if (m >= (int64_t(1) << 31)) m >>= 1, shift -= 1;
  return {std::min<int64_t>(m, INT32_MAX), std::max<int64_t>(shift, 2)};
}

namespace {

// Rows [k0, k1) of a row-major [K, N] matrix: each column's largest magnitude so far, in mx.
VTPU_CLONES void column_maxima(const float* w, uint64_t N, uint64_t k0, uint64_t k1, float* mx) {
  for (uint64_t k = k0; k < k1; ++k)
    for (uint64_t n = 0; n < N; ++n) mx[n] = std::max(mx[n], std::fabs(w[k * N + n]));
}

// Rows [k0, k1) as INT8 codes of their column's scale s[n], in place: nearbyint(w / s) clamped
// to [-127, 127] (NaN stays NaN). GCC vectorizes nearbyint only without trapping math, which
// changes no value (only whether the inexact flag, which nothing reads, may be raised), and
// only with the clamp written as two selects: 4 (AVX2) divisions at a time, not one.
__attribute__((optimize("no-trapping-math"))) VTPU_CLONES void quantize_rows(float* w, uint64_t N, const double* s, uint64_t k0,
                                                                             uint64_t k1) {
  for (uint64_t k = k0; k < k1; ++k)
    for (uint64_t n = 0; n < N; ++n) {
      double q = std::nearbyint(double(w[k * N + n]) / s[n]);
      q = q < -127.0 ? -127.0 : q;
      q = 127.0 < q ? 127.0 : q;
      w[k * N + n] = float(q);
    }
}

}  // namespace

std::vector<double> Codegen::quantize(std::vector<float>& w, uint64_t K, uint64_t N, const std::vector<double>* absmax) {
  // Row by row (the matrix is row-major): each column's largest magnitude, then the codes; rows
  // split over threads (a deep layer has millions of weights), each thread's maxima joined after
  // (a maximum does not depend on the order; NaN is left out either way).
  std::vector<double> s(N);
  std::vector<float> mx(N, 0.0f);
  if (absmax) {
    for (uint64_t n = 0; n < N; ++n) mx[n] = float(absmax->at(n));
  } else {
    std::mutex joined;
    parallel_for(int64_t(K), double(N), [&](int64_t k0, int64_t k1) {
      std::vector<float> part(N, 0.0f);
      column_maxima(w.data(), N, uint64_t(k0), uint64_t(k1), part.data());
      std::lock_guard<std::mutex> lock(joined);
      for (uint64_t n = 0; n < N; ++n) mx[n] = std::max(mx[n], part[n]);
    });
  }
  for (uint64_t n = 0; n < N; ++n) s[n] = mx[n] > 0 ? double(mx[n]) / 127.0 : 1.0;
  parallel_for(int64_t(K), double(N), [&](int64_t k0, int64_t k1) { quantize_rows(w.data(), N, s.data(), uint64_t(k0), uint64_t(k1)); });
  return s;
}

// Weight tile (k block, n block) of a [K, N] matrix (bf16 values, or int8 integers),
// stored as its own HBM segment of kw rows x nw elements.
TileRef Codegen::weight_tile(const std::vector<float>& w, uint64_t K, uint64_t N, uint64_t kb, uint64_t nb) {
  uint64_t kw = std::min<uint64_t>(R_, K - kb * R_), nw = std::min<uint64_t>(C_, N - nb * C_);
  std::vector<uint8_t> bytes(kw * nw * esz_);
  for (uint64_t k = 0; k < kw; ++k)
    for (uint64_t n = 0; n < nw; ++n) {
      float v = w[(kb * R_ + k) * N + nb * C_ + n];
      if (q8_) {
        bytes[k * nw + n] = uint8_t(int8_t(v));
      } else {
        uint16_t h = bf16_of(v);
        std::memcpy(&bytes[(k * nw + n) * 2], &h, 2);
      }
    }
  uint64_t at = hbm_const(std::move(bytes));
  return {new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, dt_, kw, nw * esz_)), at};
}

uint64_t Codegen::bias_at(uint64_t bias_ub, uint64_t n_block) const { return bias_ub == kNoBias ? kNoBias : bias_ub + n_block * C_ * 4; }

// Bias of one n block as an fp32 row of C lanes in UB (loaded once per layer).
// bf16: fp32 biases; INT8: int32 biases in the accumulator's scale.
// A layer without bias (all zeros) has no bias rows and its epilogues skip the add.
uint64_t Codegen::bias_rows(const std::vector<float>& bias, const std::vector<double>& acc_scale) {
  if (std::all_of(bias.begin(), bias.end(), [](float b) { return b == 0.0f; })) return kNoBias;
  uint64_t nb = ceil_div(bias.size(), C_);
  std::vector<uint8_t> bytes(nb * C_ * 4, 0);
  for (size_t i = 0; i < bias.size(); ++i) {
    if (q8_) {
      int32_t q = int32_t(std::clamp<double>(std::nearbyint(bias[i] / acc_scale[i]), INT32_MIN, INT32_MAX));
      std::memcpy(&bytes[i * 4], &q, 4);
    } else {
      std::memcpy(&bytes[i * 4], &bias[i], 4);
    }
  }
  uint64_t at = ub_take(bytes.size(), "a layer's bias rows");
  load_constant(std::move(bytes), at);
  return at;
}

// The epilogue of an output block: acc (fp32) + bias, clamp, -> bf16 rows of `out` block.
// Accumulator rows [g, g + rows) plus the bias row at bias_ub (fp32, or int32 for INT8).
std::string Codegen::bias_phase(uint64_t g, uint64_t bias_ub, uint64_t rows) const { return bias_phase(acc_at(g), bias_ub, rows); }

std::string Codegen::bias_phase(const emit::Mem& sums, uint64_t bias_ub, uint64_t rows) const {
  std::string pre, bias = reg_ref(bias_ub, 8, pre);
  return pre + "  " + emit::vec_add(sums, sums, emit::ub({bias}), rows, q8_ ? isa::Dtype::Int32 : isa::Dtype::Fp32, true, kPendingFlag) +
         "\n";
}

// The epilogue of an output block as phases, one vector operation each (run_blocks
// spaces them out over the next steps): bf16: acc (fp32) + bias, clamp, -> bf16 rows;
// INT8: acc (int32) + bias, RESCALE per output channel -> int8 (clamp in its bounds).
// "{flag}" stands for the flag the scheduler gives the operation.
std::vector<std::string> Codegen::epilogue(uint32_t mxu, uint64_t acc_row, uint64_t rows, uint64_t bias_ub,
                                  const std::string& clamp_param, uint64_t out_ub) {
  return epilogue_of(acc_at(uint64_t(mxu) * cfg_.core.accumulators.rows + acc_row), rows, bias_ub, clamp_param, out_ub);
}

// The same phases on sums anywhere the vector unit reads: accumulator rows, or an all-reduced
// matmul's unified-buffer rows (tensor_parallel.cpp).
std::vector<std::string> Codegen::epilogue_of(const emit::Mem& sums, uint64_t rows, uint64_t bias_ub, const std::string& clamp_param,
                                              uint64_t out_ub) {
  std::vector<std::string> ph;
  std::string pre;
  if (q8_ && bias_ub != kNoBias) {  // the bias add and the RESCALE in one pass (vec.addrescale)
    std::string bias = reg_ref(bias_ub, 8, pre), out = reg_ref(out_ub, 9, pre);
    ph.push_back(pre + "  " +
                 emit::vec_addrescale(emit::ub({out}), sums, emit::ub({bias}), rows, {clamp_param}, std::nullopt,
                                      int_out_ ? std::optional(isa::Dtype::Int32) : std::nullopt, true, kPendingFlag) +
                 "\n");
    return ph;
  }
  if (bias_ub != kNoBias) ph.push_back(bias_phase(sums, bias_ub, rows));
  if (q8_) {
    pre.clear();
    std::string out = reg_ref(out_ub, 9, pre);
    ph.push_back(pre + "  " +
                 emit::vec_rescale(emit::ub({out}), sums, rows, {clamp_param}, std::nullopt,
                                   int_out_ ? std::optional(isa::Dtype::Int32) : std::nullopt, kPendingFlag) +
                 "\n");
    return ph;
  }
  if (!clamp_param.empty())
    ph.push_back("  " + emit::vec_clamp(sums, sums, rows, isa::Dtype::Fp32, {clamp_param}, kPendingFlag) + "\n");
  pre.clear();
  std::string out = reg_ref(out_ub, 9, pre);
  ph.push_back(pre + "  " +
               emit::vec_cvt(emit::ub({out}), sums, rows, isa::Dtype::Fp32, int_out_ ? isa::Dtype::Int32 : isa::Dtype::Bf16,
                             kPendingFlag) +
               "\n");
  return ph;
}

// Per output block: the vparam the epilogue uses. bf16: the clamp; INT8: per-lane RESCALE
// from the accumulator scale (input scale x weight scale) to the output scale, with the
// clamp as its integer bounds.
std::vector<std::string> Codegen::epilogue_params(uint64_t N, const std::vector<double>& acc_scale, double out_scale, double lo,
                                         double hi) {
  uint64_t nt = ceil_div(N, C_);
  if (!q8_) return std::vector<std::string>(nt, clamp_param(lo, hi));
  std::vector<std::string> out;
  for (uint64_t nb = 0; nb < nt; ++nb) {
    std::vector<int64_t> mult, shift;
    for (uint64_t c = 0; c < C_; ++c) {
      uint64_t ch = nb * C_ + c;
      auto [m, sh] = ch < N ? fixed_point(acc_scale[ch] / out_scale) : std::pair<int64_t, int64_t>{0, 31};
      mult.push_back(m), shift.push_back(sh);
    }
    std::string body = fmt::format("mult=[{}] shift=[{}]", fmt::join(mult, ", "), fmt::join(shift, ", "));
    if (!std::isinf(lo)) body += fmt::format(" min={}", std::max(-128.0, std::ceil(lo / out_scale)));
    if (!std::isinf(hi)) body += fmt::format(" max={}", std::min(127.0, std::floor(hi / out_scale)));
    out.push_back(new_param(body));
  }
  return out;
}

std::string Codegen::clamp_param(double lo, double hi) {
  if (std::isinf(lo) && std::isinf(hi)) return {};
  std::string body;
  if (!std::isinf(lo)) body += fmt::format(" min={}", lo);
  if (!std::isinf(hi)) body += fmt::format(" max={}", hi);
  return new_param(body);
}

// The lane constants of lane block `blk` of a per-channel affine step.
std::string Codegen::affine_param(const std::vector<float>& sc, const std::vector<float>& bi, uint64_t blk, double sx, double sy) {
  std::vector<double> s2, b2;
  for (uint64_t c = 0; c < C_; ++c) {
    uint64_t ch = blk * C_ + c;
    s2.push_back(ch < sc.size() ? sc[ch] * sx / sy : 0.0);
    b2.push_back(ch < bi.size() ? bi[ch] / sy : 0.0);
  }
  return new_param(fmt::format("scale=[{}] bias=[{}]", fmt::join(s2, ", "), fmt::join(b2, ", ")));
}

}  // namespace vtpu::compiler::codegen
