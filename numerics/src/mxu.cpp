// MXU tile kernels: dispatch, the portable path and the reference (docs/numerics.md, "MXU").
#include "vtpu/numerics/mxu.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "mxu_internal.h"
#include "vtpu/numerics/float.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {

namespace detail {

void* scratch(int slot, size_t bytes) {
  struct Buf {
    void* p = nullptr;
    size_t size = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[4];
  Buf& b = bufs[slot];
  if (b.size < bytes) {
    std::free(b.p);
    const size_t rounded = (bytes + 63) / 64 * 64;
    b.p = std::aligned_alloc(64, rounded);
    if (!b.p) throw std::bad_alloc();
    b.size = rounded;
  }
  return b.p;
}

}  // namespace detail

std::string_view kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Scalar: return "scalar";
    case KernelIsa::Avx2: return "avx2";
    case KernelIsa::Avx512: return "avx512";
  }
  return "?";
}

bool kernel_isa_supported(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Scalar: return true;
#ifdef VTPU_NUMERICS_HAVE_SIMD
    case KernelIsa::Avx2: return __builtin_cpu_supports("avx2");
    case KernelIsa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#else
    default: return false;
#endif
  }
  return false;
}

KernelIsa default_kernel_isa() {
  static const KernelIsa chosen = [] {
    KernelIsa best = KernelIsa::Scalar;
    if (kernel_isa_supported(KernelIsa::Avx2)) best = KernelIsa::Avx2;
    if (kernel_isa_supported(KernelIsa::Avx512)) best = KernelIsa::Avx512;
    if (const char* env = std::getenv("VTPU_NUMERICS_ISA")) {
      const std::string want(env);
      for (KernelIsa k : {KernelIsa::Scalar, KernelIsa::Avx2, KernelIsa::Avx512})
        if (want == kernel_isa_name(k) && static_cast<int>(k) <= static_cast<int>(best)) best = k;
    }
    return best;
  }();
  return chosen;
}

namespace {

void check_supported(KernelIsa isa) {
  if (!kernel_isa_supported(isa))
    throw InternalError("numerics: kernel ISA '" + std::string(kernel_isa_name(isa)) +
                        "' requested but this CPU does not support it");
}

void int8_scalar(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                 size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  // uint32 arithmetic: wrap-around is defined, and modulo 2^32 the order does not matter,
  // so this loop order (vectorizable over n) is as good as any.
  std::vector<uint32_t> row(N);
  for (size_t b = 0; b < B; ++b) {
    int32_t* out = acc + b * ldacc;
    for (size_t n = 0; n < N; ++n) row[n] = accumulate ? static_cast<uint32_t>(out[n]) : 0u;
    for (size_t k = 0; k < K; ++k) {
      const uint32_t av = static_cast<uint32_t>(static_cast<int32_t>(a[b * lda + k]));
      const int8_t* wr = w + k * ldw;
      for (size_t n = 0; n < N; ++n) row[n] += av * static_cast<uint32_t>(static_cast<int32_t>(wr[n]));
    }
    for (size_t n = 0; n < N; ++n) out[n] = static_cast<int32_t>(row[n]);
  }
}

#if defined(__x86_64__) || defined(__i386__)
// Host FPU under HostFpScope: per column the same sequence of RNE multiplies and adds as
// the reference; the compiler may vectorize over n but may not reassociate or fuse
// (-ffp-contract=off, no -ffast-math). Kept out of line so no float operation can be
// scheduled outside the scope that sets MXCSR.
[[gnu::noinline]] void bf16_scalar_body(const uint16_t* a, size_t lda, const uint16_t* w,
                                        size_t ldw, float* acc, size_t ldacc, size_t B, size_t K,
                                        size_t N, bool accumulate) {
  float* wf = static_cast<float*>(detail::scratch(0, K * N * sizeof(float)));
  for (size_t k = 0; k < K; ++k)
    for (size_t n = 0; n < N; ++n) wf[k * N + n] = f32_from_bits(bf16_to_f32_bits(w[k * ldw + n]));
  float* p = static_cast<float*>(detail::scratch(1, N * sizeof(float)));
  for (size_t b = 0; b < B; ++b) {
    for (size_t n = 0; n < N; ++n) p[n] = 0.0f;
    for (size_t k = 0; k < K; ++k) {
      const float av = f32_from_bits(bf16_to_f32_bits(a[b * lda + k]));
      const float* wr = wf + k * N;
      for (size_t n = 0; n < N; ++n) {
        const float prod = av * wr[n];
        p[n] = p[n] + prod;
      }
    }
    float* out = acc + b * ldacc;
    for (size_t n = 0; n < N; ++n) {
      const float r = accumulate ? out[n] + p[n] : p[n];
      out[n] = r != r ? f32_from_bits(kF32QNaN) : r;
    }
  }
}
void bf16_scalar(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                 size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  HostFpScope fp;
  bf16_scalar_body(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}
#else
void bf16_scalar(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                 size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  ref::matmul_tile_bf16(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}
#endif

}  // namespace

void matmul_tile_int8(KernelIsa isa, const int8_t* a, size_t lda, const int8_t* w, size_t ldw,
                      int32_t* acc, size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  check_supported(isa);
  if (B == 0 || N == 0) return;
  switch (isa) {
#ifdef VTPU_NUMERICS_HAVE_SIMD
    case KernelIsa::Avx512:
      return detail::matmul_int8_avx512(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
    case KernelIsa::Avx2:
      return detail::matmul_int8_avx2(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
#endif
    default: return int8_scalar(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
  }
}

void matmul_tile_bf16(KernelIsa isa, const uint16_t* a, size_t lda, const uint16_t* w,
                      size_t ldw, float* acc, size_t ldacc, size_t B, size_t K, size_t N,
                      bool accumulate) {
  check_supported(isa);
  if (B == 0 || N == 0) return;
  switch (isa) {
#ifdef VTPU_NUMERICS_HAVE_SIMD
    case KernelIsa::Avx512:
      return detail::matmul_bf16_avx512(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
    case KernelIsa::Avx2:
      return detail::matmul_bf16_avx2(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
#endif
    default: return bf16_scalar(a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
  }
}

void matmul_tile_int8(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  matmul_tile_int8(default_kernel_isa(), a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}

void matmul_tile_bf16(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  matmul_tile_bf16(default_kernel_isa(), a, lda, w, ldw, acc, ldacc, B, K, N, accumulate);
}

namespace ref {

void matmul_tile_int8(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  for (size_t b = 0; b < B; ++b)
    for (size_t n = 0; n < N; ++n) {
      // Accumulation modulo 2^32 (two's-complement wrap-around).
      uint32_t sum = accumulate ? static_cast<uint32_t>(acc[b * ldacc + n]) : 0u;
      for (size_t k = 0; k < K; ++k)
        sum += static_cast<uint32_t>(int32_t{a[b * lda + k]} * int32_t{w[k * ldw + n]});
      acc[b * ldacc + n] = static_cast<int32_t>(sum);
    }
}

void matmul_tile_bf16(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate) {
  for (size_t b = 0; b < B; ++b)
    for (size_t n = 0; n < N; ++n) {
      uint32_t p = 0;  // +0.0f: the partial sum entering the top of column n
      for (size_t k = 0; k < K; ++k) {
        const uint32_t prod = sf::mul(bf16_to_f32_bits(a[b * lda + k]), bf16_to_f32_bits(w[k * ldw + n]));
        p = sf::add(p, prod);
      }
      float& out = acc[b * ldacc + n];
      const uint32_t r = accumulate ? sf::add(f32_bits(out), p) : p;
      out = f32_from_bits(r);
    }
}

}  // namespace ref

}  // namespace vtpu::numerics
