// TOSA RESCALE with scale32 = true (docs/numerics.md, "RESCALE").
#include "vtpu/numerics/rescale.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "vtpu/numerics/convert.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {

int64_t apply_scale_32(int64_t value, int32_t multiplier, int32_t shift, bool double_round) {
  // 128-bit so that values outside TOSA's precondition (|value| < 2^(shift-1)) still get
  // the exact mathematical result instead of overflowing.
  __int128 round = static_cast<__int128>(1) << (shift - 1);
  if (double_round && shift > 31) round += value >= 0 ? (__int128{1} << 30) : -(__int128{1} << 30);
  const __int128 prod = static_cast<__int128>(value) * multiplier + round;
  // >> on a negative __int128 is an arithmetic shift in GCC/Clang: floor division.
  __int128 r = prod >> shift;
  // Keep the result representable; any value beyond int64 saturates the same as int32.
  const __int128 lim = static_cast<__int128>(1) << 62;
  if (r > lim) r = lim;
  if (r < -lim) r = -lim;
  return static_cast<int64_t>(r);
}

void validate_rescale(const RescaleParams& p, NumType in, NumType out, size_t lanes,
                      const char* what) {
  const auto fail = [&](const std::string& msg) { throw UserError(std::string(what) + ": " + msg); };
  const auto int_ok = [](NumType t) {
    return t == NumType::Int8 || t == NumType::Uint8 || t == NumType::Int16 || t == NumType::Int32;
  };
  if (!int_ok(in))
    fail("input type " + std::string(num_type_name(in)) + " is not supported (int8, uint8, int16, int32)");
  if (!int_ok(out))
    fail("output type " + std::string(num_type_name(out)) + " is not supported (int8, uint8, int16, int32)");
  if (p.multiplier.empty()) fail("no multiplier given (mult=[...]: 1 value or one per lane)");
  if (p.multiplier.size() != p.shift.size())
    fail("mult has " + std::to_string(p.multiplier.size()) + " values but shift has " +
         std::to_string(p.shift.size()) + "; give the same count");
  if (p.multiplier.size() != 1 && p.multiplier.size() != lanes)
    fail("mult has " + std::to_string(p.multiplier.size()) + " values; give 1 or " +
         std::to_string(lanes) + " (one per lane)");
  for (size_t i = 0; i < p.multiplier.size(); ++i) {
    if (p.multiplier[i] < 0)
      fail("mult[" + std::to_string(i) + "] = " + std::to_string(p.multiplier[i]) + " is negative; TOSA requires 0..2147483647");
    if (p.shift[i] < 2 || p.shift[i] > 62)
      fail("shift[" + std::to_string(i) + "] = " + std::to_string(p.shift[i]) + " is outside 2..62");
  }
  if (std::isnan(p.min) || std::isnan(p.max)) fail("min/max must not be NaN");
}

namespace {

using Bounds = IntBounds;

Bounds out_bounds(const RescaleParams& p, NumType out) { return int_clamp_bounds(out, p.min, p.max); }

int64_t rescale_with(int64_t in, const RescaleParams& p, size_t lane, Bounds b) {
  const size_t c = p.multiplier.size() == 1 ? 0 : lane;
  const int64_t value = in - p.input_zp;
  int64_t r;
  if (value >= INT32_MIN && value <= INT32_MAX) {
    // |value * multiplier| < 2^62 and the rounding term < 2^62: exact in int64, no __int128.
    const int32_t shift = p.shift[c];
    int64_t round = int64_t{1} << (shift - 1);
    if (p.double_round && shift > 31) round += value >= 0 ? (int64_t{1} << 30) : -(int64_t{1} << 30);
    r = ((value * p.multiplier[c] + round) >> shift) + p.output_zp;
  } else {
    r = apply_scale_32(value, p.multiplier[c], p.shift[c], p.double_round) + p.output_zp;
  }
  // clamp(max(r, lo), hi): when min > max the upper bound wins.
  if (r < b.lo) r = b.lo;
  if (r > b.hi) r = b.hi;
  return r;
}

}  // namespace

int64_t rescale_value(int64_t in, const RescaleParams& p, size_t lane, NumType out) {
  return rescale_with(in, p, lane, out_bounds(p, out));
}

void rescale_row(NumType in, const void* src, NumType out, void* dst, size_t n,
                 const RescaleParams& p) {
  const Bounds b = out_bounds(p, out);
  if (in == NumType::Int32 && out == NumType::Int8) {  // the common requantization case
    const auto* s = static_cast<const int32_t*>(src);
    auto* d = static_cast<int8_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = static_cast<int8_t>(rescale_with(s[i], p, i, b));
    return;
  }
  for (size_t i = 0; i < n; ++i) store_int(out, dst, i, rescale_with(load_int(in, src, i), p, i, b));
}

}  // namespace vtpu::numerics
