// Matmuls (MLP, split K, streams of matmuls, elementwise chains in their epilogues): models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

TEST_P(CompileE2E, MlpMatchesFp32Reference) {
  OnnxBuilder m;
  const int64_t B = 3, K = 40, H = 48, N = 10;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.3f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  auto& w2 = m.init("w2", {N, H}, 0.3f);
  auto& b2 = m.init("b2", {N}, 0.2f);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  m.node("Relu", "relu1", {"h"}, {"hr"});
  OnnxBuilder::attr(m.node("Gemm", "fc2", {"hr", "w2", "b2"}, {"logits"}), "transB", int64_t(1));
  m.node("Softmax", "softmax", {"logits"}, {"y"});
  m.output("y", {B, N});
  auto path = m.save("vtpu_mlp_" + id() + ".onnx");

  config::Config cfg = config::load_preset(preset());
  Vec x = uniform_values(size_t(B * K), 5, 500.0f);
  CompileOptions opt = options();
  opt.calibration = {{{"x", x}}};  // INT8: calibrate on data like the test's
  CompileResult r = compile_onnx(path, cfg, opt);
  EXPECT_EQ(r.bounds.size(), 3u);
  std::string out = simulate(cfg, r.program, {{"x", encode(r.program, "x", x)}}, "y");
  ASSERT_EQ(out.substr(0, 2), "OK") << out << "\n" << r.assembly.substr(0, 4000);
  Vec want = softmax_rows(gemm(relu(gemm(x, B, K, w1, H, b1, true)), B, H, w2, N, b2, true), B, N);
  expect_close(decode(r.program, "y", out.substr(2)), want, tolerance(0.03));
}

// Two output blocks, fewer than tpu-v4-core's four MXUs: the matmul splits its K tiles in
// halves on two MXUs each (the first half's partial sums go to unified-buffer rows, the
// second half adds them before the bias, ReLU and conversion). Single-MXU presets do not
// split; the result is the same matmul either way.
TEST_P(CompileE2E, SplitKMatmulMatchesFp32Reference) {
  OnnxBuilder m;
  const int64_t B = 6, K = 512, N = 200;
  m.input("x", {B, K});
  auto& w = m.init("w", {K, N}, 0.1f);
  auto& b = m.init("b", {N}, 0.3f);
  m.node("MatMul", "fc", {"x", "w"}, {"h"});
  m.node("Add", "bias", {"h", "b"}, {"hb"});
  m.node("Relu", "relu", {"hb"}, {"y"});
  m.output("y", {B, N});
  auto path = m.save("vtpu_splitk_" + id() + ".onnx");

  config::Config cfg = config::load_preset(preset());
  Vec x = uniform_values(size_t(B * K), 9, 1000.0f);
  CompileOptions opt = options();
  opt.calibration = {{{"x", x}}};
  CompileResult r = compile_onnx(path, cfg, opt);
  // The first halves' epilogues copy accumulator rows out: only when there are MXUs to spare.
  bool copies_partial_sums = false;
  for (size_t at = r.assembly.find("vec.copy dst=ub["); at != std::string::npos; at = r.assembly.find("vec.copy dst=ub[", at + 1))
    copies_partial_sums |= r.assembly.substr(at, r.assembly.find('\n', at) - at).find("a=acc[") != std::string::npos;
  EXPECT_EQ(copies_partial_sums, cfg.core.mxu.count > 1);
  std::string out = simulate(cfg, r.program, {{"x", encode(r.program, "x", x)}}, "y");
  ASSERT_EQ(out.substr(0, 2), "OK") << out;
  Vec want = relu(gemm(x, B, K, w, N, b, false));
  expect_close(decode(r.program, "y", out.substr(2)), want, tolerance(0.03));
}

// Two matmuls reading the same input run as one stream (like attention's projections);
// with one output block each they would leave two of tpu-v4-core's MXUs idle, so each
// splits its K tiles too. The sum of the two checks both against the fp32 pass.
TEST_P(CompileE2E, GroupedSplitKMatmulsMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t B = 5, K = 384, N = 100;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {K, N}, 0.1f);
  auto& w2 = m.init("w2", {K, N}, 0.1f);
  m.node("MatMul", "fc1", {"x", "w1"}, {"a"});
  m.node("MatMul", "fc2", {"x", "w2"}, {"b"});
  m.node("Add", "sum", {"a", "b"}, {"y"});
  m.output("y", {B, N});
  auto path = m.save("vtpu_group_splitk_" + id() + ".onnx");

  Vec x = uniform_values(size_t(B * K), 13, 1000.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec a = gemm(x, B, K, w1, N, {}, false), b = gemm(x, B, K, w2, N, {}, false);
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  expect_close(got, a, tolerance(0.03));
}

// An audio front end on [N, C, L] signals: Conv1d (stride 2, dilation 2, padding), ReLU,
// MaxPool1d, run as 2-D operators over a height-1 image.
// A chain of elementwise ops on a matmul's output that reads it several times (the shape of
// GPT-2's tanh GELU: y * tanh(y + y * y * y)) runs in the matmul's epilogues (bf16) and
// matches the fp32 definition.
TEST_P(CompileE2E, ElementwiseChainAfterMatmulMatchesFp32Reference) {
  const int64_t M = 40, K = 24, N = 150;
  OnnxBuilder m;
  m.input("x", {M, K});
  auto& w = m.init("w", {K, N}, 0.3f);
  m.node("MatMul", "proj", {"x", "w"}, {"y"});
  m.node("Mul", "sq", {"y", "y"}, {"y2"});
  m.node("Mul", "cube", {"y2", "y"}, {"y3"});
  m.node("Add", "poly", {"y", "y3"}, {"p"});
  m.node("Tanh", "th", {"p"}, {"t"});
  m.node("Mul", "gate", {"y", "t"}, {"z"});
  m.output("z", {M, N});
  auto path = m.save("vtpu_chain_" + id() + ".onnx");
  Vec x = uniform_values(size_t(M * K), 73, 1.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "z");
  Vec y = gemm(x, M, K, w, N, Vec(size_t(N), 0.0f), false), want(y.size());
  for (size_t i = 0; i < y.size(); ++i) want[i] = y[i] * std::tanh(y[i] + y[i] * y[i] * y[i]);
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.05));
}

}  // namespace
}  // namespace vtpu::compiler
