// Softmax, layer and instance normalization, reductions, batch norm: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// An opset-8 model (as in older model zoos): Clip takes its bounds as attributes and a 2-D
// Softmax's default axis 1 is its last.
TEST_P(CompileE2E, Opset8ClipAttributesAndSoftmaxMatchFp32Reference) {
  const int64_t B = 4, K = 32, H = 16;
  OnnxBuilder m(8);
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.4f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  auto* clip = m.node("Clip", "clip", {"h"}, {"c"});
  OnnxBuilder::attr_f(clip, "min", -0.5f);
  OnnxBuilder::attr_f(clip, "max", 1.0f);
  m.node("Softmax", "sm", {"c"}, {"y"});
  m.output("y", {B, H});
  auto path = m.save("vtpu_opset8_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 19, 600.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec want = gemm(x, B, K, w1, H, b1, true);
  int clipped = 0;
  for (auto& v : want) {
    clipped += v < -0.5f || v > 1.0f;
    v = std::clamp(v, -0.5f, 1.0f);
  }
  ASSERT_GT(clipped, 0);
  expect_close(got, softmax_rows(want, B, H), tolerance(0.03));
}

// A model input read only by a softmax stays fp32 in HBM: logits 10000 + k, which bf16 (and
// int8) would round to one value, keep their differences, as in ONNX's softmax_large_number.
TEST_P(CompileE2E, SoftmaxOfFp32InputKeepsCloseLogitsApart) {
  const int64_t M = 3, N = 150;  // more than one lane block on every preset
  OnnxBuilder m;
  m.input("x", {M, N});
  m.node("Softmax", "softmax", {"x"}, {"y"});
  m.output("y", {M, N});
  auto path = m.save("vtpu_softmax_fp32_in_" + id() + ".onnx");
  Vec x(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) x[size_t(i * N + j)] = float(10000 * i) + float(j % 7) * 0.5f - float(j % 3);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  CompileResult r = compile_onnx(path, config::load_preset(preset()), options());
  EXPECT_EQ(tensor(r.program, "x").dtype, isa::Dtype::Fp32);
  expect_close(got, softmax_rows(x, M, N), tolerance(0.02));
}

// Softmax off the last axis, both meanings: opset 12's default axis 1 flattens there (one
// softmax over dimensions 1 and 2 together), opset 13's axis 1 is that dimension alone.
TEST_P(CompileE2E, SoftmaxOverAnAxisFollowsTheOpsetsMeaning) {
  const int64_t A = 2, Bd = 3, Cd = 5;
  for (int opset : {12, 13}) {
    OnnxBuilder m(opset);
    m.input("x", {A, Bd, Cd});
    auto* sm = m.node("Softmax", "sm", {"x"}, {"y"});
    if (opset == 13) OnnxBuilder::attr(sm, "axis", int64_t(1));
    m.output("y", {A, Bd, Cd});
    auto path = m.save("vtpu_softmax_axis_" + std::to_string(opset) + "_" + id() + ".onnx");
    Vec x = uniform_values(size_t(A * Bd * Cd), 43 + opset, 400.0f);
    Vec got = compile_and_run(path, {{"x", x}});
    Vec want;
    if (opset == 12) {
      want = softmax_rows(x, A, Bd * Cd);
    } else {
      want.resize(x.size());
      for (int64_t a = 0; a < A; ++a)
        for (int64_t c = 0; c < Cd; ++c) {
          Vec col(static_cast<size_t>(Bd));
          for (int64_t b = 0; b < Bd; ++b) col[size_t(b)] = x[size_t((a * Bd + b) * Cd + c)];
          Vec p = softmax_rows(col, 1, Bd);
          for (int64_t b = 0; b < Bd; ++b) want[size_t((a * Bd + b) * Cd + c)] = p[size_t(b)];
        }
    }
    expect_close(got, want, tolerance(0.02));
  }
}

// A layer norm exported as its parts (opsets before 17: ReduceMean, Sub, Pow, ReduceMean,
// Add, Sqrt, Div, Mul, Add) compiles to the one layer norm, and a ReduceMean over H and W
// without keepdims is a global average; both against the fp32 definition.
TEST_P(CompileE2E, DecomposedLayerNormAndSpatialMeanMatchDefinition) {
  const int64_t B = 2, S = 5, D = 24, C = 6, H = 4, W = 3;
  OnnxBuilder m;
  m.input("x", {B, S, D});
  m.input("img", {B, C, H, W});
  auto& gamma = m.init("gamma", {D}, 1.0f);
  auto& beta = m.init("beta", {D}, 0.5f);
  m.init("two", {}, 0.0f, {2.0f});
  m.init("eps", {}, 0.0f, {1e-5f});
  OnnxBuilder::attr(m.node("ReduceMean", "mean", {"x"}, {"mu"}), "axes", std::vector<int64_t>{-1});
  m.node("Sub", "centre", {"x", "mu"}, {"d"});
  m.node("Pow", "square", {"d", "two"}, {"d2"});
  OnnxBuilder::attr(m.node("ReduceMean", "var", {"d2"}, {"v"}), "axes", std::vector<int64_t>{-1});
  m.node("Add", "plus_eps", {"v", "eps"}, {"ve"});
  m.node("Sqrt", "std", {"ve"}, {"sd"});
  m.node("Div", "normalize", {"d", "sd"}, {"nz"});
  m.node("Mul", "scale", {"nz", "gamma"}, {"sc"});
  m.node("Add", "shift", {"sc", "beta"}, {"y"});
  auto* rm = m.node("ReduceMean", "spatial_mean", {"img"}, {"g"});
  OnnxBuilder::attr(rm, "axes", std::vector<int64_t>{2, 3});
  OnnxBuilder::attr(rm, "keepdims", int64_t(0));
  m.output("y", {B, S, D});
  m.output("g", {B, C});
  auto path = m.save("vtpu_decomposed_ln_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * S * D), 103, 300.0f), img = uniform_values(size_t(B * C * H * W), 107, 500.0f);
  CompileOptions opt = options();
  opt.emit_mlir_stage = "tpu";
  std::string ir = compile_onnx(path, config::load_preset(preset()), opt).mlir;
  EXPECT_NE(ir.find("tpu.layernorm"), std::string::npos) << "the parts were not recognized as one layer norm";
  Vec got = compile_and_run(path, {{"x", x}, {"img", img}}, "y", /*nchw=*/true);
  Vec want(x.size());
  for (int64_t i = 0; i < B * S; ++i) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mu += x[size_t(i * D + j)] / double(D);
    for (int64_t j = 0; j < D; ++j) var += (x[size_t(i * D + j)] - mu) * (x[size_t(i * D + j)] - mu) / double(D);
    for (int64_t j = 0; j < D; ++j)
      want[size_t(i * D + j)] = float((x[size_t(i * D + j)] - mu) / std::sqrt(var + 1e-5) * gamma[size_t(j)] + beta[size_t(j)]);
  }
  expect_close(got, want, tolerance(0.03));
  Vec got_g = compile_and_run(path, {{"x", x}, {"img", img}}, "g", /*nchw=*/true), want_g(size_t(B * C), 0.0f);
  for (int64_t i = 0; i < B * C * H * W; ++i) want_g[size_t(i / (H * W))] += img[size_t(i)] / float(H * W);
  expect_close(got_g, want_g, tolerance(0.02));
}

// ReduceSum over a middle axis (keepdims) and ReduceMean over two axes (without): the
// reduced axes moved last and summed on the MXU by a column of ones.
TEST_P(CompileE2E, ReductionsOverAnyAxesMatchDefinition) {
  const int64_t A = 3, B = 7, C = 20;
  OnnxBuilder m;
  m.input("x", {A, B, C});
  m.init_i64("mid", {1});
  m.node("ReduceSum", "sum_mid", {"x", "mid"}, {"s"});  // axes as an input: ReduceSum from opset 13
  auto* mo = m.node("ReduceMean", "mean_outer", {"x"}, {"mo"});  // ReduceMean takes it as an input from 18 only
  OnnxBuilder::attr(mo, "axes", std::vector<int64_t>{0, 2});
  OnnxBuilder::attr(mo, "keepdims", int64_t(0));
  m.output("s", {A, 1, C});
  m.output("mo", {B});
  auto path = m.save("vtpu_reductions_" + id() + ".onnx");
  Vec x = uniform_values(size_t(A * B * C), 109, 400.0f);
  Vec want_s(size_t(A * C), 0.0f), want_m(size_t(B), 0.0f);
  for (int64_t a = 0; a < A; ++a)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < C; ++c) {
        float v = x[size_t((a * B + b) * C + c)];
        want_s[size_t(a * C + c)] += v;
        want_m[size_t(b)] += v / float(A * C);
      }
  expect_close(compile_and_run(path, {{"x", x}}, "s"), want_s, tolerance(0.02));
  expect_close(compile_and_run(path, {{"x", x}}, "mo"), want_m, tolerance(0.02));
}

// InstanceNormalization, Tile, Mean of two inputs and a dilated MaxPool with padding, each
// against its definition.
TEST_P(CompileE2E, InstanceNormTileMeanAndPaddedDilatedPoolMatchDefinition) {
  const int64_t N = 2, C = 5, H = 6, W = 7, K = 3, S = 2, D = 2, P = 2;
  const int64_t OH = (H + 2 * P - D * (K - 1) - 1) / S + 1, OW = (W + 2 * P - D * (K - 1) - 1) / S + 1;
  OnnxBuilder m;
  m.input("x", {N, C, H, W});
  auto& sc = m.init("scale", {C}, 1.0f);
  auto& bias = m.init("bias", {C}, 0.5f);
  m.init_i64("reps", {1, 1, 2, 3});
  OnnxBuilder::attr_f(m.node("InstanceNormalization", "inorm", {"x", "scale", "bias"}, {"in"}), "epsilon", 1e-3f);
  m.node("Tile", "tile", {"x", "reps"}, {"t"});
  m.node("Relu", "relu", {"x"}, {"r"});
  m.node("Mean", "mean", {"x", "r"}, {"mn"});
  auto* mp = m.node("MaxPool", "pool", {"x"}, {"mp"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{K, K});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{S, S});
  OnnxBuilder::attr(mp, "dilations", std::vector<int64_t>{D, D});
  OnnxBuilder::attr(mp, "pads", std::vector<int64_t>{P, P, P, P});
  m.output("in", {N, C, H, W});
  m.output("t", {N, C, 2 * H, 3 * W});
  m.output("mn", {N, C, H, W});
  m.output("mp", {N, C, OH, OW});
  auto path = m.save("vtpu_inorm_tile_mean_pool_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 113, 300.0f);
  auto at = [&](int64_t r, int64_t h, int64_t w) { return x[size_t((r * H + h) * W + w)]; };
  Vec want_in(x.size()), want_t(size_t(N * C * 6 * H * W)), want_mn(x.size()), want_mp(size_t(N * C * OH * OW));
  for (int64_t r = 0; r < N * C; ++r) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < H * W; ++i) mu += x[size_t(r * H * W + i)] / double(H * W);
    for (int64_t i = 0; i < H * W; ++i) var += (x[size_t(r * H * W + i)] - mu) * (x[size_t(r * H * W + i)] - mu) / double(H * W);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w) {
        size_t i = size_t((r * H + h) * W + w);
        want_in[i] = float((x[i] - mu) / std::sqrt(var + 1e-3) * sc[size_t(r % C)] + bias[size_t(r % C)]);
        want_mn[i] = (x[i] + std::max(x[i], 0.0f)) / 2;
      }
    for (int64_t h = 0; h < 2 * H; ++h)
      for (int64_t w = 0; w < 3 * W; ++w) want_t[size_t((r * 2 * H + h) * 3 * W + w)] = at(r, h % H, w % W);
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        float mx = -INFINITY;
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < K; ++j) {
            int64_t h = oy * S + i * D - P, w = ox * S + j * D - P;
            if (h >= 0 && h < H && w >= 0 && w < W) mx = std::max(mx, at(r, h, w));
          }
        want_mp[size_t((r * OH + oy) * OW + ox)] = mx;
      }
  }
  expect_close(compile_and_run(path, {{"x", x}}, "in", /*nchw=*/true), want_in, tolerance(0.03));
  expect_close(compile_and_run(path, {{"x", x}}, "t", /*nchw=*/true), want_t, tolerance(0.01));
  expect_close(compile_and_run(path, {{"x", x}}, "mn", /*nchw=*/true), want_mn, tolerance(0.01));
  expect_close(compile_and_run(path, {{"x", x}}, "mp", /*nchw=*/true), want_mp, tolerance(0.01));
}

// BatchNormalization in training mode normalizes with the batch's own mean and population
// variance per channel and returns the running statistics moved toward them by momentum.
TEST_P(CompileE2E, BatchNormTrainingModeMatchesDefinition) {
  const int64_t N = 3, C = 5, H = 6, W = 7;
  const float eps = 1e-3f, momentum = 0.8f;
  OnnxBuilder m(14);  // training_mode and the running statistics as outputs: BatchNormalization from opset 14
  m.input("x", {N, C, H, W});
  auto& gamma = m.init("gamma", {C}, 1.0f);
  auto& beta = m.init("beta", {C}, 0.5f);
  auto& mean = m.init("mean", {C}, 0.5f);
  Vec var(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) var[size_t(c)] = 0.5f + 0.25f * float(c);
  m.init("var", {C}, 0.0f, var);
  auto* bn = m.node("BatchNormalization", "bn", {"x", "gamma", "beta", "mean", "var"}, {"y", "running_mean", "running_var"});
  OnnxBuilder::attr(bn, "training_mode", int64_t(1));
  OnnxBuilder::attr_f(bn, "epsilon", eps);
  OnnxBuilder::attr_f(bn, "momentum", momentum);
  m.output("y", {N, C, H, W});
  m.output("running_mean", {C});
  m.output("running_var", {C});
  auto path = m.save("vtpu_bn_training_" + id() + ".onnx");
  // Channels with different offsets and spreads, so a wrong axis shows.
  Vec x = uniform_values(size_t(N * C * H * W), 97, 400.0f);
  for (int64_t i = 0; i < N * C * H * W; ++i) x[size_t(i)] = x[size_t(i)] * float(1 + i / (H * W) % C) + float(i / (H * W) % C) - 2.0f;
  Vec bm(size_t(C), 0.0f), bv(size_t(C), 0.0f);
  const int64_t P = N * H * W;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < H * W; ++p) bm[size_t(c)] += x[size_t((n * C + c) * H * W + p)] / float(P);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < H * W; ++p) {
        float d = x[size_t((n * C + c) * H * W + p)] - bm[size_t(c)];
        bv[size_t(c)] += d * d / float(P);
      }
  Vec want_y(x.size()), want_mean(static_cast<size_t>(C)), want_var(static_cast<size_t>(C));
  for (int64_t i = 0; i < N * C * H * W; ++i) {
    size_t c = size_t(i / (H * W) % C);
    want_y[size_t(i)] = (x[size_t(i)] - bm[c]) / std::sqrt(bv[c] + eps) * gamma[c] + beta[c];
  }
  for (size_t c = 0; c < size_t(C); ++c) {
    want_mean[c] = mean[c] * momentum + bm[c] * (1 - momentum);
    want_var[c] = var[c] * momentum + bv[c] * (1 - momentum);
  }
  expect_close(compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true), want_y, tolerance(0.03));
  expect_close(compile_and_run(path, {{"x", x}}, "running_mean", /*nchw=*/true), want_mean, tolerance(0.02));
  expect_close(compile_and_run(path, {{"x", x}}, "running_var", /*nchw=*/true), want_var, tolerance(0.02));
}

// A transformer's feed-forward half as torch exports it (opset 17): LayerNormalization,
// MatMul + bias, GELU as x * 0.5 * (1 + erf(x / sqrt(2))), MatMul + bias, residual Add.
TEST_P(CompileE2E, LayerNormAndGeluFeedForwardMatchesFp32Reference) {
  const int64_t S = 6, D = 20, F = 36;
  OnnxBuilder m(17);
  m.input("x", {1, S, D});
  Vec g(static_cast<size_t>(D));
  for (int64_t j = 0; j < D; ++j) g[size_t(j)] = 0.7f + 0.03f * float(j);
  auto& gamma = m.init("ln.gamma", {D}, 0, g);
  auto& beta = m.init("ln.beta", {D}, 0.2f);
  auto& w1 = m.init("w1", {D, F}, 0.4f);
  auto& b1 = m.init("b1", {F}, 0.2f);
  auto& w2 = m.init("w2", {F, D}, 0.3f);
  auto& b2 = m.init("b2", {D}, 0.1f);
  m.init("sqrt2", {}, 0, {std::sqrt(2.0f)});
  m.init("one", {}, 0, {1.0f});
  m.init("half", {}, 0, {0.5f});
  OnnxBuilder::attr_f(m.node("LayerNormalization", "ln", {"x", "ln.gamma", "ln.beta"}, {"n"}), "epsilon", 1e-5f);
  m.node("MatMul", "fc1", {"n", "w1"}, {"h0"});
  m.node("Add", "fc1.bias", {"h0", "b1"}, {"h"});
  m.node("Div", "gelu.div", {"h", "sqrt2"}, {"g0"});
  m.node("Erf", "gelu.erf", {"g0"}, {"g1"});
  m.node("Add", "gelu.add", {"g1", "one"}, {"g2"});
  m.node("Mul", "gelu.mul", {"h", "g2"}, {"g3"});
  m.node("Mul", "gelu.half", {"g3", "half"}, {"a"});
  m.node("MatMul", "fc2", {"a", "w2"}, {"o0"});
  m.node("Add", "fc2.bias", {"o0", "b2"}, {"o"});
  m.node("Add", "residual", {"o", "x"}, {"y"});
  m.output("y", {1, S, D});
  auto path = m.save("vtpu_ffn_" + id() + ".onnx");

  Vec x = uniform_values(size_t(S * D), 29, 400.0f);
  for (auto& v : x) v += 0.5f;  // rows with a mean to take out
  Vec got = compile_and_run(path, {{"x", x}});

  Vec n(x.size());
  for (int64_t i = 0; i < S; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mean += x[size_t(i * D + j)];
    mean /= double(D);
    for (int64_t j = 0; j < D; ++j) var += std::pow(x[size_t(i * D + j)] - mean, 2);
    double inv = 1.0 / std::sqrt(var / double(D) + 1e-5);
    for (int64_t j = 0; j < D; ++j)
      n[size_t(i * D + j)] = float((x[size_t(i * D + j)] - mean) * inv * gamma[size_t(j)] + beta[size_t(j)]);
  }
  Vec h = gemm(n, S, D, w1, F, b1, false);
  for (auto& v : h) v = float(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  Vec want = gemm(h, S, F, w2, D, b2, false);
  for (size_t i = 0; i < want.size(); ++i) want[i] += x[i];
  expect_close(got, want, tolerance(0.03));
}

// BERT's post-norm residual: MatMul + bias, Add of the block's input, LayerNormalization.
// In bf16 the add and the layer norm's conversion of its rows to fp32 run in the matmul's
// epilogues; D = 20 leaves padding lanes in the last lane block of every preset.
TEST_P(CompileE2E, ResidualLayerNormAfterMatmulMatchesFp32Reference) {
  const int64_t S = 10, D = 20;
  OnnxBuilder m(17);
  m.input("x", {1, S, D});
  Vec g(static_cast<size_t>(D));
  for (int64_t j = 0; j < D; ++j) g[size_t(j)] = 1.2f - 0.02f * float(j);
  auto& w = m.init("w", {D, D}, 0.4f);
  auto& b = m.init("b", {D}, 0.3f);
  auto& gamma = m.init("ln.gamma", {D}, 0, g);
  auto& beta = m.init("ln.beta", {D}, 0.2f);
  m.node("MatMul", "proj", {"x", "w"}, {"p0"});
  m.node("Add", "proj.bias", {"p0", "b"}, {"p"});
  m.node("Add", "residual", {"p", "x"}, {"r"});
  OnnxBuilder::attr_f(m.node("LayerNormalization", "ln", {"r", "ln.gamma", "ln.beta"}, {"y"}), "epsilon", 1e-5f);
  m.output("y", {1, S, D});
  auto path = m.save("vtpu_post_ln_" + id() + ".onnx");

  Vec x = uniform_values(size_t(S * D), 31, 400.0f);
  Vec got = compile_and_run(path, {{"x", x}});

  Vec r = gemm(x, S, D, w, D, b, false), want(r.size());
  for (size_t i = 0; i < r.size(); ++i) r[i] += x[i];
  for (int64_t i = 0; i < S; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j) mean += r[size_t(i * D + j)];
    mean /= double(D);
    for (int64_t j = 0; j < D; ++j) var += std::pow(r[size_t(i * D + j)] - mean, 2);
    double inv = 1.0 / std::sqrt(var / double(D) + 1e-5);
    for (int64_t j = 0; j < D; ++j)
      want[size_t(i * D + j)] = float((r[size_t(i * D + j)] - mean) * inv * gamma[size_t(j)] + beta[size_t(j)]);
  }
  expect_close(got, want, tolerance(0.03));
}

}  // namespace
}  // namespace vtpu::compiler
