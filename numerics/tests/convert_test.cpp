// Conversions at their boundaries, computed by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "vtpu/numerics/convert.h"
#include "vtpu/numerics/float.h"

namespace vtpu::numerics {
namespace {

template <class To, class From>
To cvt(NumType from, From v, NumType to) {
  To out{};
  convert_element(from, &v, 0, to, &out, 0);
  return out;
}

TEST(Convert, IntToInt) {
  EXPECT_EQ(cvt<int8_t>(NumType::Int32, int32_t{200}, NumType::Int8), 127);
  EXPECT_EQ(cvt<int8_t>(NumType::Int32, int32_t{-129}, NumType::Int8), -128);
  EXPECT_EQ(cvt<int8_t>(NumType::Int32, int32_t{-128}, NumType::Int8), -128);
  EXPECT_EQ(cvt<uint8_t>(NumType::Int8, int8_t{-1}, NumType::Uint8), 0);
  EXPECT_EQ(cvt<int8_t>(NumType::Uint8, uint8_t{255}, NumType::Int8), 127);
  EXPECT_EQ(cvt<int16_t>(NumType::Int32, int32_t{-40000}, NumType::Int16), -32768);
  EXPECT_EQ(cvt<int32_t>(NumType::Int8, int8_t{-128}, NumType::Int32), -128);
  EXPECT_EQ(cvt<int32_t>(NumType::Uint8, uint8_t{200}, NumType::Int32), 200);
}

TEST(Convert, IntToFloat) {
  // 2^24 + 1 is a tie between 2^24 and 2^24 + 2: even -> 2^24.
  EXPECT_EQ(cvt<uint32_t>(NumType::Int32, int32_t{16777217}, NumType::Fp32), 0x4B800000u);
  EXPECT_EQ(cvt<uint32_t>(NumType::Int32, int32_t{16777219}, NumType::Fp32), 0x4B800002u);  // tie -> up (even)
  EXPECT_EQ(cvt<uint32_t>(NumType::Int32, INT32_MAX, NumType::Fp32), 0x4F000000u);  // 2^31
  EXPECT_EQ(cvt<uint32_t>(NumType::Int32, INT32_MIN, NumType::Fp32), 0xCF000000u);
  EXPECT_EQ(cvt<uint32_t>(NumType::Int32, int32_t{0}, NumType::Fp32), 0x00000000u);
  EXPECT_EQ(cvt<uint32_t>(NumType::Int32, int32_t{-3}, NumType::Fp32), 0xC0400000u);
  // int32 -> bf16 rounds once: 257 is a tie between 256 and 258 -> 256 (0x4380);
  // 259 -> 260 (0x4382) as a tie to even.
  EXPECT_EQ(cvt<uint16_t>(NumType::Int32, int32_t{257}, NumType::Bf16), 0x4380u);
  EXPECT_EQ(cvt<uint16_t>(NumType::Int32, int32_t{259}, NumType::Bf16), 0x4382u);
  // 2^24 + 2^16 + 1: direct bf16 rounding sees "just above half" and rounds up to 2^24+2^17;
  // rounding to fp32 first would give 2^24 + 2^16 (a tie) and then 2^24 (even).
  EXPECT_EQ(cvt<uint16_t>(NumType::Int32, int32_t{(1 << 24) + (1 << 16) + 1}, NumType::Bf16), 0x4B81u);
  EXPECT_EQ(cvt<uint16_t>(NumType::Int8, int8_t{-128}, NumType::Bf16), 0xC300u);
}

TEST(Convert, FloatToInt) {
  const auto f2i = [](float f, NumType to) {
    const uint32_t b = f32_bits(f);
    int64_t out = 0;
    int32_t o32 = 0;
    int16_t o16 = 0;
    int8_t o8 = 0;
    uint8_t u8 = 0;
    switch (to) {
      case NumType::Int32: convert_element(NumType::Fp32, &b, 0, to, &o32, 0); out = o32; break;
      case NumType::Int16: convert_element(NumType::Fp32, &b, 0, to, &o16, 0); out = o16; break;
      case NumType::Int8: convert_element(NumType::Fp32, &b, 0, to, &o8, 0); out = o8; break;
      default: convert_element(NumType::Fp32, &b, 0, to, &u8, 0); out = u8; break;
    }
    return out;
  };
  EXPECT_EQ(f2i(2.5f, NumType::Int8), 2);    // half to even
  EXPECT_EQ(f2i(3.5f, NumType::Int8), 4);
  EXPECT_EQ(f2i(-2.5f, NumType::Int8), -2);
  EXPECT_EQ(f2i(-0.5f, NumType::Int8), 0);
  EXPECT_EQ(f2i(0.50000006f, NumType::Int8), 1);
  EXPECT_EQ(f2i(127.5f, NumType::Int8), 127);  // 128 saturates
  EXPECT_EQ(f2i(-128.6f, NumType::Int8), -128);
  EXPECT_EQ(f2i(-1.0f, NumType::Uint8), 0);
  EXPECT_EQ(f2i(255.4f, NumType::Uint8), 255);
  EXPECT_EQ(f2i(1e10f, NumType::Int32), INT32_MAX);
  EXPECT_EQ(f2i(-1e10f, NumType::Int32), INT32_MIN);
  EXPECT_EQ(f2i(2147483520.0f, NumType::Int32), 2147483520);  // largest fp32 below 2^31
  EXPECT_EQ(f2i(-2147483648.0f, NumType::Int32), INT32_MIN);
  EXPECT_EQ(f2i(std::nanf(""), NumType::Int32), 0);
  EXPECT_EQ(f2i(INFINITY, NumType::Int16), 32767);
  EXPECT_EQ(f2i(-INFINITY, NumType::Int16), -32768);
  EXPECT_EQ(f2i(1e-40f, NumType::Int32), 0);  // denormal
  EXPECT_EQ(f2i(8388609.0f, NumType::Int32), 8388609);
  // bf16 -> int8: 0x4300 = 128 saturates; 0xC2FF = -127.5 -> -128 (even).
  EXPECT_EQ(cvt<int8_t>(NumType::Bf16, uint16_t{0x4300}, NumType::Int8), 127);
  EXPECT_EQ(cvt<int8_t>(NumType::Bf16, uint16_t{0xC2FF}, NumType::Int8), -128);
}

TEST(Convert, FloatToInt32MatchesHostRounding) {
  // Independent reference: nearbyint in the default (nearest-even) mode, then saturation.
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const uint32_t b = (rng() & 0x80FFFFFFu) | ((110 + rng() % 50) << 23);
    const double r = std::nearbyint(static_cast<double>(f32_from_bits(b)));
    const int64_t want = r > INT32_MAX ? INT32_MAX : (r < INT32_MIN ? INT32_MIN : static_cast<int64_t>(r));
    ASSERT_EQ(f32_to_int32(b), want) << std::hex << b;
  }
}

TEST(Convert, FloatToFloat) {
  EXPECT_EQ(cvt<uint16_t>(NumType::Fp32, uint32_t{0x3F808000u}, NumType::Bf16), 0x3F80u);
  EXPECT_EQ(cvt<uint16_t>(NumType::Fp32, uint32_t{0x7F7FFFFFu}, NumType::Bf16), 0x7F80u);
  EXPECT_EQ(cvt<uint32_t>(NumType::Bf16, uint16_t{0x8001u}, NumType::Fp32), 0x80000000u);
  EXPECT_EQ(cvt<uint32_t>(NumType::Fp32, uint32_t{0x00000001u}, NumType::Fp32), 0u);  // fp32 -> fp32 applies DAZ
  EXPECT_EQ(cvt<uint32_t>(NumType::Fp32, uint32_t{0xFFFFFFFFu}, NumType::Fp32), kF32QNaN);
  EXPECT_EQ(cvt<int32_t>(NumType::Int32, int32_t{-7}, NumType::Int32), -7);
}

TEST(Convert, DoubleToFloat) {
  EXPECT_EQ(f64_to_f32(1.0), 0x3F800000u);
  EXPECT_EQ(f64_to_f32(0.1), 0x3DCCCCCDu);
  EXPECT_EQ(f64_to_f32(1e39), 0x7F800000u);
  EXPECT_EQ(f64_to_f32(-1e-39), 0x80000000u);  // would be an fp32 denormal: flushed
  EXPECT_EQ(f64_to_f32(-INFINITY), 0xFF800000u);
  EXPECT_EQ(f64_to_f32(1.0 + 0x1p-24), 0x3F800000u);  // tie -> even
  std::mt19937_64 rng(5);
  for (int i = 0; i < 100000; ++i) {  // the host conversion agrees for normal results
    double d;
    uint64_t bits = (rng() & 0x800FFFFFFFFFFFFFull) | (uint64_t{1023 - 100 + rng() % 200} << 52);
    std::memcpy(&d, &bits, 8);
    ASSERT_EQ(f64_to_f32(d), f32_bits(static_cast<float>(d)));
  }
}

TEST(Convert, IntBounds) {
  EXPECT_EQ(int_clamp_bounds(NumType::Int8, -INFINITY, INFINITY).lo, -128);
  EXPECT_EQ(int_clamp_bounds(NumType::Int8, -INFINITY, INFINITY).hi, 127);
  EXPECT_EQ(int_clamp_bounds(NumType::Int8, -3.5, 6.5).lo, -3);
  EXPECT_EQ(int_clamp_bounds(NumType::Int8, -3.5, 6.5).hi, 6);
  EXPECT_EQ(int_clamp_bounds(NumType::Uint8, -10, 1000).lo, 0);
  EXPECT_EQ(int_clamp_bounds(NumType::Uint8, -10, 1000).hi, 255);
}

}  // namespace
}  // namespace vtpu::numerics

namespace {

// fp16 model data -> fp32: every one of the 65536 fp16 patterns against the host compiler's
// _Float16 conversion (NaNs: any NaN).
TEST(Convert, Fp16ToFp32MatchesHostForEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    uint16_t bits = uint16_t(h);
    _Float16 x;
    std::memcpy(&x, &bits, 2);
    float want = float(x);
    uint32_t got = vtpu::numerics::f16_to_f32_bits(bits);
    if (std::isnan(want)) EXPECT_TRUE(vtpu::numerics::f32_is_nan(got)) << std::hex << h;
    else EXPECT_EQ(got, vtpu::numerics::f32_bits(want)) << std::hex << h;
  }
}

}  // namespace
