// MXU tile kernels: every ISA path equals the soft-float reference bit for bit on random
// tiles, and hand-computed edge cases pin the documented policy (docs/numerics.md).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "vtpu/numerics/float.h"
#include "vtpu/numerics/mxu.h"

namespace vtpu::numerics {
namespace {

std::vector<KernelIsa> supported_isas() {
  std::vector<KernelIsa> v;
  for (KernelIsa k : {KernelIsa::Scalar, KernelIsa::Avx2, KernelIsa::Avx512})
    if (kernel_isa_supported(k)) v.push_back(k);
  return v;
}

uint32_t bits(float f) { return f32_bits(f); }

// A bf16 value drawn to exercise the policy: mostly moderate normals (so sums are
// meaningful and cancel), sometimes zeros, denormals, huge/tiny exponents, inf and NaN.
uint16_t random_bf16(std::mt19937& rng, bool specials) {
  const uint32_t r = rng();
  const uint16_t sign = (r & 1u) ? 0x8000u : 0u;
  const uint16_t mant = static_cast<uint16_t>((r >> 1) & 0x7Fu);
  const uint32_t pick = (r >> 8) % 1000;
  if (specials) {
    if (pick < 8) return sign;                                       // +-0
    if (pick < 16) return sign | static_cast<uint16_t>(mant | 1u);  // denormal
    if (pick < 19) return sign | 0x7F80u;                           // inf
    if (pick < 21) return static_cast<uint16_t>(sign | 0x7F80u | (mant | 1u));  // NaN, any payload
    if (pick < 30) return sign | static_cast<uint16_t>(((1 + (r >> 20) % 6) << 7) | mant);  // tiny: products underflow
    if (pick < 38) return sign | static_cast<uint16_t>(((250 + (r >> 20) % 4) << 7) | mant);  // huge: overflow
  }
  const uint16_t exp = static_cast<uint16_t>(120 + (r >> 20) % 14);  // about 2^-7 .. 2^6
  return sign | static_cast<uint16_t>(exp << 7) | mant;
}

float random_acc(std::mt19937& rng, bool specials) {
  const uint32_t r = rng();
  if (specials) {
    switch (r % 64) {
      case 0: return f32_from_bits(0x80000000u);                 // -0
      case 1: return f32_from_bits(0x00000001u | (r & 0x80000000u));  // denormal
      case 2: return f32_from_bits(0xFFC12345u);                 // NaN with payload
      case 3: return f32_from_bits(0x7F800000u | (r & 0x80000000u));  // inf
      default: break;
    }
  }
  return f32_from_bits(bf16_to_f32_bits(random_bf16(rng, false)) ^ (r & 0x7FFFu));
}

struct Shape {
  size_t B, K, N;
};

Shape random_shape(std::mt19937& rng, size_t max_macs) {
  for (;;) {
    Shape s{1 + rng() % 300, 1 + rng() % 300, 1 + rng() % 300};
    if (rng() % 4 == 0) s.B = 1 + rng() % 8;  // small batches hit the row tails
    while (s.B * s.K * s.N > max_macs && s.B > 1) s.B /= 2;
    if (s.B * s.K * s.N <= max_macs) return s;
  }
}

void check_bf16_tiles(int tiles, bool specials, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int t = 0; t < tiles; ++t) {
    const Shape s = random_shape(rng, 60000);
    const size_t lda = s.K + rng() % 3, ldw = s.N + rng() % 5, ldacc = s.N + rng() % 4;
    const bool accumulate = rng() & 1u;
    std::vector<uint16_t> a(s.B * lda), w((s.K + 2) * ldw);
    for (auto& v : a) v = random_bf16(rng, specials);
    for (auto& v : w) v = random_bf16(rng, specials);
    // Poison everything outside the valid K x N tile: it must never be read.
    for (size_t k = 0; k < s.K + 2; ++k)
      for (size_t n = 0; n < ldw; ++n)
        if (k >= s.K || n >= s.N) w[k * ldw + n] = 0x7FC1;
    for (size_t b = 0; b < s.B; ++b)
      for (size_t k = s.K; k < lda; ++k) a[b * lda + k] = 0x7F80;
    std::vector<float> acc0(s.B * ldacc);
    for (auto& v : acc0) v = random_acc(rng, specials);
    std::vector<float> want = acc0;
    ref::matmul_tile_bf16(a.data(), lda, w.data(), ldw, want.data(), ldacc, s.B, s.K, s.N, accumulate);
    for (KernelIsa isa : supported_isas()) {
      std::vector<float> got = acc0;
      matmul_tile_bf16(isa, a.data(), lda, w.data(), ldw, got.data(), ldacc, s.B, s.K, s.N, accumulate);
      for (size_t i = 0; i < got.size(); ++i) {
        if (bits(got[i]) != bits(want[i])) {
          FAIL() << kernel_isa_name(isa) << " tile " << t << " B=" << s.B << " K=" << s.K
                 << " N=" << s.N << " acc=" << accumulate << " element (" << i / ldacc << ","
                 << i % ldacc << "): got 0x" << std::hex << bits(got[i]) << " want 0x" << bits(want[i]);
        }
      }
    }
  }
}

void check_int8_tiles(int tiles, uint32_t seed) {
  std::mt19937 rng(seed);
  for (int t = 0; t < tiles; ++t) {
    const Shape s = random_shape(rng, 400000);
    const size_t lda = s.K + rng() % 3, ldw = s.N + rng() % 5, ldacc = s.N + rng() % 4;
    const bool accumulate = rng() & 1u;
    const bool extremes = rng() % 4 == 0;  // all -128 / 127: the largest sums
    std::vector<int8_t> a(s.B * lda), w((s.K + 1) * ldw);
    for (auto& v : a) v = extremes ? (rng() & 1 ? -128 : 127) : static_cast<int8_t>(rng());
    for (auto& v : w) v = extremes ? -128 : static_cast<int8_t>(rng());
    for (size_t n = 0; n < ldw; ++n) w[s.K * ldw + n] = 99;  // row past K: must be ignored
    std::vector<int32_t> acc0(s.B * ldacc);
    for (auto& v : acc0) v = static_cast<int32_t>(rng());
    std::vector<int32_t> want = acc0;
    ref::matmul_tile_int8(a.data(), lda, w.data(), ldw, want.data(), ldacc, s.B, s.K, s.N, accumulate);
    for (KernelIsa isa : supported_isas()) {
      std::vector<int32_t> got = acc0;
      matmul_tile_int8(isa, a.data(), lda, w.data(), ldw, got.data(), ldacc, s.B, s.K, s.N, accumulate);
      ASSERT_EQ(got, want) << kernel_isa_name(isa) << " tile " << t << " B=" << s.B << " K=" << s.K
                           << " N=" << s.N << " acc=" << accumulate;
    }
  }
}

TEST(Mxu, HostSupportsSomething) {
  EXPECT_TRUE(kernel_isa_supported(KernelIsa::Scalar));
  EXPECT_TRUE(kernel_isa_supported(default_kernel_isa()));
}

TEST(Mxu, Bf16RandomTilesMatchReference) { check_bf16_tiles(1500, false, 1); }
TEST(Mxu, Bf16RandomTilesWithSpecialsMatchReference) { check_bf16_tiles(1500, true, 2); }
TEST(Mxu, Int8RandomTilesMatchReference) { check_int8_tiles(2000, 3); }

// ---------------------------------------------------------------- hand-computed cases

// Runs a 1 x K x 1 bf16 column on every ISA and the reference; returns the common result.
uint32_t column(const std::vector<uint16_t>& a, const std::vector<uint16_t>& w, bool accumulate = false,
                uint32_t acc_in = 0) {
  uint32_t result = 0;
  bool first = true;
  std::vector<KernelIsa> isas = supported_isas();
  for (int variant = -1; variant < static_cast<int>(isas.size()); ++variant) {
    float acc = f32_from_bits(acc_in);
    if (variant < 0) {
      ref::matmul_tile_bf16(a.data(), a.size(), w.data(), 1, &acc, 1, 1, a.size(), 1, accumulate);
    } else {
      matmul_tile_bf16(isas[variant], a.data(), a.size(), w.data(), 1, &acc, 1, 1, a.size(), 1, accumulate);
    }
    if (!first) {
      EXPECT_EQ(bits(acc), result) << "variant " << variant;
    }
    result = bits(acc);
    first = false;
  }
  return result;
}

constexpr uint16_t kOne = 0x3F80, kMinusOne = 0xBF80, kTwo = 0x4000, kHalf = 0x3F00;
constexpr uint16_t kPosInf = 0x7F80, kNegInf = 0xFF80;

TEST(MxuEdge, InfinitiesPropagate) {
  EXPECT_EQ(column({kOne}, {kPosInf}), 0x7F800000u);
  EXPECT_EQ(column({kOne}, {kNegInf}), 0xFF800000u);
  EXPECT_EQ(column({kMinusOne, kTwo}, {kPosInf, kOne}), 0xFF800000u);  // -inf + 2 = -inf
}

TEST(MxuEdge, NaNIsCanonical) {
  EXPECT_EQ(column({0x7FC1}, {kOne}), 0x7FC00000u);           // quiet NaN with payload
  EXPECT_EQ(column({0xFFC0}, {kOne}), 0x7FC00000u);           // negative NaN
  EXPECT_EQ(column({0x7F81}, {kOne}), 0x7FC00000u);           // signalling NaN
  EXPECT_EQ(column({kOne, kOne}, {kPosInf, kNegInf}), 0x7FC00000u);  // inf - inf
  EXPECT_EQ(column({0x0000}, {kPosInf}), 0x7FC00000u);        // 0 x inf
  EXPECT_EQ(column({0x8000}, {kNegInf}), 0x7FC00000u);        // -0 x -inf
  EXPECT_EQ(column({kOne}, {kOne}, true, 0xFFC12345u), 0x7FC00000u);  // NaN accumulator
  EXPECT_EQ(column({kOne}, {kPosInf}, true, 0xFF800000u), 0x7FC00000u);  // -inf acc + inf
}

TEST(MxuEdge, SignedZeros) {
  // The partial sum starts at +0, so a lone -0 product gives +0.
  EXPECT_EQ(column({kMinusOne}, {0x0000}), 0x00000000u);
  // -0 (acc) + +0 (p) = +0 under round-to-nearest.
  EXPECT_EQ(column({kMinusOne}, {0x0000}, true, 0x80000000u), 0x00000000u);
  // x + (-x) = +0.
  EXPECT_EQ(column({kOne, kMinusOne}, {kTwo, kTwo}), 0x00000000u);
  // -1.5*2^-126 + 2^-126 = -2^-127 is tiny: flushed to -0 (sign of the exact result);
  // then -0 (acc) + -0 (p) = -0.
  EXPECT_EQ(column({0x00C0, 0x0080}, {kMinusOne, kOne}), 0x80000000u);
  EXPECT_EQ(column({0x00C0, 0x0080}, {kMinusOne, kOne}, true, 0x80000000u), 0x80000000u);
}

TEST(MxuEdge, RoundToNearestEven) {
  // 1 + 2^-24 is halfway between 1 and 1 + 2^-23: ties to the even significand, 1.0.
  EXPECT_EQ(column({kOne, 0x3380}, {kOne, kOne}), 0x3F800000u);
  // 1 + 2^-23 + 2^-24 is halfway between 1 + 2^-23 (odd) and 1 + 2^-22 (even).
  EXPECT_EQ(column({kOne, 0x3400, 0x3380}, {kOne, kOne, kOne}), 0x3F800002u);
  // Just above the tie: 1 + 2^-24 + 2^-32 rounds up.
  EXPECT_EQ(column({kOne, 0x3380, 0x2F80}, {kOne, kOne, kOne}), 0x3F800000u)
      << "sequential order: (1 + 2^-24) rounds to 1 first, then + 2^-32 is lost";
  // The accumulator add rounds too: acc 1.0 + p 2^-24 = 1.0.
  EXPECT_EQ(column({0x3380}, {kOne}, true, 0x3F800000u), 0x3F800000u);
  // Order matters: the array adds down the column from k = 0.
  EXPECT_EQ(column({0x3380, 0x3380, kOne}, {kOne, kOne, kOne}), 0x3F800001u);  // 2^-23 + 1
}

TEST(MxuEdge, Overflow) {
  EXPECT_EQ(column({0x7F00}, {kTwo}), 0x7F800000u);      // 2^127 * 2 = inf
  EXPECT_EQ(column({0xFF00}, {kTwo}), 0xFF800000u);      // -inf
  EXPECT_EQ(column({0x7F7F}, {0x7F7F}), 0x7F800000u);    // max * max
  EXPECT_EQ(column({0x7F7F, 0x7F7F}, {kOne, kOne}), 0x7F800000u);  // sum overflows
  EXPECT_EQ(column({0x7F7F}, {kOne}), 0x7F7F0000u);      // max bf16 is finite in fp32
}

TEST(MxuEdge, DenormalsFlushed) {
  // Product 2^-126 * 0.5 = 2^-127 is tiny: +0.
  EXPECT_EQ(column({0x0080}, {kHalf}), 0x00000000u);
  // A denormal input reads as zero: 2^-133 (0x0001) * 2^127 would be 2^-6 otherwise.
  EXPECT_EQ(column({0x0001}, {0x7F00}), 0x00000000u);
  EXPECT_EQ(column({0x7F00}, {0x8001}), 0x00000000u);  // -denormal * 2^127 = -0, + +0 = +0
  // A denormal accumulator reads as zero: 0x00400000 + 2^-126 = 2^-126, not 1.5 * 2^-126.
  EXPECT_EQ(column({0x0080}, {kOne}, true, 0x00400000u), 0x00800000u);
  EXPECT_EQ(column({0x0000}, {kOne}, true, 0x00000001u), 0x00000000u);
  // Smallest normal products survive.
  EXPECT_EQ(column({0x0080}, {kOne}), 0x00800000u);
}

TEST(MxuEdge, Int8Extremes) {
  const size_t K = 256;
  std::vector<int8_t> a(K, -128), w(K, -128);
  for (KernelIsa isa : supported_isas()) {
    int32_t acc = 0;
    matmul_tile_int8(isa, a.data(), K, w.data(), 1, &acc, 1, 1, K, 1, false);
    EXPECT_EQ(acc, 256 * 16384) << kernel_isa_name(isa);  // 4194304
    std::vector<int8_t> w2(K, 127);
    matmul_tile_int8(isa, a.data(), K, w2.data(), 1, &acc, 1, 1, K, 1, true);
    EXPECT_EQ(acc, 4194304 - 256 * 16256) << kernel_isa_name(isa);  // 32768
  }
}

TEST(MxuEdge, Int32WrapsAround) {
  const int8_t one = 1, m128 = -128;
  for (KernelIsa isa : supported_isas()) {
    int32_t acc = INT32_MAX;
    matmul_tile_int8(isa, &one, 1, &one, 1, &acc, 1, 1, 1, 1, true);
    EXPECT_EQ(acc, INT32_MIN) << kernel_isa_name(isa);
    acc = INT32_MIN;
    matmul_tile_int8(isa, &one, 1, &m128, 1, &acc, 1, 1, 1, 1, true);
    EXPECT_EQ(acc, INT32_MAX - 127) << kernel_isa_name(isa);  // -2^31 - 128 wraps
  }
  // A long column that overflows int32 partway: 2^17 products of 16384 = 2^31 -> INT32_MIN.
  const size_t K = size_t{1} << 17;
  std::vector<int8_t> a(K, -128), w(K, -128);
  for (KernelIsa isa : supported_isas()) {
    int32_t acc = 0;
    matmul_tile_int8(isa, a.data(), K, w.data(), 1, &acc, 1, 1, K, 1, false);
    EXPECT_EQ(acc, INT32_MIN) << kernel_isa_name(isa);
  }
}

TEST(MxuEdge, OnlyValidColumnsAreWritten) {
  // N = 17 of ldacc = 40: columns 17.. keep their sentinel, also on the SIMD tail paths.
  const size_t B = 5, K = 3, N = 17, ld = 40;
  std::vector<uint16_t> a(B * K, kOne), w(K * ld, kOne);
  std::vector<int8_t> ai(B * K, 1), wi(K * ld, 1);
  for (KernelIsa isa : supported_isas()) {
    std::vector<float> acc(B * ld, 42.0f);
    matmul_tile_bf16(isa, a.data(), K, w.data(), ld, acc.data(), ld, B, K, N, false);
    std::vector<int32_t> acci(B * ld, 42);
    matmul_tile_int8(isa, ai.data(), K, wi.data(), ld, acci.data(), ld, B, K, N, false);
    for (size_t b = 0; b < B; ++b)
      for (size_t n = 0; n < ld; ++n) {
        EXPECT_EQ(acc[b * ld + n], n < N ? 3.0f : 42.0f) << kernel_isa_name(isa);
        EXPECT_EQ(acci[b * ld + n], n < N ? 3 : 42) << kernel_isa_name(isa);
      }
  }
}

TEST(MxuEdge, RestoresCallerFloatingPointEnvironment) {
  // The kernels set FTZ/DAZ internally; the caller's denormals must still work afterwards.
  std::vector<uint16_t> a(4, kOne), w(4, kOne);
  float acc = 0;
  for (KernelIsa isa : supported_isas()) matmul_tile_bf16(isa, a.data(), 4, w.data(), 1, &acc, 1, 1, 4, 1, false);
  volatile float tiny = 1e-38f;
  volatile float half = 0.5f;
  EXPECT_NE(tiny * half, 0.0f);
}

}  // namespace
}  // namespace vtpu::numerics
