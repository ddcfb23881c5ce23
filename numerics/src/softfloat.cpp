// Software fp32 arithmetic in integer operations: the reference for every floating-point
// kernel of vtpu and the algorithm the RTL implements (docs/numerics.md, "Floating point").
//
// Internal form: a significand `sig` whose leading one sits at bit 30, so bits 29..7 are
// the rest of the 24-bit significand and bits 6..0 are round bits, the lowest one doubling
// as a sticky bit for everything shifted out below it. `exp` is the biased exponent of
// the value sig / 2^30 * 2^(exp - 127), kept as a plain int (no clamping before rounding:
// rounding happens with an unbounded exponent, then the range is checked).
#include "vtpu/numerics/float.h"

#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VTPU_NUMERICS_X86 1
#endif

namespace vtpu::numerics {
namespace {

constexpr uint32_t kSign = 0x80000000u;

uint32_t sign_of(uint32_t x) { return x & kSign; }
int exp_of(uint32_t x) { return static_cast<int>((x >> 23) & 0xFFu); }
uint32_t frac_of(uint32_t x) { return x & 0x007FFFFFu; }
bool is_zero(uint32_t x) { return (x & 0x7FFFFFFFu) == 0; }

// Shifts right by n, ORing every bit shifted out into bit 0 ("jamming").
uint32_t shift_right_jam32(uint32_t v, int n) {
  if (n <= 0) return v;
  if (n >= 32) return v != 0 ? 1u : 0u;
  return (v >> n) | ((v & ((1u << n) - 1)) != 0 ? 1u : 0u);
}
uint64_t shift_right_jam64(uint64_t v, int n) {
  if (n <= 0) return v;
  if (n >= 64) return v != 0 ? 1u : 0u;
  return (v >> n) | ((v & ((uint64_t{1} << n) - 1)) != 0 ? 1u : 0u);
}

// Rounds sig (leading one at bit 30 or bit 31 after a carry is handled here) to 24 bits,
// ties to even, then applies the exponent range: overflow -> infinity (what RNE gives),
// tiny (exp <= 0 after rounding) -> zero with the sign of the exact result.
uint32_t round_pack(uint32_t sign, int exp, uint32_t sig) {
  const uint32_t round_bits = sig & 0x7Fu;
  sig += 0x40u;
  if (sig & 0x80000000u) {  // rounding carried into bit 31: 2.0 -> 1.0 x 2
    sig >>= 1;
    exp += 1;
  }
  sig >>= 7;
  if (round_bits == 0x40u) sig &= ~1u;  // exact tie: to even
  if (exp >= 0xFF) return sign | kF32Inf;
  if (exp <= 0) return sign;  // FTZ: tiny after rounding
  return sign | (static_cast<uint32_t>(exp) << 23) | (sig & 0x007FFFFFu);
}

// Moves the leading one of a nonzero sig up to bit 30.
void normalize(int& exp, uint32_t& sig) {
  const int lead = 31 - __builtin_clz(sig);
  if (lead < 30) {
    sig <<= (30 - lead);
    exp -= (30 - lead);
  }
}

// |a| + |b| or |a| - |b| for nonzero normal finite a, b (DAZ already applied).
uint32_t add_magnitudes(uint32_t a, uint32_t b, uint32_t sign) {
  int ea = exp_of(a), eb = exp_of(b);
  uint32_t ma = (frac_of(a) | 0x00800000u) << 7;
  uint32_t mb = (frac_of(b) | 0x00800000u) << 7;
  if (ea < eb) {
    std::swap(ea, eb);
    std::swap(ma, mb);
  }
  mb = shift_right_jam32(mb, ea - eb);
  uint32_t sum = ma + mb;  // < 2^32: both < 2^31
  int exp = ea;
  if (sum & 0x80000000u) {
    sum = shift_right_jam32(sum, 1);
    exp += 1;
  }
  return round_pack(sign, exp, sum);
}

uint32_t sub_magnitudes(uint32_t a, uint32_t b, uint32_t sign_a) {
  // Result sign is a's unless |b| > |a|.
  const uint32_t mag_a = a & 0x7FFFFFFFu, mag_b = b & 0x7FFFFFFFu;
  if (mag_a == mag_b) return 0;  // x - x = +0 under round-to-nearest
  uint32_t sign = sign_a;
  if (mag_b > mag_a) {
    std::swap(a, b);
    sign ^= kSign;
  }
  const int ea = exp_of(a), eb = exp_of(b);
  const uint32_t ma = (frac_of(a) | 0x00800000u) << 7;
  // With 7 guard bits a jammed sticky bit stays below the rounding position: a shift of
  // 2 or more loses at most one leading bit, and shifts of 0 or 1 lose nothing.
  const uint32_t mb = shift_right_jam32((frac_of(b) | 0x00800000u) << 7, ea - eb);
  uint32_t diff = ma - mb;
  int exp = ea;
  normalize(exp, diff);
  return round_pack(sign, exp, diff);
}

}  // namespace

namespace sf {

uint32_t add(uint32_t a, uint32_t b) {
  a = f32_daz(a);
  b = f32_daz(b);
  if (f32_is_nan(a) || f32_is_nan(b)) return kF32QNaN;
  if (f32_is_inf(a)) {
    if (f32_is_inf(b) && sign_of(a) != sign_of(b)) return kF32QNaN;  // inf - inf
    return a;
  }
  if (f32_is_inf(b)) return b;
  if (is_zero(a)) {
    if (is_zero(b)) return a & b;  // -0 + -0 = -0, any other pair of zeros = +0
    return b;
  }
  if (is_zero(b)) return a;
  if (sign_of(a) == sign_of(b)) return add_magnitudes(a, b, sign_of(a));
  return sub_magnitudes(a, b, sign_of(a));
}

uint32_t sub(uint32_t a, uint32_t b) {
  // a - b = a + (-b), except that the sign flip must not turn a NaN into something else:
  // add() canonicalizes NaNs regardless of sign, so flipping first is safe.
  return add(a, b ^ kSign);
}

uint32_t mul(uint32_t a, uint32_t b) {
  a = f32_daz(a);
  b = f32_daz(b);
  if (f32_is_nan(a) || f32_is_nan(b)) return kF32QNaN;
  const uint32_t sign = sign_of(a) ^ sign_of(b);
  if (f32_is_inf(a) || f32_is_inf(b)) {
    if (is_zero(a) || is_zero(b)) return kF32QNaN;  // 0 x inf
    return sign | kF32Inf;
  }
  if (is_zero(a) || is_zero(b)) return sign;
  const uint64_t ma = frac_of(a) | 0x00800000u, mb = frac_of(b) | 0x00800000u;
  const uint64_t prod = ma * mb;  // leading one at bit 46 or 47
  int exp = exp_of(a) + exp_of(b) - 127;
  int shift = 16;
  if (prod & (uint64_t{1} << 47)) {
    shift = 17;
    exp += 1;
  }
  return round_pack(sign, exp, static_cast<uint32_t>(shift_right_jam64(prod, shift)));
}

uint32_t div(uint32_t a, uint32_t b) {
  a = f32_daz(a);
  b = f32_daz(b);
  if (f32_is_nan(a) || f32_is_nan(b)) return kF32QNaN;
  const uint32_t sign = sign_of(a) ^ sign_of(b);
  if (f32_is_inf(a)) return f32_is_inf(b) ? kF32QNaN : (sign | kF32Inf);
  if (f32_is_inf(b)) return sign;
  if (is_zero(b)) return is_zero(a) ? kF32QNaN : (sign | kF32Inf);
  if (is_zero(a)) return sign;
  uint64_t ma = frac_of(a) | 0x00800000u;
  const uint64_t mb = frac_of(b) | 0x00800000u;
  int exp = exp_of(a) - exp_of(b) + 127;
  if (ma < mb) {  // make the quotient fall in [1, 2)
    ma <<= 1;
    exp -= 1;
  }
  const uint64_t num = ma << 30;
  uint32_t q = static_cast<uint32_t>(num / mb);  // leading one at bit 30
  if (num % mb != 0) q |= 1u;                     // sticky
  return round_pack(sign, exp, q);
}

uint32_t sqrt(uint32_t a) {
  a = f32_daz(a);
  if (f32_is_nan(a)) return kF32QNaN;
  if (is_zero(a)) return a;  // sqrt(-0) = -0
  if (sign_of(a)) return kF32QNaN;
  if (f32_is_inf(a)) return a;
  int e = exp_of(a) - 127;
  uint64_t m = frac_of(a) | 0x00800000u;  // value = m / 2^23 * 2^e
  if (e & 1) {                            // make the exponent even
    m <<= 1;
    e -= 1;
  }
  // floor(sqrt(m / 2^23) * 2^30) = isqrt(m * 2^37); m * 2^37 < 2^62.
  const uint64_t n = m << 37;
  uint64_t root = 0, rem = n;
  for (uint64_t bit = uint64_t{1} << 62; bit != 0; bit >>= 2) {  // bit-by-bit square root
    if (rem >= root + bit) {
      rem -= root + bit;
      root = (root >> 1) + bit;
    } else {
      root >>= 1;
    }
  }
  uint32_t sig = static_cast<uint32_t>(root);  // leading one at bit 30
  if (rem != 0) sig |= 1u;
  return round_pack(0, e / 2 + 127, sig);
}

uint32_t max(uint32_t a, uint32_t b) {
  a = f32_daz(a);
  b = f32_daz(b);
  if (f32_is_nan(a) || f32_is_nan(b)) return kF32QNaN;
  // Total order on non-NaN values with -0 < +0: compare sign-magnitude as integers.
  const auto key = [](uint32_t x) -> int64_t {
    return (x & kSign) ? -static_cast<int64_t>(x & 0x7FFFFFFFu) - 1 : static_cast<int64_t>(x);
  };
  return key(a) >= key(b) ? a : b;
}

uint32_t min(uint32_t a, uint32_t b) {
  a = f32_daz(a);
  b = f32_daz(b);
  if (f32_is_nan(a) || f32_is_nan(b)) return kF32QNaN;
  const auto key = [](uint32_t x) -> int64_t {
    return (x & kSign) ? -static_cast<int64_t>(x & 0x7FFFFFFFu) - 1 : static_cast<int64_t>(x);
  };
  return key(a) <= key(b) ? a : b;
}

}  // namespace sf

#ifdef VTPU_NUMERICS_X86
HostFpScope::HostFpScope() : saved_(_mm_getcsr()) {
  // Bits: 6 DAZ, 7..12 exception masks, 13..14 rounding control (00 = nearest), 15 FTZ.
  _mm_setcsr((saved_ & ~0x7FFFu) | 0x1F80u | 0x0040u | 0x8000u);
}
HostFpScope::~HostFpScope() { _mm_setcsr(saved_); }
bool host_fp_is_exact() { return true; }
#else
HostFpScope::HostFpScope() = default;
HostFpScope::~HostFpScope() = default;
bool host_fp_is_exact() { return false; }
#endif

}  // namespace vtpu::numerics
