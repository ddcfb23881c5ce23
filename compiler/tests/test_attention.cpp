// Multi-head and causal attention: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include <fmt/format.h>

#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// Multi-head self-attention as torch exports it: Q, K, V projections, heads split by
// Reshape + Transpose, scores Q K^T / sqrt(d) (activation x activation MatMul, Div by a
// constant), Softmax, P V, heads merged, output projection and a residual Add; `B` batch
// elements of S tokens, D features in H heads. Saved as `file` in the temporary
// directory, with an input and the output of the fp32 forward pass written out here.
struct AttentionCase {
  std::string path;
  Vec x, want;
};

AttentionCase attention_case(int64_t B, int64_t S, int64_t D, int64_t Hh, const std::string& file) {
  const int64_t d = D / Hh;
  OnnxBuilder m;
  m.input("x", {B, S, D});
  auto& wq = m.init("wq", {D, D}, 0.4f);
  auto& wk = m.init("wk", {D, D}, 0.4f);
  auto& wv = m.init("wv", {D, D}, 0.4f);
  auto& wo = m.init("wo", {D, D}, 0.4f);
  auto& bq = m.init("bq", {D}, 0.1f);
  m.init_i64("heads", {B, S, Hh, d});
  m.init_i64("merged", {B, S, D});
  auto& scale = m.init("sqrt_d", {}, 0, {std::sqrt(float(d))});
  m.node("MatMul", "q_proj", {"x", "wq"}, {"q0"});
  m.node("Add", "q_bias", {"q0", "bq"}, {"q"});
  m.node("MatMul", "k_proj", {"x", "wk"}, {"k"});
  m.node("MatMul", "v_proj", {"x", "wv"}, {"v"});
  for (const char* n : {"q", "k", "v"}) m.node("Reshape", std::string(n) + "_split", {n, "heads"}, {std::string(n) + "h"});
  OnnxBuilder::attr(m.node("Transpose", "q_t", {"qh"}, {"qt"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  OnnxBuilder::attr(m.node("Transpose", "k_t", {"kh"}, {"kt"}), "perm", std::vector<int64_t>{0, 2, 3, 1});
  OnnxBuilder::attr(m.node("Transpose", "v_t", {"vh"}, {"vt"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.node("MatMul", "scores", {"qt", "kt"}, {"s0"});
  m.node("Div", "scale", {"s0", "sqrt_d"}, {"s"});
  m.node("Softmax", "softmax", {"s"}, {"p"});
  m.node("MatMul", "context", {"p", "vt"}, {"c"});
  OnnxBuilder::attr(m.node("Transpose", "c_t", {"c"}, {"ct"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.node("Reshape", "merge", {"ct", "merged"}, {"cm"});
  m.node("MatMul", "o_proj", {"cm", "wo"}, {"o"});
  m.node("Add", "residual", {"o", "x"}, {"y"});
  m.output("y", {B, S, D});
  std::string path = m.save(file).string();

  Vec x = uniform_values(size_t(B * S * D), 23, 500.0f);

  const int64_t rows = B * S;
  Vec q = gemm(x, rows, D, wq, D, bq, false), k = gemm(x, rows, D, wk, D, {}, false), v = gemm(x, rows, D, wv, D, {}, false);
  Vec ctx(size_t(rows * D));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hh; ++h) {
      Vec sc(size_t(S * S));
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < d; ++e) acc += double(q[size_t((b * S + i) * D + h * d + e)]) * k[size_t((b * S + j) * D + h * d + e)];
          sc[size_t(i * S + j)] = float(acc / scale[0]);
        }
      Vec p = softmax_rows(sc, S, S);
      for (int64_t i = 0; i < S; ++i)
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < S; ++j) acc += double(p[size_t(i * S + j)]) * v[size_t((b * S + j) * D + h * d + e)];
          ctx[size_t((b * S + i) * D + h * d + e)] = float(acc);
        }
    }
  Vec want = gemm(ctx, rows, D, wo, D, {}, false);
  for (size_t i = 0; i < want.size(); ++i) want[i] += x[i];
  return {path, x, want};
}

// S = 12 and D = 20 (2 heads of 10) straddle the lane blocks of every preset: the heads
// are split and merged by copies.
TEST_P(CompileE2E, MultiHeadAttentionMatchesFp32Reference) {
  AttentionCase c = attention_case(1, 12, 20, 2, "vtpu_attention_" + id() + ".onnx");
  expect_close(compile_and_run(c.path, {{"x", c.x}}), c.want, tolerance(0.03));
}

// Heads of 16 lanes, a multiple or a divisor of every preset's array size: the batch
// matmuls read each head in place (query rows from the head's first lane, value tiles from
// its lanes in HBM), for two batch elements.
TEST_P(CompileE2E, MultiHeadAttentionReadsHeadsInPlace) {
  AttentionCase c = attention_case(2, 12, 64, 4, "vtpu_attention_heads_" + id() + ".onnx");
  expect_close(compile_and_run(c.path, {{"x", c.x}}), c.want, tolerance(0.03));
}

// With the fewest sync flags the compiler takes (the MXU count + 6; docs/compiler.md, "Sync
// flags") none are left for early stores of right-hand sides: they are stored in front of
// their batch matmuls, and the program (which the simulator runs under the same config,
// refusing any flag past it) gives the same answer.
TEST_P(CompileE2E, MultiHeadAttentionWithTheFewestSyncFlags) {
  AttentionCase c = attention_case(2, 12, 64, 4, "vtpu_attention_few_flags_" + id() + ".onnx");
  // With the preset's flags, the keys and values go early, on the flag after the packed
  // convolution's three.
  config::Config cfg = config::load_preset(preset());
  const std::string early = fmt::format("flag=f{}\n", cfg.core.mxu.count + 7);
  CompileOptions opt = options();
  opt.calibration = {{{"x", c.x}}};
  EXPECT_NE(compile_onnx(c.path, cfg, opt).assembly.find(early), std::string::npos);
  tweak_config = [](config::Config& cfg) { cfg.core.scalar.sync_flags = cfg.core.mxu.count + 6; };
  cfg.core.scalar.sync_flags = cfg.core.mxu.count + 6;
  EXPECT_EQ(compile_onnx(c.path, cfg, opt).assembly.find(early), std::string::npos);
  expect_close(compile_and_run(c.path, {{"x", c.x}}), c.want, tolerance(0.03));
}

// Causal self-attention (one head): the mask constant [1, S, S] (0 on and below the
// diagonal, -1e9 above) added to the scores folds into the softmax, in fp32 also for INT8.
TEST_P(CompileE2E, CausalMaskedAttentionMatchesFp32Reference) {
  const int64_t S = 10, D = 12;
  OnnxBuilder m;
  m.input("x", {1, S, D});
  auto& wq = m.init("wq", {D, D}, 0.5f);
  auto& wk = m.init("wk", {D, D}, 0.5f);
  auto& wv = m.init("wv", {D, D}, 0.5f);
  Vec causal(size_t(S * S));
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) causal[size_t(i * S + j)] = j <= i ? 0.0f : -1e9f;
  m.init("mask", {1, S, S}, 0, causal);
  m.node("MatMul", "q", {"x", "wq"}, {"q"});
  m.node("MatMul", "k", {"x", "wk"}, {"k"});
  m.node("MatMul", "v", {"x", "wv"}, {"v"});
  OnnxBuilder::attr(m.node("Transpose", "kt", {"k"}, {"kt"}), "perm", std::vector<int64_t>{0, 2, 1});
  m.node("MatMul", "scores", {"q", "kt"}, {"s"});
  m.node("Add", "mask_add", {"s", "mask"}, {"sm"});
  m.node("Softmax", "softmax", {"sm"}, {"p"});
  m.node("MatMul", "context", {"p", "v"}, {"y"});
  m.output("y", {1, S, D});
  auto path = m.save("vtpu_causal_" + id() + ".onnx");

  Vec x = uniform_values(size_t(S * D), 37, 800.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec q = gemm(x, S, D, wq, D, {}, false), k = gemm(x, S, D, wk, D, {}, false), v = gemm(x, S, D, wv, D, {}, false);
  Vec sc(size_t(S * S));
  for (int64_t i = 0; i < S; ++i)
    for (int64_t j = 0; j < S; ++j) {
      double acc = causal[size_t(i * S + j)];
      for (int64_t e = 0; e < D; ++e) acc += double(q[size_t(i * D + e)]) * k[size_t(j * D + e)];
      sc[size_t(i * S + j)] = float(acc);
    }
  Vec want = gemm(softmax_rows(sc, S, S), S, S, v, D, {}, false);
  // Row 0 attends to itself only: its output is v's row 0.
  for (int64_t e = 0; e < D; ++e) ASSERT_NEAR(want[size_t(e)], v[size_t(e)], 1e-5);
  expect_close(got, want, tolerance(0.03));
}

}  // namespace
}  // namespace vtpu::compiler
