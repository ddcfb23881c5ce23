// Pipeline stages (compiler/pipeline/stages.cpp, codegen/stage_links.cpp): the model cut into a
// chain of programs, each sending what the next one reads, in micro-batches. Outputs against
// the single-chip run are checked where a user sees them (tests/cli, ParallelCli.Pipeline*).
#include <fmt/format.h>

#include "e2e_fixture.h"
#include "vtpu/models/zoo.h"

namespace vtpu::compiler {
namespace {

const isa::TensorInfo* find(const isa::Program& p, const std::string& name, isa::TensorRole role) {
  for (const auto& t : p.tensors)
    if (t.name == name && t.role == role) return &t;
  return nullptr;
}

config::Config ring(uint32_t chips) {
  config::Config c = config::load_preset("tiny-8x8");
  c.name = "tiny-8x8-ring" + std::to_string(chips);
  c.system.chips = chips;
  c.ici.shape = {chips};
  c.ici.links = 2;
  return c;
}

TEST(Stages, EachStageSendsWhatTheNextReadsOneMicroBatchAPass) {
  auto lenet = models::materialize("lenet5", models::default_dir());
  const config::Config cfg = ring(3);
  CompileOptions o;
  o.precision = Precision::Int8;
  o.batch = 4;
  CompileResult whole = compile_onnx(lenet, config::load_preset("tiny-8x8"), o);
  o.calibration_scales = whole.calibration_scales;
  Pipeline pipe = compile_stages(lenet, cfg, o, {{0, 1, 2}, 2});
  ASSERT_EQ(pipe.stages.size(), 3u);
  EXPECT_EQ(pipe.batch, 4);
  EXPECT_EQ(pipe.micro_batches, 2);
  const std::string arrived = fmt::format("wait f{}\n", cfg.core.mxu.count + 7);
  for (size_t s = 0; s < 3; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    const Stage& st = pipe.stages[s];
    const std::string& a = st.result.assembly;
    EXPECT_EQ(st.chip, s);
    EXPECT_NE(a.find("li r31, 2\n"), std::string::npos) << "a pass per micro-batch";
    EXPECT_EQ(st.input.empty(), s == 0);
    EXPECT_EQ(st.output.empty(), s == 2);
    EXPECT_EQ(a.find(arrived) != std::string::npos, s > 0);
    // The model's inputs are read by the first stage, its outputs made by the last.
    for (const auto& t : whole.program.tensors) {
      const isa::TensorInfo* mine = find(st.result.program, t.name, t.role);
      bool here = t.role == isa::TensorRole::Input ? s == 0 : s == 2;
      EXPECT_EQ(mine != nullptr, here) << t.name;
      if (mine && here) {
        EXPECT_EQ(mine->shape, t.shape) << t.name;
        EXPECT_EQ(mine->quant_scale, t.quant_scale) << t.name;
      }
    }
    if (s == 2) {
      EXPECT_EQ(a.find("ici.send"), std::string::npos);
      continue;
    }
    // The tensor sent is the one the next stage reads, whole batch, same encoding, and the
    // send writes into it on the next chip.
    const isa::TensorInfo* out = find(st.result.program, st.output, isa::TensorRole::Output);
    const isa::TensorInfo* in = find(pipe.stages[s + 1].result.program, st.output, isa::TensorRole::Input);
    ASSERT_TRUE(out && in) << st.output;
    EXPECT_EQ(pipe.stages[s + 1].input, st.output);
    EXPECT_EQ(out->shape, in->shape);
    EXPECT_EQ(out->shape[0], 4);
    EXPECT_EQ(out->dtype, in->dtype);
    EXPECT_EQ(out->quant_scale, in->quant_scale);
    EXPECT_NE(a.find(fmt::format("li r9, {}\n", s + 1)), std::string::npos);
    EXPECT_NE(a.find(fmt::format("bytes={} src_off={} dst_off={}\n", out->bytes() / 2, out->hbm_addr, in->hbm_addr)),
              std::string::npos);
    EXPECT_NE(a.find("ici.send"), std::string::npos);
    EXPECT_NE(a.find(fmt::format("wait f{}, 2\n", cfg.core.mxu.count + 8)), std::string::npos) << "all sends acknowledged";
  }
  double share = 0;
  for (const Stage& st : pipe.stages) share += st.cost;
  EXPECT_NEAR(share, 1.0, 1e-9);
}

TEST(Stages, BadRequestsSayWhy) {
  auto lenet = models::materialize("lenet5", models::default_dir());
  CompileOptions o;
  o.batch = 4;
  auto says = [&](const config::Config& cfg, StageOptions so, const std::string& want) {
    try {
      compile_stages(lenet, cfg, o, so);
      ADD_FAILURE() << "no error; wanted: " << want;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  says(ring(3), {{0, 1, 2}, 3}, "does not divide into 3 equal micro-batches");
  says(ring(8), {{0, 1, 2, 3, 4, 5, 6, 7}, 0}, "at most 6 pipeline stages");
  says(ring(2), {{0}, 0}, "two stages or more");
}

}  // namespace
}  // namespace vtpu::compiler
