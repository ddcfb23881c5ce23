// The RTL floating-point units (vtpu_fp32_add, vtpu_bf16_mul, vtpu_fp32_mul, vtpu_fp32_div,
// vtpu_fp32_sqrt) and the vector lane's table functions (vtpu_vec_table_pkg) against the
// soft-float reference, on their own: millions of operands, weighted towards the corners.
#include <gtest/gtest.h>
#include <verilated.h>

#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "cosim_env.h"
#include "vtpu/numerics/float.h"
#include "vtpu/numerics/transcendental.h"
#include "vtpu_rtl_models.h"

namespace vtpu::rtl {
namespace {
namespace nm = vtpu::numerics;


class Fpu : public ::testing::Test {
 protected:
  Fpu() : ctx_(new VerilatedContext), m_(new Vvtpu_fpu_tb(ctx_.get(), "fpu")) {}
  ~Fpu() override {
    EXPECT_FALSE(fn_mismatch_) << "vtpu_fp32_pkg's f32_add/f32_mul differ from vtpu_fp32_add/vtpu_fp32_mul";
    m_->final();
  }
  uint32_t add(uint32_t a, uint32_t b) {
    m_->add_a = a;
    m_->add_b = b;
    m_->eval();
    // the module (accumulators, vector lanes) and the function (table functions) agree
    if (m_->add_fn_y != m_->add_y) fn_mismatch_ = true;
    return m_->add_y;
  }
  uint32_t fmul(uint32_t a, uint32_t b) {
    m_->fmul_a = a;
    m_->fmul_b = b;
    m_->eval();
    if (m_->fmul_fn_y != m_->fmul_y) fn_mismatch_ = true;
    return m_->fmul_y;
  }
  uint32_t div(uint32_t a, uint32_t b) {
    m_->div_a = a;
    m_->div_b = b;
    m_->eval();
    return m_->div_y;
  }
  uint32_t sqrt(uint32_t a) {
    m_->sqrt_a = a;
    m_->eval();
    return m_->sqrt_y;
  }
  uint32_t table(nm::Transcendental f, uint32_t x) {
    m_->tab_func = static_cast<uint8_t>(f);
    m_->tab_x = x;
    m_->eval();
    return m_->tab_y;
  }
  uint32_t mul(uint16_t a, uint16_t b) {
    m_->mul_a = a;
    m_->mul_b = b;
    m_->eval();
    return m_->mul_y;
  }
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Vvtpu_fpu_tb> m_;
  bool fn_mismatch_ = false;
};

// fp32 operands: a mix of every class, and pairs close in exponent (cancellation, carries,
// ties) which uniform bits rarely give.
uint32_t f32_operand(std::mt19937_64& g) {
  const uint32_t r = static_cast<uint32_t>(g());
  const uint32_t sign = (r & 1u) << 31;
  switch ((r >> 1) % 16) {
    case 0: return sign;                                          // zero
    case 1: return sign | ((r >> 8) & 0x7FFFFF);                  // denormal (or zero)
    case 2: return sign | 0x7F800000u;                            // inf
    case 3: return sign | 0x7F800000u | ((r >> 8) & 0x7FFFFF) | 1u;  // NaN
    case 4: return sign | (uint32_t(1 + (r >> 8) % 3) << 23) | (static_cast<uint32_t>(g()) & 0x7FFFFF);  // tiny
    case 5: return sign | (uint32_t(252 + (r >> 8) % 3) << 23) | (static_cast<uint32_t>(g()) & 0x7FFFFF); // huge
    case 6: return sign | (uint32_t(120 + (r >> 8) % 16) << 23) | ((static_cast<uint32_t>(g()) & 0xF) << 19);  // short
    default: return static_cast<uint32_t>(g());                   // anything
  }
}

TEST_F(Fpu, AddMatchesSoftFloat) {
  std::mt19937_64 g(20240601);
  const uint64_t n = full_run() ? 20'000'000 : 2'000'000;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t a = f32_operand(g), b = f32_operand(g);
    if (i % 4 == 1) b = (a ^ 0x80000000u) + static_cast<uint32_t>(g() % 64) - 32;  // near cancellation
    if (i % 4 == 2)  // a nearby exponent
      b = ((a & 0xFF800000u) - (static_cast<uint32_t>(g() % 30) << 23)) | (static_cast<uint32_t>(g()) & 0x7FFFFF);
    const uint32_t want = nm::sf::add(a, b), got = add(a, b);
    if (got != want && ++bad <= 10)
      ADD_FAILURE() << std::hex << "add(0x" << a << ", 0x" << b << "): RTL 0x" << got << ", reference 0x" << want;
  }
  EXPECT_EQ(bad, 0u);
}

TEST_F(Fpu, AddIsCommutativeOnSpecials) {
  static const uint32_t v[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80400000u, 0x7F800000u, 0xFF800000u,
                               0x7FC00000u, 0x7F800001u, 0xFFFFFFFFu, 0x00800000u, 0x80800000u, 0x7F7FFFFFu,
                               0xFF7FFFFFu, 0x3F800000u, 0xBF800000u, 0x4B800000u, 0x33800000u, 0x00800001u};
  for (uint32_t a : v)
    for (uint32_t b : v) {
      EXPECT_EQ(add(a, b), nm::sf::add(a, b)) << std::hex << a << " + " << b;
      EXPECT_EQ(add(a, b), add(b, a)) << std::hex << a << " + " << b;
    }
}

// Every bf16 value times a set of multipliers that covers every exponent and fraction
// pattern class, plus random pairs.
TEST_F(Fpu, Bf16MulMatchesSoftFloat) {
  std::vector<uint16_t> bs = {0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x7F80, 0xFF80, 0x7FC0, 0x7F81,
                              0xFFFF, 0x3F80, 0x3FFF, 0x7F7F, 0xFF7F, 0x0100, 0x3F00, 0x4000, 0x1F80};
  for (unsigned e = 0; e < 256; e += 7) bs.push_back(static_cast<uint16_t>((e << 7) | (e % 128)));
  uint64_t bad = 0;
  for (uint32_t a = 0; a < 0x10000; ++a)
    for (uint16_t b : bs) {
      const uint32_t want = nm::sf::mul(nm::bf16_to_f32_bits(uint16_t(a)), nm::bf16_to_f32_bits(b));
      const uint32_t got = mul(uint16_t(a), b);
      if (got != want && ++bad <= 10)
        ADD_FAILURE() << std::hex << "mul(0x" << a << ", 0x" << b << "): RTL 0x" << got << ", reference 0x" << want;
    }
  std::mt19937_64 g(7);
  const uint64_t n = full_run() ? 20'000'000 : 1'000'000;
  for (uint64_t i = 0; i < n; ++i) {
    const uint16_t a = static_cast<uint16_t>(g()), b = static_cast<uint16_t>(g());
    const uint32_t want = nm::sf::mul(nm::bf16_to_f32_bits(a), nm::bf16_to_f32_bits(b));
    const uint32_t got = mul(a, b);
    if (got != want && ++bad <= 10)
      ADD_FAILURE() << std::hex << "mul(0x" << a << ", 0x" << b << "): RTL 0x" << got << ", reference 0x" << want;
  }
  EXPECT_EQ(bad, 0u);
}

// vtpu_fp32_mul (the vector unit's multiplier): random pairs weighted to the corners, and
// products near the rounding boundary, the overflow and the FTZ threshold.
TEST_F(Fpu, Fp32MulMatchesSoftFloat) {
  std::mt19937_64 g(99);
  const uint64_t n = full_run() ? 20'000'000 : 1'000'000;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t a = f32_operand(g), b = f32_operand(g);
    if (i % 4 == 1) {  // exponents summing to near the bottom or the top of the range
      const uint32_t ea = (a >> 23) & 0xFF;
      const uint32_t eb = (i % 8 == 1 ? 127 + 1 : 127 + 254) - ea + static_cast<uint32_t>(g() % 5) - 2;
      b = (b & 0x807FFFFFu) | ((eb & 0xFF) << 23);
    }
    if (i % 4 == 2) b = (b & 0xFF800000u) | 0x7FFFFFu;  // all-ones fractions: long carries
    const uint32_t want = nm::sf::mul(a, b), got = fmul(a, b);
    if (got != want && ++bad <= 10)
      ADD_FAILURE() << std::hex << "fmul(0x" << a << ", 0x" << b << "): RTL 0x" << got << ", reference 0x" << want;
  }
  EXPECT_EQ(bad, 0u);
  // docs/numerics.md's examples: rounding up to 2^-126 is kept, an exact tiny result flushes.
  EXPECT_EQ(fmul(0x3F7FFFFEu, 0x00800001u), 0x00800000u);
  EXPECT_EQ(fmul(0x3F7FFFFFu, 0x00800000u), 0x00000000u);
}

TEST_F(Fpu, Fp32DivMatchesSoftFloat) {
  std::mt19937_64 g(31);
  const uint64_t n = full_run() ? 10'000'000 : 500'000;
  uint64_t bad = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t a = f32_operand(g), b = f32_operand(g);
    if (i % 4 == 1) {  // quotients near the overflow and the FTZ threshold
      const uint32_t ea = (a >> 23) & 0xFF;
      // quotient exponent ea - eb + 127: near 1 (FTZ) or near 254 (overflow)
      const uint32_t eb = ea + (i % 8 == 1 ? 126u : -127u) + static_cast<uint32_t>(g() % 5) - 2;
      b = (b & 0x807FFFFFu) | ((eb & 0xFF) << 23);
    }
    if (i % 4 == 2) b = (b & 0xFF800000u) | ((a & 0x7FFFFFu) ^ static_cast<uint32_t>(g() % 4));  // equal significands
    const uint32_t want = nm::sf::div(a, b), got = div(a, b);
    if (got != want && ++bad <= 10)
      ADD_FAILURE() << std::hex << "div(0x" << a << ", 0x" << b << "): RTL 0x" << got << ", reference 0x" << want;
  }
  EXPECT_EQ(bad, 0u);
}

TEST_F(Fpu, Fp32SqrtMatchesSoftFloat) {
  uint64_t bad = 0;
  // every exponent parity and significand edge, then random operands
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t f : {0u, 1u, 2u, 0x3FFFFFu, 0x400000u, 0x7FFFFEu, 0x7FFFFFu})
      for (uint32_t sign : {0u, 0x80000000u}) {
        const uint32_t a = sign | (e << 23) | f;
        if (sqrt(a) != nm::sf::sqrt(a) && ++bad <= 10)
          ADD_FAILURE() << std::hex << "sqrt(0x" << a << "): RTL 0x" << sqrt(a) << ", reference 0x" << nm::sf::sqrt(a);
      }
  std::mt19937_64 g(37);
  const uint64_t n = full_run() ? 10'000'000 : 300'000;
  for (uint64_t i = 0; i < n; ++i) {
    const uint32_t a = f32_operand(g);
    const uint32_t want = nm::sf::sqrt(a), got = sqrt(a);
    if (got != want && ++bad <= 10)
      ADD_FAILURE() << std::hex << "sqrt(0x" << a << "): RTL 0x" << got << ", reference 0x" << want;
  }
  EXPECT_EQ(bad, 0u);
}

// The eight table functions (vtpu_vec_table_pkg), against the soft-float algorithm
// (numerics::ref::eval_f32): every bf16 value as fp32 (the inputs of a bf16 row), the
// ranges where each algorithm switches path, and random fp32 operands.
class FpuTable : public Fpu, public ::testing::WithParamInterface<nm::Transcendental> {};

TEST_P(FpuTable, MatchesSoftFloat) {
  const nm::Transcendental f = GetParam();
  uint64_t bad = 0, checked = 0;
  auto check = [&](uint32_t x) {
    ++checked;
    const uint32_t want = nm::ref::eval_f32(f, x), got = table(f, x);
    if (got != want && ++bad <= 10)
      ADD_FAILURE() << std::hex << nm::transcendental_name(f) << "(0x" << x << "): RTL 0x" << got
                    << ", reference 0x" << want;
  };
  for (uint32_t h = 0; h < 0x10000; ++h) check(h << 16);
  // around the switch points: exp's range ends (89, -104) and the exponent of the result
  // leaving the range, tanh's 0.5, erf's 1, 2 and 4, gelu's x / sqrt 2 = 0.4, 1, 2 and 9.5,
  // and 2^+-126 for recip and rsqrt
  for (uint32_t centre : {0x42B20000u, 0xC2D00000u, 0x42B17218u, 0xC2AEAC50u, 0x3F000000u, 0x3F800000u,
                          0x00800000u, 0x7F000000u, 0x41300000u, 0x40800000u, 0x3F10C5E2u, 0x3FB504F3u,
                          0x40000000u, 0x403504F3u, 0x41570A3Du})
    for (uint32_t sign : {0u, 0x80000000u})
      for (uint32_t d = 0; d < 2000; ++d) check((sign | centre) + d - 1000);
  std::mt19937_64 g(41 + static_cast<unsigned>(f));
  const uint64_t n = full_run() ? 2'000'000 : 100'000;
  for (uint64_t i = 0; i < n; ++i) {
    uint32_t x = f32_operand(g);
    if (i % 2 == 1)  // |x| in [2^-8, 2^8): where the interesting results are
      x = (x & 0x807FFFFFu) | ((119u + static_cast<uint32_t>(g() % 16)) << 23);
    check(x);
  }
  EXPECT_EQ(bad, 0u) << "of " << checked << " operands";
}

INSTANTIATE_TEST_SUITE_P(All, FpuTable,
                         ::testing::ValuesIn(nm::kAllTranscendentals),
                         [](const auto& info) { return std::string(nm::transcendental_name(info.param)); });

}  // namespace
}  // namespace vtpu::rtl
