// Hand-written edge cases for the MXU cross-check, run on every Verilated model. Expected
// values come from vtpu::numerics::ref and the cycles from docs/microarch.md (expect()).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "mxu_harness.h"

namespace vtpu::rtl {
namespace {

// bf16 bit patterns
constexpr uint16_t kPZero = 0x0000, kNZero = 0x8000, kPInf = 0x7F80, kNInf = 0xFF80;
constexpr uint16_t kQNaN = 0x7FC0, kSNaN = 0x7F81, kNegNaN = 0xFFC1;
constexpr uint16_t kOne = 0x3F80, kMinusOne = 0xBF80, kTwo = 0x4000, kThree = 0x4040;
constexpr uint16_t kMax = 0x7F7F, kMinNormal = 0x0080, kDenorm = 0x0001, kNegDenorm = 0x807F;

uint16_t pow2(int e) { return static_cast<uint16_t>((e + 127) << 7); }  // 2^e, e in [-126, 127]

class Builder {
 public:
  Builder(const MxuParams& p, std::string origin) : p_(p) {
    prog_.origin = std::move(origin);
    prog_.acc_init.assign(size_t(p.acc_rows) * p.cols, 0);
  }
  const MxuParams& p() const { return p_; }

  // A tile; w(k, n) gives the valid elements, padding is NaN / inf garbage.
  unsigned tile(bool bf16, unsigned k, unsigned n, const std::function<uint16_t(unsigned, unsigned)>& w,
                uint64_t ready = 0) {
    Tile t;
    t.bf16 = bf16;
    t.k = k;
    t.n = n;
    t.ready = ready;
    t.w.resize(size_t(p_.rows) * p_.cols);
    for (unsigned r = 0; r < p_.rows; ++r)
      for (unsigned c = 0; c < p_.cols; ++c)
        t.w[size_t(r) * p_.cols + c] = (r < k && c < n) ? w(r, c) : ((r + c) % 2 ? kSNaN : kNInf);
    prog_.tiles.push_back(std::move(t));
    return unsigned(prog_.tiles.size() - 1);
  }

  // A matmul on `tile` (for its K and dtype); a(b, k) gives the valid input lanes.
  Matmul mm(unsigned tile, unsigned rows, unsigned dst, bool acc, bool swap,
            const std::function<uint16_t(unsigned, unsigned)>& a) const {
    const Tile& t = prog_.tiles[tile];
    Matmul m;
    m.rows = rows;
    m.dst = dst;
    m.acc = acc;
    m.swap = swap;
    m.bf16 = t.bf16;
    m.a.resize(size_t(rows) * p_.rows);
    for (unsigned b = 0; b < rows; ++b)
      for (unsigned k = 0; k < p_.rows; ++k)
        m.a[size_t(b) * p_.rows + k] = k < t.k ? a(b, k) : (k % 2 ? kQNaN : kPInf);
    return m;
  }

  void bundle(std::optional<Matmul> m, bool wl, uint64_t earliest = 0) {
    Bundle b;
    b.mm = std::move(m);
    b.wl = wl;
    b.earliest = earliest;
    prog_.bundles.push_back(std::move(b));
  }
  void acc(unsigned row, unsigned col, uint32_t v) { prog_.acc_init[size_t(row) * p_.cols + col] = v; }

  // Loads `t`, then one matmul with it.
  void load_and_run(unsigned t, unsigned rows, unsigned dst, bool acc,
                    const std::function<uint16_t(unsigned, unsigned)>& a) {
    bundle(std::nullopt, true);
    bundle(mm(t, rows, dst, acc, true, a), false);
  }

  const Program& program() const { return prog_; }

 private:
  const MxuParams& p_;
  Program prog_;
};

uint16_t int8(int v) { return static_cast<uint16_t>(0xA500 | static_cast<uint8_t>(v)); }  // garbage high byte

class MxuEdge : public ::testing::TestWithParam<MxuParams> {
 protected:
  void check(const Builder& b) {
    auto mxu = make_mxu(GetParam().name);
    const RunResult r = run(*mxu, b.program());
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    EXPECT_TRUE(r.ok) << r.message << "reproduce: build/tests/vtpu_rtl_cosim_test --gtest_filter='"
                      << info->test_suite_name() << "." << info->name() << "'";
  }
  bool bf16() const { return GetParam().bf16; }
};

// The bf16 cases run on the models with bf16-capable PEs.
class MxuEdgeBf16 : public MxuEdge {};

std::vector<MxuParams> bf16_models() {
  std::vector<MxuParams> v;
  for (const MxuParams& p : mxu_models())
    if (p.bf16) v.push_back(p);
  return v;
}

TEST_P(MxuEdge, Int8Extremes) {
  Builder b(GetParam(), "edge Int8Extremes");
  const unsigned R = b.p().rows, C = b.p().cols;
  const unsigned t = b.tile(false, R, C, [](unsigned k, unsigned n) {
    switch (n % 3) {
      case 0: return int8(-128);
      case 1: return int8(127);
      default: return int8(k % 2 ? -128 : 127);
    }
  });
  const auto a = [](unsigned row, unsigned k) {
    switch (row % 4) {
      case 0: return int8(-128);
      case 1: return int8(127);
      case 2: return int8(k % 2 ? 127 : -128);
      default: return int8(-127);
    }
  };
  b.load_and_run(t, 8, 0, false, a);
  b.bundle(b.mm(t, 8, 0, true, false, a), false);  // accumulate: twice the sums
  b.bundle(b.mm(t, 8, 4, true, false, a), false);  // overlapping rows
  check(b);
}

TEST_P(MxuEdge, Int32Wraps) {
  Builder b(GetParam(), "edge Int32Wraps");
  const unsigned R = b.p().rows, C = b.p().cols;
  for (unsigned n = 0; n < C; ++n) {
    b.acc(0, n, 0x7FFFFFFFu - n);       // + positive sums wraps to negative
    b.acc(1, n, 0x80000000u + n);       // + negative sums wraps to positive
    b.acc(2, n, 0xFFFFFFFFu);           // -1
  }
  const unsigned t = b.tile(false, R, C, [](unsigned, unsigned n) { return int8(n % 2 ? -128 : 127); });
  b.load_and_run(t, 3, 0, true, [](unsigned row, unsigned) { return int8(row == 1 ? 127 : -128); });
  // Repeated accumulation of the largest products onto one row.
  for (int i = 0; i < 4; ++i)
    b.bundle(b.mm(t, 1, 0, true, false, [](unsigned, unsigned) { return int8(-128); }), false);
  check(b);
}

TEST_P(MxuEdgeBf16, Bf16SpecialsDense) {
  Builder b(GetParam(), "edge Bf16SpecialsDense");
  const unsigned R = b.p().rows, C = b.p().cols;
  static const std::vector<uint16_t> v = {kPZero, kNZero,    kPInf,      kNInf, kQNaN,     kSNaN,
                                          kNegNaN, kDenorm,  kNegDenorm, kMinNormal, kMax, 0xFF7F,
                                          kOne,   kMinusOne, pow2(64),   pow2(-64), 0x3FC0, kThree};
  const unsigned t = b.tile(true, R, C, [&](unsigned k, unsigned n) { return v[(k * 7 + n * 5) % v.size()]; });
  const unsigned rows = unsigned(2 * v.size());
  b.load_and_run(t, rows, 0, false, [&](unsigned row, unsigned k) { return v[(row * 3 + k * 11) % v.size()]; });
  b.bundle(b.mm(t, rows, 3, true, false, [&](unsigned row, unsigned k) { return v[(row + k) % v.size()]; }), false);
  check(b);
}

TEST_P(MxuEdgeBf16, Bf16SpecialsSparse) {
  Builder b(GetParam(), "edge Bf16SpecialsSparse");
  const unsigned R = b.p().rows, C = b.p().cols;
  static const std::vector<uint16_t> sp = {kPInf, kNInf, kQNaN, kSNaN, kNegNaN, kPZero, kNZero, kDenorm, kMax};
  // One special weight per column, one special input lane per row; everything else normal.
  const unsigned t = b.tile(true, R, C, [&](unsigned k, unsigned n) {
    return k == n % R ? sp[n % sp.size()] : static_cast<uint16_t>(0x3F80 + ((k * 13 + n) % 64));
  });
  const unsigned rows = unsigned(sp.size() * R);
  b.load_and_run(t, rows, 0, false, [&](unsigned row, unsigned k) {
    return k == row % R ? sp[(row / R) % sp.size()] : static_cast<uint16_t>(0xBF80 + ((row + 3 * k) % 50));
  });
  check(b);
}

TEST_P(MxuEdgeBf16, SignedZeros) {
  Builder b(GetParam(), "edge SignedZeros");
  const unsigned R = b.p().rows, C = b.p().cols;
  if (R < 2) GTEST_SKIP() << "needs two rows";
  // Column patterns (products are w because the inputs are 1.0 or -1.0):
  //   0: -1.5*2^-126 then 2^-126: the sum -2^-127 flushes to -0;
  //   1: 1 then -1: x + (-x) = +0;  2: -0 products only: +0 (p starts at +0);
  //   3: +0 then -0.
  const unsigned t = b.tile(true, 2, C, [](unsigned k, unsigned n) -> uint16_t {
    switch (n % 4) {
      case 0: return k == 0 ? 0x8040 | (1 << 7) : kMinNormal;  // -1.5 * 2^-126, 2^-126
      case 1: return k == 0 ? kOne : kMinusOne;
      case 2: return kNZero;
      default: return k == 0 ? kPZero : kNZero;
    }
  });
  for (unsigned n = 0; n < C; ++n) {
    b.acc(0, n, 0x80000000u);  // -0: (-0) + (-0) = -0, (-0) + (+0) = +0
    b.acc(1, n, 0x00000000u);
    b.acc(2, n, 0x80000001u);  // denormal: reads as -0
    b.acc(3, n, 0x00000001u);  // denormal: reads as +0
  }
  b.load_and_run(t, 4, 0, true, [](unsigned, unsigned) { return kOne; });
  b.bundle(b.mm(t, 4, 4, false, false, [](unsigned row, unsigned) { return row % 2 ? kMinusOne : kOne; }), false);
  (void)R;
  check(b);
}

TEST_P(MxuEdgeBf16, RoundToEven) {
  Builder b(GetParam(), "edge RoundToEven");
  const unsigned R = b.p().rows, C = b.p().cols;
  if (R < 3) GTEST_SKIP() << "needs three rows";
  // Products are the weights (inputs are powers of two). Per column, in k order:
  static const std::vector<std::vector<uint16_t>> cols = {
      {pow2(24), kOne, kOne},              // 2^24 + 1: tie -> 2^24, twice
      {pow2(24), kTwo, kOne},              // 2^24 + 2 + 1: tie -> 2^24 + 4 (even)
      {kOne, pow2(-23), pow2(-24)},        // 1 + 2^-23 + 2^-24: tie -> 1 + 2^-22
      {kOne, pow2(-24), pow2(-40)},        // tie broken by the sticky bit: up
      {kOne, static_cast<uint16_t>(pow2(-24) | 0x8000), pow2(-60)},  // 1 - 2^-24 + tiny
      {pow2(24), kThree, kMinusOne},       // 2^24 + 3 -> 2^24 + 4, then - 1 -> 2^24 + 3 -> tie
      {static_cast<uint16_t>(0x7F7F), static_cast<uint16_t>(0x7F7F), kOne},  // overflow to inf by rounding
      {static_cast<uint16_t>(0x8000 | pow2(24)), kOne, kOne},               // negative ties
  };
  const unsigned t = b.tile(true, 3, C, [&](unsigned k, unsigned n) { return cols[n % cols.size()][k]; });
  b.load_and_run(t, 6, 0, false, [](unsigned row, unsigned) {
    return row % 3 == 0 ? kOne : row % 3 == 1 ? kTwo : static_cast<uint16_t>(0x8000 | pow2(-3));
  });
  (void)R;
  check(b);
}

TEST_P(MxuEdgeBf16, DenormalInputs) {
  Builder b(GetParam(), "edge DenormalInputs");
  const unsigned R = b.p().rows, C = b.p().cols;
  const unsigned t = b.tile(true, R, C, [](unsigned k, unsigned n) -> uint16_t {
    switch ((k + n) % 5) {
      case 0: return kDenorm;
      case 1: return kNegDenorm;
      case 2: return kPInf;  // denormal x inf = 0 x inf = NaN
      case 3: return kOne;
      default: return kMinNormal;
    }
  });
  for (unsigned n = 0; n < C; ++n) b.acc(1, n, n % 2 ? 0x807FFFFFu : 0x00000010u);
  b.load_and_run(t, 5, 0, true, [](unsigned row, unsigned k) -> uint16_t {
    switch ((row * 2 + k) % 4) {
      case 0: return kDenorm;
      case 1: return kNegDenorm;
      case 2: return kOne;
      default: return pow2(-100);
    }
  });
  check(b);
}

TEST_P(MxuEdgeBf16, ProductOverflowAndUnderflow) {
  Builder b(GetParam(), "edge ProductOverflowAndUnderflow");
  const unsigned R = b.p().rows, C = b.p().cols;
  // Weights per column: 2 (2^127 * 2 = 2^128 -> inf), 1.9921875 (stays finite: max), max,
  // 2^-64 (2^-63 * 2^-64 = 2^-127 -> 0), 2^-63 (= 2^-126, the smallest normal), -max.
  static const std::vector<uint16_t> w = {kTwo, 0x3FFF, kMax, pow2(-64), pow2(-63), 0xFF7F};
  const unsigned t = b.tile(true, R, C, [&](unsigned k, unsigned n) { return w[(n + k) % w.size()]; });
  for (unsigned n = 0; n < C; ++n) b.acc(0, n, n % 2 ? 0x7F7FFFFFu : 0xFF7FFFFFu);  // +-max fp32
  b.load_and_run(t, 4, 0, true, [](unsigned row, unsigned k) -> uint16_t {
    switch (row) {
      case 0: return pow2(127);
      case 1: return k % 2 ? pow2(-63) : static_cast<uint16_t>(0x8000 | pow2(127));
      case 2: return pow2(-63);
      default: return k % 2 ? kMax : static_cast<uint16_t>(0xFF7F);
    }
  });
  check(b);
}

TEST_P(MxuEdge, PartialTilesIgnorePadding) {
  Builder b(GetParam(), "edge PartialTilesIgnorePadding");
  const unsigned R = b.p().rows, C = b.p().cols;
  const bool bf = bf16();
  for (unsigned row = 0; row < 8; ++row)
    for (unsigned n = 0; n < C; ++n) {
      static const uint32_t v[] = {0x80000000u, 0x00000001u, 0x80000010u, 0x7FC12345u, 0xFFFFFFFFu, 0x3F800000u};
      b.acc(row, n, v[(row + n) % 6]);
    }
  const auto w = [bf](unsigned k, unsigned n) { return bf ? static_cast<uint16_t>(0x3F80 + k + n) : int8(int(k) - int(n)); };
  const auto a = [bf](unsigned row, unsigned k) { return bf ? static_cast<uint16_t>(0xC000 + row + k) : int8(int(row * 3) - int(k)); };
  const unsigned t0 = b.tile(bf, 1, 1, w);
  const unsigned t1 = b.tile(bf, R, 1, w);
  const unsigned t2 = b.tile(bf, 1, C, w);
  const unsigned t3 = b.tile(bf, (R + 1) / 2, (C + 1) / 2, w);
  b.bundle(std::nullopt, true);
  b.bundle(b.mm(t0, 2, 0, true, true, a), true);
  b.bundle(b.mm(t1, 2, 2, false, true, a), true);
  b.bundle(b.mm(t2, 2, 4, true, true, a), true);
  b.bundle(b.mm(t3, 2, 6, true, true, a), false);
  b.bundle(b.mm(t3, 3, 0, false, false, a), false);
  check(b);
}

// Every matmul swaps in a new tile with one row, and the next tile loads in the same
// bundle: the swap wavefronts of consecutive rows follow each other through the array.
TEST_P(MxuEdge, SwapEveryRow) {
  Builder b(GetParam(), "edge SwapEveryRow");
  const unsigned R = b.p().rows, C = b.p().cols;
  const unsigned n_tiles = 8;
  for (unsigned i = 0; i < n_tiles; ++i) {
    const bool bf = bf16() && i % 2;
    b.tile(bf, 1 + (i * 3) % R, 1 + (i * 5) % C, [bf, i](unsigned k, unsigned n) {
      return bf ? static_cast<uint16_t>(0x3F80 + 9 * i + k * 3 + n) : int8(int(i * 17 + k * 5 + n * 3) - 60);
    });
  }
  b.bundle(std::nullopt, true);
  for (unsigned i = 0; i < n_tiles; ++i) {
    const Tile& t = b.program().tiles[i];
    const bool bf = t.bf16;
    auto m = b.mm(i, 1 + i % 3, i * 2, i % 2 == 0, true, [bf, i](unsigned row, unsigned k) {
      return bf ? static_cast<uint16_t>(0x4000 + i + row * 2 + k) : int8(int(i + row * 7 + k * 11) - 50);
    });
    b.bundle(std::move(m), i + 1 < n_tiles);
  }
  (void)R;
  check(b);
}

// Tiles reach the weight FIFO late; loads wait for them while matmuls keep streaming.
TEST_P(MxuEdge, LateTiles) {
  Builder b(GetParam(), "edge LateTiles");
  const unsigned R = b.p().rows, C = b.p().cols;
  const auto w = [](unsigned k, unsigned n) { return int8(int(k * 3 + n) - 7); };
  const auto a = [](unsigned row, unsigned k) { return int8(int(row + k * 2) - 5); };
  b.tile(false, R, C, w, 5);
  b.tile(false, R, C, w, 40 + 2 * R);
  b.tile(false, R / 2 + 1, C, w, 41 + 2 * R);
  b.bundle(std::nullopt, true);
  b.bundle(b.mm(0, 2 * R + 1, 0, false, true, a), true);
  b.bundle(b.mm(0, 3, 1, true, false, a), false, 3);
  b.bundle(b.mm(1, R, 2, true, true, a), true);
  b.bundle(b.mm(2, 1, 3, true, true, a), false);
  (void)C;
  check(b);
}

INSTANTIATE_TEST_SUITE_P(Cosim, MxuEdge, ::testing::ValuesIn(mxu_models()),
                         [](const auto& info) { return info.param.name; });
INSTANTIATE_TEST_SUITE_P(Cosim, MxuEdgeBf16, ::testing::ValuesIn(bf16_models()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace vtpu::rtl
