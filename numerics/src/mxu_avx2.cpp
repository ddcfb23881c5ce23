// AVX2 MXU tile kernels, compiled with function target attributes.
//
// bf16: as the AVX-512 kernel with 8 lanes: widen once, then one vmulps and one vaddps per
// MAC in k order under MXCSR (RNE, FTZ, DAZ); NaNs canonicalized on store.
// int8: operands widened to int16 pairs; vpmaddwd adds two exact products per lane into
// int32 (it cannot saturate for int8 inputs), then vpaddd wraps modulo 2^32.
#include "mxu_internal.h"

#ifdef VTPU_NUMERICS_HAVE_SIMD
#include <immintrin.h>

#include <cstring>

#include "vtpu/numerics/float.h"

#define VTPU_AVX2 __attribute__((target("avx2")))

namespace vtpu::numerics::detail {
namespace {

constexpr size_t kLanes = 8;

VTPU_AVX2 inline __m256i lane_mask(size_t n_left) {
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const int n = static_cast<int>(n_left >= kLanes ? kLanes : n_left);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}

// ---------------------------------------------------------------- bf16

template <int MR, int NR>
VTPU_AVX2 void bf16_block(const float* ap, size_t K, const float* wp, size_t panel_stride,
                          float* acc, size_t ldacc, size_t n_left, bool accumulate) {
  __m256 p[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) p[i][j] = _mm256_setzero_ps();
  for (size_t k = 0; k < K; ++k) {
    __m256 wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) wv[j] = _mm256_load_ps(wp + j * panel_stride + k * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_broadcast_ss(ap + i * K + k);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) p[i][j] = _mm256_add_ps(p[i][j], _mm256_mul_ps(av, wv[j]));
    }
  }
  const __m256 qnan = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(kF32QNaN)));
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m256i m = lane_mask(n_left - j * kLanes);
      float* out = acc + i * ldacc + j * kLanes;
      __m256 r = p[i][j];
      if (accumulate) r = _mm256_add_ps(_mm256_maskload_ps(out, m), r);
      r = _mm256_blendv_ps(r, qnan, _mm256_cmp_ps(r, r, _CMP_UNORD_Q));
      _mm256_maskstore_ps(out, m, r);
    }
}

template <int MR>
VTPU_AVX2 void bf16_row_block(int nr, const float* ap, size_t K, const float* wp,
                              size_t panel_stride, float* acc, size_t ldacc, size_t n_left,
                              bool accumulate) {
  if (nr == 2) return bf16_block<MR, 2>(ap, K, wp, panel_stride, acc, ldacc, n_left, accumulate);
  return bf16_block<MR, 1>(ap, K, wp, panel_stride, acc, ldacc, n_left, accumulate);
}

[[gnu::noinline]] VTPU_AVX2 void bf16_body(const uint16_t* a, size_t lda, const uint16_t* w,
                                           size_t ldw, float* acc, size_t ldacc, size_t B,
                                           size_t K, size_t N, bool accumulate) {
  constexpr int MR = 4, NR = 2;
  const size_t nblocks = (N + kLanes - 1) / kLanes;
  const size_t panel_stride = K * kLanes;
  auto* wp = static_cast<uint32_t*>(scratch(0, nblocks * panel_stride * sizeof(float) + 64));
  for (size_t nb = 0; nb < nblocks; ++nb)
    for (size_t k = 0; k < K; ++k)
      for (size_t l = 0; l < kLanes; ++l) {
        const size_t n = nb * kLanes + l;
        wp[nb * panel_stride + k * kLanes + l] = n < N ? bf16_to_f32_bits(w[k * ldw + n]) : 0u;
      }
  auto* ap = static_cast<uint32_t*>(scratch(1, MR * K * sizeof(float) + 64));
  for (size_t b0 = 0; b0 < B; b0 += MR) {
    const int mr = static_cast<int>(B - b0 < MR ? B - b0 : MR);
    for (int i = 0; i < mr; ++i)
      for (size_t k = 0; k < K; ++k) ap[i * K + k] = bf16_to_f32_bits(a[(b0 + i) * lda + k]);
    const auto* apf = reinterpret_cast<const float*>(ap);
    for (size_t nb = 0; nb < nblocks; nb += NR) {
      const int nr = static_cast<int>(nblocks - nb < NR ? nblocks - nb : NR);
      const auto* wpb = reinterpret_cast<const float*>(wp + nb * panel_stride);
      float* out = acc + b0 * ldacc + nb * kLanes;
      const size_t n_left = N - nb * kLanes;
      switch (mr) {
        case 4: bf16_row_block<4>(nr, apf, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        case 3: bf16_row_block<3>(nr, apf, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        case 2: bf16_row_block<2>(nr, apf, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        default: bf16_row_block<1>(nr, apf, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
      }
    }
  }
}

// ---------------------------------------------------------------- int8

// wp: [column block][k/2][8 lanes][2 x int16]; ap: [row][k/2] pairs of int16.
template <int MR, int NR>
VTPU_AVX2 void int8_block(const int32_t* ap, size_t Kh, const int32_t* wp, size_t panel_stride,
                          int32_t* acc, size_t ldacc, size_t n_left, bool accumulate) {
  __m256i s[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) s[i][j] = _mm256_setzero_si256();
  for (size_t kh = 0; kh < Kh; ++kh) {
    __m256i wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j)
      wv[j] = _mm256_load_si256(reinterpret_cast<const __m256i*>(wp + j * panel_stride + kh * kLanes));
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m256i av = _mm256_set1_epi32(ap[i * Kh + kh]);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) s[i][j] = _mm256_add_epi32(s[i][j], _mm256_madd_epi16(av, wv[j]));
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const __m256i m = lane_mask(n_left - j * kLanes);
      int* out = reinterpret_cast<int*>(acc + i * ldacc + j * kLanes);
      __m256i r = s[i][j];
      if (accumulate) r = _mm256_add_epi32(r, _mm256_maskload_epi32(out, m));
      _mm256_maskstore_epi32(out, m, r);
    }
}

template <int MR>
VTPU_AVX2 void int8_row_block(int nr, const int32_t* ap, size_t Kh, const int32_t* wp,
                              size_t panel_stride, int32_t* acc, size_t ldacc, size_t n_left,
                              bool accumulate) {
  switch (nr) {
    case 3: return int8_block<MR, 3>(ap, Kh, wp, panel_stride, acc, ldacc, n_left, accumulate);
    case 2: return int8_block<MR, 2>(ap, Kh, wp, panel_stride, acc, ldacc, n_left, accumulate);
    default: return int8_block<MR, 1>(ap, Kh, wp, panel_stride, acc, ldacc, n_left, accumulate);
  }
}

inline uint32_t pair16(int8_t lo, int8_t hi) {
  return static_cast<uint16_t>(int16_t{lo}) | (static_cast<uint32_t>(static_cast<uint16_t>(int16_t{hi})) << 16);
}

[[gnu::noinline]] VTPU_AVX2 void int8_body(const int8_t* a, size_t lda, const int8_t* w,
                                           size_t ldw, int32_t* acc, size_t ldacc, size_t B,
                                           size_t K, size_t N, bool accumulate) {
  constexpr int MR = 4, NR = 3;
  const size_t Kh = (K + 1) / 2;
  const size_t nblocks = (N + kLanes - 1) / kLanes;
  const size_t panel_stride = Kh * kLanes;  // int32 words per column block
  auto* wp = static_cast<uint32_t*>(scratch(0, nblocks * panel_stride * 4 + 64));
  for (size_t nb = 0; nb < nblocks; ++nb)
    for (size_t kh = 0; kh < Kh; ++kh)
      for (size_t l = 0; l < kLanes; ++l) {
        const size_t n = nb * kLanes + l, k = 2 * kh;
        const int8_t lo = n < N ? w[k * ldw + n] : 0;
        const int8_t hi = n < N && k + 1 < K ? w[(k + 1) * ldw + n] : 0;
        wp[nb * panel_stride + kh * kLanes + l] = pair16(lo, hi);
      }
  auto* ap = static_cast<uint32_t*>(scratch(1, MR * Kh * 4 + 64));
  for (size_t b0 = 0; b0 < B; b0 += MR) {
    const int mr = static_cast<int>(B - b0 < MR ? B - b0 : MR);
    for (int i = 0; i < mr; ++i) {
      const int8_t* src = a + (b0 + i) * lda;
      for (size_t kh = 0; kh < Kh; ++kh)
        ap[i * Kh + kh] = pair16(src[2 * kh], 2 * kh + 1 < K ? src[2 * kh + 1] : 0);
    }
    const auto* api = reinterpret_cast<const int32_t*>(ap);
    for (size_t nb = 0; nb < nblocks; nb += NR) {
      const int nr = static_cast<int>(nblocks - nb < NR ? nblocks - nb : NR);
      const auto* wpb = reinterpret_cast<const int32_t*>(wp + nb * panel_stride);
      int32_t* out = acc + b0 * ldacc + nb * kLanes;
      const size_t n_left = N - nb * kLanes;
      switch (mr) {
        case 4: int8_row_block<4>(nr, api, Kh, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        case 3: int8_row_block<3>(nr, api, Kh, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        case 2: int8_row_block<2>(nr, api, Kh, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        default: int8_row_block<1>(nr, api, Kh, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
      }
    }
  }
}

}  // namespace

void matmul_bf16_avx2(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  HostFpScope fp;
  bf16_body(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}

void matmul_int8_avx2(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  int8_body(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}

}  // namespace vtpu::numerics::detail
#endif
