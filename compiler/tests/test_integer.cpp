// Integer tensors (MatMulInteger, ConvInteger, integer Div): models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// MatMulInteger with uint8 activations (a run-time input) and zero points, and an int32
// output: exact in bf16 (|a - zp| <= 255, fp32 sums below 2^24), checked against the
// integer definition. INT8 quantizes (a - zp) with a calibrated scale: close, not exact.
TEST_P(CompileE2E, MatMulIntegerOfUint8InputGivesExactInt32) {
  OnnxBuilder m(13);
  const int64_t M = 5, K = 40, N = 19;
  m.input("a", {M, K}, onnx::TensorProto::UINT8);
  std::vector<int> b(size_t(K * N));
  std::mt19937 rng(11);
  for (auto& x : b) x = int(rng() % 256);
  m.init_q("b", {K, N}, b, true);
  m.init_q("a_zp", {}, {131}, true);
  m.init_q("b_zp", {}, {120}, true);
  m.node("MatMulInteger", "mmi", {"a", "b", "a_zp", "b_zp"}, {"y"});
  m.output("y", {M, N}, onnx::TensorProto::INT32);
  auto path = m.save("vtpu_matmulinteger_" + id() + ".onnx");
  Vec a(size_t(M * K));
  for (auto& x : a) x = float(rng() % 256);
  Vec got = compile_and_run(path, {{"a", a}});
  ASSERT_EQ(got.size(), size_t(M * N));
  double mx = 0;
  Vec want(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t s = 0;
      for (int64_t k = 0; k < K; ++k) s += (int64_t(a[size_t(i * K + k)]) - 131) * (b[size_t(k * N + j)] - 120);
      want[size_t(i * N + j)] = float(s);
      mx = std::max(mx, std::fabs(double(s)));
    }
  for (size_t i = 0; i < want.size(); ++i) {
    if (int8()) EXPECT_NEAR(got[i], want[i], 0.03 * mx) << "element " << i;
    else EXPECT_EQ(got[i], want[i]) << "element " << i;
  }
}

// Integer Div truncates toward zero (ONNX): signed int8 operands with exact multiples,
// negative quotients and |a| < |b|, exact in bf16 (the integers travel exactly); INT8 close.
TEST_P(CompileE2E, IntegerDivTruncatesTowardZero) {
  OnnxBuilder m(14);  // Div takes int8 from opset 14 (ONNX's shape inference refuses it at 13)
  const int64_t N = 7, C = 33;
  m.input("a", {N, C}, onnx::TensorProto::INT8);
  m.input("b", {N, C}, onnx::TensorProto::INT8);
  m.node("Div", "div", {"a", "b"}, {"q"});
  m.output("q", {N, C}, onnx::TensorProto::INT8);
  auto path = m.save("vtpu_int_div_" + id() + ".onnx");
  std::mt19937 rng(23);
  Vec a(size_t(N * C)), b(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    int d = int(rng() % 25) - 12;
    if (d == 0) d = 7;
    int q = int(rng() % 21) - 10, r = i % 3 == 0 ? 0 : int(rng() % 7) - 3;  // every third an exact multiple
    b[i] = float(d);
    a[i] = float(std::clamp(q * d + r, -128, 127));
  }
  Vec got = compile_and_run(path, {{"a", a}, {"b", b}}, "q");
  ASSERT_EQ(got.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    float want = std::trunc(a[i] / b[i]);
    if (int8()) EXPECT_NEAR(got[i], want, 1.0f) << a[i] << " / " << b[i];
    else EXPECT_EQ(got[i], want) << a[i] << " / " << b[i];
  }
}

// ConvInteger with a uint8 image input, int8 weights with one zero point per output channel,
// padding (zeros of x - x_zp) and an int32 NCHW output: exact in bf16 against the integer
// definition; INT8 close.
TEST_P(CompileE2E, ConvIntegerWithPerChannelZeroPointsGivesExactInt32) {
  OnnxBuilder m(13);
  const int64_t C = 3, H = 6, W = 5, CO = 4, K = 3;
  m.input("x", {1, C, H, W}, onnx::TensorProto::UINT8);
  std::mt19937 rng(17);
  std::vector<int> w(size_t(CO * C * K * K)), wzp{3, -5, 0, 17};
  for (auto& v : w) v = int(rng() % 256) - 128;
  m.init_q("w", {CO, C, K, K}, w, false);
  m.init_q("x_zp", {}, {7}, true);
  m.init_q("w_zp", {CO}, wzp, false);
  auto* n = m.node("ConvInteger", "convi", {"x", "w", "x_zp", "w_zp"}, {"y"});
  OnnxBuilder::attr(n, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.output("y", {1, CO, H, W}, onnx::TensorProto::INT32);
  auto path = m.save("vtpu_convinteger_" + id() + ".onnx");
  Vec x(static_cast<size_t>(C * H * W));
  for (auto& v : x) v = float(rng() % 256);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  ASSERT_EQ(got.size(), size_t(CO * H * W));
  Vec want(size_t(CO * H * W));
  double mx = 0;
  for (int64_t o = 0; o < CO; ++o)
    for (int64_t oy = 0; oy < H; ++oy)
      for (int64_t ox = 0; ox < W; ++ox) {
        int64_t acc = 0;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t ky = 0; ky < K; ++ky)
            for (int64_t kx = 0; kx < K; ++kx) {
              int64_t iy = oy + ky - 1, ix = ox + kx - 1;
              if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
              acc += (int64_t(x[size_t((c * H + iy) * W + ix)]) - 7) * (w[size_t(((o * C + c) * K + ky) * K + kx)] - wzp[size_t(o)]);
            }
        want[size_t((o * H + oy) * W + ox)] = float(acc);
        mx = std::max(mx, std::fabs(double(acc)));
      }
  for (size_t i = 0; i < want.size(); ++i) {
    if (int8()) EXPECT_NEAR(got[i], want[i], 0.03 * mx) << "element " << i;
    else EXPECT_EQ(got[i], want[i]) << "element " << i;
  }
}

}  // namespace
}  // namespace vtpu::compiler
