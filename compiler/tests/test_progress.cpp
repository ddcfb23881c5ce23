// CompileOptions::progress, what the CLI's progress line and ETA read: the stages in order,
// the share of the whole compile never falling, ending at 1 (docs/compiler.md, "Progress").
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

struct Report {
  std::string stage;
  double done;
};

// A chain of eight layers, so code generation has steps to report.
std::filesystem::path chain_model() {
  OnnxBuilder m;
  m.input("x", {4, 16});
  std::string in = "x";
  for (int i = 0; i < 8; ++i) {
    std::string w = "w" + std::to_string(i), h = "h" + std::to_string(i), r = i == 7 ? "y" : "r" + std::to_string(i);
    m.init(w, {16, 16}, 0.3f);
    m.node("MatMul", "fc" + std::to_string(i), {in, w}, {h});
    m.node("Relu", "relu" + std::to_string(i), {h}, {r});
    in = r;
  }
  m.output("y", {4, 16});
  return m.save("vtpu_progress_chain.onnx");
}

std::vector<Report> compile_reporting(const std::filesystem::path& model, CompileOptions opt, CompileResult* result = nullptr) {
  std::vector<Report> seen;
  opt.progress = [&](const std::string& stage, double done) { seen.push_back({stage, done}); };
  CompileResult r = compile_onnx(model, config::load_preset("tiny-8x8"), opt);
  if (result) *result = std::move(r);
  return seen;
}

// The stages met, in order, each once; and the shares rise from 0 to 1.
std::vector<std::string> check_shares(const std::vector<Report>& seen) {
  std::vector<std::string> stages;
  EXPECT_FALSE(seen.empty());
  if (seen.empty()) return stages;
  EXPECT_EQ(seen.front().stage, "import");
  EXPECT_EQ(seen.front().done, 0.0);
  EXPECT_EQ(seen.back().stage, "codegen");
  EXPECT_EQ(seen.back().done, 1.0);
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_GE(seen[i].done, 0.0);
    EXPECT_LE(seen[i].done, 1.0);
    if (i) {
      EXPECT_GE(seen[i].done, seen[i - 1].done) << seen[i].stage << " after " << seen[i - 1].stage;
    }
    if (stages.empty() || stages.back() != seen[i].stage) stages.push_back(seen[i].stage);
  }
  return stages;
}

TEST(CompileProgress, StagesInOrderAndSharesRisingToOne) {
  auto model = chain_model();
  CompileOptions bf16;
  auto seen = compile_reporting(model, bf16);
  EXPECT_EQ(check_shares(seen), (std::vector<std::string>{"import", "lower", "codegen"}));
  // Code generation reports as it goes (16 ops: several distinct shares), not only at its end.
  std::set<double> codegen;
  for (const auto& r : seen)
    if (r.stage == "codegen") codegen.insert(r.done);
  EXPECT_GE(codegen.size(), 5u);

  CompileOptions int8;
  int8.precision = Precision::Int8;
  int8.calibration_samples = 12;  // batch 4: three calibration runs, each reported
  CompileResult first;
  seen = compile_reporting(model, int8, &first);
  EXPECT_EQ(check_shares(seen), (std::vector<std::string>{"import", "lower", "calibrate", "codegen"}));
  size_t runs = 0;
  for (const auto& r : seen) runs += r.stage == "calibrate" && r.done > seen[1].done;
  EXPECT_EQ(runs, 3u);

  // Scales from an earlier compile: no calibration to report.
  int8.calibration_scales = first.calibration_scales;
  EXPECT_EQ(check_shares(compile_reporting(model, int8)), (std::vector<std::string>{"import", "lower", "codegen"}));
}

}  // namespace
}  // namespace vtpu::compiler
