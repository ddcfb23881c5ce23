// Quantized models (QDQ, QLinear): models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"
#include "vtpu/models/zoo.h"

namespace vtpu::compiler {
namespace {

// A model that arrives quantized: QuantizeLinear/DequantizeLinear around activations (int8,
// and uint8 after the ReLU), int8 weights with per-column scales, then a QLinearMatMul.
// Compared with the same fake-quantized arithmetic in fp32.
TEST_P(CompileE2E, QuantizedQdqAndQLinearModelMatchesItsArithmetic) {
  const int64_t B = 4, K = 16, H = 12, N = 10;
  const float sx = 0.02f, sh = 0.03f, sy = 0.05f;
  OnnxBuilder m;
  m.input("x", {B, K});
  std::mt19937 rng(47);
  std::vector<int> wq(size_t(K * H)), w2q(size_t(H * N));
  for (auto& v : wq) v = int(rng() % 255) - 127;
  for (auto& v : w2q) v = int(rng() % 255) - 127;
  Vec ws(static_cast<size_t>(H)), b1(static_cast<size_t>(H));
  for (int64_t j = 0; j < H; ++j) ws[size_t(j)] = 0.002f + 0.0005f * float(j), b1[size_t(j)] = 0.05f * float(j % 3 - 1);
  m.init_q("w1_q", {K, H}, wq, false);
  m.init("w1_scale", {H}, 0, ws);
  m.init_q("w1_zero", {H}, std::vector<int>(size_t(H), 0), false);
  m.init("b1", {H}, 0, b1);
  m.init("x_scale", {}, 0, {sx});
  m.init_q("x_zero", {}, {0}, false);
  m.init("h_scale", {}, 0, {sh});
  m.init_q("h_zero", {}, {0}, true);  // uint8 after the ReLU
  m.init_q("w2_q", {H, N}, w2q, false);
  m.init("w2_scale", {}, 0, {0.004f});
  m.init_q("w2_zero", {}, {0}, false);
  m.init("y_scale", {}, 0, {sy});
  m.init_q("y_zero", {}, {0}, false);
  m.node("QuantizeLinear", "x_q", {"x", "x_scale", "x_zero"}, {"xq"});
  m.node("DequantizeLinear", "x_dq", {"xq", "x_scale", "x_zero"}, {"xd"});
  OnnxBuilder::attr(m.node("DequantizeLinear", "w1_dq", {"w1_q", "w1_scale", "w1_zero"}, {"w1"}), "axis", int64_t(1));
  m.node("MatMul", "fc1", {"xd", "w1"}, {"h0"});
  m.node("Add", "fc1_bias", {"h0", "b1"}, {"h1"});
  m.node("Relu", "relu", {"h1"}, {"h"});
  m.node("QuantizeLinear", "h_q", {"h", "h_scale", "h_zero"}, {"hq"});
  m.node("QLinearMatMul", "fc2", {"hq", "h_scale", "h_zero", "w2_q", "w2_scale", "w2_zero", "y_scale", "y_zero"}, {"yq"});
  m.node("DequantizeLinear", "y_dq", {"yq", "y_scale", "y_zero"}, {"y"});
  m.output("y", {B, N});
  auto path = m.save("vtpu_qdq_" + id() + ".onnx");

  Vec x(size_t(B * K));
  for (auto& v : x) v = float(int(rng() % 2001) - 1000) / 500.0f;  // beyond 127 * sx: clamps too
  Vec got = compile_and_run(path, {{"x", x}});
  auto fq = [](float v, float s, float lo, float hi) { return s * std::nearbyint(std::clamp(v / s, lo, hi)); };
  Vec xd(x.size()), w1(size_t(K * H)), w2(size_t(H * N));
  for (size_t i = 0; i < x.size(); ++i) xd[i] = fq(x[i], sx, -128, 127);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < H; ++j) w1[size_t(k * H + j)] = float(wq[size_t(k * H + j)]) * ws[size_t(j)];
  for (size_t i = 0; i < w2.size(); ++i) w2[i] = float(w2q[i]) * 0.004f;
  Vec h = relu(gemm(xd, B, K, w1, H, b1, false));
  for (auto& v : h) v = fq(v, sh, 0, 255);
  Vec want = gemm(h, B, H, w2, N, {}, false);
  for (auto& v : want) v = fq(v, sy, -128, 127);
  expect_close(got, want, tolerance(0.03));
  if (int8()) {
    // INT8 programs take the model's own scale for its quantized output: every value is an
    // integer multiple of y_scale, the integers the model defines.
    CompileOptions opt = options();
    opt.calibration = {{{"x", x}}};
    CompileResult r = compile_onnx(path, config::load_preset(preset()), opt);
    EXPECT_FLOAT_EQ(float(tensor(r.program, "y").quant_scale), sy);
    for (float v : got) EXPECT_NEAR(v / sy, std::nearbyint(v / sy), 1e-3);
  }
}

// quantization_errors: with the calibrated scales every layer of the trained LeNet-5 keeps a
// high SQNR and clips almost nothing; with every scale 1/8 of that, values clip (the input
// first, so the layers after see smaller values) and the SQNR falls in every layer.
TEST(QuantizationErrors, FallWhereScalesClip) {
  auto lenet = models::materialize("lenet5-fmnist", models::default_dir());
  CompileOptions o;
  o.precision = Precision::Int8;
  CompileResult r = compile_onnx(lenet, config::load_preset("tiny-16x16"), o);
  const isa::TensorInfo& x = tensor(r.program, "image");
  Vec in = uniform_values(size_t(x.bytes()), 11, 1000.0f);
  for (auto& v : in) v = std::fabs(v);  // pixels in [0, 1]
  auto good = quantization_errors(lenet, o, r.calibration_scales, {{"image", in}});
  std::vector<float> small = r.calibration_scales;
  for (float& s : small) s /= 8;
  auto bad = quantization_errors(lenet, o, small, {{"image", in}});
  ASSERT_EQ(good.size(), 8u);
  ASSERT_EQ(bad.size(), good.size());
  double clipped_good = 0, clipped_bad = 0;
  for (size_t i = 0; i < good.size(); ++i) {
    SCOPED_TRACE(good[i].layer);
    EXPECT_EQ(good[i].layer, bad[i].layer);
    EXPECT_GT(good[i].sqnr_db, 20.0);
    EXPECT_LT(good[i].clipped, 0.02);
    EXPECT_LT(bad[i].sqnr_db, good[i].sqnr_db - 3);
    clipped_good += good[i].clipped, clipped_bad += bad[i].clipped;
  }
  EXPECT_GT(clipped_bad, clipped_good);
  EXPECT_EQ(good.front().op, "conv2d");
  EXPECT_EQ(good.back().op, "matmul");
}

// An INT8 model of one image input "x" [1, C, H, H] and one output "y", compiled for
// tiny-16x16 (calibrated on `x`, NCHW) and run on `x`: the concat layer's ("cat")
// instructions and y as the program stores it (NHWC).
struct ConcatRun {
  std::string cat;
  Vec y;
};
ConcatRun run_concat_model(const std::string& path, const Vec& x, int64_t C, int64_t H) {
  config::Config cfg = config::load_preset("tiny-16x16");
  Vec xs = nchw_to_nhwc(x, {1, C, H, H});  // as the program stores images
  CompileOptions o;
  o.precision = Precision::Int8;
  o.calibration = {{{"x", xs}}};
  CompileResult r = compile_onnx(path, cfg, o);
  ConcatRun run;
  size_t at = r.assembly.find(".tag \"cat\"");
  EXPECT_NE(at, std::string::npos);
  if (at != std::string::npos) run.cat = r.assembly.substr(at, r.assembly.find(".tag", at + 1) - at);
  std::string out = simulate(cfg, r.program, {{"x", encode(r.program, "x", xs)}}, "y");
  EXPECT_EQ(out.substr(0, 2), "OK") << out;
  if (out.substr(0, 2) == "OK") run.y = decode(r.program, "y", out.substr(2));
  return run;
}

// A concat's INT8 inputs that it alone reads share its scale (calibration.cpp,
// shared_scales), as TFLite and TensorRT quantize concats: the convolutions write the
// concat's scale directly and the concat only copies, with no vector rescale (the two
// branches' ranges differ 10-fold: each would otherwise be rescaled). The values still match
// the definition.
TEST(QuantizedConcat, InputsShareItsScaleSoItOnlyCopies) {
  const int64_t C = 8, H = 10, M = 16;
  OnnxBuilder m;
  m.input("x", {1, C, H, H});
  auto [wa, ba] = conv3x3(m, "a", "x", "ya", C, M, 0.5f, 0.1f, "wa", "ba");
  auto [wb, bb] = conv3x3(m, "b", "x", "yb", C, M, 0.05f, 0.01f, "wb", "bb");
  OnnxBuilder::attr(m.node("Concat", "cat", {"ya", "yb"}, {"y"}), "axis", int64_t(1));
  m.output("y", {1, 2 * M, H, H});
  Vec x = uniform_values(size_t(C * H * H), 7, 1000.0f);
  ConcatRun run = run_concat_model(m.save("vtpu_quantized_concat.onnx"), x, C, H);
  ASSERT_FALSE(run.cat.empty());
  EXPECT_EQ(run.cat.find("vec."), std::string::npos) << run.cat;
  EXPECT_NE(run.cat.find("dma."), std::string::npos) << run.cat;
  ASSERT_FALSE(run.y.empty());
  int64_t OH, OW;
  Vec a = conv(x, C, H, H, wa, ba, M, 3, 1, OH, OW), b = conv(x, C, H, H, wb, bb, M, 3, 1, OH, OW);
  Vec want(size_t(H * H * 2 * M));  // NHWC, as the program stores images
  for (int64_t p = 0; p < H * H; ++p)
    for (int64_t c = 0; c < M; ++c)
      want[size_t(p * 2 * M + c)] = a[size_t(c * H * H + p)], want[size_t(p * 2 * M + M + c)] = b[size_t(c * H * H + p)];
  expect_close(run.y, want, 0.04);
}

// Not an input that int8 arithmetic computes at its own scale: an Add rescales its operands
// to its output's scale, and the concat's coarser one would round them coarser. Here the
// concat of a convolution's output (shared: copied) and an Add of the input with itself
// (its own scale: rescaled by a vector pass in the concat, as before).
TEST(QuantizedConcat, AnAddKeepsItsOwnScale) {
  const int64_t C = 8, H = 10, M = 16;
  OnnxBuilder m;
  m.input("x", {1, C, H, H});
  auto [wa, ba] = conv3x3(m, "a", "x", "ya", C, M, 0.5f, 0.1f, "wa", "ba");
  m.node("Add", "twice", {"x", "x"}, {"s"});
  OnnxBuilder::attr(m.node("Concat", "cat", {"ya", "s"}, {"y"}), "axis", int64_t(1));
  m.output("y", {1, M + C, H, H});
  Vec x = uniform_values(size_t(C * H * H), 8, 1000.0f);
  ConcatRun run = run_concat_model(m.save("vtpu_quantized_concat_add.onnx"), x, C, H);
  ASSERT_FALSE(run.cat.empty());
  EXPECT_NE(run.cat.find("vec."), std::string::npos) << run.cat;
  ASSERT_FALSE(run.y.empty());
  int64_t OH, OW;
  Vec a = conv(x, C, H, H, wa, ba, M, 3, 1, OH, OW);
  Vec want(size_t(H * H * (M + C)));
  for (int64_t p = 0; p < H * H; ++p) {
    for (int64_t c = 0; c < M; ++c) want[size_t(p * (M + C) + c)] = a[size_t(c * H * H + p)];
    for (int64_t c = 0; c < C; ++c) want[size_t(p * (M + C) + M + c)] = 2 * x[size_t(c * H * H + p)];
  }
  expect_close(run.y, want, 0.04);
}

}  // namespace
}  // namespace vtpu::compiler
