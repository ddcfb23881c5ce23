// Tensor parallelism (compiler/pipeline/tensor_parallel.cpp, codegen/tensor_parallel.cpp):
// which matmuls split and how, and what every chip's program holds. Outputs against the
// single-chip run are checked where a user sees them (tests/cli, ParallelCli.Tensor*).
#include <fmt/format.h>

#include "e2e_fixture.h"
#include "vtpu/models/zoo.h"

namespace vtpu::compiler {
namespace {

config::Config ring_of(const std::string& chip, uint32_t chips) {
  config::Config c = config::load_preset(chip);
  c.name = chip + "-ring" + std::to_string(chips);
  c.system.chips = chips;
  c.ici.shape = {chips};
  c.ici.links = 2;
  c.ici.wraparound = true;
  return c;
}

// BERT's attention splits by whole heads (12 over 5 chips: 2 or 3 a chip) and its
// feed-forward by columns; every chip's program all-reduces twice and makes the whole output.
TEST(TensorParallel, AttentionByHeadsFeedForwardByColumns) {
  auto bert = models::materialize("bert-base-layer", models::default_dir());
  const config::Config cfg = ring_of("tpu-v4-core", 5);
  TensorParallel tp = compile_tensor_parallel(bert, cfg, CompileOptions{});
  ASSERT_EQ(tp.splits.size(), 2u);
  EXPECT_EQ(tp.splits[0].first,
            "encoder.layer.0.attention.query, encoder.layer.0.attention.key, encoder.layer.0.attention.value");
  EXPECT_EQ(tp.splits[0].second, "encoder.layer.0.attention.output");
  EXPECT_EQ(tp.splits[0].units, 12);
  EXPECT_EQ(tp.splits[0].unit, "heads");
  EXPECT_EQ(tp.splits[1].second, "encoder.layer.0.output");
  EXPECT_EQ(tp.splits[1].units, 3072);
  EXPECT_EQ(tp.splits[1].unit, "columns");
  EXPECT_TRUE(tp.whole.empty()) << tp.whole.front();
  ASSERT_EQ(tp.programs.size(), 5u);
  for (size_t c = 0; c < 5; ++c) {
    SCOPED_TRACE("chip " + std::to_string(c));
    const std::string& a = tp.programs[c].assembly;
    size_t phases = 0;
    for (size_t at = a.find("# phase 0:"); at != std::string::npos; at = a.find("# phase 0:", at + 1)) ++phases;
    EXPECT_EQ(phases, 2u) << "one all-reduce per group";
    EXPECT_NE(a.find("ici.send"), std::string::npos);
    // Every chip makes the whole output, as the single-chip program declares it.
    bool output = false;
    for (const auto& t : tp.programs[c].program.tensors)
      if (t.role == isa::TensorRole::Output) output = t.shape == std::vector<int64_t>{1, 128, 768};
    EXPECT_TRUE(output);
  }
  // Chips with 2 heads and chips with 3 make different programs; the all-reduces' buffers are
  // where every chip's program puts them (the first bytes of HBM after the zero region).
  EXPECT_NE(tp.programs[0].assembly, tp.programs[4].assembly);
}

// When a chip's share of the row-parallel matmul takes longer than its all-reduce (tiny MXUs,
// fast links), the all-reduce goes in chunks of column blocks, each one's schedule between the
// matmuls of the next: overlapped with compute. On TPU v4 slices (above) one chunk.
TEST(TensorParallel, AllReduceOverlapsTheNextChunkWhenComputeOutlastsIt) {
  OnnxBuilder m;
  m.input("x", {32, 256});
  m.init("w1", {256, 1024}, 0.1f);
  m.init("w2", {1024, 256}, 0.1f);
  m.node("MatMul", "up", {"x", "w1"}, {"h"});
  m.node("Relu", "act", {"h"}, {"r"});
  m.node("MatMul", "down", {"r", "w2"}, {"y"});
  m.output("y", {32, 256});
  auto path = m.save("vtpu_tp_overlap.onnx");
  config::Config cfg = ring_of("tiny-8x8", 4);
  cfg.core.scalar.sync_flags = 63;
  cfg.ici.link_bandwidth_gbytes_per_s = 400;
  cfg.ici.link_latency_ns = 5;
  cfg.ici.router_delay_ns = 1;
  TensorParallel tp = compile_tensor_parallel(path, cfg, CompileOptions{});
  ASSERT_EQ(tp.splits.size(), 1u);
  for (const CompileResult& r : tp.programs) {
    const std::string& a = r.assembly;
    std::vector<size_t> starts;
    for (size_t at = a.find("# phase 0:"); at != std::string::npos; at = a.find("# phase 0:", at + 1)) starts.push_back(at);
    ASSERT_EQ(starts.size(), 4u) << "four chunks";
    // The first chunk's all-reduce runs among the second chunk's matmuls.
    size_t mm = a.find("mxu.matmul", starts[0]);
    EXPECT_LT(mm, starts[1]);
    EXPECT_LT(a.find("ici.send", starts[0]), a.rfind("mxu.matmul", starts[1]));
  }
  // The same model where a hop costs more than the whole matmul (20 us): every chunk more
  // would pay it again, so one chunk.
  cfg.ici.link_latency_ns = 20000;
  tp = compile_tensor_parallel(path, cfg, CompileOptions{});
  const std::string& a = tp.programs[0].assembly;
  EXPECT_EQ(a.find("# phase 0:"), a.rfind("# phase 0:"));
}

TEST(TensorParallel, SaysWhyAMatmulStaysWhole) {
  auto lenet = models::materialize("lenet5", models::default_dir());
  config::Config cfg = ring_of("tiny-8x8", 4);
  cfg.core.scalar.sync_flags = 63;
  TensorParallel tp = compile_tensor_parallel(lenet, cfg, CompileOptions{});
  ASSERT_EQ(tp.splits.size(), 1u);
  EXPECT_EQ(tp.splits[0].first, "fc1");
  ASSERT_EQ(tp.whole.size(), 1u);
  EXPECT_EQ(tp.whole[0], "fc3: its input comes from fc2, which another group splits");
  // The all-reduce's schedule needs flags the tiny preset's 32 do not leave beside the code
  // generator's own.
  cfg.core.scalar.sync_flags = 32;
  try {
    compile_tensor_parallel(lenet, cfg, CompileOptions{});
    ADD_FAILURE() << "no error";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("raise core.scalar.sync_flags"), std::string::npos) << e.what();
  }
  // A model without two matmuls in a row has nothing to split.
  try {
    compile_tensor_parallel(models::materialize("gemm2048", models::default_dir()), ring_of("tpu-v4-core", 2), {});
    ADD_FAILURE() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no matmuls to split over chips"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtpu::compiler
