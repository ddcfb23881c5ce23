// conv.cpp's MAC loop on processors with AVX-512: the same sums in the same order, with the
// accumulators in registers. The portable loop keeps its sums in memory (a load and a store
// per multiply-add, a deep layer's output channels do not fit in registers) and skips zero
// inputs (most of a ReLU's output). Here a block of output channels of four pixels stays in
// 16 registers of eight doubles for all of a pixel's taps, and a zero input's multiply-add is
// masked off rather than skipped: the accumulator keeps its value bit for bit, as when the
// portable loop skips it (0 x inf is not added either, nor is the sign of a zero sum changed).
#include <algorithm>

#include "reference/interpreter.h"

namespace vtpu::compiler::reference {

namespace {
bool simd_allowed = true;
}  // namespace

void allow_avx512_kernels(bool allowed) { simd_allowed = allowed; }

#if defined(__x86_64__) && defined(__GNUC__)
}  // namespace vtpu::compiler::reference

#include <immintrin.h>

namespace vtpu::compiler::reference {
namespace {

constexpr int kBlock = 8;  // doubles in a register; a block of channels is four registers

#define VTPU_AVX512 __attribute__((target("avx512f,avx512vl")))

// Eight floats as doubles (the lanes `m` leaves out: zero; without a mask when all are there,
// masked loads being slower).
template <bool kFull>
VTPU_AVX512 inline __m512d widen(__mmask8 m, const float* f) {
  // maskz forms throughout: GCC 12's plain forms start from an "undefined" register it then
  // warns about.
  return _mm512_maskz_cvtps_pd(0xFF, kFull ? _mm256_loadu_ps(f) : _mm256_maskz_loadu_ps(m, f));
}

// The lanes `m` of clampf(v, lo, hi) to out: (v < lo ? lo : v), then (hi < that ? hi : that),
// rounded to float (NaN stays NaN).
VTPU_AVX512 inline void clamp_store(__m512d v, __m512d lo, __m512d hi, __mmask8 m, float* out) {
  v = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(v, lo, _CMP_LT_OQ), v, lo);
  v = _mm512_mask_blend_pd(_mm512_cmp_pd_mask(hi, v, _CMP_LT_OQ), v, hi);
  _mm256_mask_storeu_ps(out, m, _mm512_maskz_cvtpd_ps(0xFF, v));
}

// Output channels [co, co + 32) of kConvPixels pixels: `rows` holds each tap's input row of
// each pixel (CI floats; outside the image: zeros), wt[t] tap t's weights (CI rows of CO
// floats). lanes[j] masks the channels of register j that exist (CO not a multiple of 32).
// Writes clampf(sum) of the first P pixels to out (pixel p's channels at out + p * CO). The 16
// accumulators are named, not an array: GCC kept an array's copy in memory up to date.
template <bool kFull>
VTPU_AVX512 void block(const float* const* rows, const float* const* wt, int64_t taps, int64_t CI, int64_t CO, int64_t co,
                       const __mmask8 lanes[4], const float* bias, double lo, double hi, int64_t P, float* out) {
  const __mmask8 m0 = lanes[0], m1 = lanes[1], m2 = lanes[2], m3 = lanes[3];
  bias += co;
  const __m512d b0 = widen<kFull>(m0, bias), b1 = widen<kFull>(m1, bias + kBlock), b2 = widen<kFull>(m2, bias + 2 * kBlock),
                b3 = widen<kFull>(m3, bias + 3 * kBlock);
#define VTPU_PIXEL(p) __m512d a##p##0 = b0, a##p##1 = b1, a##p##2 = b2, a##p##3 = b3;
  VTPU_PIXEL(0) VTPU_PIXEL(1) VTPU_PIXEL(2) VTPU_PIXEL(3)
#undef VTPU_PIXEL
  const __m512d zero = _mm512_setzero_pd();
  for (int64_t t = 0; t < taps; ++t) {
    const float* const* xr = rows + t * kConvPixels;
    const float *x0 = xr[0], *x1 = xr[1], *x2 = xr[2], *x3 = xr[3];
    const float* w = wt[t] + co;
    for (int64_t i = 0; i < CI; ++i) {
      const float* wr = w + i * CO;
      __m512d w0 = widen<kFull>(m0, wr), w1 = widen<kFull>(m1, wr + kBlock), w2 = widen<kFull>(m2, wr + 2 * kBlock),
              w3 = widen<kFull>(m3, wr + 3 * kBlock);
      // A zero input's multiply-add masked off (NaN is added, as in conv.cpp).
#define VTPU_PIXEL(p)                                                           \
  {                                                                             \
    __m512d xv = _mm512_set1_pd(double(x##p[i]));                               \
    __mmask8 nz = _mm512_cmp_pd_mask(xv, zero, _CMP_NEQ_UQ);                    \
    a##p##0 = _mm512_mask3_fmadd_pd(xv, w0, a##p##0, nz);                       \
    a##p##1 = _mm512_mask3_fmadd_pd(xv, w1, a##p##1, nz);                       \
    a##p##2 = _mm512_mask3_fmadd_pd(xv, w2, a##p##2, nz);                       \
    a##p##3 = _mm512_mask3_fmadd_pd(xv, w3, a##p##3, nz);                       \
  }
      VTPU_PIXEL(0) VTPU_PIXEL(1) VTPU_PIXEL(2) VTPU_PIXEL(3)
#undef VTPU_PIXEL
    }
  }
  const __m512d vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
  out += co;
#define VTPU_PIXEL(p)                                              \
  if (p < P) {                                                     \
    clamp_store(a##p##0, vlo, vhi, m0, out + p * CO);              \
    clamp_store(a##p##1, vlo, vhi, m1, out + p * CO + kBlock);     \
    clamp_store(a##p##2, vlo, vhi, m2, out + p * CO + 2 * kBlock); \
    clamp_store(a##p##3, vlo, vhi, m3, out + p * CO + 3 * kBlock); \
  }
  VTPU_PIXEL(0) VTPU_PIXEL(1) VTPU_PIXEL(2) VTPU_PIXEL(3)
#undef VTPU_PIXEL
}

}  // namespace

bool avx512_kernels() {
  static const bool have = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  return have && simd_allowed;
}

void conv_rows_avx512(const RefTensor& x, const float* w, const std::vector<float>& b, int64_t KH, int64_t KW,
                      llvm::ArrayRef<int64_t> st, llvm::ArrayRef<int64_t> pad, llvm::ArrayRef<int64_t> dil, double lo,
                      double hi, int64_t row0, int64_t row1, RefTensor& y) {
  int64_t H = x.shape[1], W = x.shape[2], CI = x.shape[3];
  int64_t OH = y.shape[1], OW = y.shape[2], CO = y.shape[3];
  std::vector<float> zeros(size_t(CI), 0.0f);
  std::vector<const float*> rows, wt;
  // A block of output channels for all of these rows' pixels in turn: its weights (taps x CI
  // x 32 floats, 590 KB for 3 x 3 x 512) are read from memory once and then from the cache.
  for (int64_t co = 0; co < CO; co += 4 * kBlock) {
    __mmask8 lanes[4];
    for (int j = 0; j < 4; ++j) {
      int64_t n = std::clamp<int64_t>(CO - co - kBlock * j, 0, kBlock);
      lanes[j] = __mmask8((1u << n) - 1u);
    }
    for (int64_t row = row0; row < row1; ++row)
      for (int64_t nn = row / OH, oy = row % OH, ox0 = 0; ox0 < OW; ox0 += kConvPixels) {
        int64_t P = std::min(kConvPixels, OW - ox0);
        // The taps inside the image's rows, in conv.cpp's order; each pixel's input row or zeros.
        rows.clear();
        wt.clear();
        for (int64_t ky = 0; ky < KH; ++ky)
          for (int64_t kx = 0; kx < KW; ++kx) {
            int64_t iy = oy * st[0] + ky * dil[0] - pad[0];
            if (iy < 0 || iy >= H) continue;
            for (int64_t p = 0; p < kConvPixels; ++p) {
              int64_t ix = (ox0 + p) * st[1] + kx * dil[1] - pad[2];
              bool inside = p < P && ix >= 0 && ix < W;
              rows.push_back(inside ? x.data.data() + ((nn * H + iy) * W + ix) * CI : zeros.data());
            }
            wt.push_back(w + (ky * KW + kx) * CI * CO);
          }
        auto taps = int64_t(wt.size());
        float* out = y.data.data() + ((nn * OH + oy) * OW + ox0) * CO;
        if (co + 4 * kBlock <= CO) block<true>(rows.data(), wt.data(), taps, CI, CO, co, lanes, b.data(), lo, hi, P, out);
        else block<false>(rows.data(), wt.data(), taps, CI, CO, co, lanes, b.data(), lo, hi, P, out);
      }
  }
}

#else
bool avx512_kernels() { return false; }

void conv_rows_avx512(const RefTensor&, const float*, const std::vector<float>&, int64_t, int64_t, llvm::ArrayRef<int64_t>,
                      llvm::ArrayRef<int64_t>, llvm::ArrayRef<int64_t>, double, double, int64_t, int64_t, RefTensor&) {
  throw InternalError("reference: no AVX-512 on this processor");
}
#endif

}  // namespace vtpu::compiler::reference
