// Conversions between the vector unit's element types (docs/numerics.md, "Conversions").
// Everything is integer arithmetic on bit patterns, so results never depend on the host.
#include "vtpu/numerics/convert.h"

#include <cmath>
#include <cstring>

#include "vtpu/numerics/float.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {

std::string_view num_type_name(NumType t) {
  switch (t) {
    case NumType::Int8: return "int8";
    case NumType::Bf16: return "bf16";
    case NumType::Int32: return "int32";
    case NumType::Fp32: return "fp32";
    case NumType::Uint8: return "uint8";
    case NumType::Int16: return "int16";
  }
  return "?";
}

uint32_t int_to_f32_rounded(int64_t v, int significand_bits) {
  if (v == 0) return 0;  // +0
  const uint32_t sign = v < 0 ? 0x80000000u : 0u;
  uint64_t mag = v < 0 ? static_cast<uint64_t>(-v) : static_cast<uint64_t>(v);
  int lead = 63 - __builtin_clzll(mag);
  const int p = significand_bits;
  if (lead >= p) {  // drop lead - p + 1 bits, ties to even
    int s = lead - (p - 1);
    const uint64_t rem = mag & ((uint64_t{1} << s) - 1), half = uint64_t{1} << (s - 1);
    mag >>= s;
    if (rem > half || (rem == half && (mag & 1u))) ++mag;
    if (mag >> p) {  // rounded up to the next power of two
      mag >>= 1;
      ++lead;
      ++s;
    }
    mag <<= s;
  }
  // mag is now exactly representable with p bits; place it as an fp32.
  const uint64_t frac = lead >= 23 ? (mag >> (lead - 23)) : (mag << (23 - lead));
  return sign | (static_cast<uint32_t>(lead + 127) << 23) | (static_cast<uint32_t>(frac) & 0x007FFFFFu);
}

int64_t f32_to_int_rne_sat(uint32_t x, int64_t lo, int64_t hi) {
  x = f32_daz(x);
  if (f32_is_nan(x)) return 0;
  const bool neg = x & 0x80000000u;
  const int e = static_cast<int>((x >> 23) & 0xFFu) - 127;
  int64_t mag;
  if ((x & 0x7FFFFFFFu) == 0) {
    mag = 0;
  } else if (e >= 40) {  // includes infinity: beyond every integer type
    mag = int64_t{1} << 40;
  } else {
    const uint64_t m = (x & 0x007FFFFFu) | 0x00800000u;  // value = m * 2^(e - 23)
    if (e >= 23) {
      mag = static_cast<int64_t>(m << (e - 23));
    } else {
      const int s = 23 - e;
      if (s > 24) {
        mag = 0;  // |x| < 0.5
      } else {
        uint64_t q = m >> s;
        const uint64_t rem = m & ((uint64_t{1} << s) - 1), half = uint64_t{1} << (s - 1);
        if (rem > half || (rem == half && (q & 1u))) ++q;
        mag = static_cast<int64_t>(q);
      }
    }
  }
  const int64_t v = neg ? -mag : mag;
  return v < lo ? lo : (v > hi ? hi : v);
}

int64_t int_type_min(NumType t) {
  switch (t) {
    case NumType::Int8: return -128;
    case NumType::Uint8: return 0;
    case NumType::Int16: return -32768;
    case NumType::Int32: return INT32_MIN;
    default: throw InternalError("int_type_min: not an integer type");
  }
}

int64_t int_type_max(NumType t) {
  switch (t) {
    case NumType::Int8: return 127;
    case NumType::Uint8: return 255;
    case NumType::Int16: return 32767;
    case NumType::Int32: return INT32_MAX;
    default: throw InternalError("int_type_max: not an integer type");
  }
}

IntBounds int_clamp_bounds(NumType t, double min, double max) {
  const int64_t tmin = int_type_min(t), tmax = int_type_max(t);
  int64_t lo = tmin, hi = tmax;
  if (min > static_cast<double>(tmin))
    lo = min >= static_cast<double>(tmax) ? tmax : static_cast<int64_t>(std::ceil(min));
  if (max < static_cast<double>(tmax))
    hi = max <= static_cast<double>(tmin) ? tmin : static_cast<int64_t>(std::floor(max));
  return {lo, hi};
}

uint32_t f64_to_f32(double d) {
  uint64_t x;
  std::memcpy(&x, &d, 8);
  const uint32_t sign = static_cast<uint32_t>(x >> 32) & 0x80000000u;
  const int e = static_cast<int>((x >> 52) & 0x7FF);
  uint64_t m = x & ((uint64_t{1} << 52) - 1);
  if (e == 0x7FF) return m ? kF32QNaN : (sign | kF32Inf);
  if (e == 0) return sign;  // zero or double denormal: far below fp32's range
  m |= uint64_t{1} << 52;   // 53-bit significand; keep 24 bits, round the other 29
  uint64_t q = m >> 29;
  const uint64_t rem = m & ((uint64_t{1} << 29) - 1), half = uint64_t{1} << 28;
  if (rem > half || (rem == half && (q & 1u))) ++q;
  int exp = e - 1023 + 127;
  if (q >> 24) {
    q >>= 1;
    ++exp;
  }
  if (exp >= 0xFF) return sign | kF32Inf;
  if (exp <= 0) return sign;  // FTZ, tininess after rounding
  return sign | (static_cast<uint32_t>(exp) << 23) | (static_cast<uint32_t>(q) & 0x007FFFFFu);
}

int64_t load_int(NumType t, const void* row, size_t i) {
  switch (t) {
    case NumType::Int8: return static_cast<const int8_t*>(row)[i];
    case NumType::Uint8: return static_cast<const uint8_t*>(row)[i];
    case NumType::Int16: return static_cast<const int16_t*>(row)[i];
    case NumType::Int32: return static_cast<const int32_t*>(row)[i];
    default: throw InternalError("load_int: not an integer type");
  }
}

void store_int(NumType t, void* row, size_t i, int64_t v) {
  switch (t) {
    case NumType::Int8: static_cast<int8_t*>(row)[i] = static_cast<int8_t>(v); return;
    case NumType::Uint8: static_cast<uint8_t*>(row)[i] = static_cast<uint8_t>(v); return;
    case NumType::Int16: static_cast<int16_t*>(row)[i] = static_cast<int16_t>(v); return;
    case NumType::Int32: static_cast<int32_t*>(row)[i] = static_cast<int32_t>(v); return;
    default: throw InternalError("store_int: not an integer type");
  }
}

uint32_t load_f32(NumType t, const void* row, size_t i) {
  if (t == NumType::Bf16) return bf16_to_f32(static_cast<const uint16_t*>(row)[i]);
  uint32_t bits;
  std::memcpy(&bits, static_cast<const char*>(row) + 4 * i, 4);
  return f32_canonical(bits);
}

void store_f32(NumType t, void* row, size_t i, uint32_t bits) {
  if (t == NumType::Bf16) {
    static_cast<uint16_t*>(row)[i] = f32_to_bf16(bits);
    return;
  }
  bits = f32_canonical(bits);
  std::memcpy(static_cast<char*>(row) + 4 * i, &bits, 4);
}

void convert_element(NumType from, const void* src, size_t i, NumType to, void* dst, size_t j) {
  if (!is_float_type(from)) {
    const int64_t v = load_int(from, src, i);
    if (!is_float_type(to)) {
      const int64_t lo = int_type_min(to), hi = int_type_max(to);
      store_int(to, dst, j, v < lo ? lo : (v > hi ? hi : v));
    } else if (to == NumType::Bf16) {
      static_cast<uint16_t*>(dst)[j] = static_cast<uint16_t>(int_to_f32_rounded(v, 8) >> 16);
    } else {
      store_f32(to, dst, j, int_to_f32_rounded(v, 24));
    }
    return;
  }
  const uint32_t x = load_f32(from, src, i);
  if (is_float_type(to)) {
    store_f32(to, dst, j, x);
  } else {
    store_int(to, dst, j, f32_to_int_rne_sat(x, int_type_min(to), int_type_max(to)));
  }
}

void convert_row(NumType from, const void* src, NumType to, void* dst, size_t n) {
  // Common fast cases first; the general element path covers the rest.
  if (from == NumType::Fp32 && to == NumType::Bf16) {
    const auto* s = static_cast<const uint32_t*>(src);
    auto* d = static_cast<uint16_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(s[i]);
    return;
  }
  if (from == NumType::Bf16 && to == NumType::Fp32) {
    const auto* s = static_cast<const uint16_t*>(src);
    auto* d = static_cast<uint32_t*>(dst);
    for (size_t i = 0; i < n; ++i) d[i] = bf16_to_f32(s[i]);
    return;
  }
  for (size_t i = 0; i < n; ++i) convert_element(from, src, i, to, dst, i);
}

}  // namespace vtpu::numerics
