#pragma once
// Two interchangeable implementations of the fp32 primitive operations on bit patterns.
// Algorithms (vector ops, transcendentals) are written once as templates over them:
// SoftArith is the reference (integer soft-float), HostArith runs on the host FPU and is
// only valid inside a HostFpScope (RNE, FTZ, DAZ). Both give identical bits except NaN
// payloads, which the algorithms canonicalize.
#include <cstdint>

#include "vtpu/numerics/float.h"

namespace vtpu::numerics::detail {

struct SoftArith {
  static uint32_t add(uint32_t a, uint32_t b) { return sf::add(a, b); }
  static uint32_t sub(uint32_t a, uint32_t b) { return sf::sub(a, b); }
  static uint32_t mul(uint32_t a, uint32_t b) { return sf::mul(a, b); }
  static uint32_t div(uint32_t a, uint32_t b) { return sf::div(a, b); }
  static uint32_t sqrt(uint32_t a) { return sf::sqrt(a); }
};

#if defined(__x86_64__) || defined(__i386__)
struct HostArith {
  static uint32_t add(uint32_t a, uint32_t b) { return f32_bits(f32_from_bits(a) + f32_from_bits(b)); }
  static uint32_t sub(uint32_t a, uint32_t b) { return f32_bits(f32_from_bits(a) - f32_from_bits(b)); }
  static uint32_t mul(uint32_t a, uint32_t b) { return f32_bits(f32_from_bits(a) * f32_from_bits(b)); }
  static uint32_t div(uint32_t a, uint32_t b) { return f32_bits(f32_from_bits(a) / f32_from_bits(b)); }
  static uint32_t sqrt(uint32_t a) { return f32_bits(__builtin_sqrtf(f32_from_bits(a))); }
};
#else
using HostArith = SoftArith;
#endif

}  // namespace vtpu::numerics::detail
