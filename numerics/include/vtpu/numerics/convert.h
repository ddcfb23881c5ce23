#pragma once
// Element conversions (vec.cvt) and the scalar rounding primitives other operations use.
// docs/numerics.md, "Conversions":
//   int -> int          saturate to the target range
//   int -> fp32 / bf16  round the exact integer once to the target precision (RNE)
//   fp32/bf16 -> int    round half to even, saturate, NaN -> 0 (inf saturates)
//   fp32 -> bf16        RNE, overflow -> inf, NaN -> 0x7FC0, denormal -> signed zero
//   bf16 -> fp32        exact, denormal -> signed zero, NaN -> 0x7FC00000
//   same type           integers unchanged; floats get the policy (DAZ, canonical NaN)
#include <cstddef>
#include <cstdint>

#include "vtpu/numerics/dtype.h"

namespace vtpu::numerics {

// Integer value -> fp32 bit pattern rounded (RNE) to `significand_bits` bits (24 for fp32,
// 8 for bf16: the result's low 16 bits are then zero). |v| < 2^62.
uint32_t int_to_f32_rounded(int64_t v, int significand_bits = 24);
inline uint32_t int32_to_f32(int32_t v) { return int_to_f32_rounded(v, 24); }
inline uint16_t int32_to_bf16(int32_t v) { return static_cast<uint16_t>(int_to_f32_rounded(v, 8) >> 16); }

// fp32 bit pattern -> integer, rounded half to even, clamped to [lo, hi]; NaN -> 0.
int64_t f32_to_int_rne_sat(uint32_t x, int64_t lo, int64_t hi);
inline int32_t f32_to_int32(uint32_t x) {
  return static_cast<int32_t>(f32_to_int_rne_sat(x, INT32_MIN, INT32_MAX));
}
inline int8_t f32_to_int8(uint32_t x) { return static_cast<int8_t>(f32_to_int_rne_sat(x, -128, 127)); }

// Range of an integer type (int8, uint8, int16, int32).
int64_t int_type_min(NumType t);
int64_t int_type_max(NumType t);

// Clamp bounds [min, max] (doubles from .vparam) for integer type t: lo = ceil(min),
// hi = floor(max), each limited to the type's range (infinities mean "no bound").
struct IntBounds {
  int64_t lo, hi;
};
IntBounds int_clamp_bounds(NumType t, double min, double max);

// double -> fp32 bit pattern: RNE, overflow -> inf, tiny after rounding -> signed zero,
// NaN -> 0x7FC00000. Integer arithmetic on the double's bits (host-independent).
uint32_t f64_to_f32(double d);

// Reads element i of a row of type t as an integer (integer types only).
int64_t load_int(NumType t, const void* row, size_t i);
// Stores v (already in range) as element i of a row of integer type t.
void store_int(NumType t, void* row, size_t i, int64_t v);
// Reads element i of a float row (bf16 or fp32) as an fp32 bit pattern, applying the
// input policy (DAZ, canonical NaN).
uint32_t load_f32(NumType t, const void* row, size_t i);
// Stores an fp32 bit pattern as element i of a float row, rounding to bf16 if needed.
void store_f32(NumType t, void* row, size_t i, uint32_t bits);

// Converts one element from type `from` to type `to` (both any NumType).
void convert_element(NumType from, const void* src, size_t i, NumType to, void* dst, size_t j);
// Converts n elements (vec.cvt on one row).
void convert_row(NumType from, const void* src, NumType to, void* dst, size_t n);

}  // namespace vtpu::numerics
