// AVX-512 MXU tile kernels (F/BW/VL/VNNI), compiled with function target attributes.
//
// bf16: both operands are widened to fp32 once per call (exact), then a register block of
// MR rows x NR 16-lane column vectors is accumulated with one vmulps and one vaddps per
// MAC, k strictly in order — the reference's sequence of roundings, lane-parallel over n.
// MXCSR (RNE, FTZ, DAZ) makes the host's rounding and denormal handling the documented
// policy; NaN payloads are canonicalized on store.
//
// int8: vpdpbusd multiplies unsigned by signed bytes, so a is biased to a + 128 (a ^ 0x80)
// and 128 * column-sum(w) is subtracted at the end: exact modulo 2^32.
#include "mxu_internal.h"

#ifdef VTPU_NUMERICS_HAVE_SIMD
#include <immintrin.h>

#include <cstring>

// GCC 12's AVX-512 intrinsics use _mm512_undefined_epi32() (`__m512i __Y = __Y;`) as a
// don't-care pass-through operand, which -Wmaybe-uninitialized misreports (GCC PR 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "vtpu/numerics/float.h"

#define VTPU_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

namespace vtpu::numerics::detail {
namespace {

constexpr size_t kLanes = 16;

VTPU_AVX512 inline __mmask16 tail_mask(size_t n_left) {
  return n_left >= kLanes ? static_cast<__mmask16>(0xFFFF)
                          : static_cast<__mmask16>((1u << n_left) - 1u);
}

// ---------------------------------------------------------------- bf16

// wp: panel layout [column block][k][16 lanes] of fp32; ap: [row][k] fp32.
template <int MR, int NR>
VTPU_AVX512 void bf16_block(const float* ap, size_t K, const float* wp, size_t panel_stride,
                            float* acc, size_t ldacc, size_t n_left, bool accumulate) {
  __m512 p[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) p[i][j] = _mm512_setzero_ps();
  for (size_t k = 0; k < K; ++k) {
    __m512 wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) wv[j] = _mm512_load_ps(wp + j * panel_stride + k * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      const __m512 av = _mm512_set1_ps(ap[i * K + k]);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) p[i][j] = _mm512_add_ps(p[i][j], _mm512_mul_ps(av, wv[j]));
    }
  }
  const __m512 qnan = _mm512_castsi512_ps(_mm512_set1_epi32(static_cast<int>(kF32QNaN)));
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) {
      const size_t left = n_left - j * kLanes;
      const __mmask16 m = tail_mask(left);
      float* out = acc + i * ldacc + j * kLanes;
      __m512 r = p[i][j];
      if (accumulate) r = _mm512_add_ps(_mm512_maskz_loadu_ps(m, out), r);
      r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), qnan);
      _mm512_mask_storeu_ps(out, m, r);
    }
}

template <int MR>
VTPU_AVX512 void bf16_row_block(int nr, const float* ap, size_t K, const float* wp,
                                size_t panel_stride, float* acc, size_t ldacc, size_t n_left,
                                bool accumulate) {
  switch (nr) {
    case 4: return bf16_block<MR, 4>(ap, K, wp, panel_stride, acc, ldacc, n_left, accumulate);
    case 3: return bf16_block<MR, 3>(ap, K, wp, panel_stride, acc, ldacc, n_left, accumulate);
    case 2: return bf16_block<MR, 2>(ap, K, wp, panel_stride, acc, ldacc, n_left, accumulate);
    default: return bf16_block<MR, 1>(ap, K, wp, panel_stride, acc, ldacc, n_left, accumulate);
  }
}

VTPU_AVX512 void widen_bf16_row(const uint16_t* src, size_t n, float* dst) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_si512(dst + i, _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  for (; i < n; ++i) dst[i] = f32_from_bits(bf16_to_f32_bits(src[i]));
}

[[gnu::noinline]] VTPU_AVX512 void bf16_body(const uint16_t* a, size_t lda, const uint16_t* w,
                                             size_t ldw, float* acc, size_t ldacc, size_t B,
                                             size_t K, size_t N, bool accumulate) {
  constexpr int MR = 4, NR = 4;
  const size_t nblocks = (N + kLanes - 1) / kLanes;
  const size_t panel_stride = K * kLanes;  // floats per column block
  float* wp = static_cast<float*>(scratch(0, nblocks * panel_stride * sizeof(float) + 64));
  // Widen W into column panels; lanes past N are zero (computed, never stored).
  for (size_t nb = 0; nb < nblocks; ++nb) {
    const size_t cols = N - nb * kLanes < kLanes ? N - nb * kLanes : kLanes;
    const __mmask16 m = tail_mask(cols);
    for (size_t k = 0; k < K; ++k) {
      const __m256i h = _mm256_maskz_loadu_epi16(m, w + k * ldw + nb * kLanes);
      _mm512_store_si512(wp + nb * panel_stride + k * kLanes,
                         _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
  float* ap = static_cast<float*>(scratch(1, MR * K * sizeof(float) + 64));
  for (size_t b0 = 0; b0 < B; b0 += MR) {
    const int mr = static_cast<int>(B - b0 < MR ? B - b0 : MR);
    for (int i = 0; i < mr; ++i) widen_bf16_row(a + (b0 + i) * lda, K, ap + i * K);
    for (size_t nb = 0; nb < nblocks; nb += NR) {
      const int nr = static_cast<int>(nblocks - nb < NR ? nblocks - nb : NR);
      const float* wpb = wp + nb * panel_stride;
      float* out = acc + b0 * ldacc + nb * kLanes;
      const size_t n_left = N - nb * kLanes;
      switch (mr) {
        case 4: bf16_row_block<4>(nr, ap, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        case 3: bf16_row_block<3>(nr, ap, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        case 2: bf16_row_block<2>(nr, ap, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
        default: bf16_row_block<1>(nr, ap, K, wpb, panel_stride, out, ldacc, n_left, accumulate); break;
      }
    }
  }
}

// ---------------------------------------------------------------- int8

// acc += dot4(u8 a, s8 b) per 32-bit lane. Written as asm with an in/out operand: with the
// intrinsic, GCC 12 copies every accumulator through a spare register on each use (the
// instruction overwrites its first source), which costs a third of the kernel's speed.
VTPU_AVX512 inline void dpbusd(__m512i& acc, __m512i a, __m512i b) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
}

// wp: [column block][k/4][16 lanes][4 bytes]; ap: [row][Kp] biased bytes; corr: 128*colsum.
template <int MR, int NR>
VTPU_AVX512 void int8_block(const uint8_t* ap, size_t Kp, const int8_t* wp, size_t panel_stride,
                            const int32_t* corr, int32_t* acc, size_t ldacc, size_t n_left,
                            bool accumulate) {
  __m512i s[MR][NR];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j) s[i][j] = _mm512_setzero_si512();
  for (size_t kq = 0; kq < Kp / 4; ++kq) {
    __m512i wv[NR];
#pragma GCC unroll 8
    for (int j = 0; j < NR; ++j)
      wv[j] = _mm512_load_si512(wp + j * panel_stride + kq * 4 * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      int32_t quad;
      std::memcpy(&quad, ap + i * Kp + kq * 4, 4);
      const __m512i av = _mm512_set1_epi32(quad);
#pragma GCC unroll 8
      for (int j = 0; j < NR; ++j) dpbusd(s[i][j], av, wv[j]);
    }
  }
#pragma GCC unroll 8
  for (int j = 0; j < NR; ++j) {
    const __m512i c = _mm512_load_si512(corr + j * kLanes);
    const __mmask16 m = tail_mask(n_left - j * kLanes);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      int32_t* out = acc + i * ldacc + j * kLanes;
      __m512i r = _mm512_sub_epi32(s[i][j], c);
      if (accumulate) r = _mm512_add_epi32(r, _mm512_maskz_loadu_epi32(m, out));
      _mm512_mask_storeu_epi32(out, m, r);
    }
  }
}

template <int MR>
VTPU_AVX512 void int8_row_block(int nr, const uint8_t* ap, size_t Kp, const int8_t* wp,
                                size_t panel_stride, const int32_t* corr, int32_t* acc,
                                size_t ldacc, size_t n_left, bool accumulate) {
  switch (nr) {
    case 4: return int8_block<MR, 4>(ap, Kp, wp, panel_stride, corr, acc, ldacc, n_left, accumulate);
    case 3: return int8_block<MR, 3>(ap, Kp, wp, panel_stride, corr, acc, ldacc, n_left, accumulate);
    case 2: return int8_block<MR, 2>(ap, Kp, wp, panel_stride, corr, acc, ldacc, n_left, accumulate);
    default: return int8_block<MR, 1>(ap, Kp, wp, panel_stride, corr, acc, ldacc, n_left, accumulate);
  }
}

// Interleaves 4 rows of 16 weights into 16 lanes of 4 bytes (lane n = w[k..k+3][n]).
VTPU_AVX512 inline __m512i interleave4(__m128i r0, __m128i r1, __m128i r2, __m128i r3) {
  const __m128i a01lo = _mm_unpacklo_epi8(r0, r1), a01hi = _mm_unpackhi_epi8(r0, r1);
  const __m128i a23lo = _mm_unpacklo_epi8(r2, r3), a23hi = _mm_unpackhi_epi8(r2, r3);
  const __m128i q0 = _mm_unpacklo_epi16(a01lo, a23lo), q1 = _mm_unpackhi_epi16(a01lo, a23lo);
  const __m128i q2 = _mm_unpacklo_epi16(a01hi, a23hi), q3 = _mm_unpackhi_epi16(a01hi, a23hi);
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(q1, q0)),
                            _mm256_set_m128i(q3, q2), 1);
}

[[gnu::noinline]] VTPU_AVX512 void int8_body(const int8_t* a, size_t lda, const int8_t* w,
                                             size_t ldw, int32_t* acc, size_t ldacc, size_t B,
                                             size_t K, size_t N, bool accumulate) {
  constexpr int MR = 4, NR = 4;
  const size_t Kp = (K + 3) / 4 * 4;
  const size_t nblocks = (N + kLanes - 1) / kLanes;
  const size_t panel_stride = Kp * kLanes;  // bytes per column block
  auto* wp = static_cast<int8_t*>(scratch(0, nblocks * panel_stride + 64));
  auto* corr = static_cast<int32_t*>(scratch(2, nblocks * kLanes * sizeof(int32_t) + 64));
  const __m512i ones = _mm512_set1_epi8(1);
  for (size_t nb = 0; nb < nblocks; ++nb) {
    const size_t cols = N - nb * kLanes < kLanes ? N - nb * kLanes : kLanes;
    const __mmask16 m = tail_mask(cols);
    __m512i colsum = _mm512_setzero_si512();
    for (size_t k0 = 0; k0 < Kp; k0 += 4) {
      __m128i r[4];
      for (int t = 0; t < 4; ++t)  // rows past K and columns past N read as zero
        r[t] = k0 + t < K ? _mm_maskz_loadu_epi8(m, w + (k0 + t) * ldw + nb * kLanes)
                          : _mm_setzero_si128();
      const __m512i packed = interleave4(r[0], r[1], r[2], r[3]);
      _mm512_store_si512(wp + nb * panel_stride + k0 * kLanes, packed);
      colsum = _mm512_dpbusd_epi32(colsum, ones, packed);
    }
    _mm512_store_si512(corr + nb * kLanes, _mm512_slli_epi32(colsum, 7));
  }
  // Bias and pad all of A once, then sweep column groups outermost: one group's weight
  // panel (Kp x 64 bytes) stays in L1 while every row block streams past it.
  auto* ap = static_cast<uint8_t*>(scratch(1, B * Kp + 64));
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  for (size_t b = 0; b < B; ++b) {
    const int8_t* src = a + b * lda;
    uint8_t* dst = ap + b * Kp;
    size_t k = 0;
    for (; k + 64 <= K; k += 64)
      _mm512_storeu_si512(dst + k, _mm512_xor_si512(_mm512_loadu_si512(src + k), bias));
    for (; k < K; ++k) dst[k] = static_cast<uint8_t>(src[k]) ^ 0x80u;
    for (; k < Kp; ++k) dst[k] = 0;  // meets zero weights
  }
  for (size_t nb = 0; nb < nblocks; nb += NR) {
    const int nr = static_cast<int>(nblocks - nb < NR ? nblocks - nb : NR);
    const int8_t* wpb = wp + nb * panel_stride;
    const int32_t* cb = corr + nb * kLanes;
    const size_t n_left = N - nb * kLanes;
    for (size_t b0 = 0; b0 < B; b0 += MR) {
      const int mr = static_cast<int>(B - b0 < MR ? B - b0 : MR);
      const uint8_t* apb = ap + b0 * Kp;
      int32_t* out = acc + b0 * ldacc + nb * kLanes;
      switch (mr) {
        case 4: int8_row_block<4>(nr, apb, Kp, wpb, panel_stride, cb, out, ldacc, n_left, accumulate); break;
        case 3: int8_row_block<3>(nr, apb, Kp, wpb, panel_stride, cb, out, ldacc, n_left, accumulate); break;
        case 2: int8_row_block<2>(nr, apb, Kp, wpb, panel_stride, cb, out, ldacc, n_left, accumulate); break;
        default: int8_row_block<1>(nr, apb, Kp, wpb, panel_stride, cb, out, ldacc, n_left, accumulate); break;
      }
    }
  }
}

}  // namespace

void matmul_bf16_avx512(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                        size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  HostFpScope fp;
  bf16_body(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}

void matmul_int8_avx512(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                        size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  int8_body(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}

}  // namespace vtpu::numerics::detail
#endif
