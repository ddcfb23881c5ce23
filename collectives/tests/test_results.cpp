// Every chip's output of a collective equals what the collective means, computed from the
// inputs (collectives::expected_output, written from the definitions, not from the
// simulator), on rings, meshes and tori, in every dtype the reductions take.
#include <gtest/gtest.h>

#include "test_util.h"

int sc_main(int, char**) { return 0; }

namespace vtpu::collectives {
namespace {

using testing::Case;
using testing::small;

class Results : public ::testing::TestWithParam<Case> {};

TEST_P(Results, EveryChipGetsTheRightOutput) {
  const Case& c = GetParam();
  Spec s;
  s.kind = c.kind;
  s.dtype = c.dtype;
  s.bytes = c.bytes;
  Summary f = run_isolated(small(c.shape, c.wrap), s);
  ASSERT_EQ(f.error, "");
  EXPECT_TRUE(f.checked);
  EXPECT_EQ(f.mismatch, "");
  EXPECT_GT(f.cycles, 0u);
}

INSTANTIATE_TEST_SUITE_P(Collectives, Results, ::testing::Values(
  Case{"ring4_allreduce_fp32", {4}, true, Kind::AllReduce, isa::Dtype::Fp32, 32 * 1024},
  Case{"ring2_allreduce_int32", {2}, true, Kind::AllReduce, isa::Dtype::Int32, 8 * 1024},
  Case{"ring5_allreduce_uneven_segments", {5}, true, Kind::AllReduce, isa::Dtype::Fp32, 7 * 32},
  Case{"ring16_allreduce_fp32", {16}, true, Kind::AllReduce, isa::Dtype::Fp32, 16 * 1024},
  Case{"torus4x4_allreduce_int32", {4, 4}, true, Kind::AllReduce, isa::Dtype::Int32, 16 * 1024},
  Case{"cube2x2x2_allreduce_bf16", {2, 2, 2}, true, Kind::AllReduce, isa::Dtype::Bf16, 8 * 1024},
  Case{"cube4x4x4_allreduce_fp32", {4, 4, 4}, true, Kind::AllReduce, isa::Dtype::Fp32, 16 * 1024},
  Case{"mesh4_allreduce_fp32", {4}, false, Kind::AllReduce, isa::Dtype::Fp32, 8 * 1024},
  Case{"mesh3x3_allreduce_int32", {3, 3}, false, Kind::AllReduce, isa::Dtype::Int32, 9 * 1024},
  Case{"ring4_allgather", {4}, true, Kind::AllGather, isa::Dtype::Fp32, 16 * 1024},
  Case{"torus4x4_allgather_bf16", {4, 4}, true, Kind::AllGather, isa::Dtype::Bf16, 16 * 1024},
  Case{"torus3x2_reducescatter", {3, 2}, true, Kind::ReduceScatter, isa::Dtype::Fp32, 6 * 1024},
  Case{"cube2x2x2_reducescatter_int32", {2, 2, 2}, true, Kind::ReduceScatter, isa::Dtype::Int32, 8 * 1024},
  Case{"torus2x3_alltoall", {2, 3}, true, Kind::AllToAll, isa::Dtype::Fp32, 6 * 1024},
  Case{"cube2x2x2_alltoall", {2, 2, 2}, true, Kind::AllToAll, isa::Dtype::Int32, 8 * 1024}),
  testing::case_name);

// The one-shot all-reduce (every chip's buffer to every other, added in chip order) on a
// ring, a torus and a cube, in the dtypes it adds; and `auto` takes it where the model says it
// is faster (a tiny message on a ring of 8, whose ring phases are 14 hops one after another).
TEST(Results, OneShotAllReduce) {
  struct C { std::vector<uint32_t> shape; isa::Dtype dt; uint64_t bytes; };
  for (const C& c : {C{{4}, isa::Dtype::Fp32, 8 * 1024}, C{{4, 2}, isa::Dtype::Int32, 4 * 1024},
                     C{{2, 2, 2}, isa::Dtype::Bf16, 4 * 1024}}) {
    SCOPED_TRACE(c.shape.size());
    Spec s;
    s.dtype = c.dt;
    s.bytes = c.bytes;
    s.algorithm = Spec::Algorithm::OneShot;
    config::Config cfg = small(c.shape);
    ASSERT_EQ(plan(cfg, s).phases.at(0).op, Phase::Op::OneShot);
    Summary f = run_isolated(cfg, s);
    ASSERT_EQ(f.error, "");
    EXPECT_TRUE(f.checked);
    EXPECT_EQ(f.mismatch, "");
  }
  Spec s;
  s.bytes = 64;
  s.algorithm = Spec::Algorithm::Auto;
  EXPECT_EQ(plan(small({8}), s).phases.at(0).op, Phase::Op::OneShot);
  s.bytes = 64 * 1024 * 1024;  // too large for the unified buffer eight times over
  EXPECT_NE(plan(small({8}), s).phases.at(0).op, Phase::Op::OneShot);
}

// On a twisted torus the ring neighbours across a wraparound are several hops apart: the
// routes still bring every piece to the right chip.
TEST(Results, TwistedTorusAllReduce) {
  config::Config cfg = small({4, 8});
  cfg.ici.twist = {4, 0};
  Spec s;
  s.bytes = 32 * 1024;
  Summary f = run_isolated(cfg, s);
  ASSERT_EQ(f.error, "");
  EXPECT_TRUE(f.checked);
  EXPECT_EQ(f.mismatch, "");
}

// The check above would notice a wrong answer: outputs of one seed differ from another's.
TEST(Results, TheReferenceDependsOnTheInputs) {
  Plan p;
  p.spec.kind = Kind::AllReduce;
  p.spec.bytes = 1024;
  p.chips = 4;
  EXPECT_NE(expected_output(p, 0, 1), expected_output(p, 0, 2));
  EXPECT_NE(input_of(p, 0, 1), input_of(p, 1, 1));
}

TEST(Results, BadSpecsAreErrors) {
  auto err = [](const config::Config& cfg, Spec s) {
    try {
      plan(cfg, s);
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  Spec s;
  s.bytes = 100;
  EXPECT_NE(err(small({4}), s).find("whole units of 32 bytes"), std::string::npos) << err(small({4}), s);
  s.bytes = 1024;
  EXPECT_NE(err(config::load_preset("tpu-v4-core"), s).find("has one chip"), std::string::npos);
  s.dtype = isa::Dtype::Int8;
  EXPECT_NE(err(small({4}), s).find("use fp32, bf16 or int32"), std::string::npos);
  s.dtype = isa::Dtype::Fp32;
  s.kind = Kind::AllGather;
  s.bytes = 32 * 3;  // not a whole number of units per chip
  EXPECT_NE(err(small({4}), s).find("the same number for every chip"), std::string::npos);
  s.kind = Kind::AllReduce;
  s.bytes = uint64_t(1) << 32;
  EXPECT_NE(err(small({4}), s).find("does not fit"), std::string::npos);
  // docs/collectives.md, "Flags": 6 phases of 2 rings and 4 slots per ring name 43 flags.
  s.bytes = 16 * 1024;
  config::Config few = small({4, 4, 4});
  few.core.scalar.sync_flags = 42;
  for (const char* part : {"needs at least 43 sync flags", "core.scalar.sync_flags is 42", "raise it to 43"})
    EXPECT_NE(err(few, s).find(part), std::string::npos) << part << " in: " << err(few, s);
  few.core.scalar.sync_flags = 43;
  EXPECT_EQ(err(few, s), "no error");
}

// A plan names no flag past the config's (the simulator refuses a program that does): the
// cube's all-reduce on exactly the flags it needs gives every chip the right output.
TEST(Results, AllReduceOnTheFewestSyncFlags) {
  config::Config cfg = small({4, 4, 4});
  cfg.core.scalar.sync_flags = 43;
  Spec s;
  s.bytes = 16 * 1024;
  EXPECT_EQ(plan(cfg, s).slots, 4u);
  Summary f = run_isolated(cfg, s);
  ASSERT_EQ(f.error, "");
  EXPECT_TRUE(f.checked);
  EXPECT_EQ(f.mismatch, "");
}

}  // namespace
}  // namespace vtpu::collectives
