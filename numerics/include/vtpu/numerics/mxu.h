#pragma once
// The MXU's arithmetic on a whole weight tile at once (docs/numerics.md, "MXU").
//
// A tile call streams B input rows through a K x N weight tile (weight-stationary):
//   int8: acc[b][n] = (accumulate ? acc[b][n] : 0) + sum_k a[b][k] * w[k][n]   (mod 2^32)
//   bf16: p = +0; for k = 0..K-1: p = add(p, mul(a[b][k], w[k][n]))  (fp32, RNE, FTZ)
//         acc[b][n] = accumulate ? add(acc[b][n], p) : p
// Only the valid K rows and N columns are read; weights or accumulators outside them are
// never touched, so padding garbage (even NaN) cannot leak into results.
// Matrices are row-major with leading dimensions in elements. bf16 values are raw uint16
// bit patterns; fp32 accumulators are floats whose bit patterns follow the policy
// (never denormal, NaN always 0x7FC00000).
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vtpu::numerics {

// Which implementation a kernel call uses. All produce identical bits.
enum class KernelIsa : uint8_t {
  Scalar = 0,  // portable C++ (host FPU under HostFpScope on x86-64)
  Avx2 = 1,    // AVX2 (int8: vpmaddwd; bf16: 8-lane mul + add)
  Avx512 = 2,  // AVX-512 F/BW/VL/VNNI (int8: vpdpbusd; bf16: 16-lane mul + add)
};

std::string_view kernel_isa_name(KernelIsa isa);
bool kernel_isa_supported(KernelIsa isa);
// The fastest supported ISA, unless the environment variable VTPU_NUMERICS_ISA
// (scalar|avx2|avx512) asks for a slower one.
KernelIsa default_kernel_isa();

void matmul_tile_int8(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
void matmul_tile_bf16(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);

// The same with an explicit implementation (tests, benchmarks). The ISA must be supported.
void matmul_tile_int8(KernelIsa isa, const int8_t* a, size_t lda, const int8_t* w, size_t ldw,
                      int32_t* acc, size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
void matmul_tile_bf16(KernelIsa isa, const uint16_t* a, size_t lda, const uint16_t* w,
                      size_t ldw, float* acc, size_t ldacc, size_t B, size_t K, size_t N,
                      bool accumulate);

// The reference: a literal transcription of docs/numerics.md, one MAC at a time, bf16 with
// the software floating point (sf::mul, sf::add). Slow; for tests and the RTL testbench.
namespace ref {
void matmul_tile_int8(const int8_t* a, size_t lda, const int8_t* w, size_t ldw, int32_t* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
void matmul_tile_bf16(const uint16_t* a, size_t lda, const uint16_t* w, size_t ldw, float* acc,
                      size_t ldacc, size_t B, size_t K, size_t N, bool accumulate);
}  // namespace ref

}  // namespace vtpu::numerics
