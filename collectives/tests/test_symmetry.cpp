// Estimating by symmetry (chip 0 simulated alone, standing for every chip of a torus) against
// simulating every chip: cycles within 1% at 64 chips (TPU v4 4x4x4) and 256 chips (the
// v5e-like 16x16 pod), the agreement docs/collectives.md reports.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"

namespace vtpu::collectives {
namespace {


void expect_agreement(const char* preset, Kind kind, uint64_t bytes) {
  config::Config cfg = config::load_preset(preset);
  Spec s;
  s.kind = kind;
  s.bytes = bytes;
  RunOptions full;
  full.data = false;
  RunOptions sym = full;
  sym.symmetric = true;
  Summary f = run_isolated(cfg, s, full), y = run_isolated(cfg, s, sym);
  ASSERT_EQ(f.error, "");
  ASSERT_EQ(y.error, "");
  EXPECT_EQ(f.simulated_chips, cfg.system.chips);
  EXPECT_EQ(y.simulated_chips, 1u);
  double diff = std::fabs(double(y.cycles) - double(f.cycles)) / double(f.cycles);
  EXPECT_LE(diff, 0.01) << preset << ": full " << f.cycles << " cycles, by symmetry " << y.cycles;
}

TEST(Symmetry, AllReduceOn64Chips) { expect_agreement("tpu-v4-4x4x4", Kind::AllReduce, 4 << 20); }
TEST(Symmetry, AllGatherOn64Chips) { expect_agreement("tpu-v4-4x4x4", Kind::AllGather, 4 << 20); }
TEST(Symmetry, ReduceScatterOn64Chips) { expect_agreement("tpu-v4-4x4x4", Kind::ReduceScatter, 4 << 20); }
TEST(Symmetry, AllReduceOn256Chips) { expect_agreement("tpu-v5e-like-16x16", Kind::AllReduce, 1 << 20); }

TEST(Symmetry, LargerCasesWhenAsked) {
  if (!testing::full_suite()) GTEST_SKIP() << "set VTPU_MULTICHIP_FULL=1";
  expect_agreement("tpu-v5e-like-16x16", Kind::AllReduce, 16 << 20);
  expect_agreement("tpu-v4-4x4x4", Kind::AllReduce, 64 << 20);
  expect_agreement("tpu-v4-4x4x4", Kind::AllToAll, 16 << 20);
}

TEST(Symmetry, OnlyForTori) {
  config::Config mesh = testing::small({4}, false);
  Spec s;
  s.bytes = 4096;
  RunOptions o;
  o.symmetric = true;
  o.data = false;
  Summary f = run_isolated(mesh, s, o);
  EXPECT_NE(f.error.find("needs a torus"), std::string::npos) << f.error;
}

}  // namespace
}  // namespace vtpu::collectives
