#pragma once
// Table functions of the vector unit (vec.exp, tanh, sigmoid, gelu, erf, recip, rsqrt, log)
// for fp32 and bf16 (docs/numerics.md, "Transcendental functions").
//
// Each fp32 function is a fixed sequence of fp32 additions, multiplications, divisions and
// square roots (RNE, the float policy) and integer operations on bit patterns — no libm —
// so every IEEE-conforming implementation (this library's host path, its soft-float path,
// the RTL) gets the same bits. bf16 functions are defined as round_bf16(f(fp32(x))); the
// library caches them in 65536-entry tables built from the fp32 definition.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "vtpu/numerics/dtype.h"

namespace vtpu::numerics {

// Numbered as their opcodes minus 16 (vec.exp = 16 ... vec.log = 23).
enum class Transcendental : uint8_t { Exp, Tanh, Sigmoid, Gelu, Erf, Recip, Rsqrt, Log };
inline constexpr Transcendental kAllTranscendentals[] = {
    Transcendental::Exp,  Transcendental::Tanh,  Transcendental::Sigmoid, Transcendental::Gelu,
    Transcendental::Erf,  Transcendental::Recip, Transcendental::Rsqrt,   Transcendental::Log};

std::string_view transcendental_name(Transcendental f);

// fp32 bit pattern in, fp32 bit pattern out (host FPU; identical to ref::eval_f32).
uint32_t eval_f32(Transcendental f, uint32_t x);
// bf16 in, bf16 out (table lookup).
uint16_t eval_bf16(Transcendental f, uint16_t x);
// The 65536-entry table of a function, indexed by the bf16 input bit pattern (for
// the RTL's ROM images and for tests).
std::span<const uint16_t, 65536> bf16_table(Transcendental f);

// A row of n elements; dt must be fp32 or bf16 (vtpu::UserError otherwise).
void transcendental_row(Transcendental f, NumType dt, const void* a, void* dst, size_t n);

namespace ref {
// The same fp32 algorithms evaluated with the software floating point.
uint32_t eval_f32(Transcendental f, uint32_t x);
}  // namespace ref

}  // namespace vtpu::numerics
