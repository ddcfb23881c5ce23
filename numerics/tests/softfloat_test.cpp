// The software floating point against hand-computed bit patterns and against the x86 FPU
// run with FTZ/DAZ (an independent implementation of the same policy).
#include <gtest/gtest.h>

#include <random>

#include "vtpu/numerics/float.h"

namespace vtpu::numerics {
namespace {

TEST(SoftFloat, HandPickedAdd) {
  EXPECT_EQ(sf::add(0x3F800000u, 0x3F800000u), 0x40000000u);  // 1 + 1 = 2
  EXPECT_EQ(sf::add(0x3F800000u, 0x33800000u), 0x3F800000u);  // 1 + 2^-24: tie to even
  EXPECT_EQ(sf::add(0x3F800001u, 0x33800000u), 0x3F800002u);  // tie, odd -> up
  EXPECT_EQ(sf::add(0x3F800000u, 0x33800001u), 0x3F800001u);  // just above the tie
  EXPECT_EQ(sf::add(0x80000000u, 0x80000000u), 0x80000000u);  // -0 + -0 = -0
  EXPECT_EQ(sf::add(0x00000000u, 0x80000000u), 0x00000000u);  // +0 + -0 = +0
  EXPECT_EQ(sf::add(0x3F800000u, 0xBF800000u), 0x00000000u);  // x - x = +0
  EXPECT_EQ(sf::add(0x7F800000u, 0xFF800000u), kF32QNaN);     // inf - inf
  EXPECT_EQ(sf::add(0xFFC01234u, 0x3F800000u), kF32QNaN);     // NaN canonical
  EXPECT_EQ(sf::add(0x7F7FFFFFu, 0x73000000u), 0x7F800000u);  // max + 2^103 (half ulp): tie, odd -> inf
  EXPECT_EQ(sf::add(0x7F7FFFFFu, 0x72FFFFFFu), 0x7F7FFFFFu);  // below the tie: stays max
  EXPECT_EQ(sf::add(0x00C00000u, 0x80800000u), 0x00000000u);  // 1.5*2^-126 - 2^-126: tiny -> +0
  EXPECT_EQ(sf::add(0x80C00000u, 0x00800000u), 0x80000000u);  // -> -0
  EXPECT_EQ(sf::add(0x00400000u, 0x00800000u), 0x00800000u);  // denormal input read as 0
}

TEST(SoftFloat, HandPickedMulDivSqrt) {
  EXPECT_EQ(sf::mul(0x3FC00000u, 0x3FC00000u), 0x40100000u);  // 1.5 * 1.5 = 2.25
  EXPECT_EQ(sf::mul(0x00000000u, 0x7F800000u), kF32QNaN);     // 0 x inf
  EXPECT_EQ(sf::mul(0x80000000u, 0x3F800000u), 0x80000000u);  // -0 * 1 = -0
  EXPECT_EQ(sf::mul(0x00800000u, 0x3F000000u), 0x00000000u);  // 2^-127: tiny -> 0
  EXPECT_EQ(sf::mul(0x80800000u, 0x3F000000u), 0x80000000u);  // -> -0
  EXPECT_EQ(sf::mul(0x7F000000u, 0x40000000u), 0x7F800000u);  // 2^128: overflow
  // Tininess after rounding: (1 - 2^-23) * (1 + 2^-23) * 2^-126 = (1 - 2^-46) * 2^-126 rounds
  // (24 bits, unbounded exponent) to exactly 2^-126, which is normal: not flushed.
  EXPECT_EQ(sf::mul(0x3F7FFFFEu, 0x00800001u), 0x00800000u);
  // ... while (1 - 2^-24) * 2^-126 is exact and below 2^-126: flushed.
  EXPECT_EQ(sf::mul(0x3F7FFFFFu, 0x00800000u), 0x00000000u);
  EXPECT_EQ(sf::div(0x3F800000u, 0x40400000u), 0x3EAAAAABu);  // 1/3
  EXPECT_EQ(sf::div(0x3F800000u, 0x00000000u), 0x7F800000u);  // 1/0 = inf
  EXPECT_EQ(sf::div(0x3F800000u, 0x80000000u), 0xFF800000u);  // 1/-0 = -inf
  EXPECT_EQ(sf::div(0x00000000u, 0x00000000u), kF32QNaN);
  EXPECT_EQ(sf::div(0x3F800000u, 0x7F000000u), 0x00000000u);  // 2^-127: tiny
  EXPECT_EQ(sf::sqrt(0x40800000u), 0x40000000u);              // sqrt 4 = 2
  EXPECT_EQ(sf::sqrt(0x40000000u), 0x3FB504F3u);              // sqrt 2
  EXPECT_EQ(sf::sqrt(0x80000000u), 0x80000000u);              // sqrt -0 = -0
  EXPECT_EQ(sf::sqrt(0xBF800000u), kF32QNaN);                 // sqrt -1
  EXPECT_EQ(sf::sqrt(0x00000001u), 0x00000000u);              // denormal -> 0
}

TEST(SoftFloat, MaxMin) {
  EXPECT_EQ(sf::max(0x80000000u, 0x00000000u), 0x00000000u);  // max(-0, +0) = +0
  EXPECT_EQ(sf::min(0x00000000u, 0x80000000u), 0x80000000u);  // min(+0, -0) = -0
  EXPECT_EQ(sf::max(0x7FC00001u, 0x3F800000u), kF32QNaN);
  EXPECT_EQ(sf::min(0xBF800000u, 0x3F800000u), 0xBF800000u);
  EXPECT_EQ(sf::max(0xFF800000u, 0xC0000000u), 0xC0000000u);
}

TEST(SoftFloat, Bf16Conversions) {
  EXPECT_EQ(f32_to_bf16(0x3F808000u), 0x3F80u);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(0x3F818000u), 0x3F82u);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(0x3F808001u), 0x3F81u);  // above the tie
  EXPECT_EQ(f32_to_bf16(0x7F7FFFFFu), 0x7F80u);  // rounds to inf
  EXPECT_EQ(f32_to_bf16(0x7F7F7FFFu), 0x7F7Fu);  // below the tie: max bf16
  EXPECT_EQ(f32_to_bf16(0xFFC01234u), 0x7FC0u);  // NaN canonical
  EXPECT_EQ(f32_to_bf16(0x7F800001u), 0x7FC0u);  // NaN whose payload sits in the low bits
  EXPECT_EQ(f32_to_bf16(0x807FFFFFu), 0x8000u);  // denormal -> -0
  EXPECT_EQ(bf16_to_f32(0x0001u), 0x00000000u);  // bf16 denormal -> +0
  EXPECT_EQ(bf16_to_f32(0xFF81u), kF32QNaN);
  EXPECT_EQ(bf16_to_f32(0xC2F7u), 0xC2F70000u);  // exact
}

// Host SSE arithmetic under FTZ/DAZ + canonicalized NaN equals the soft-float on random
// operands drawn across the whole range, near the denormal boundary and near overflow.
uint32_t random_operand(std::mt19937& rng) {
  const uint32_t r = rng();
  switch (rng() % 8) {
    case 0: return r;                                               // anything, incl. NaN
    case 1: return (r & 0x807FFFFFu) | (((r >> 23) % 8) << 23);      // denormal or tiny
    case 2: return (r & 0x807FFFFFu) | ((250 + (r >> 23) % 5) << 23);  // huge
    case 3: return (r & 0x80FFFFFFu) | 0x3F000000u;                  // around 1
    default: return (r & 0x807FFFFFu) | ((100 + (r >> 23) % 56) << 23);
  }
}

TEST(SoftFloat, MatchesHostFpuWithFtzDaz) {
  if (!host_fp_is_exact()) GTEST_SKIP() << "no host FPU path on this architecture";
  std::mt19937 rng(7);
  HostFpScope fp;
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t a = random_operand(rng), b = random_operand(rng);
    // volatile keeps the compiler from folding or reordering across the scope
    volatile float fa = f32_from_bits(a), fb = f32_from_bits(b);
    const uint32_t add = f32_canonical(f32_bits(fa + fb));
    const uint32_t mul = f32_canonical(f32_bits(fa * fb));
    const uint32_t div = f32_canonical(f32_bits(fa / fb));
    const uint32_t sq = f32_canonical(f32_bits(__builtin_sqrtf(fa)));
    ASSERT_EQ(sf::add(a, b), add) << std::hex << a << " + " << b;
    ASSERT_EQ(sf::sub(a, b), f32_canonical(f32_bits(fa - fb))) << std::hex << a << " - " << b;
    ASSERT_EQ(sf::mul(a, b), mul) << std::hex << a << " * " << b;
    ASSERT_EQ(sf::div(a, b), div) << std::hex << a << " / " << b;
    ASSERT_EQ(sf::sqrt(a), sq) << std::hex << "sqrt " << a;
  }
}

}  // namespace
}  // namespace vtpu::numerics
