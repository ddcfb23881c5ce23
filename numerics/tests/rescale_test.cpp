// TOSA RESCALE: hand-computed examples and a second transcription of the spec formula.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "vtpu/numerics/rescale.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {
namespace {

constexpr int32_t kHalfQ31 = 1 << 30;  // 0.5 at shift 31, 1.0 at shift 30

TEST(ApplyScale, RoundsHalfUp) {
  // value * 2^30 / 2^31 = value / 2, rounding adds 2^30 then floors: ties go toward +inf.
  EXPECT_EQ(apply_scale_32(100, kHalfQ31, 31, false), 50);
  EXPECT_EQ(apply_scale_32(101, kHalfQ31, 31, false), 51);   // 50.5 -> 51
  EXPECT_EQ(apply_scale_32(-101, kHalfQ31, 31, false), -50); // -50.5 -> -50
  EXPECT_EQ(apply_scale_32(-3, kHalfQ31, 31, false), -1);    // -1.5 -> -1
  EXPECT_EQ(apply_scale_32(-4, kHalfQ31, 31, false), -2);
  // 0.75 = 1610612736 / 2^31: 7 * 0.75 = 5.25 -> 5; 10 * 0.75 = 7.5 -> 8
  EXPECT_EQ(apply_scale_32(7, 1610612736, 31, false), 5);
  EXPECT_EQ(apply_scale_32(10, 1610612736, 31, false), 8);
  EXPECT_EQ(apply_scale_32(-10, 1610612736, 31, false), -7);  // -7.5 -> -7
}

TEST(ApplyScale, DoubleRound) {
  // shift 32, multiplier 2^30: value / 4. Single rounding: floor(v/4 + 1/2). Double rounding
  // adds another +-2^30 (a quarter here) toward the value's sign before the shift.
  EXPECT_EQ(apply_scale_32(1, kHalfQ31, 32, false), 0);   // floor(0.75)
  EXPECT_EQ(apply_scale_32(1, kHalfQ31, 32, true), 1);    // floor(1.0)
  EXPECT_EQ(apply_scale_32(-2, kHalfQ31, 32, false), 0);  // floor(0.0)
  EXPECT_EQ(apply_scale_32(-2, kHalfQ31, 32, true), -1);  // floor(-0.25)
  EXPECT_EQ(apply_scale_32(2, kHalfQ31, 32, true), 1);    // floor(1.25)
  EXPECT_EQ(apply_scale_32(-1, kHalfQ31, 32, true), 0);   // floor(0.0)
  // No effect when shift <= 31.
  EXPECT_EQ(apply_scale_32(1, kHalfQ31, 31, true), 1);
  EXPECT_EQ(apply_scale_32(-101, kHalfQ31, 31, true), -50);
}

// The TOSA pseudo-code, transcribed separately (int64 arithmetic, valid inputs only).
int32_t tosa_apply_scale_32(int32_t value, int32_t multiplier, int8_t shift, bool double_round) {
  int64_t round = int64_t{1} << (shift - 1);
  if (double_round) {
    if (shift > 31 && value >= 0) round += int64_t{1} << 30;
    if (shift > 31 && value < 0) round -= int64_t{1} << 30;
  }
  int64_t result = static_cast<int64_t>(value) * multiplier + round;
  result = result >> shift;
  return static_cast<int32_t>(result);
}

TEST(ApplyScale, MatchesSpecTranscriptionOnValidInputs) {
  std::mt19937 rng(3);
  int checked = 0;
  for (int i = 0; i < 500000; ++i) {
    const int8_t shift = static_cast<int8_t>(2 + rng() % 61);
    const int32_t mult = static_cast<int32_t>(rng() & 0x7FFFFFFFu);
    const int64_t lim = shift - 1 >= 31 ? (int64_t{1} << 31) : (int64_t{1} << (shift - 1));
    int32_t value = static_cast<int32_t>(rng());
    if (value < -lim || value >= lim) value = static_cast<int32_t>(static_cast<int64_t>(value) % lim);
    const bool dr = rng() & 1u;
    const int64_t spec = tosa_apply_scale_32(value, mult, shift, dr);
    // TOSA's precondition on the result (fits int32) is what makes the transcription valid.
    const int64_t exact = apply_scale_32(value, mult, shift, dr);
    if (exact < INT32_MIN || exact > INT32_MAX) continue;
    ASSERT_EQ(exact, spec) << value << " * " << mult << " >> " << int(shift) << " dr=" << dr;
    ++checked;
  }
  EXPECT_GT(checked, 100000);
}

RescaleParams params(const std::vector<int32_t>& m, const std::vector<int32_t>& s, int32_t in_zp = 0,
                     int32_t out_zp = 0, bool dr = false) {
  RescaleParams p;
  p.multiplier = m;
  p.shift = s;
  p.input_zp = in_zp;
  p.output_zp = out_zp;
  p.double_round = dr;
  return p;
}

TEST(Rescale, ZeroPointsAndSaturation) {
  const std::vector<int32_t> one{kHalfQ31}, s30{30};
  RescaleParams p = params(one, s30, 5, -3);
  EXPECT_EQ(rescale_value(10, p, 0, NumType::Int8), 2);       // (10 - 5) * 1 - 3
  EXPECT_EQ(rescale_value(1000, p, 0, NumType::Int8), 127);   // saturates
  EXPECT_EQ(rescale_value(-1000, p, 0, NumType::Int8), -128);
  EXPECT_EQ(rescale_value(-1000, p, 0, NumType::Uint8), 0);
  EXPECT_EQ(rescale_value(300, p, 0, NumType::Uint8), 255);
  EXPECT_EQ(rescale_value(40000, p, 0, NumType::Int16), 32767);
  // Input zero point pushes the value past int32: exact arithmetic, then saturation.
  RescaleParams q = params(one, s30, 1, 0);
  EXPECT_EQ(rescale_value(INT32_MIN, q, 0, NumType::Int8), -128);
  EXPECT_EQ(rescale_value(INT32_MIN, q, 0, NumType::Int32), INT32_MIN);
  RescaleParams r = params(one, s30, INT32_MIN, 0);
  EXPECT_EQ(rescale_value(INT32_MAX, r, 0, NumType::Int32), INT32_MAX);
}

TEST(Rescale, ExtraClampBounds) {
  const std::vector<int32_t> one{kHalfQ31}, s30{30};
  RescaleParams p = params(one, s30);
  p.min = 0;
  p.max = 6;  // a quantized relu6
  EXPECT_EQ(rescale_value(10, p, 0, NumType::Int8), 6);
  EXPECT_EQ(rescale_value(-3, p, 0, NumType::Int8), 0);
  EXPECT_EQ(rescale_value(4, p, 0, NumType::Int8), 4);
  p.min = -1000;  // beyond the type: the type's range wins
  p.max = 1000;
  EXPECT_EQ(rescale_value(500, p, 0, NumType::Int8), 127);
}

TEST(Rescale, PerLaneRow) {
  const std::vector<int32_t> m{kHalfQ31, kHalfQ31, 1610612736, kHalfQ31};
  const std::vector<int32_t> s{30, 31, 31, 32};
  RescaleParams p = params(m, s, 0, 1, true);
  const int32_t in[4] = {7, 7, 7, 1};
  int8_t out[4];
  rescale_row(NumType::Int32, in, NumType::Int8, out, 4, p);
  EXPECT_EQ(out[0], 8);  // 7 * 1 + 1
  EXPECT_EQ(out[1], 5);  // 3.5 -> 4, + 1
  EXPECT_EQ(out[2], 6);  // 5.25 -> 5, + 1
  EXPECT_EQ(out[3], 2);  // 0.25 double-rounded -> 1, + 1
  // Per tensor: one multiplier for all lanes; int8 input with a zero point.
  const std::vector<int32_t> m1{kHalfQ31}, s1{31};
  RescaleParams t = params(m1, s1, -128, 0);
  const int8_t in8[3] = {-128, 0, 127};
  int16_t out16[3];
  rescale_row(NumType::Int8, in8, NumType::Int16, out16, 3, t);
  EXPECT_EQ(out16[0], 0);
  EXPECT_EQ(out16[1], 64);
  EXPECT_EQ(out16[2], 128);  // 255 / 2 = 127.5 -> 128
}

TEST(Rescale, ValidateRejectsBadParameters) {
  const std::vector<int32_t> good_m{kHalfQ31}, good_s{31}, neg_m{-1}, s1{1}, s63{63}, two{31, 31};
  EXPECT_NO_THROW(validate_rescale(params(good_m, good_s), NumType::Int32, NumType::Int8, 16));
  EXPECT_THROW(validate_rescale(params(neg_m, good_s), NumType::Int32, NumType::Int8, 16), UserError);
  EXPECT_THROW(validate_rescale(params(good_m, s1), NumType::Int32, NumType::Int8, 16), UserError);
  EXPECT_THROW(validate_rescale(params(good_m, s63), NumType::Int32, NumType::Int8, 16), UserError);
  EXPECT_THROW(validate_rescale(params(good_m, two), NumType::Int32, NumType::Int8, 16), UserError);
  EXPECT_THROW(validate_rescale(params(good_m, good_s), NumType::Fp32, NumType::Int8, 16), UserError);
  try {
    validate_rescale(params(good_m, s63), NumType::Int32, NumType::Int8, 16);
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shift[0] = 63"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtpu::numerics
