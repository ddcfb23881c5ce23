// Vector-unit rows: hand-computed cases per dtype, and host == soft-float reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "vtpu/numerics/float.h"
#include "vtpu/numerics/vector.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {
namespace {

template <class T>
T bin(BinaryOp op, NumType dt, T a, T b) {
  T out{};
  binary_row(op, dt, &a, &b, &out, 1);
  return out;
}

uint32_t f(float x) { return f32_bits(x); }

TEST(VectorInt, NarrowTypesSaturate) {
  EXPECT_EQ(bin<int8_t>(BinaryOp::Add, NumType::Int8, 100, 100), 127);
  EXPECT_EQ(bin<int8_t>(BinaryOp::Sub, NumType::Int8, -100, 100), -128);
  EXPECT_EQ(bin<int8_t>(BinaryOp::Mul, NumType::Int8, 16, 16), 127);
  EXPECT_EQ(bin<int8_t>(BinaryOp::Mul, NumType::Int8, -16, 8), -128);
  EXPECT_EQ(bin<uint8_t>(BinaryOp::Sub, NumType::Uint8, 5, 10), 0);
  EXPECT_EQ(bin<uint8_t>(BinaryOp::Add, NumType::Uint8, 200, 100), 255);
  EXPECT_EQ(bin<int16_t>(BinaryOp::Mul, NumType::Int16, 300, 300), 32767);
  EXPECT_EQ(bin<int8_t>(BinaryOp::Max, NumType::Int8, -5, 3), 3);
  EXPECT_EQ(bin<int8_t>(BinaryOp::Min, NumType::Int8, -5, 3), -5);
}

TEST(VectorInt, Int32Wraps) {
  EXPECT_EQ(bin<int32_t>(BinaryOp::Add, NumType::Int32, INT32_MAX, 1), INT32_MIN);
  EXPECT_EQ(bin<int32_t>(BinaryOp::Sub, NumType::Int32, INT32_MIN, 1), INT32_MAX);
  EXPECT_EQ(bin<int32_t>(BinaryOp::Mul, NumType::Int32, 65536, 65536), 0);
  EXPECT_EQ(bin<int32_t>(BinaryOp::Mul, NumType::Int32, 65537, 65537), 131073);  // 2^32 + 2^17 + 1
}

TEST(VectorFloat, Fp32Policy) {
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Add, NumType::Fp32, 0x3F800000u, 0x33800000u), 0x3F800000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Sub, NumType::Fp32, 0x3F800000u, 0x3F800000u), 0x00000000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Add, NumType::Fp32, 0x80000000u, 0x80000000u), 0x80000000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Mul, NumType::Fp32, 0x00800000u, 0x3F000000u), 0x00000000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Mul, NumType::Fp32, 0x3F7FFFFEu, 0x00800001u), 0x00800000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Mul, NumType::Fp32, 0x7F800000u, 0x00000000u), kF32QNaN);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Add, NumType::Fp32, 0xFFC00001u, 0x3F800000u), kF32QNaN);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Max, NumType::Fp32, 0x80000000u, 0x00000000u), 0x00000000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Min, NumType::Fp32, 0x00000000u, 0x80000000u), 0x80000000u);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Max, NumType::Fp32, 0x7FC00000u, 0x3F800000u), kF32QNaN);
  EXPECT_EQ(bin<uint32_t>(BinaryOp::Add, NumType::Fp32, 0x00000001u, 0x00000000u), 0x00000000u);
}

TEST(VectorFloat, Bf16ComputesInFp32ThenRoundsOnce) {
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Add, NumType::Bf16, 0x3F80, 0x3B80), 0x3F80);  // 1 + 2^-8: tie -> even
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Add, NumType::Bf16, 0x3F81, 0x3B80), 0x3F82);  // tie, odd -> up
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Mul, NumType::Bf16, 0x3FC0, 0x3FC0), 0x4010);  // 1.5^2 = 2.25
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Mul, NumType::Bf16, 0x3F81, 0x3F81), 0x3F82);  // (1+2^-7)^2 = 1+2^-6+2^-14
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Add, NumType::Bf16, 0x7F7F, 0x7F7F), 0x7F80);  // overflow
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Sub, NumType::Bf16, 0x7F80, 0x7F80), 0x7FC0);  // inf - inf
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Add, NumType::Bf16, 0x0001, 0x0000), 0x0000);  // denormal in
  EXPECT_EQ(bin<uint16_t>(BinaryOp::Max, NumType::Bf16, 0x8000, 0x0000), 0x0000);
}

TEST(VectorFloat, ReluClampCopy) {
  const uint32_t in[5] = {0x80000000u, 0xBF800000u, 0x7FC12345u, 0x40400000u, 0x00000001u};
  uint32_t out[5];
  relu_row(NumType::Fp32, in, out, 5);
  EXPECT_EQ(out[0], 0x00000000u);  // relu(-0) = +0
  EXPECT_EQ(out[1], 0x00000000u);
  EXPECT_EQ(out[2], kF32QNaN);
  EXPECT_EQ(out[3], 0x40400000u);
  EXPECT_EQ(out[4], 0x00000000u);
  clamp_row(NumType::Fp32, in, out, 5, -0.5, 2.0);
  EXPECT_EQ(out[1], f(-0.5f));
  EXPECT_EQ(out[2], kF32QNaN);
  EXPECT_EQ(out[3], f(2.0f));
  clamp_row(NumType::Fp32, in, out, 5, 0.1, INFINITY);  // bound rounded to fp32 (RNE)
  EXPECT_EQ(out[1], 0x3DCCCCCDu);
  copy_row(NumType::Fp32, in, out, 5);  // bits move unchanged, even NaN payloads
  EXPECT_EQ(out[2], 0x7FC12345u);
  EXPECT_EQ(out[4], 0x00000001u);
  const int8_t i8[4] = {-128, -1, 0, 100};
  int8_t o8[4];
  relu_row(NumType::Int8, i8, o8, 4);
  EXPECT_EQ(o8[0], 0);
  EXPECT_EQ(o8[3], 100);
  clamp_row(NumType::Int8, i8, o8, 4, -0.5, 6.9);  // [ceil(-0.5), floor(6.9)] = [0, 6]
  EXPECT_EQ(o8[0], 0);
  EXPECT_EQ(o8[3], 6);
}

TEST(VectorFloat, AffineIsMultiplyThenAdd) {
  // (1 + 2^-23)^2 = 1 + 2^-22 + 2^-46 rounds to 1 + 2^-22; minus 1 gives exactly 2^-22.
  // A fused multiply-add would give 2^-22 + 2^-46 (0x34800001).
  const uint32_t a = 0x3F800001u;
  const float scale[1] = {f32_from_bits(0x3F800001u)}, bias[1] = {-1.0f};
  uint32_t out;
  affine_row(NumType::Fp32, &a, &out, 1, scale, bias);
  EXPECT_EQ(out, 0x34800000u);
  // Integers go through fp32 and back with round-half-even and saturation.
  const int8_t in[4] = {10, 7, 100, -100};
  const float sc[4] = {0.25f, 0.5f, 2.0f, 2.0f};
  int8_t o[4];
  affine_row(NumType::Int8, in, o, 4, sc, {});
  EXPECT_EQ(o[0], 2);  // 2.5 -> 2
  EXPECT_EQ(o[1], 4);  // 3.5 -> 4
  EXPECT_EQ(o[2], 127);
  EXPECT_EQ(o[3], -128);
  EXPECT_THROW(affine_row(NumType::Int8, in, o, 4, std::span<const float>(sc, 2), {}), UserError);
}

TEST(VectorPool, MaxAndAvg) {
  const int8_t r0[2] = {1, -5}, r1[2] = {2, -6}, r2[2] = {3, -7}, r3[2] = {4, 127};
  const void* rows[4] = {r0, r1, r2, r3};
  int8_t o[2];
  maxpool_row(NumType::Int8, rows, o, 2);
  EXPECT_EQ(o[0], 4);
  EXPECT_EQ(o[1], 127);
  const float quarter[1] = {0.25f};
  avgpool_row(NumType::Int8, rows, o, 2, quarter);
  EXPECT_EQ(o[0], 2);   // 10 / 4 = 2.5 -> 2 (even)
  EXPECT_EQ(o[1], 27);  // 109 / 4 = 27.25
  // Float sums run in window order from the first row: (2^24 + 1) rounds to 2^24 first.
  const uint32_t f0[1] = {f(16777216.0f)}, f1[1] = {f(1.0f)}, f2[1] = {f(-16777216.0f)};
  const void* frows[3] = {f0, f1, f2};
  uint32_t fo;
  avgpool_row(NumType::Fp32, frows, &fo, 1, {});
  EXPECT_EQ(fo, 0u);
  const void* frows2[3] = {f0, f2, f1};
  avgpool_row(NumType::Fp32, frows2, &fo, 1, {});
  EXPECT_EQ(fo, f(1.0f));
  const uint32_t n0[1] = {0x80000000u}, n1[1] = {0x00000000u}, n2[1] = {0x7FC00001u};
  const void* zrows[2] = {n0, n1};
  maxpool_row(NumType::Fp32, zrows, &fo, 1);
  EXPECT_EQ(fo, 0x00000000u);
  const void* nrows[3] = {n0, n2, n1};
  maxpool_row(NumType::Fp32, nrows, &fo, 1);
  EXPECT_EQ(fo, kF32QNaN);
  EXPECT_THROW(maxpool_row(NumType::Fp32, std::span<const void* const>(), &fo, 1), UserError);
}

TEST(VectorReduce, SumsInLaneOrderAndBroadcasts) {
  const uint32_t a[3] = {f(1.0f), f(16777216.0f), f(-16777216.0f)};
  uint32_t o[3];
  rsum_row(NumType::Fp32, a, NumType::Fp32, o, 3);
  EXPECT_EQ(o[0], 0u);  // (1 + 2^24) -> 2^24 (tie to even), - 2^24 = 0
  EXPECT_EQ(o[2], 0u);
  const uint32_t b[3] = {f(16777216.0f), f(-16777216.0f), f(1.0f)};
  rsum_row(NumType::Fp32, b, NumType::Fp32, o, 3);
  EXPECT_EQ(o[1], f(1.0f));
  const int32_t w[2] = {INT32_MAX, 1};
  int32_t wo[2];
  rsum_row(NumType::Int32, w, NumType::Int32, wo, 2);
  EXPECT_EQ(wo[0], INT32_MIN);
  int8_t w8[2];
  rsum_row(NumType::Int32, w, NumType::Int8, w8, 2);  // the wrapped sum, then saturated
  EXPECT_EQ(w8[1], -128);
  std::vector<int8_t> m128(128, -128);
  std::vector<int32_t> s32(128);
  rsum_row(NumType::Int8, m128.data(), NumType::Int32, s32.data(), 128);
  EXPECT_EQ(s32[127], -16384);
  const uint16_t h[2] = {0x3F80, 0x3B80};  // bf16 1 + 2^-8 in fp32, then to bf16: tie -> 1
  uint16_t ho[2];
  rsum_row(NumType::Bf16, h, NumType::Bf16, ho, 2);
  EXPECT_EQ(ho[0], 0x3F80);
  uint32_t hf[2];
  rsum_row(NumType::Bf16, h, NumType::Fp32, hf, 2);
  EXPECT_EQ(hf[1], 0x3F808000u);
  const uint32_t m[4] = {0x80000000u, 0x00000000u, f(-3.0f), 0x80000000u};
  rmax_row(NumType::Fp32, m, o, 3);
  EXPECT_EQ(o[0], 0x00000000u);
  EXPECT_EQ(o[2], 0x00000000u);
  const uint32_t nan[3] = {f(1.0f), 0xFFFFFFFFu, f(2.0f)};
  rmax_row(NumType::Fp32, nan, o, 3);
  EXPECT_EQ(o[1], kF32QNaN);
}

uint32_t random_f32(std::mt19937& rng) {
  const uint32_t r = rng();
  switch (rng() % 10) {
    case 0: return r;
    case 1: return r & 0x807FFFFFu;                                  // denormal / zero
    case 2: return (r & 0x807FFFFFu) | ((1 + (r >> 23) % 3) << 23);  // smallest normals
    case 3: return (r & 0x807FFFFFu) | ((252 + (r >> 23) % 3) << 23);
    default: return (r & 0x807FFFFFu) | ((118 + (r >> 23) % 20) << 23);
  }
}

TEST(VectorFloat, HostMatchesSoftFloatReference) {
  std::mt19937 rng(9);
  const size_t n = 257;
  for (NumType dt : {NumType::Fp32, NumType::Bf16}) {
    for (int rep = 0; rep < 200; ++rep) {
      std::vector<uint32_t> a(n), b(n), c(n), o1(n), o2(n);
      std::vector<float> scale(n), bias(n);
      for (size_t i = 0; i < n; ++i) {
        a[i] = random_f32(rng);
        b[i] = random_f32(rng);
        c[i] = random_f32(rng);
        scale[i] = f32_from_bits(random_f32(rng));
        bias[i] = f32_from_bits(random_f32(rng));
        if (dt == NumType::Bf16) {  // store bf16 rows in the low halves
          reinterpret_cast<uint16_t*>(a.data())[i] = static_cast<uint16_t>(a[i] >> 16);
          reinterpret_cast<uint16_t*>(b.data())[i] = static_cast<uint16_t>(b[i] >> 16);
          reinterpret_cast<uint16_t*>(c.data())[i] = static_cast<uint16_t>(c[i] >> 16);
        }
      }
      for (BinaryOp op : {BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Max, BinaryOp::Min}) {
        binary_row(op, dt, a.data(), b.data(), o1.data(), n);
        ref::binary_row(op, dt, a.data(), b.data(), o2.data(), n);
        ASSERT_EQ(o1, o2) << "op " << int(op) << " dt " << int(dt);
      }
      affine_row(dt, a.data(), o1.data(), n, scale, bias);
      ref::affine_row(dt, a.data(), o2.data(), n, scale, bias);
      ASSERT_EQ(o1, o2);
      const void* rows[3] = {a.data(), b.data(), c.data()};
      avgpool_row(dt, rows, o1.data(), n, scale);
      ref::avgpool_row(dt, rows, o2.data(), n, scale);
      ASSERT_EQ(o1, o2);
      for (NumType odt : {NumType::Fp32, NumType::Bf16, NumType::Int32, NumType::Int8}) {
        rsum_row(dt, a.data(), odt, o1.data(), n);
        ref::rsum_row(dt, a.data(), odt, o2.data(), n);
        ASSERT_EQ(o1, o2);
      }
    }
  }
}

TEST(VectorFloat, Fp32AddMatchesSoftFloatElementwise) {
  // Independent of the row code: each lane equals sf::add of the inputs.
  std::mt19937 rng(4);
  std::vector<uint32_t> a(1000), b(1000), o(1000);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = random_f32(rng);
    b[i] = random_f32(rng);
  }
  binary_row(BinaryOp::Add, NumType::Fp32, a.data(), b.data(), o.data(), a.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(o[i], sf::add(a[i], b[i]));
}

}  // namespace
}  // namespace vtpu::numerics
