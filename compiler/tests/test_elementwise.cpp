// Elementwise ops: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include <fmt/format.h>
#include <unistd.h>

#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

TEST_P(CompileE2E, TableFunctionsMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t B = 4, K = 24, H = 20;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.4f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  m.node("Tanh", "tanh", {"h"}, {"t"});
  m.node("Sigmoid", "sigmoid", {"t"}, {"y"});
  m.output("y", {B, H});
  auto path = m.save("vtpu_unary_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 9, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec want = gemm(x, B, K, w1, H, b1, true);
  for (auto& v : want) v = float(1.0 / (1.0 + std::exp(-std::tanh(double(v)))));
  expect_close(got, want, tolerance(0.02));
}

// Unary ops whose input is an initializer (as a mutated Clip with its data input removed
// makes of its min): the initializer becomes a constant activation, also a rank-0 one;
// this was an internal error ("activation used before it was produced"), and a scalar one
// crashed once materialized.
TEST_P(CompileE2E, UnaryOpsOfInitializersMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t B = 3, H = 20;
  m.input("x", {B, H});
  const Vec& c = m.init("c", {B, H}, 3.0f);
  m.init("lo", {}, 0, {0.5f});
  m.init("s", {}, 0, {-0.25f});
  m.node("Sigmoid", "sig", {"c"}, {"g"});
  m.node("Add", "add", {"g", "x"}, {"y"});
  m.node("Clip", "clip", {"s", "lo"}, {"z"});
  m.output("y", {B, H});
  m.output("z", {});
  auto path = m.save("vtpu_unary_of_init_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * H), 4, 900.0f);
  Vec want(x.size());
  for (size_t i = 0; i < x.size(); ++i) want[i] = float(1.0 / (1.0 + std::exp(-double(c[i])))) + x[i];
  expect_close(compile_and_run(path, {{"x", x}}), want, tolerance(0.02));
  Vec z = compile_and_run(path, {{"x", x}}, "z");
  ASSERT_EQ(z.size(), 1u);
  EXPECT_NEAR(z[0], 0.5f, 0.01);  // Clip(-0.25, min 0.5)
}

// Elementwise ops on two activations (tpu.binary) from two matmuls of x:
// d = h1 - h2, p = d * h1, y = leaky_relu(h1) + min(max(d, h2), h1, p).
TEST_P(CompileE2E, BinaryOpsOfActivationsMatchFp32Reference) {
  const int64_t B = 8, K = 40, H = 24;
  OnnxBuilder m;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.4f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  auto& w2 = m.init("w2", {H, K}, 0.3f);
  auto& b2 = m.init("b2", {H}, 0.1f);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h1"}), "transB", int64_t(1));
  OnnxBuilder::attr(m.node("Gemm", "fc2", {"x", "w2", "b2"}, {"h2"}), "transB", int64_t(1));
  m.node("Sub", "diff", {"h1", "h2"}, {"d"});
  m.node("Mul", "gate", {"d", "h1"}, {"p"});
  OnnxBuilder::attr_f(m.node("LeakyRelu", "leaky", {"h1"}, {"l"}), "alpha", 0.3f);
  m.node("Max", "max", {"d", "h2"}, {"mx"});
  m.node("Min", "min", {"mx", "h1", "p"}, {"mn"});
  m.node("Add", "sum", {"l", "mn"}, {"y"});
  m.output("y", {B, H});
  auto path = m.save("vtpu_sub_mul_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 13, 900.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec h1 = gemm(x, B, K, w1, H, b1, true), h2 = gemm(x, B, K, w2, H, b2, true), want(h1.size());
  for (size_t i = 0; i < want.size(); ++i) {
    float d = h1[i] - h2[i], p = d * h1[i], l = h1[i] > 0 ? h1[i] : 0.3f * h1[i];
    want[i] = l + std::min({std::max(d, h2[i]), h1[i], p});
  }
  expect_close(got, want, tolerance(0.02));
}

// HardSigmoid and Neg become affine (+ clamp) steps; Exp, Sqrt (1 / rsqrt) and Reciprocal use
// the vector unit's tables, and so do Add/Sub of constants. Expected:
// 1 - (-1 / sqrt(exp(hardsigmoid(h))) + shift) = 1 - (-exp(-hs / 2) + shift).
TEST_P(CompileE2E, AffineAndTableChainMatchesFp32Reference) {
  const int64_t B = 8, K = 48, H = 40;
  OnnxBuilder m;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.4f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  auto* hs = m.node("HardSigmoid", "hsig", {"h"}, {"s"});
  OnnxBuilder::attr_f(hs, "alpha", 0.3f);
  OnnxBuilder::attr_f(hs, "beta", 0.4f);
  m.node("Exp", "exp", {"s"}, {"e"});
  m.node("Sqrt", "sqrt", {"e"}, {"q"});
  m.node("Reciprocal", "recip", {"q"}, {"r"});
  m.node("Neg", "neg", {"r"}, {"n"});
  auto& shift = m.init("shift", {H}, 0.5f);
  auto& one = m.init("one", {1}, 0, {1.0f});
  m.node("Add", "add_k", {"n", "shift"}, {"a"});
  m.node("Sub", "k_sub", {"one", "a"}, {"y"});
  m.output("y", {B, H});
  auto path = m.save("vtpu_affine_tables_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 11, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec want = gemm(x, B, K, w1, H, b1, true);
  int clamped = 0;
  for (auto& v : want) {
    double s = std::clamp(0.3 * double(v) + 0.4, 0.0, 1.0);
    clamped += s == 0.0 || s == 1.0;
    v = float(-std::exp(-s / 2));
  }
  for (size_t i = 0; i < want.size(); ++i) want[i] = one[0] - (want[i] + shift[i % size_t(H)]);
  ASSERT_GT(clamped, 0) << "the inputs should reach HardSigmoid's clamp";
  expect_close(got, want, tolerance(0.02));
}

// ONNX broadcasting between activations: y = (x + b) * c with b [3, 1, 8] repeated along
// dimension 1 and c [1, 4, 8] along dimension 0 (tpu.broadcast by unified-buffer DMA).
TEST_P(CompileE2E, BroadcastingElementwiseOpsMatchFp32Reference) {
  OnnxBuilder m;
  m.input("x", {3, 4, 8});
  m.input("b", {3, 1, 8});
  m.input("c", {1, 4, 8});
  m.node("Add", "add", {"x", "b"}, {"s"});
  m.node("Mul", "mul", {"c", "s"}, {"y"});  // the smaller operand first: the result takes the larger shape
  m.output("y", {3, 4, 8});
  auto path = m.save("vtpu_bcast_" + id() + ".onnx");
  std::mt19937 rng(23);
  auto rnd = [&](size_t n) {
    Vec v(n);
    for (auto& e : v) e = float(int(rng() % 2001) - 1000) / 1000.0f;
    return v;
  };
  Vec x = rnd(96), bb = rnd(24), c = rnd(32);
  Vec got = compile_and_run(path, {{"x", x}, {"b", bb}, {"c", c}});
  Vec want(96);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j)
      for (size_t k = 0; k < 8; ++k)
        want[(i * 4 + j) * 8 + k] = (x[(i * 4 + j) * 8 + k] + bb[i * 8 + k]) * c[j * 8 + k];
  expect_close(got, want, tolerance(0.02));
}

// A squeeze-and-excitation gate: conv features times sigmoid(global average) per channel,
// broadcast over the image; then PRelu with one slope per channel (some above 1, one negative).
TEST_P(CompileE2E, SqueezeExcitationGateMatchesFp32Reference) {
  const int64_t H = 6, C = 8;
  OnnxBuilder m;
  m.input("img", {1, 1, H, H});
  auto [w1, b1] = conv3x3(m, "conv1", "img", "f", 1, C, 0.5f, 0.1f, "w1", "b1");
  m.node("GlobalAveragePool", "gap", {"f"}, {"g"});
  m.node("Sigmoid", "gate", {"g"}, {"s"});
  m.node("Mul", "scale", {"f", "s"}, {"e"});
  auto& slope = m.init("slope", {C, 1, 1}, 0, {0.1f, 0.5f, 1.5f, -0.2f, 0.0f, 0.3f, 2.0f, 0.7f});
  m.node("PRelu", "prelu", {"e", "slope"}, {"y"});
  m.output("y", {1, C, H, H});
  auto path = m.save("vtpu_se_" + id() + ".onnx");
  Vec x = uniform_values(size_t(H * H), 29, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}});
  int64_t OH, OW;
  Vec f = conv(x, 1, H, H, w1, b1, C, 3, 1, OH, OW);
  Vec want(size_t(C * H * H));  // NHWC
  for (int64_t ch = 0; ch < C; ++ch) {
    double mean = 0;
    for (int64_t i = 0; i < H * H; ++i) mean += f[size_t(ch * H * H + i)];
    double g = 1.0 / (1.0 + std::exp(-mean / double(H * H)));
    for (int64_t i = 0; i < H * H; ++i) {
      double e = f[size_t(ch * H * H + i)] * g;
      want[size_t(i * C + ch)] = float(e > 0 ? e : e * slope[size_t(ch)]);
    }
  }
  expect_close(got, want, tolerance(0.02));
}

// A per-row gate computed on the chip ([B, S, 1]: a matmul to one column, a sigmoid)
// multiplies the [B, S, D] activation: a broadcast along the lanes, against the definition.
TEST_P(CompileE2E, LaneBroadcastOfAnActivationMatchesDefinition) {
  const int64_t M = 10, D = 40;
  OnnxBuilder m;
  m.input("x", {M, D});
  auto& w = m.init("w", {D, 1}, 0.3f);
  m.node("MatMul", "score", {"x", "w"}, {"s"});
  m.node("Sigmoid", "gate", {"s"}, {"g"});
  m.node("Mul", "gated", {"x", "g"}, {"y"});
  m.output("y", {M, D});
  auto path = m.save("vtpu_lane_broadcast_" + id() + ".onnx");
  Vec x = uniform_values(size_t(M * D), 137, 300.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y"), want(x.size());
  Vec sc = gemm(x, M, D, w, 1, Vec{0.0f}, false);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < D; ++j) want[size_t(i * D + j)] = x[size_t(i * D + j)] / (1.0f + std::exp(-sc[size_t(i)]));
  expect_close(got, want, tolerance(0.02));
}

// MobileNetV3's HardSwish and a Celu on an image, then a GlobalMaxPool, against the definition.
TEST_P(CompileE2E, HardSwishCeluAndGlobalMaxPoolMatchDefinition) {
  const int64_t N = 2, C = 7, H = 5, W = 6;
  OnnxBuilder m(14);  // HardSwish is defined from opset 14
  m.input("x", {N, C, H, W});
  m.node("HardSwish", "hswish", {"x"}, {"h"});
  OnnxBuilder::attr_f(m.node("Celu", "celu", {"h"}, {"c"}), "alpha", 0.5f);
  m.node("GlobalMaxPool", "gmax", {"c"}, {"y"});
  m.output("c", {N, C, H, W});
  m.output("y", {N, C, 1, 1});
  auto path = m.save("vtpu_hswish_celu_gmax_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 139, 150.0f);
  Vec want_c(x.size()), want_y(size_t(N * C), -INFINITY);
  for (size_t i = 0; i < x.size(); ++i) {
    double v = x[i], h = v * std::clamp(v / 6 + 0.5, 0.0, 1.0);
    want_c[i] = float(std::max(h, 0.0) + std::min(0.0, 0.5 * (std::exp(h / 0.5) - 1)));
    want_y[i / size_t(H * W)] = std::max(want_y[i / size_t(H * W)], want_c[i]);
  }
  expect_close(compile_and_run(path, {{"x", x}}, "c", /*nchw=*/true), want_c, tolerance(0.03));
  expect_close(compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true), want_y, tolerance(0.03));
}

// Elementwise operators built from others (Abs, Softsign, Elu, Selu), after a matmul whose
// weight arrives as a Constant node transposed by a Transpose node (folded at import).
TEST_P(CompileE2E, ElementwiseExtrasAndConstantNodesMatchDefinition) {
  const int64_t M = 6, K = 8, Nn = 20;
  OnnxBuilder m;
  m.input("x", {M, K});
  auto* cn = m.node("Constant", "weight", {}, {"wt"});
  onnx::TensorProto t;
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(Nn), t.add_dims(K);
  std::mt19937 rng(5);
  Vec wt(size_t(Nn * K));
  for (auto& v : wt) v = float(int(rng() % 201) - 100) / 250.0f, t.add_float_data(v);
  auto* a = cn->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  *a->mutable_t() = t;
  OnnxBuilder::attr(m.node("Transpose", "wT", {"wt"}, {"w"}), "perm", std::vector<int64_t>{1, 0});
  m.node("MatMul", "mm", {"x", "w"}, {"h"});
  m.node("Abs", "abs", {"h"}, {"ha"});
  m.node("Softsign", "softsign", {"h"}, {"hs"});
  OnnxBuilder::attr_f(m.node("Elu", "elu", {"h"}, {"he"}), "alpha", 0.7f);
  m.node("Selu", "selu", {"h"}, {"hz"});
  m.node("Add", "s1", {"ha", "hs"}, {"t1"});
  m.node("Add", "s2", {"he", "hz"}, {"t2"});
  OnnxBuilder::attr(m.node("Concat", "cat", {"t1", "t2"}, {"y"}), "axis", int64_t(1));
  m.output("y", {M, 2 * Nn});
  auto path = m.save("vtpu_elementwise_extras_" + id() + ".onnx");
  Vec x = uniform_values(size_t(M * K), 99, 200.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  Vec h = gemm(x, M, K, wt, Nn, Vec(size_t(Nn), 0.0f), /*transB=*/true), want(size_t(M * 2 * Nn));
  const double sa = 1.67326319217681884765625, sg = 1.05070102214813232421875;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < Nn; ++j) {
      double v = h[size_t(i * Nn + j)];
      double elu = v > 0 ? v : 0.7 * (std::exp(v) - 1), selu = sg * (v > 0 ? v : sa * (std::exp(v) - 1));
      want[size_t(i * 2 * Nn + j)] = float(std::fabs(v) + v / (1 + std::fabs(v)));
      want[size_t(i * 2 * Nn + Nn + j)] = float(elu + selu);
    }
  expect_close(got, want, tolerance(0.03));
}

// Softplus (max(h, 0) + log(1 + exp(-|h|))), Log (vec.log) and LogSoftmax over 36 features
// (a lane block and a partial one on the tiny presets), then a matmul that reads the
// log-softmax's padding lanes (they must be 0, not -inf: -inf * 0 is a NaN).
// y = fc2(LogSoftmax(h + Log(Softplus(h) + 1))), h = fc1(x).
TEST_P(CompileE2E, SoftplusLogAndLogSoftmaxMatchDefinition) {
  const int64_t B = 4, K = 24, H = 36, N = 10;
  OnnxBuilder m;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.4f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  auto& w2 = m.init("w2", {N, H}, 0.3f);
  auto& b2 = m.init("b2", {N}, 0.1f);
  m.init("one", {1}, 0, {1.0f});
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  m.node("Softplus", "softplus", {"h"}, {"s"});
  m.node("Add", "plus_one", {"s", "one"}, {"s1"});
  m.node("Log", "log", {"s1"}, {"l"});
  m.node("Add", "add_h", {"l", "h"}, {"a"});
  OnnxBuilder::attr(m.node("LogSoftmax", "logsoftmax", {"a"}, {"p"}), "axis", int64_t(-1));
  OnnxBuilder::attr(m.node("Gemm", "fc2", {"p", "w2", "b2"}, {"y"}), "transB", int64_t(1));
  m.output("y", {B, N});
  auto path = m.save("vtpu_log_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 13, 300.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec h = gemm(x, B, K, w1, H, b1, true), p(h.size());
  for (int64_t i = 0; i < B; ++i) {
    double mx = -INFINITY, sum = 0;
    std::vector<double> a(static_cast<size_t>(H));
    for (int64_t j = 0; j < H; ++j) {
      double v = h[size_t(i * H + j)];
      a[size_t(j)] = v + std::log(std::log1p(std::exp(v)) + 1);
      mx = std::max(mx, a[size_t(j)]);
    }
    for (double v : a) sum += std::exp(v - mx);
    for (int64_t j = 0; j < H; ++j) p[size_t(i * H + j)] = float(a[size_t(j)] - mx - std::log(sum));
  }
  Vec want = gemm(p, B, H, w2, N, b2, true);
  for (float v : got) ASSERT_TRUE(std::isfinite(v));
  expect_close(got, want, tolerance(0.03));
}

// Reciprocal and Sqrt (1 / rsqrt) of the zeros in a partial lane block's padding are +inf:
// set back to 0, a softmax reading them (its -inf mask added) and a matmul stay finite.
// (Before, every softmax output was NaN.) y = Softmax(1 / fc1(x)) + Sqrt(fc1(x)) @ ...
TEST_P(CompileE2E, TablesInfiniteAtZeroLeaveThePaddingFinite) {
  const int64_t B = 4, K = 24, H = 36;
  OnnxBuilder m;
  m.input("x", {B, K});
  Vec w1 = uniform_values(size_t(H * K), 5, 2000.0f), b1(size_t(H), 2.0f);
  for (auto& v : w1) v = std::fabs(v);  // with x >= 0: fc1 > 0
  m.init("w1", {H, K}, 0, w1);
  m.init("b1", {H}, 0, b1);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  m.node("Reciprocal", "recip", {"h"}, {"r"});
  OnnxBuilder::attr(m.node("Softmax", "softmax", {"r"}, {"p"}), "axis", int64_t(-1));
  m.node("Sqrt", "sqrt", {"h"}, {"q"});
  m.node("Add", "add", {"p", "q"}, {"y"});
  m.output("y", {B, H});
  auto path = m.save("vtpu_inf_at_zero_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 17, 1000.0f);
  for (auto& v : x) v = std::fabs(v);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec h = gemm(x, B, K, w1, H, b1, true), r(h.size());
  for (size_t i = 0; i < h.size(); ++i) r[i] = float(1.0 / h[i]);
  Vec want = softmax_rows(r, B, H);
  for (size_t i = 0; i < h.size(); ++i) want[i] += float(std::sqrt(double(h[i])));
  for (float v : got) ASSERT_TRUE(std::isfinite(v));
  expect_close(got, want, tolerance(0.02));
}

// Sqrt (and Pow 0.5) is rsqrt then recip on the same rows: in INT8 the 1/sqrt between them,
// huge near 0, is not rounded to an int8 scale of its own (it was: sqrt(h * h) lost most of
// its values). y = Sqrt(h * h) = |h|.
TEST_P(CompileE2E, SqrtIsOneStepInInt8Too) {
  const int64_t B = 4, K = 24, H = 20;
  OnnxBuilder m;
  m.input("x", {B, K});
  auto& w1 = m.init("w1", {H, K}, 0.4f);
  auto& b1 = m.init("b1", {H}, 0.2f);
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"x", "w1", "b1"}, {"h"}), "transB", int64_t(1));
  m.node("Mul", "square", {"h", "h"}, {"s"});
  m.node("Sqrt", "root", {"s"}, {"y"});
  m.output("y", {B, H});
  auto path = m.save("vtpu_sqrt_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * K), 21, 400.0f);
  Vec got = compile_and_run(path, {{"x", x}});
  Vec want = gemm(x, B, K, w1, H, b1, true);
  for (auto& v : want) v = std::fabs(v);
  expect_close(got, want, tolerance(0.02));
}

// Elementwise ops on an image of more pixels than one vector operation's 16-bit `rows` field
// holds (260x260 = 67,600), kept whole in a 32 MiB unified buffer: their vector work goes in
// pieces (codegen in_vector_pieces). The old code refused it ("field 'rows' out of range").
// On 4 MiB the images fit but not the INT8 mul's fp32 temporaries of all their rows (8.7 MB):
// it works a piece of rows at a time (the old code refused that too). On 1 MiB not even the
// image fits: the ops run in row bands through HBM (refused before: no convolution or pool,
// so no bands were tried).
TEST(Elementwise, AnImageOfMorePixelsThanAVectorOperationTakesRunsInPieces) {
  const int64_t C = 4, H = 260, W = 260;
  OnnxBuilder m;
  m.input("x", {1, C, H, W});
  m.node("Sigmoid", "sig", {"x"}, {"s"});
  auto& lo = m.init("lo", {}, 0, {-0.5f});
  auto& hi = m.init("hi", {}, 0, {0.5f});
  m.node("Clip", "clip", {"x", "lo", "hi"}, {"c"});
  m.node("Mul", "mul", {"s", "c"}, {"p"});
  m.node("Add", "add", {"p", "x"}, {"y"});
  m.output("y", {1, C, H, W});
  auto path = m.save("vtpu_vector_pieces_" + std::to_string(::getpid()) + ".onnx");
  Vec x = uniform_values(size_t(C * H * W), 7, 1000.0f);
  Vec want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = float(1.0 / (1.0 + std::exp(-double(x[i]))) * std::clamp(double(x[i]), double(lo[0]), double(hi[0])) + x[i]);
  for (auto [mib, precision] : {std::pair{32u, Precision::Int8}, std::pair{32u, Precision::Bf16}, std::pair{4u, Precision::Int8},
                                 std::pair{1u, Precision::Int8}, std::pair{1u, Precision::Bf16}}) {
    SCOPED_TRACE(fmt::format("{} MiB, {}", mib, precision == Precision::Int8 ? "int8" : "bf16"));
    config::Config cfg = config::load_preset("tiny-16x16");
    cfg.name = fmt::format("tiny-16x16-{}MiB", mib), cfg.core.unified_buffer.bytes = uint64_t(mib) << 20;
    CompileOptions o;
    o.precision = precision;
    CompileResult r = compile_onnx(path, cfg, o);
    size_t muls = 0;
    for (size_t at = r.assembly.find("vec.mul "); at != std::string::npos; at = r.assembly.find("vec.mul ", at + 1)) ++muls;
    if (mib == 32) EXPECT_NE(r.assembly.find(" rows=65535 "), std::string::npos);
    else if (mib == 4) EXPECT_GT(muls, 2u);  // more pieces than the 16-bit field alone makes
    else EXPECT_NE(r.assembly.find(".tag \"mul\""), r.assembly.rfind(".tag \"mul\""));  // in bands: its code more than once
    // Elementwise: the values' order (NCHW given as the program's NHWC) does not matter.
    SimRun run = run_program(cfg, r.program, {{"x", encode(r.program, "x", x)}}, "y");
    ASSERT_TRUE(run.error.empty()) << run.error;
    expect_close(decode(r.program, "y", run.output), want, precision == Precision::Int8 ? 0.05 : 0.01);
  }
}

}  // namespace
}  // namespace vtpu::compiler
