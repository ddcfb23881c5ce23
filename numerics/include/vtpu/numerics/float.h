#pragma once
// Bit-level fp32 / bf16 arithmetic with vtpu's one floating-point policy (docs/numerics.md):
//   - round to nearest, ties to even, everywhere;
//   - denormal inputs are read as zero of the same sign (DAZ);
//   - a result whose magnitude, after rounding to 24 bits with an unbounded exponent, is
//     below 2^-126 becomes zero with the sign of the exact result (FTZ, tininess after
//     rounding, as x86 MXCSR.FTZ does);
//   - every NaN result is the canonical quiet NaN 0x7FC00000 (bf16: 0x7FC0);
//   - signed zeros follow IEEE 754 (x + (-x) = +0, -0 + -0 = -0).
//
// The `sf` functions are a software implementation in integer arithmetic: they are the
// reference the fast host-FPU kernels are tested against and what the RTL implements.
// Values are passed as raw bit patterns so no host floating-point unit is involved.
#include <bit>
#include <cstdint>

namespace vtpu::numerics {

inline constexpr uint32_t kF32QNaN = 0x7FC00000u;  // canonical fp32 NaN
inline constexpr uint16_t kBf16QNaN = 0x7FC0u;     // canonical bf16 NaN
inline constexpr uint32_t kF32Inf = 0x7F800000u;
inline constexpr uint16_t kBf16Inf = 0x7F80u;

constexpr uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }
constexpr float f32_from_bits(uint32_t b) { return std::bit_cast<float>(b); }

constexpr bool f32_is_nan(uint32_t x) { return (x & 0x7FFFFFFFu) > 0x7F800000u; }
constexpr bool f32_is_inf(uint32_t x) { return (x & 0x7FFFFFFFu) == 0x7F800000u; }
constexpr bool f32_is_denormal(uint32_t x) { return (x & 0x7F800000u) == 0 && (x & 0x007FFFFFu) != 0; }
constexpr bool bf16_is_nan(uint16_t x) { return (x & 0x7FFFu) > 0x7F80u; }

// DAZ: a denormal reads as the zero of the same sign; everything else is unchanged.
constexpr uint32_t f32_daz(uint32_t x) { return (x & 0x7F800000u) == 0 ? (x & 0x80000000u) : x; }

// The policy applied to a value that is stored (an operation's input read or output):
// denormal -> signed zero, NaN -> canonical NaN.
constexpr uint32_t f32_canonical(uint32_t x) { return f32_is_nan(x) ? kF32QNaN : f32_daz(x); }

// bf16 -> fp32 as a pure bit move (exact; used where the consumer applies DAZ itself).
constexpr uint32_t bf16_to_f32_bits(uint16_t h) { return uint32_t{h} << 16; }

// bf16 -> fp32 under the policy (vec.cvt): exact, except denormal -> signed zero and
// NaN -> canonical NaN.
constexpr uint32_t bf16_to_f32(uint16_t h) { return f32_canonical(uint32_t{h} << 16); }

// IEEE binary16 (fp16) -> fp32 bit pattern, exactly (fp16 denormals are fp32 normals; inf and
// NaN keep their class). For models and files that carry fp16 data; the chip has no fp16.
constexpr uint32_t f16_to_f32_bits(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1F) return sign | 0x7F800000u | (man << 13);
  if (exp != 0) return sign | ((exp + 112) << 23) | (man << 13);
  if (man == 0) return sign;
  int e = 113;  // normalize the denormal: value = man x 2^-24
  while (!(man & 0x400u)) man <<= 1, --e;
  return sign | (uint32_t(e) << 23) | ((man & 0x3FFu) << 13);
}

// fp32 -> bf16, round to nearest even. Denormal inputs give signed zero; NaN gives 0x7FC0;
// values that round past the largest bf16 become infinity. Since bf16 has fp32's exponent
// range, a normal input never rounds to a bf16 denormal.
constexpr uint16_t f32_to_bf16(uint32_t x) {
  x = f32_daz(x);
  if (f32_is_nan(x)) return kBf16QNaN;
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + lsb) >> 16);
}

// Software floating point (the reference). All arguments and results are fp32 bit patterns.
namespace sf {
uint32_t add(uint32_t a, uint32_t b);
uint32_t sub(uint32_t a, uint32_t b);
uint32_t mul(uint32_t a, uint32_t b);
uint32_t div(uint32_t a, uint32_t b);
uint32_t sqrt(uint32_t a);
// IEEE 754-2019 maximum / minimum: NaN if either is NaN, -0 < +0. Inputs get DAZ.
uint32_t max(uint32_t a, uint32_t b);
uint32_t min(uint32_t a, uint32_t b);
}  // namespace sf

// Sets the host's floating-point environment to the policy above for the lifetime of the
// object (x86: MXCSR round-to-nearest, FTZ, DAZ, all exceptions masked) and restores the
// caller's environment afterwards. Host float arithmetic done under it matches the `sf`
// functions bit for bit except for NaN payloads, which callers canonicalize when storing.
class HostFpScope {
 public:
  HostFpScope();
  ~HostFpScope();
  HostFpScope(const HostFpScope&) = delete;
  HostFpScope& operator=(const HostFpScope&) = delete;

 private:
  unsigned saved_ = 0;
};

// True when this build does float arithmetic on the host FPU (x86-64); elsewhere the
// library falls back to the `sf` functions.
bool host_fp_is_exact();

}  // namespace vtpu::numerics
