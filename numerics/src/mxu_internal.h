#pragma once
// Kernel entry points per ISA; mxu.cpp dispatches to them. Each is compiled with function
// target attributes, so the library runs on any x86-64 and only calls what the CPU has.
#include <cstddef>
#include <cstdint>

namespace vtpu::numerics::detail {

#if defined(__x86_64__)
#define VTPU_NUMERICS_HAVE_SIMD 1
void matmul_int8_avx512(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                        size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
void matmul_bf16_avx512(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                        size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
void matmul_int8_avx2(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
void matmul_bf16_avx2(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
#endif

// Grows (never shrinks) a per-thread scratch buffer and returns it, 64-byte aligned.
void* scratch(int slot, size_t bytes);

}  // namespace vtpu::numerics::detail
