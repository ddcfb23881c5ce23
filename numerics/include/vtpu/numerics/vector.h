#pragma once
// The vector unit's elementwise, pooling and reduction arithmetic on rows of n lanes
// (docs/numerics.md, "Vector unit"). Rows are raw element arrays of the given NumType.
//   int32          add/sub/mul wrap modulo 2^32
//   int8/uint8/int16  add/sub/mul saturate to the type's range
//   fp32           one IEEE operation, RNE, under the float policy (DAZ, FTZ, canonical NaN)
//   bf16           computed in fp32 exactly as for fp32, then rounded once to bf16 (RNE)
// max/min follow IEEE 754-2019 maximum/minimum (NaN wins, -0 < +0).
#include <cstddef>
#include <cstdint>
#include <span>

#include "vtpu/numerics/dtype.h"

namespace vtpu::numerics {

enum class BinaryOp : uint8_t { Add, Sub, Mul, Max, Min };

void binary_row(BinaryOp op, NumType dt, const void* a, const void* b, void* dst, size_t n);
// dst = a, bit for bit (vec.copy moves bits; no policy applied).
void copy_row(NumType dt, const void* a, void* dst, size_t n);
// dst = max(a, 0) (floats: relu(-0) = +0, relu(NaN) = NaN).
void relu_row(NumType dt, const void* a, void* dst, size_t n);
// dst = min(max(a, lo), hi). Integer types: lo = ceil(min), hi = floor(max), limited to the
// type's range. Floats: bounds rounded to fp32 (RNE); result rounded to dt.
void clamp_row(NumType dt, const void* a, void* dst, size_t n, double min, double max);
// dst = a * scale[lane] + bias[lane] in fp32 (a multiply, then an add: two roundings, no
// fusion); scale/bias have 1 or n entries (empty: scale 1, bias 0). Integer types convert
// a to fp32 (RNE) first and the result back (round half even, saturate).
void affine_row(NumType dt, const void* a, void* dst, size_t n, std::span<const float> scale,
                std::span<const float> bias);
// dst[i] = max over the window rows of rows[r][i] (in window order).
void maxpool_row(NumType dt, std::span<const void* const> rows, void* dst, size_t n);
// dst[i] = (sum over the window rows, in window order) * scale[lane]. Floats: fp32 sum that
// starts from the first row's element, then the multiply, rounded to dt. Integer types:
// int32 wrapping sum, converted to fp32 (RNE), multiplied, converted back (RNE, saturate).
void avgpool_row(NumType dt, std::span<const void* const> rows, void* dst, size_t n,
                 std::span<const float> scale);
// Every lane of dst = sum of a's n lanes in lane order (floats: s = a[0]; s = s + a[i]; in
// fp32; integers: int32 wrapping), converted to odt as vec.cvt does.
void rsum_row(NumType dt, const void* a, NumType odt, void* dst, size_t n);
// Every lane of dst = maximum of a's n lanes (lane order, NaN wins).
void rmax_row(NumType dt, const void* a, void* dst, size_t n);

// The same operations written with the software floating point only, for tests.
namespace ref {
void binary_row(BinaryOp op, NumType dt, const void* a, const void* b, void* dst, size_t n);
void affine_row(NumType dt, const void* a, void* dst, size_t n, std::span<const float> scale,
                std::span<const float> bias);
void avgpool_row(NumType dt, std::span<const void* const> rows, void* dst, size_t n,
                 std::span<const float> scale);
void rsum_row(NumType dt, const void* a, NumType odt, void* dst, size_t n);
}  // namespace ref

}  // namespace vtpu::numerics
