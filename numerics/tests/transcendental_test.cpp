// Transcendentals: host == soft-float bit for bit, accuracy against double-precision libm,
// monotonicity, special values, and the bf16 tables.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "vtpu/numerics/float.h"
#include "vtpu/numerics/transcendental.h"
#include "vtpu/support/error.h"

namespace vtpu::numerics {
namespace {

using T = Transcendental;

double reference(T f, double x) {
  switch (f) {
    case T::Exp: return std::exp(x);
    case T::Tanh: return std::tanh(x);
    case T::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case T::Gelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case T::Erf: return std::erf(x);
    case T::Recip: return 1.0 / x;
    case T::Rsqrt: return 1.0 / std::sqrt(x);
    case T::Log: return std::log(x);
  }
  return 0;
}

// The input range each function is measured on (beyond it results are 0, +-1 or inf).
void input_range(T f, double& lo, double& hi) {
  lo = hi = 0;
  switch (f) {
    case T::Exp: lo = -87.0; hi = 88.7; return;
    case T::Tanh: lo = -10; hi = 10; return;
    case T::Sigmoid: lo = -87; hi = 20; return;
    case T::Gelu: lo = -13.4; hi = 10; return;
    case T::Erf: lo = -4.5; hi = 4.5; return;
    case T::Recip: lo = -1e30; hi = 1e30; return;
    case T::Rsqrt: lo = 0; hi = 1e30; return;
    case T::Log: lo = 0; hi = 3e38; return;
  }
}

// Error of fp32 result r in units of the last place of the exact value y (fp32 ulp at |y|).
double ulp_error(uint32_t r, double y) {
  const double ay = std::fabs(y);
  if (ay < 0x1p-126) return f32_from_bits(r) == 0.0f ? 0.0 : 1e9;  // must be flushed
  int e;
  std::frexp(ay, &e);  // ay in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, e - 24);
  return std::fabs(static_cast<double>(f32_from_bits(r)) - y) / ulp;
}

// Maximum fp32 ulp error on random inputs (uniform in value and in bit pattern) in range.
double max_ulp(T f, int samples, uint32_t seed, double* worst_x) {
  std::mt19937 rng(seed);
  double lo, hi;
  input_range(f, lo, hi);
  double worst = 0;
  for (int i = 0; i < samples; ++i) {
    float x;
    if (i % 2) {
      x = static_cast<float>(lo + (hi - lo) * (rng() / 4294967296.0));
    } else {  // log-uniform magnitudes catch small arguments
      const uint32_t b = (rng() & 0x807FFFFFu) | ((90 + rng() % 45) << 23);
      x = f32_from_bits(b);
      if (x < lo || x > hi) continue;
    }
    if (f == T::Recip && std::fabs(x) > 8.5e37f) continue;  // result below 2^-126: flushed, tested apart
    const double y = reference(f, x);
    const double err = ulp_error(eval_f32(f, f32_bits(x)), y);
    if (err > worst) {
      worst = err;
      *worst_x = x;
    }
  }
  return worst;
}

struct Bound {
  T f;
  double max_ulp;
};
// Measured maxima (see docs/numerics.md) with a small margin.
constexpr Bound kBounds[] = {{T::Exp, 2.0},  {T::Tanh, 3.0},  {T::Sigmoid, 3.0}, {T::Gelu, 5.0},
                             {T::Erf, 3.0},  {T::Recip, 0.5}, {T::Rsqrt, 1.5},
                             {T::Log, 1.0}};

TEST(Transcendental, Fp32AccuracyAgainstDoubleLibm) {
  for (const Bound& b : kBounds) {
    double wx = 0;
    const double e = max_ulp(b.f, 400000, 17, &wx);
    std::printf("  %-8s max error %.3f ulp (at x = %.9g)\n", std::string(transcendental_name(b.f)).c_str(), e, wx);
    EXPECT_LE(e, b.max_ulp) << transcendental_name(b.f) << " at x = " << wx;
  }
}

TEST(Transcendental, Bf16TablesAreNearlyCorrectlyRounded) {
  for (T f : kAllTranscendentals) {
    int not_cr = 0;
    for (uint32_t h = 0; h < 65536; ++h) {
      const uint32_t x32 = bf16_to_f32(static_cast<uint16_t>(h));
      if (f32_is_nan(x32) || f32_is_inf(x32)) continue;
      const double y = reference(f, f32_from_bits(x32));
      if (std::isnan(y) || std::isinf(y)) continue;
      // Correctly rounded bf16 of the double result (double -> fp32 is exact enough here
      // except at fp32 ties, which bf16's coarser grid makes irrelevant).
      const uint16_t want = f32_to_bf16(f32_bits(static_cast<float>(y)));
      const uint16_t got = eval_bf16(f, static_cast<uint16_t>(h));
      if (got != want) {
        ++not_cr;
        // Never more than one bf16 ulp away.
        const int diff = std::abs(static_cast<int>(got & 0x7FFF) - static_cast<int>(want & 0x7FFF));
        ASSERT_LE(diff, 1) << transcendental_name(f) << " bf16 input 0x" << std::hex << h;
      }
    }
    std::printf("  %-8s bf16 results not correctly rounded: %d of 65536\n",
                std::string(transcendental_name(f)).c_str(), not_cr);
    EXPECT_LE(not_cr, 64) << transcendental_name(f);
  }
}

uint32_t random_input(std::mt19937& rng) {
  const uint32_t r = rng();
  switch (rng() % 6) {
    case 0: return r;  // anything
    case 1: return (r & 0x807FFFFFu) | ((120 + (r >> 23) % 16) << 23);
    default: return (r & 0x807FFFFFu) | ((100 + (r >> 23) % 40) << 23);
  }
}

TEST(Transcendental, HostEqualsSoftFloatBitForBit) {
  std::mt19937 rng(23);
  for (T f : kAllTranscendentals) {
    for (uint32_t h = 0; h < 65536; h += 1) {  // every bf16 value as an fp32 input
      const uint32_t x = h << 16;
      ASSERT_EQ(eval_f32(f, x), ref::eval_f32(f, x)) << transcendental_name(f) << " x=0x" << std::hex << x;
    }
    for (int i = 0; i < 60000; ++i) {
      const uint32_t x = random_input(rng);
      ASSERT_EQ(eval_f32(f, x), ref::eval_f32(f, x)) << transcendental_name(f) << " x=0x" << std::hex << x;
    }
  }
}

TEST(Transcendental, Bf16TableIsTheRoundedFp32Definition) {
  for (T f : kAllTranscendentals) {
    std::vector<uint16_t> in(65536), out(65536);
    for (uint32_t h = 0; h < 65536; ++h) in[h] = static_cast<uint16_t>(h);
    transcendental_row(f, NumType::Bf16, in.data(), out.data(), in.size());
    for (uint32_t h = 0; h < 65536; ++h)
      ASSERT_EQ(out[h], f32_to_bf16(ref::eval_f32(f, h << 16))) << transcendental_name(f) << " 0x" << std::hex << h;
  }
}

TEST(Transcendental, Monotonic) {
  // Non-decreasing along every increasing run of fp32 inputs (positive and negative
  // halves), sampled densely; recip and rsqrt are non-increasing on x > 0.
  for (T f : {T::Exp, T::Tanh, T::Sigmoid, T::Erf}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      float prev = sign ? INFINITY : -INFINITY;
      for (uint32_t m = 0x00800000u; m < 0x42C00000u; m += 97) {  // |x| from 2^-126 to 96
        const uint32_t x = m | sign;
        const float y = f32_from_bits(eval_f32(f, x));
        if (sign) {
          ASSERT_LE(y, prev) << transcendental_name(f) << " x=" << f32_from_bits(x);
        } else {
          ASSERT_GE(y, prev) << transcendental_name(f) << " x=" << f32_from_bits(x);
        }
        prev = y;
      }
    }
  }
  float prev = INFINITY;
  for (uint32_t x = 0x00800000u; x < 0x7F000000u; x += 4099) {
    const float y = f32_from_bits(eval_f32(T::Rsqrt, x));
    ASSERT_LE(y, prev) << f32_from_bits(x);
    prev = y;
  }
  // log increases on x > 0 (every input from 2^-126 to the largest finite, sampled)
  prev = -INFINITY;
  for (uint32_t x = 0x00800000u; x < 0x7F800000u; x += 1021) {
    const float y = f32_from_bits(eval_f32(T::Log, x));
    ASSERT_GE(y, prev) << f32_from_bits(x);
    prev = y;
  }
  // gelu increases for x > -0.7518 (its minimum); near the flat minimum rounding noise
  // may wiggle by an ulp, so check from -0.5.
  prev = -INFINITY;
  for (float x = -0.5f; x < 10.0f; x = std::nextafter(x, 11.0f) + 1e-5f) {
    const float y = f32_from_bits(eval_f32(T::Gelu, f32_bits(x)));
    ASSERT_GE(y, prev) << x;
    prev = y;
  }
}

uint32_t ev(T f, float x) { return eval_f32(f, f32_bits(x)); }

TEST(Transcendental, SpecialValues) {
  EXPECT_EQ(ev(T::Exp, 0.0f), 0x3F800000u);
  EXPECT_EQ(ev(T::Exp, -0.0f), 0x3F800000u);
  EXPECT_EQ(ev(T::Exp, INFINITY), 0x7F800000u);
  EXPECT_EQ(ev(T::Exp, -INFINITY), 0x00000000u);
  EXPECT_EQ(ev(T::Exp, 89.0f), 0x7F800000u);
  EXPECT_EQ(ev(T::Exp, -88.0f), 0x00000000u);  // 6e-39 < 2^-126: flushed
  EXPECT_EQ(ev(T::Exp, 1.0f), 0x402DF854u);    // e, correctly rounded
  EXPECT_EQ(eval_f32(T::Exp, 0xFFC12345u), kF32QNaN);
  EXPECT_EQ(ev(T::Tanh, -0.0f), 0x80000000u);
  EXPECT_EQ(ev(T::Tanh, INFINITY), 0x3F800000u);
  EXPECT_EQ(ev(T::Tanh, -20.0f), 0xBF800000u);
  EXPECT_EQ(ev(T::Sigmoid, 0.0f), 0x3F000000u);
  EXPECT_EQ(ev(T::Sigmoid, -INFINITY), 0x00000000u);
  EXPECT_EQ(ev(T::Sigmoid, 100.0f), 0x3F800000u);
  EXPECT_EQ(ev(T::Erf, INFINITY), 0x3F800000u);
  EXPECT_EQ(ev(T::Erf, -5.0f), 0xBF800000u);
  EXPECT_EQ(ev(T::Erf, -0.0f), 0x80000000u);
  EXPECT_EQ(ev(T::Gelu, -INFINITY), 0x80000000u);
  EXPECT_EQ(ev(T::Gelu, INFINITY), 0x7F800000u);
  EXPECT_EQ(ev(T::Gelu, 0.0f), 0x00000000u);
  EXPECT_EQ(ev(T::Gelu, -20.0f), 0x80000000u);
  EXPECT_EQ(ev(T::Gelu, 20.0f), f32_bits(20.0f));
  EXPECT_EQ(ev(T::Recip, 0.0f), 0x7F800000u);
  EXPECT_EQ(ev(T::Recip, -0.0f), 0xFF800000u);
  EXPECT_EQ(ev(T::Recip, 4.0f), f32_bits(0.25f));
  EXPECT_EQ(ev(T::Recip, 0x1p127f), 0x00000000u);  // 2^-127: flushed
  EXPECT_EQ(ev(T::Rsqrt, 4.0f), f32_bits(0.5f));
  EXPECT_EQ(ev(T::Rsqrt, -1.0f), kF32QNaN);
  EXPECT_EQ(ev(T::Rsqrt, -0.0f), 0xFF800000u);
  EXPECT_EQ(ev(T::Rsqrt, INFINITY), 0x00000000u);
  EXPECT_EQ(eval_f32(T::Recip, 0x00000001u), 0x7F800000u);  // denormal reads as +0
  EXPECT_EQ(ev(T::Log, 1.0f), 0x00000000u);
  EXPECT_EQ(ev(T::Log, 0.0f), 0xFF800000u);
  EXPECT_EQ(ev(T::Log, -0.0f), 0xFF800000u);
  EXPECT_EQ(eval_f32(T::Log, 0x00000001u), 0xFF800000u);  // denormal reads as +0
  EXPECT_EQ(ev(T::Log, -1.0f), kF32QNaN);
  EXPECT_EQ(ev(T::Log, -INFINITY), kF32QNaN);
  EXPECT_EQ(ev(T::Log, INFINITY), 0x7F800000u);
  EXPECT_EQ(ev(T::Log, 2.0f), f32_bits(0.693147182f));  // ln 2, correctly rounded
  EXPECT_EQ(ev(T::Log, 0x1p-126f), f32_bits(-87.3365479f));
  EXPECT_EQ(eval_bf16(T::Log, 0x3F80), 0x0000);  // log 1
  EXPECT_EQ(eval_bf16(T::Sigmoid, 0x0000), 0x3F00);
  EXPECT_EQ(eval_bf16(T::Exp, 0x7FC1), kBf16QNaN);
}

TEST(Transcendental, RejectsIntegerTypes) {
  int8_t a[1] = {1}, o[1];
  EXPECT_THROW(transcendental_row(T::Exp, NumType::Int8, a, o, 1), UserError);
}

}  // namespace
}  // namespace vtpu::numerics
