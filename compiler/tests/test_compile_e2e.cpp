// Models built in C++ are compiled, run on the simulator and compared with a plain fp32
// forward pass written here from the ONNX operator definitions (bf16 tolerance).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "vtpu/models/onnx_builder.h"
#include "vtpu/compiler/compiler.h"
#include "vtpu/numerics/float.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"
#include "vtpu/support/layout.h"

namespace vtpu::compiler {
namespace {

using testing::OnnxBuilder;
using Vec = std::vector<float>;

// ---- fp32 reference (NCHW, as ONNX defines it) ----
Vec gemm(const Vec& x, int64_t M, int64_t K, const Vec& w, int64_t N, const Vec& b, bool transB) {
  Vec y(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = b.empty() ? 0 : b[size_t(j)];
      for (int64_t k = 0; k < K; ++k) s += double(x[size_t(i * K + k)]) * w[size_t(transB ? j * K + k : k * N + j)];
      y[size_t(i * N + j)] = float(s);
    }
  return y;
}
Vec relu(Vec x) {
  for (auto& v : x) v = std::max(v, 0.0f);
  return x;
}
Vec softmax_rows(const Vec& x, int64_t M, int64_t N) {
  Vec y(x.size());
  for (int64_t i = 0; i < M; ++i) {
    double m = -1e30, s = 0;
    for (int64_t j = 0; j < N; ++j) m = std::max(m, double(x[size_t(i * N + j)]));
    for (int64_t j = 0; j < N; ++j) s += std::exp(double(x[size_t(i * N + j)]) - m);
    for (int64_t j = 0; j < N; ++j) y[size_t(i * N + j)] = float(std::exp(double(x[size_t(i * N + j)]) - m) / s);
  }
  return y;
}
// Grouped convolution, x [C, H, W] (batch 1), w [CO, C / groups, K, K]; square stride and pads.
Vec conv_grouped(const Vec& x, int64_t C, int64_t H, int64_t W, const Vec& w, const Vec& b, int64_t CO, int64_t K,
                 int64_t stride, int64_t pad, int64_t groups, int64_t& OH, int64_t& OW) {
  OH = (H + 2 * pad - K) / stride + 1, OW = (W + 2 * pad - K) / stride + 1;
  int64_t Cg = C / groups, COg = CO / groups;
  Vec y(size_t(CO * OH * OW));
  for (int64_t o = 0; o < CO; ++o)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        double s = b[size_t(o)];
        for (int64_t i = 0; i < Cg; ++i)
          for (int64_t ky = 0; ky < K; ++ky)
            for (int64_t kx = 0; kx < K; ++kx) {
              int64_t iy = oy * stride + ky - pad, ix = ox * stride + kx - pad, c = o / COg * Cg + i;
              if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
              s += double(x[size_t((c * H + iy) * W + ix)]) * w[size_t(((o * Cg + i) * K + ky) * K + kx)];
            }
        y[size_t((o * OH + oy) * OW + ox)] = float(s);
      }
  return y;
}
// x [C, H, W] (batch 1), w [CO, C, KH, KW], stride 1.
Vec conv(const Vec& x, int64_t C, int64_t H, int64_t W, const Vec& w, const Vec& b, int64_t CO, int64_t K, int64_t pad, int64_t& OH, int64_t& OW) {
  return conv_grouped(x, C, H, W, w, b, CO, K, 1, pad, 1, OH, OW);
}
// Convolution of a batch, x [N, C, H, W], w [CO, C, KH, KW]: strides, dilations and pads
// (top, left, bottom, right) per axis, as ONNX's Conv defines them.
struct ConvGeom {
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
};
Vec conv_nchw(const Vec& x, int64_t N, int64_t C, int64_t H, int64_t W, const Vec& w, const Vec& b, int64_t CO, const ConvGeom& g,
              int64_t& OH, int64_t& OW) {
  OH = (H + g.pt + g.pb - (g.dh * (g.kh - 1) + 1)) / g.sh + 1, OW = (W + g.pl + g.pr - (g.dw * (g.kw - 1) + 1)) / g.sw + 1;
  Vec y(size_t(N * CO * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          double s = b[size_t(o)];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t ky = 0; ky < g.kh; ++ky)
              for (int64_t kx = 0; kx < g.kw; ++kx) {
                int64_t iy = oy * g.sh + ky * g.dh - g.pt, ix = ox * g.sw + kx * g.dw - g.pl;
                if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
                s += double(x[size_t(((n * C + c) * H + iy) * W + ix)]) * w[size_t(((o * C + c) * g.kh + ky) * g.kw + kx)];
              }
          y[size_t(((n * CO + o) * OH + oy) * OW + ox)] = float(s);
        }
  return y;
}
Vec maxpool2(const Vec& x, int64_t C, int64_t H, int64_t W) {
  Vec y(size_t(C * (H / 2) * (W / 2)));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < H / 2; ++oy)
      for (int64_t ox = 0; ox < W / 2; ++ox) {
        float m = -INFINITY;
        for (int dy = 0; dy < 2; ++dy)
          for (int dx = 0; dx < 2; ++dx) m = std::max(m, x[size_t((c * H + oy * 2 + dy) * W + ox * 2 + dx)]);
        y[size_t((c * (H / 2) + oy) * (W / 2) + ox)] = m;
      }
  return y;
}

// A 3x3 convolution with pads 1 (H and W kept) of `in` into `out`, seeded weights `w_name`
// [co, ci, 3, 3] and bias `b_name`; returns the weights and bias for the reference.
std::pair<const Vec&, const Vec&> conv3x3(OnnxBuilder& m, const std::string& name, const std::string& in, const std::string& out,
                                          int64_t ci, int64_t co, float w_scale, float b_scale, const std::string& w_name,
                                          const std::string& b_name) {
  const Vec& w = m.init(w_name, {co, ci, 3, 3}, w_scale);
  const Vec& b = m.init(b_name, {co}, b_scale);
  auto* c = m.node("Conv", name, {in, w_name, b_name}, {out});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{3, 3});
  return {w, b};
}

// Seeded test inputs: n values k / divisor for integers k uniform in [-1000, 1000].
Vec uniform_values(size_t n, unsigned seed, float divisor) {
  std::mt19937 rng(seed);
  Vec v(n);
  for (auto& x : v) x = float(int(rng() % 2001) - 1000) / divisor;
  return v;
}

std::vector<uint8_t> to_bf16(const Vec& v) {
  std::vector<uint8_t> b(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h = numerics::f32_to_bf16(numerics::f32_bits(v[i]));
    std::memcpy(&b[i * 2], &h, 2);
  }
  return b;
}
Vec from_bf16(const std::string& bytes) {
  Vec v(bytes.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t h;
    std::memcpy(&h, bytes.data() + i * 2, 2);
    v[i] = numerics::f32_from_bits(uint32_t(h) << 16);
  }
  return v;
}

const isa::TensorInfo& tensor(const isa::Program& p, const std::string& name) {
  for (const auto& t : p.tensors)
    if (t.name == name) return t;
  throw std::runtime_error("no tensor " + name);
}
// Values -> the program's input bytes (bf16, or int8 quantized with the tensor's scale).
std::vector<uint8_t> encode(const isa::Program& p, const std::string& name, const Vec& v) {
  const auto& t = tensor(p, name);
  if (t.dtype == isa::Dtype::Bf16) return to_bf16(v);
  if (t.dtype == isa::Dtype::Fp32) {  // float inputs read only by softmaxes
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  }
  if (t.dtype == isa::Dtype::Int32) {  // integer inputs (token ids, uint8 codes)
    std::vector<uint8_t> b(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      int32_t x = int32_t(v[i]);
      std::memcpy(&b[i * 4], &x, 4);
    }
    return b;
  }
  std::vector<uint8_t> b(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    b[i] = uint8_t(int8_t(std::clamp<double>(std::nearbyint(v[i] / t.quant_scale) + t.zero_point, -128, 127)));
  return b;
}
Vec decode(const isa::Program& p, const std::string& name, const std::string& bytes) {
  const auto& t = tensor(p, name);
  if (t.dtype == isa::Dtype::Bf16) return from_bf16(bytes);
  if (t.dtype == isa::Dtype::Int32) {
    Vec v(bytes.size() / 4);
    for (size_t i = 0; i < v.size(); ++i) {
      int32_t x;
      std::memcpy(&x, bytes.data() + i * 4, 4);
      v[i] = float(x);
    }
    return v;
  }
  Vec v(bytes.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = float((int8_t(bytes[i]) - t.zero_point) * t.quant_scale);
  return v;
}

// Simulates in a child process (one SystemC simulation per process); returns the output bytes.
std::string simulate(const config::Config& cfg, const isa::Program& p, const std::map<std::string, std::vector<uint8_t>>& in,
                     const std::string& out) {
  return run_in_child(
      [&] {
        auto res = sim::simulate(cfg, p, in);
        const auto& o = res.outputs.at(out);
        return "OK" + std::string(o.begin(), o.end());
      },
      [](const std::exception& e) { return std::string("ERR") + e.what(); }, "ERRchild crashed");
}

void expect_close(const Vec& got, const Vec& want, double rel) {
  ASSERT_EQ(got.size(), want.size());
  double mx = 0;
  for (float w : want) mx = std::max(mx, double(std::fabs(w)));
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], rel * mx + 1e-3) << "element " << i;
}

struct E2EParam {
  std::string preset;
  Precision precision;
};
void PrintTo(const E2EParam& p, std::ostream* os) { *os << p.preset << (p.precision == Precision::Int8 ? " int8" : " bf16"); }
class CompileE2E : public ::testing::TestWithParam<E2EParam> {
 protected:
  std::string preset() const { return GetParam().preset; }
  bool int8() const { return GetParam().precision == Precision::Int8; }
  CompileOptions options() const {
    CompileOptions o;
    o.precision = GetParam().precision;
    return o;
  }
  // bf16 rounds inputs, weights and outputs; int8 quantizes them (8 bits per tensor).
  double tolerance(double bf16) const { return int8() ? 4 * bf16 : bf16; }
  std::string id() const { return preset() + (int8() ? "_int8" : "_bf16"); }
  // Compiles the model for this preset and precision (INT8 calibrated on `inputs`), runs it
  // on the simulator and returns output `out` as floats; a failed run fails the test.
  // Images go in and come out as the program stores them (NHWC), or with `nchw` as the
  // model sees them.
  Vec compile_and_run(const std::string& path, const std::map<std::string, Vec>& inputs, const std::string& out = "y",
                      bool nchw = false) {
    config::Config cfg = config::load_preset(preset());
    CompileOptions opt = options();
    opt.calibration = {inputs};
    CompileResult r = compile_onnx(path, cfg, opt);
    std::map<std::string, Vec> stored = inputs;  // in the program's layout
    if (nchw) {
      for (auto& [name, v] : stored)
        if (tensor(r.program, name).nhwc) v = nchw_to_nhwc(v, nchw_shape_of(tensor(r.program, name).shape));
      // Calibration samples are in the program's layout too: compile again with those.
      opt.calibration = {stored};
      r = compile_onnx(path, cfg, opt);
    }
    std::map<std::string, std::vector<uint8_t>> encoded;
    for (const auto& [name, v] : stored) encoded[name] = encode(r.program, name, v);
    std::string got = simulate(cfg, r.program, encoded, out);
    if (got.substr(0, 2) != "OK") {
      ADD_FAILURE() << got;
      return {};
    }
    Vec y = decode(r.program, out, got.substr(2));
    return nchw && tensor(r.program, out).nhwc ? nhwc_to_nchw(y, tensor(r.program, out).shape) : y;
  }
};

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

// Layout changes that move the lanes: Transpose (swap H and W of a conv output) and a Flatten
// of the result in NCHW order with no matmul after it (tpu.transpose gathers by DMA).
TEST_P(CompileE2E, TransposeAndNchwFlattenMatchFp32Reference) {
  const int64_t H = 5, W = 7, C = 6;
  OnnxBuilder m;
  m.input("img", {1, 1, H, W});
  auto [w1, b1] = conv3x3(m, "conv1", "img", "f", 1, C, 0.5f, 0.1f, "w1", "b1");
  OnnxBuilder::attr(m.node("Transpose", "swap", {"f"}, {"t"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.node("Flatten", "flat", {"t"}, {"y"});
  m.output("y", {1, C * W * H});
  auto path = m.save("vtpu_transpose_" + id() + ".onnx");
  Vec x = uniform_values(size_t(H * W), 31, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}});
  // conv() takes a square kernel on an H x W image: pad 1 keeps H x W.
  int64_t OH, OW;
  Vec f = conv(x, 1, H, W, w1, b1, C, 3, 1, OH, OW);
  ASSERT_EQ(OH, H);
  ASSERT_EQ(OW, W);
  Vec want(size_t(C * W * H));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t xx = 0; xx < W; ++xx)
      for (int64_t yy = 0; yy < H; ++yy) want[size_t((c * W + xx) * H + yy)] = f[size_t((c * H + yy) * W + xx)];
  expect_close(got, want, tolerance(0.02));
}

// Concat of conv outputs with different INT8 scales: along channels (6 + 5, not whole lane
// blocks, so lane columns move) and then along H (runs of rows).
TEST_P(CompileE2E, ConcatAlongChannelsAndRowsMatchesFp32Reference) {
  const int64_t H = 4, W = 5, C1 = 6, C2 = 5, C = C1 + C2;
  OnnxBuilder m;
  m.input("img", {1, 1, H, W});
  auto [w1, b1] = conv3x3(m, "conv1", "img", "a", 1, C1, 0.5f, 0.1f, "w1", "b1");
  auto [w2, b2] = conv3x3(m, "conv2", "img", "b", 1, C2, 1.5f, 0.3f, "w2", "b2");
  OnnxBuilder::attr(m.node("Concat", "cat_c", {"a", "b"}, {"t"}), "axis", int64_t(1));
  m.node("Relu", "relu", {"t"}, {"u"});
  OnnxBuilder::attr(m.node("Concat", "cat_h", {"t", "u"}, {"y"}), "axis", int64_t(2));
  m.output("y", {1, C, 2 * H, W});
  auto path = m.save("vtpu_concat_" + id() + ".onnx");
  Vec x = uniform_values(size_t(H * W), 37, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}});
  int64_t OH, OW;
  Vec a = conv(x, 1, H, W, w1, b1, C1, 3, 1, OH, OW), bconv = conv(x, 1, H, W, w2, b2, C2, 3, 1, OH, OW);
  Vec want(size_t(2 * H * W * C));  // NHWC [1, 2H, W, C]
  for (int64_t yy = 0; yy < 2 * H; ++yy)
    for (int64_t xx = 0; xx < W; ++xx)
      for (int64_t c = 0; c < C; ++c) {
        int64_t sy = yy % H;
        float t = c < C1 ? a[size_t((c * H + sy) * W + xx)] : bconv[size_t(((c - C1) * H + sy) * W + xx)];
        want[size_t((yy * W + xx) * C + c)] = yy < H ? t : std::max(t, 0.0f);
      }
  expect_close(got, want, tolerance(0.02));
}

// Split of conv channels (3 + 5: lane columns), Slices along H (row runs), joined again:
// y[c, h] = conv[c, h + 1] for c < 3 and conv[c, h] for the others, h < 3.
TEST_P(CompileE2E, SplitAndSliceMatchFp32Reference) {
  const int64_t H = 5, W = 4, C = 8;
  OnnxBuilder m;
  m.input("img", {1, 1, H, W});
  auto [w1, b1] = conv3x3(m, "conv1", "img", "f", 1, C, 0.5f, 0.1f, "w1", "b1");
  m.init_i64("parts", {3, 5});
  OnnxBuilder::attr(m.node("Split", "split", {"f", "parts"}, {"a", "b"}), "axis", int64_t(1));
  m.init_i64("s_a", {1});
  m.init_i64("e_a", {4});
  m.init_i64("s_b", {0});
  m.init_i64("e_b", {3});
  m.init_i64("ax", {2});
  m.node("Slice", "slice_a", {"a", "s_a", "e_a", "ax"}, {"sa"});
  m.node("Slice", "slice_b", {"b", "s_b", "e_b", "ax"}, {"sb"});
  OnnxBuilder::attr(m.node("Concat", "cat", {"sa", "sb"}, {"y"}), "axis", int64_t(1));
  m.output("y", {1, C, 3, W});
  auto path = m.save("vtpu_split_slice_" + id() + ".onnx");
  Vec x = uniform_values(size_t(H * W), 41, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}});
  int64_t OH, OW;
  Vec f = conv(x, 1, H, W, w1, b1, C, 3, 1, OH, OW);
  Vec want(size_t(3 * W * C));  // NHWC [1, 3, W, C]
  for (int64_t h = 0; h < 3; ++h)
    for (int64_t w = 0; w < W; ++w)
      for (int64_t c = 0; c < C; ++c) want[size_t((h * W + w) * C + c)] = f[size_t((c * H + h + (c < 3 ? 1 : 0)) * W + w)];
  expect_close(got, want, tolerance(0.02));
}

// Empty tensors: a Split part of 0 and a Slice past the end are outputs of no bytes with
// their ONNX shapes, a Concat skips the empty part, and the rest computes as usual.
TEST_P(CompileE2E, EmptyTensorsHaveTheirShapesAndNoData) {
  const int64_t M = 4, N = 6;
  OnnxBuilder m;
  m.input("x", {M, N});
  m.init_i64("parts", {2, 0, 4});
  OnnxBuilder::attr(m.node("Split", "split", {"x", "parts"}, {"a", "b", "c"}), "axis", int64_t(1));
  m.init_i64("s", {10});
  m.init_i64("e", {20});
  m.init_i64("ax", {0});
  m.node("Slice", "past_end", {"x", "s", "e", "ax"}, {"past"});
  m.node("Relu", "relu_empty", {"past"}, {"past_relu"});
  OnnxBuilder::attr(m.node("Concat", "cat", {"c", "b", "a"}, {"cat"}), "axis", int64_t(1));
  m.node("Relu", "relu", {"cat"}, {"y"});
  m.output("y", {M, N});
  m.output("b", {M, 0});
  m.output("past_relu", {0, N});
  auto path = m.save("vtpu_empty_" + id() + ".onnx");
  Vec x = uniform_values(size_t(M * N), 43, 100.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  Vec want(size_t(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) want[size_t(i * N + j)] = std::max(0.0f, x[size_t(i * N + (j + 2) % N)]);
  expect_close(got, want, tolerance(0.02));
  CompileResult r = compile_onnx(path, config::load_preset(preset()), options());
  EXPECT_EQ(tensor(r.program, "b").shape, (std::vector<int64_t>{M, 0}));
  EXPECT_EQ(tensor(r.program, "past_relu").shape, (std::vector<int64_t>{0, N}));
  EXPECT_EQ(tensor(r.program, "b").role, isa::TensorRole::Output);
  EXPECT_EQ(simulate(config::load_preset(preset()), r.program, {{"x", encode(r.program, "x", x)}}, "b"), "OK");
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

// AveragePool with padding left out of the divisor (count_include_pad=0) and ceil_mode: the
// window divisors shrink at the borders, and the last row/column of windows hangs off the end.
TEST_P(CompileE2E, AveragePoolExcludingPaddingWithCeilModeMatchesOnnxRule) {
  const int64_t H = 10, C = 8, OH = 6;  // ONNX: ceil((10 + 1 + 1 - 3) / 2) + 1 = 6
  OnnxBuilder m;
  m.input("img", {1, 1, H, H});
  auto [w1, b1] = conv3x3(m, "conv1", "img", "c1", 1, C, 0.5f, 0.1f, "w1", "b1");
  auto* p = m.node("AveragePool", "pool", {"c1"}, {"y"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(p, "ceil_mode", int64_t(1));
  m.output("y", {1, C, OH, OH});
  auto path = m.save("vtpu_avgpool_ceil_" + id() + ".onnx");
  config::Config cfg = config::load_preset(preset());
  Vec x = uniform_values(size_t(H * H), 17, 1000.0f);
  CompileOptions opt = options();
  opt.calibration = {{{"img", x}}};
  CompileResult r = compile_onnx(path, cfg, opt);
  ASSERT_EQ(tensor(r.program, "y").shape, (std::vector<int64_t>{1, OH, OH, C}));
  std::string out = simulate(cfg, r.program, {{"img", encode(r.program, "img", x)}}, "y");
  ASSERT_EQ(out.substr(0, 2), "OK") << out;
  int64_t CH, CW;
  Vec a = conv(x, 1, H, H, w1, b1, C, 3, 1, CH, CW);  // NCHW, 10x10
  Vec want(size_t(OH * OH * C));                      // NHWC, as the program stores images
  for (int64_t oy = 0; oy < OH; ++oy)
    for (int64_t ox = 0; ox < OH; ++ox)
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        int count = 0;
        for (int64_t iy = oy * 2 - 1; iy < oy * 2 + 2; ++iy)
          for (int64_t ix = ox * 2 - 1; ix < ox * 2 + 2; ++ix)
            if (iy >= 0 && ix >= 0 && iy < CH && ix < CW) sum += a[size_t((c * CH + iy) * CW + ix)], ++count;
        want[size_t((oy * OH + ox) * C + c)] = float(sum / count);
      }
  expect_close(decode(r.program, "y", out.substr(2)), want, tolerance(0.02));
}

TEST_P(CompileE2E, SmallCnnWithBatchNormMatchesFp32Reference) {
  OnnxBuilder m;
  m.input("img", {1, 1, 12, 12});
  auto& w1 = m.init("w1", {8, 1, 3, 3}, 0.5f);
  auto& b1 = m.init("b1", {8}, 0.1f);
  auto& gamma = m.init("g", {8}, 0, {1.2f, 0.8f, 1.5f, 0.6f, 1.0f, 0.9f, 1.3f, 0.7f});
  auto& beta = m.init("be", {8}, 0.2f);
  auto& mean = m.init("mu", {8}, 0.2f);
  auto& var = m.init("var", {8}, 0, {0.5f, 1.0f, 0.8f, 1.2f, 0.6f, 0.9f, 1.5f, 0.7f});
  auto& w2 = m.init("w2", {16, 8, 3, 3}, 0.2f);
  auto& b2 = m.init("b2", {16}, 0.1f);
  auto& w3 = m.init("w3", {10, 64}, 0.2f);
  auto& b3 = m.init("b3", {10}, 0.1f);
  auto* c1 = m.node("Conv", "conv1", {"img", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c1, "kernel_shape", std::vector<int64_t>{3, 3});
  m.node("BatchNormalization", "bn1", {"c1", "g", "be", "mu", "var"}, {"n1"});
  m.node("Relu", "relu1", {"n1"}, {"r1"});
  auto* p1 = m.node("MaxPool", "pool1", {"r1"}, {"p1"});
  OnnxBuilder::attr(p1, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p1, "strides", std::vector<int64_t>{2, 2});
  m.node("Conv", "conv2", {"p1", "w2", "b2"}, {"c2"});
  m.node("Relu", "relu2", {"c2"}, {"r2"});
  auto* p2 = m.node("MaxPool", "pool2", {"r2"}, {"p2"});
  OnnxBuilder::attr(p2, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p2, "strides", std::vector<int64_t>{2, 2});
  m.node("Flatten", "flatten", {"p2"}, {"f"});
  OnnxBuilder::attr(m.node("Gemm", "fc", {"f", "w3", "b3"}, {"y"}), "transB", int64_t(1));
  m.output("y", {1, 10});
  auto path = m.save("vtpu_cnn_" + id() + ".onnx");

  Vec x = uniform_values(size_t(144), 6, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}});

  int64_t OH, OW;
  Vec a = conv(x, 1, 12, 12, w1, b1, 8, 3, 1, OH, OW);
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t i = 0; i < OH * OW; ++i) {
      float& v = a[size_t(c * OH * OW + i)];
      v = (v - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5f) * gamma[size_t(c)] + beta[size_t(c)];
    }
  a = maxpool2(relu(a), 8, OH, OW);
  int64_t OH2 = 0, OW2 = 0;
  Vec c2 = relu(conv(a, 8, 6, 6, w2, b2, 16, 3, 0, OH2, OW2));
  c2 = maxpool2(c2, 16, OH2, OW2);
  Vec want = gemm(c2, 1, 64, w3, 10, b3, true);
  expect_close(got, want, tolerance(0.04));
}

// First layers on few-channel images, which convolutions read packed from HBM with several
// kernel rows stacked in one matmul row where the array has room (docs/compiler.md): a
// ResNet-style 7x7 stride-2 convolution with ReLU (two kernel-row groups on tpu-v4-core,
// none on the tiny arrays), and a 3x2 kernel with vertical stride 3 and dilation 2 and
// uneven pads (two groups, the second half empty, on tiny-16x16; one on tpu-v4-core)
// followed by a 3x3 stride-2 max pool. Batch 2: the stacked copy is rebuilt per image, and
// where rows are stacked the pool of image 0 runs along image 1's matmuls.
TEST_P(CompileE2E, PackedFirstLayersWithStackedKernelRowsMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t N = 2, C = 3, H = 13, W = 14;
  m.input("a", {N, C, H, W});
  m.input("b", {N, C, H, W});
  const ConvGeom ga{7, 7, 2, 2, 1, 1, 3, 3, 3, 3}, gb{3, 2, 3, 1, 2, 1, 2, 0, 1, 1};
  auto& wa = m.init("wa", {12, C, 7, 7}, 0.2f);
  auto& ba = m.init("ba", {12}, 0.1f);
  auto& wb = m.init("wb", {10, C, 3, 2}, 0.3f);
  auto& bb = m.init("bb", {10}, 0.1f);
  auto* ca = m.node("Conv", "conv_a", {"a", "wa", "ba"}, {"ca"});
  OnnxBuilder::attr(ca, "kernel_shape", std::vector<int64_t>{7, 7});
  OnnxBuilder::attr(ca, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(ca, "pads", std::vector<int64_t>{3, 3, 3, 3});
  m.node("Relu", "relu_a", {"ca"}, {"ya"});
  auto* cb = m.node("Conv", "conv_b", {"b", "wb", "bb"}, {"yb"});
  auto* mp = m.node("MaxPool", "pool_b", {"yb"}, {"pb"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(cb, "kernel_shape", std::vector<int64_t>{3, 2});
  OnnxBuilder::attr(cb, "strides", std::vector<int64_t>{3, 1});
  OnnxBuilder::attr(cb, "dilations", std::vector<int64_t>{2, 1});
  OnnxBuilder::attr(cb, "pads", std::vector<int64_t>{2, 0, 1, 1});
  int64_t OHa, OWa, OHb, OWb;
  Vec xa = uniform_values(size_t(N * C * H * W), 21, 1000.0f), xb = uniform_values(size_t(N * C * H * W), 22, 1000.0f);
  Vec want_a = relu(conv_nchw(xa, N, C, H, W, wa, ba, 12, ga, OHa, OWa));
  Vec yb = conv_nchw(xb, N, C, H, W, wb, bb, 10, gb, OHb, OWb);
  int64_t PH = (OHb + 2 - 3) / 2 + 1, PW = (OWb + 2 - 3) / 2 + 1;
  Vec want_b(size_t(N * 10 * PH * PW), -INFINITY);
  for (int64_t nc = 0; nc < N * 10; ++nc)
    for (int64_t py = 0; py < PH; ++py)
      for (int64_t px = 0; px < PW; ++px)
        for (int64_t dy = 0; dy < 3; ++dy)
          for (int64_t dx = 0; dx < 3; ++dx) {
            int64_t iy = py * 2 + dy - 1, ix = px * 2 + dx - 1;
            if (iy < 0 || ix < 0 || iy >= OHb || ix >= OWb) continue;
            float& o = want_b[size_t((nc * PH + py) * PW + px)];
            o = std::max(o, yb[size_t((nc * OHb + iy) * OWb + ix)]);
          }
  m.output("ya", {N, 12, OHa, OWa});
  m.output("pb", {N, 10, PH, PW});
  auto path = m.save("vtpu_packed_" + id() + ".onnx");
  std::map<std::string, Vec> in{{"a", xa}, {"b", xb}};
  expect_close(compile_and_run(path, in, "ya", /*nchw=*/true), want_a, tolerance(0.02));
  expect_close(compile_and_run(path, in, "pb", /*nchw=*/true), want_b, tolerance(0.02));
}

// "Same" convolutions on few channels, each its input's last user, pair kernel rows in one
// matmul row (docs/compiler.md): a 3x3 on 4 channels (pairs on every preset) and a 5x5 with
// ReLU on 8 channels (pairs on tiny-16x16 and tpu-v4-core: a pair, a single below it and
// two single rows above it). Batch 2: each image's bottom row pairs with zeros.
TEST_P(CompileE2E, SameConvolutionsOnFewChannelsPairKernelRowsMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t N = 2, H = 6, W = 7;
  m.input("a", {N, 4, H, W});
  m.input("b", {N, 8, H, W});
  m.node("Sigmoid", "sigmoid_a", {"a"}, {"ra"});  // may leave nonzero padding lanes: never read
  m.node("Relu", "relu_b", {"b"}, {"rb"});
  const ConvGeom ga{3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, gb{5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
  auto& wa = m.init("wa", {7, 4, 3, 3}, 0.3f);
  auto& ba = m.init("ba", {7}, 0.1f);
  auto& wb = m.init("wb", {6, 8, 5, 5}, 0.15f);
  auto& bb = m.init("bb", {6}, 0.1f);
  auto* ca = m.node("Conv", "conv_a", {"ra", "wa", "ba"}, {"ya"});
  OnnxBuilder::attr(ca, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(ca, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto* cb = m.node("Conv", "conv_b", {"rb", "wb", "bb"}, {"cb"});
  OnnxBuilder::attr(cb, "kernel_shape", std::vector<int64_t>{5, 5});
  OnnxBuilder::attr(cb, "pads", std::vector<int64_t>{2, 2, 2, 2});
  m.node("Relu", "relu_cb", {"cb"}, {"yb"});
  m.output("ya", {N, 7, H, W});
  m.output("yb", {N, 6, H, W});
  auto path = m.save("vtpu_pairs_" + id() + ".onnx");
  Vec xa = uniform_values(size_t(N * 4 * H * W), 31, 1000.0f), xb = uniform_values(size_t(N * 8 * H * W), 32, 1000.0f);
  int64_t OH, OW;
  Vec sa = xa;
  for (auto& v : sa) v = float(1.0 / (1.0 + std::exp(-double(v))));
  Vec want_a = conv_nchw(sa, N, 4, H, W, wa, ba, 7, ga, OH, OW);
  Vec want_b = relu(conv_nchw(relu(xb), N, 8, H, W, wb, bb, 6, gb, OH, OW));
  std::map<std::string, Vec> in{{"a", xa}, {"b", xb}};
  expect_close(compile_and_run(path, in, "ya", /*nchw=*/true), want_a, tolerance(0.02));
  expect_close(compile_and_run(path, in, "yb", /*nchw=*/true), want_b, tolerance(0.02));
}

// A residual block (1x1 conv + ReLU, 3x3 conv, add of the block's input, ReLU), batch 2:
// the add goes into the 3x3 convolution's epilogue, in place in the shortcut
// (docs/compiler.md), and must give what the separate add gives; then a global average
// pool over both images.
TEST_P(CompileE2E, ResidualAddFusedIntoTheConvolutionMatchesFp32Reference) {
  OnnxBuilder m;
  const int64_t N = 2, C = 12, H = 5, W = 6;
  m.input("x", {N, C, H, W});
  m.node("Relu", "relu0", {"x"}, {"a"});
  auto& w1 = m.init("w1", {6, C, 1, 1}, 0.3f);
  auto& b1 = m.init("b1", {6}, 0.1f);
  auto* c1 = m.node("Conv", "conv1", {"a", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "kernel_shape", std::vector<int64_t>{1, 1});
  m.node("Relu", "relu1", {"c1"}, {"r1"});
  auto [w2, b2] = conv3x3(m, "conv2", "r1", "c2", 6, C, 0.2f, 0.1f, "w2", "b2");
  m.node("Add", "add", {"c2", "a"}, {"s"});
  m.node("Relu", "relu2", {"s"}, {"y"});
  m.node("GlobalAveragePool", "gap", {"y"}, {"g"});  // one instruction per lane block for both images
  m.output("y", {N, C, H, W});
  m.output("g", {N, C, 1, 1});
  auto path = m.save("vtpu_residual_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 41, 1000.0f);
  int64_t OH, OW;
  Vec a = relu(x);
  Vec r1 = relu(conv_nchw(a, N, C, H, W, w1, b1, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, OH, OW));
  Vec want = conv_nchw(r1, N, 6, H, W, w2, b2, C, {3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, OH, OW);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0f, want[i] + a[i]);
  Vec want_g(size_t(N * C), 0.0f);
  for (size_t i = 0; i < want.size(); ++i) want_g[i / size_t(H * W)] += want[i] / float(H * W);
  expect_close(compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true), want, tolerance(0.02));
  expect_close(compile_and_run(path, {{"x", x}}, "g", /*nchw=*/true), want_g, tolerance(0.02));
}

// MobileNet-style separable blocks: depthwise 3x3 + batch norm + ReLU6, a depthwise
// convolution with channel multiplier 2 and stride 2, then a 1x1 convolution in 4 groups.
// 24 channels straddle the lane blocks of every preset.
TEST_P(CompileE2E, DepthwiseAndGroupedConvolutionsMatchFp32Reference) {
  const int64_t C = 24, H = 9, W = 9;
  OnnxBuilder m;
  m.input("img", {1, C, H, W});
  auto& w1 = m.init("w1", {C, 1, 3, 3}, 0.6f);
  auto& b1 = m.init("b1", {C}, 0.2f);
  Vec g(static_cast<size_t>(C)), vr(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) g[size_t(c)] = 0.7f + 0.05f * float(c % 11), vr[size_t(c)] = 0.6f + 0.1f * float(c % 7);
  auto& gamma = m.init("g", {C}, 0, g);
  auto& beta = m.init("be", {C}, 0.2f);
  auto& mean = m.init("mu", {C}, 0.2f);
  auto& var = m.init("var", {C}, 0, vr);
  auto& w2 = m.init("w2", {2 * C, 1, 3, 3}, 0.5f);
  auto& b2 = m.init("b2", {2 * C}, 0.1f);
  auto& w3 = m.init("w3", {32, 2 * C / 4, 1, 1}, 0.4f);
  auto& b3 = m.init("b3", {32}, 0.1f);
  auto* c1 = m.node("Conv", "dw1", {"img", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c1, "group", C);
  m.node("BatchNormalization", "bn1", {"c1", "g", "be", "mu", "var"}, {"n1"});
  auto& lo = m.init("lo", {}, 0, {0.0f});
  auto& hi = m.init("hi", {}, 0, {6.0f});
  m.node("Clip", "relu6", {"n1", "lo", "hi"}, {"r1"});
  auto* c2 = m.node("Conv", "dw2", {"r1", "w2", "b2"}, {"c2"});
  OnnxBuilder::attr(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c2, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(c2, "group", C);
  OnnxBuilder::attr(m.node("Conv", "gconv", {"c2", "w3", "b3"}, {"c3"}), "group", int64_t(4));
  m.node("Relu", "relu3", {"c3"}, {"y"});
  m.output("y", {1, 32, 5, 5});
  auto path = m.save("vtpu_depthwise_" + id() + ".onnx");

  Vec x = uniform_values(size_t(C * H * W), 21, 300.0f);
  Vec got = compile_and_run(path, {{"img", x}}, "y", /*nchw=*/true);

  int64_t OH, OW;
  Vec a = conv_grouped(x, C, H, W, w1, b1, C, 3, 1, 1, C, OH, OW);
  int clipped = 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < OH * OW; ++i) {
      float& v = a[size_t(c * OH * OW + i)];
      v = (v - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5f) * gamma[size_t(c)] + beta[size_t(c)];
      clipped += v < lo[0] || v > hi[0];
      v = std::clamp(v, lo[0], hi[0]);
    }
  ASSERT_GT(clipped, 0) << "the inputs should reach ReLU6's bounds";
  int64_t OH2, OW2, OH3, OW3;
  Vec c2v = conv_grouped(a, C, OH, OW, w2, b2, 2 * C, 3, 2, 1, C, OH2, OW2);
  Vec want = relu(conv_grouped(c2v, 2 * C, OH2, OW2, w3, b3, 32, 1, 1, 0, 4, OH3, OW3));
  ASSERT_EQ(OH3, 5);
  expect_close(got, want, tolerance(0.03));
}

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

// ONNX LSTM, bidirectional, unrolled by the importer: Y [T, 2, B, H] against the gate
// equations written out here (gate order i, o, f, c; B = input and recurrent biases).
TEST_P(CompileE2E, BidirectionalLstmMatchesFp32Reference) {
  const int64_t T = 3, Bt = 2, I = 10, H = 12, dirs = 2;
  OnnxBuilder m;
  m.input("x", {T, Bt, I});
  auto& W = m.init("W", {dirs, 4 * H, I}, 0.4f);
  auto& R = m.init("R", {dirs, 4 * H, H}, 0.4f);
  auto& Bb = m.init("B", {dirs, 8 * H}, 0.2f);
  auto* l = m.node("LSTM", "lstm", {"x", "W", "R", "B"}, {"y"});
  OnnxBuilder::attr(l, "hidden_size", H);
  OnnxBuilder::attr_s(l, "direction", "bidirectional");
  m.output("y", {T, dirs, Bt, H});
  auto path = m.save("vtpu_lstm_" + id() + ".onnx");

  Vec x = uniform_values(size_t(T * Bt * I), 41, 500.0f);
  Vec got = compile_and_run(path, {{"x", x}});

  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  Vec want(size_t(T * dirs * Bt * H));
  for (int64_t d = 0; d < dirs; ++d) {
    std::vector<double> h(size_t(Bt * H), 0.0), c(size_t(Bt * H), 0.0);
    for (int64_t s = 0; s < T; ++s) {
      int64_t t = d == 0 ? s : T - 1 - s;
      std::vector<double> hn(h.size()), cn(c.size());
      for (int64_t b = 0; b < Bt; ++b)
        for (int64_t j = 0; j < H; ++j) {
          double g[4];
          for (int64_t q = 0; q < 4; ++q) {
            int64_t row = d * 4 * H + q * H + j;
            double acc = Bb[size_t(d * 8 * H + q * H + j)] + Bb[size_t(d * 8 * H + 4 * H + q * H + j)];
            for (int64_t k = 0; k < I; ++k) acc += double(x[size_t((t * Bt + b) * I + k)]) * W[size_t(row * I + k)];
            for (int64_t k = 0; k < H; ++k) acc += h[size_t(b * H + k)] * R[size_t(row * H + k)];
            g[q] = acc;
          }
          double cc = sig(g[2]) * c[size_t(b * H + j)] + sig(g[0]) * std::tanh(g[3]);
          cn[size_t(b * H + j)] = cc;
          hn[size_t(b * H + j)] = sig(g[1]) * std::tanh(cc);
          want[size_t(((t * dirs + d) * Bt + b) * H + j)] = float(hn[size_t(b * H + j)]);
        }
      h = hn, c = cn;
    }
  }
  expect_close(got, want, tolerance(0.03));
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

// ONNX GRU with linear_before_reset = 1 (torch's GRU), reverse direction: Y [T, 1, B, H]
// against the gate equations (order z, r, h).
TEST_P(CompileE2E, GruLinearBeforeResetMatchesFp32Reference) {
  const int64_t T = 3, Bt = 2, I = 9, H = 10;
  OnnxBuilder m;
  m.input("x", {T, Bt, I});
  auto& W = m.init("W", {1, 3 * H, I}, 0.4f);
  auto& R = m.init("R", {1, 3 * H, H}, 0.4f);
  auto& Bb = m.init("B", {1, 6 * H}, 0.3f);
  auto* g = m.node("GRU", "gru", {"x", "W", "R", "B"}, {"y"});
  OnnxBuilder::attr(g, "hidden_size", H);
  OnnxBuilder::attr(g, "linear_before_reset", int64_t(1));
  OnnxBuilder::attr_s(g, "direction", "reverse");
  m.output("y", {T, 1, Bt, H});
  auto path = m.save("vtpu_gru_" + id() + ".onnx");
  Vec x = uniform_values(size_t(T * Bt * I), 53, 500.0f);
  Vec got = compile_and_run(path, {{"x", x}});

  auto sig = [](double v) { return 1.0 / (1.0 + std::exp(-v)); };
  auto proj = [&](const Vec& M, int64_t row, const double* v, int64_t K) {
    double acc = 0;
    for (int64_t k = 0; k < K; ++k) acc += v[k] * M[size_t(row * K + k)];
    return acc;
  };
  Vec want(size_t(T * Bt * H));
  std::vector<double> h(size_t(Bt * H), 0.0);
  for (int64_t t = T - 1; t >= 0; --t) {
    std::vector<double> hn(h.size());
    for (int64_t b = 0; b < Bt; ++b) {
      std::vector<double> xv(static_cast<size_t>(I));
      for (int64_t k = 0; k < I; ++k) xv[size_t(k)] = x[size_t((t * Bt + b) * I + k)];
      const double* hv = h.data() + b * H;
      for (int64_t j = 0; j < H; ++j) {
        double z = sig(proj(W, j, xv.data(), I) + Bb[size_t(j)] + proj(R, j, hv, H) + Bb[size_t(3 * H + j)]);
        double r = sig(proj(W, H + j, xv.data(), I) + Bb[size_t(H + j)] + proj(R, H + j, hv, H) + Bb[size_t(4 * H + j)]);
        double n = std::tanh(proj(W, 2 * H + j, xv.data(), I) + Bb[size_t(2 * H + j)] +
                             r * (proj(R, 2 * H + j, hv, H) + Bb[size_t(5 * H + j)]));
        hn[size_t(b * H + j)] = (1 - z) * n + z * hv[j];
        want[size_t((t * Bt + b) * H + j)] = float(hn[size_t(b * H + j)]);
      }
    }
    h = hn;
  }
  expect_close(got, want, tolerance(0.03));
}

// Nearest upsampling as detection and segmentation heads use it: H x 2 by whole-row copies,
// W x 3 as one repeating copy per row; then a half-pixel downsample back to odd sizes.
TEST_P(CompileE2E, NearestResizeUpAndDownMatchesOnnxIndexing) {
  const int64_t C = 12, H = 5, W = 7;
  OnnxBuilder m;
  m.input("x", {1, C, H, W});
  m.init("up", {4}, 0, {1.0f, 1.0f, 2.0f, 3.0f});
  m.init_i64("down", {1, C, 4, 9});
  auto* up = m.node("Resize", "up", {"x", "", "up"}, {"u"});
  OnnxBuilder::attr_s(up, "coordinate_transformation_mode", "asymmetric");
  OnnxBuilder::attr_s(up, "nearest_mode", "floor");
  m.node("Resize", "down", {"u", "", "", "down"}, {"y"});  // half_pixel, round_prefer_floor
  m.output("y", {1, C, 4, 9});
  auto path = m.save("vtpu_resize_" + id() + ".onnx");
  Vec x = uniform_values(size_t(C * H * W), 59, 800.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  // u[c][y][x] = x[c][y / 2][x / 3] (10 x 21); y picks u at round_prefer_floor((o + 0.5) / s - 0.5).
  auto src = [](int64_t o, int64_t in, int64_t out) {
    double s = double(out) / double(in), xo = (o + 0.5) / s - 0.5;
    double r = xo - std::floor(xo) == 0.5 ? std::floor(xo) : std::round(xo);
    return std::clamp<int64_t>(int64_t(r), 0, in - 1);
  };
  Vec want(size_t(C * 4 * 9));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < 4; ++oy)
      for (int64_t ox = 0; ox < 9; ++ox) {
        int64_t uy = src(oy, 2 * H, 4), ux = src(ox, 3 * W, 9);
        want[size_t((c * 4 + oy) * 9 + ox)] = x[size_t((c * H + uy / 2) * W + ux / 3)];
      }
  expect_close(got, want, tolerance(0.01));
}

// Bilinear and bicubic Resize (H up, W down, a batch of 2, more channels than a lane block on
// the tiny presets) against the 2-D definition evaluated pixel by pixel: each output pixel
// is the weighted sum of the 2x2 (4x4) input pixels around its source coordinate, edge
// pixels repeated beyond the border.
TEST_P(CompileE2E, LinearAndCubicResizeMatchDefinition) {
  const int64_t N = 2, C = 11, H = 5, W = 9, OH = 8, OW = 6;
  Vec x = uniform_values(size_t(N * C * H * W), 61, 900.0f);
  for (bool cubic : {false, true}) {
    SCOPED_TRACE(cubic ? "cubic, align_corners" : "linear, half_pixel");
    OnnxBuilder m;
    m.input("x", {N, C, H, W});
    m.init_i64("sizes", {N, C, OH, OW});
    auto* rs = m.node("Resize", "resize", {"x", "", "", "sizes"}, {"y"});
    OnnxBuilder::attr_s(rs, "mode", cubic ? "cubic" : "linear");
    if (cubic) OnnxBuilder::attr_s(rs, "coordinate_transformation_mode", "align_corners");
    m.output("y", {N, C, OH, OW});
    auto path = m.save(std::string("vtpu_resize_") + (cubic ? "cubic_" : "linear_") + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
    // Source coordinate, first tap and tap weights along one axis.
    auto taps = [&](int64_t o, int64_t in, int64_t on, std::vector<double>& wt) {
      double src = cubic ? double(o) * double(in - 1) / double(on - 1) : (double(o) + 0.5) * double(in) / double(on) - 0.5;
      double f = std::floor(src), t = src - f, a = -0.75;
      if (!cubic) {
        wt = {1 - t, t};
        return int64_t(f);
      }
      auto k = [&](double d) {  // Keys' kernel with a = -0.75
        d = std::fabs(d);
        return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0.0;
      };
      wt = {k(t + 1), k(t), k(1 - t), k(2 - t)};
      return int64_t(f) - 1;
    };
    Vec want(size_t(N * C * OH * OW));
    for (int64_t r = 0; r < N * C; ++r)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          std::vector<double> wy, wx;
          int64_t y0 = taps(oy, H, OH, wy), x0 = taps(ox, W, OW, wx);
          double acc = 0;
          for (size_t i = 0; i < wy.size(); ++i)
            for (size_t j = 0; j < wx.size(); ++j) {
              int64_t iy = std::clamp<int64_t>(y0 + int64_t(i), 0, H - 1), ix = std::clamp<int64_t>(x0 + int64_t(j), 0, W - 1);
              acc += wy[i] * wx[j] * x[size_t((r * H + iy) * W + ix)];
            }
          want[size_t((r * OH + oy) * OW + ox)] = float(acc);
        }
    expect_close(got, want, tolerance(0.03));
  }
}

// ConvTranspose (a decoder's upsampling layer): stride 2, pads 1, output_padding 1, two
// groups, from its definition: every input pixel scatters its kernel-weighted value.
TEST_P(CompileE2E, ConvTransposeMatchesItsScatterDefinition) {
  const int64_t CI = 10, COg = 6, G = 2, H = 4, W = 5, K = 3, S = 2, P = 1, OP = 1;
  const int64_t OH = (H - 1) * S + K - 2 * P + OP, OW = (W - 1) * S + K - 2 * P + OP;
  OnnxBuilder m;
  m.input("x", {1, CI, H, W});
  auto& w = m.init("w", {CI, COg, K, K}, 0.4f);
  auto& b = m.init("b", {COg * G}, 0.2f);
  auto* ct = m.node("ConvTranspose", "up", {"x", "w", "b"}, {"y"});
  OnnxBuilder::attr(ct, "strides", std::vector<int64_t>{S, S});
  OnnxBuilder::attr(ct, "pads", std::vector<int64_t>{P, P, P, P});
  OnnxBuilder::attr(ct, "output_padding", std::vector<int64_t>{OP, OP});
  OnnxBuilder::attr(ct, "group", G);
  m.output("y", {1, COg * G, OH, OW});
  auto path = m.save("vtpu_convtranspose_" + id() + ".onnx");
  Vec x = uniform_values(size_t(CI * H * W), 61, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  Vec want(size_t(COg * G * OH * OW));
  for (int64_t o = 0; o < COg * G; ++o)
    for (int64_t i = 0; i < OH * OW; ++i) want[size_t(o * OH * OW + i)] = b[size_t(o)];
  const int64_t CIg = CI / G;
  for (int64_t ci = 0; ci < CI; ++ci)
    for (int64_t iy = 0; iy < H; ++iy)
      for (int64_t ix = 0; ix < W; ++ix)
        for (int64_t og = 0; og < COg; ++og)
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              int64_t oy = iy * S - P + kh, ox = ix * S - P + kw, o = ci / CIg * COg + og;
              if (oy < 0 || ox < 0 || oy >= OH || ox >= OW) continue;
              want[size_t((o * OH + oy) * OW + ox)] +=
                  x[size_t((ci * H + iy) * W + ix)] * w[size_t(((ci * COg + og) * K + kh) * K + kw)];
            }
  expect_close(got, want, tolerance(0.03));
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

// A dilated max pool (strides 2, dilations 2 on a 3x3 window) is the maximum of its taps,
// each every second pixel from (i * 2, j * 2) on.
TEST_P(CompileE2E, DilatedMaxPoolMatchesDefinition) {
  const int64_t N = 2, C = 3, H = 11, W = 12, K = 3, S = 2, D = 2;
  const int64_t OH = (H - D * (K - 1) - 1) / S + 1, OW = (W - D * (K - 1) - 1) / S + 1;
  OnnxBuilder m;
  m.input("x", {N, C, H, W});
  auto* mp = m.node("MaxPool", "pool", {"x"}, {"y"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{K, K});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{S, S});
  OnnxBuilder::attr(mp, "dilations", std::vector<int64_t>{D, D});
  m.output("y", {N, C, OH, OW});
  auto path = m.save("vtpu_dilated_pool_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 71, 5.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  Vec want(size_t(N * C * OH * OW));
  for (int64_t r = 0; r < N * C; ++r)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < K; ++j) mx = std::max(mx, x[size_t((r * H + oy * S + i * D) * W + ox * S + j * D)]);
        want[size_t((r * OH + oy) * OW + ox)] = mx;
      }
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

// 3-D pools with padding, strides and ceil_mode on the depth: MaxPool, and AveragePool
// both leaving padding out of the divisor and counting it, against ONNX's definition.
TEST_P(CompileE2E, Pool3dMatchesDefinition) {
  const int64_t N = 2, C = 3, D = 5, H = 6, W = 7;
  const std::vector<int64_t> k{3, 2, 3}, s{2, 1, 2}, pb{1, 0, 1}, pe{1, 1, 0};
  auto out_dim = [&](int64_t in, int i, bool ceil) {
    int64_t span = in + pb[size_t(i)] + pe[size_t(i)] - k[size_t(i)];
    int64_t o = (ceil ? (span + s[size_t(i)] - 1) / s[size_t(i)] : span / s[size_t(i)]) + 1;
    if (ceil && (o - 1) * s[size_t(i)] >= in + pb[size_t(i)]) --o;
    return o;
  };
  Vec x = uniform_values(size_t(N * C * D * H * W), 91, 300.0f);
  struct Case {
    const char* op;
    bool count_pad, ceil;
  };
  for (Case cs : {Case{"MaxPool", false, true}, Case{"AveragePool", false, true}, Case{"AveragePool", true, false}}) {
    SCOPED_TRACE(std::string(cs.op) + (cs.count_pad ? " count_include_pad" : "") + (cs.ceil ? " ceil_mode" : ""));
    const int64_t OD = out_dim(D, 0, cs.ceil), OH = out_dim(H, 1, cs.ceil), OW = out_dim(W, 2, cs.ceil);
    OnnxBuilder m;
    m.input("x", {N, C, D, H, W});
    auto* pn = m.node(cs.op, "pool3d", {"x"}, {"y"});
    OnnxBuilder::attr(pn, "kernel_shape", k);
    OnnxBuilder::attr(pn, "strides", s);
    OnnxBuilder::attr(pn, "pads", std::vector<int64_t>{pb[0], pb[1], pb[2], pe[0], pe[1], pe[2]});
    if (cs.ceil) OnnxBuilder::attr(pn, "ceil_mode", int64_t(1));
    if (cs.count_pad) OnnxBuilder::attr(pn, "count_include_pad", int64_t(1));
    m.output("y", {N, C, OD, OH, OW});
    auto path = m.save("vtpu_pool3d_" + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "y");
    Vec want(size_t(N * C * OD * OH * OW));
    bool avg = std::string(cs.op) == "AveragePool";
    for (int64_t r = 0; r < N * C; ++r)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = avg ? 0.0 : -INFINITY;
            int64_t cnt = 0;
            for (int64_t i = 0; i < k[0]; ++i)
              for (int64_t j = 0; j < k[1]; ++j)
                for (int64_t l = 0; l < k[2]; ++l) {
                  int64_t d = od * s[0] + i - pb[0], h = oh * s[1] + j - pb[1], w = ow * s[2] + l - pb[2];
                  bool inside = d >= 0 && d < D && h >= 0 && h < H && w >= 0 && w < W;
                  // count_include_pad counts the declared padding, not ceil_mode's extra end.
                  if (inside || (cs.count_pad && d < D + pe[0] && h < H + pe[1] && w < W + pe[2])) ++cnt;
                  if (!inside) continue;
                  double v = x[size_t(((r * D + d) * H + h) * W + w)];
                  acc = avg ? acc + v : std::max(acc, v);
                }
            want[size_t(((r * OD + od) * OH + oh) * OW + ow)] = float(avg ? acc / double(cnt) : acc);
          }
    ASSERT_EQ(got.size(), want.size());
    expect_close(got, want, tolerance(0.03));
  }
}

// A "same" convolution whose kernel reaches past a narrow image (5x5 on 3x1 pixels, pads 2;
// pytorch's Conv1d_pad2size1 is the 1-D case): taps that land outside every row read nothing.
TEST_P(CompileE2E, SameConvWiderThanTheImageMatchesDefinition) {
  const int64_t N = 2, C = 4, H = 3, W = 1, CO = 6, K = 5, P = 2;
  OnnxBuilder m;
  m.input("x", {N, C, H, W});
  auto& w = m.init("w", {CO, C, K, K}, 0.3f);
  auto& b = m.init("b", {CO}, 0.2f);
  auto* c = m.node("Conv", "conv", {"x", "w", "b"}, {"y"});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{K, K});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{P, P, P, P});
  m.output("y", {N, CO, H, W});
  auto path = m.save("vtpu_same_conv_narrow_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 89, 600.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  int64_t OH, OW;
  Vec want = conv_nchw(x, N, C, H, W, w, b, CO, {K, K, 1, 1, 1, 1, P, P, P, P}, OH, OW);
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
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
  m.init_i64("outer", {0, 2});
  m.node("ReduceSum", "sum_mid", {"x", "mid"}, {"s"});
  OnnxBuilder::attr(m.node("ReduceMean", "mean_outer", {"x", "outer"}, {"mo"}), "keepdims", int64_t(0));
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

// Shape computations as exporters write them fold at import (a Shape as a model output too): the head split's target shape
// from Shape, Gather, Div, Unsqueeze and Concat; a mask from Range, Unsqueeze, Greater and
// Cast; and Expand of an activation. Against the definition.
TEST_P(CompileE2E, ExportedShapeArithmeticFoldsAndMatchesDefinition) {
  const int64_t B = 2, S = 6, D = 12, Hh = 3;
  OnnxBuilder m;
  m.input("x", {B, S, D});
  m.input("row", {1, D});
  m.init_i64("i0", {0});
  m.init_i64("i1", {1});
  m.init_i64("i2", {2});
  m.init_i64("heads", {Hh});
  m.init_i64("zero", {0});
  m.init_i64("one", {1});
  m.node("Shape", "shape", {"x"}, {"sh"});
  m.node("Gather", "g0", {"sh", "i0"}, {"b"});
  m.node("Gather", "g1", {"sh", "i1"}, {"s"});
  m.node("Gather", "g2", {"sh", "i2"}, {"d"});
  m.node("Div", "per_head", {"d", "heads"}, {"dh"});
  OnnxBuilder::attr(m.node("Concat", "target", {"b", "s", "heads", "dh"}, {"tgt"}), "axis", int64_t(0));
  m.node("Reshape", "split", {"x", "tgt"}, {"xs"});
  OnnxBuilder::attr(m.node("Transpose", "heads_first", {"xs"}, {"y"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.node("Gather", "len", {"sh", "i1"}, {"len"});
  m.node("Squeeze", "len_scalar", {"len", "i0"}, {"n"});
  m.node("Range", "rows", {"zero", "n", "one"}, {"ri"});
  m.node("Gather", "width", {"sh", "i2"}, {"w"});
  m.node("Squeeze", "width_scalar", {"w", "i0"}, {"wn"});
  m.node("Range", "cols", {"zero", "wn", "one"}, {"ci"});
  m.node("Unsqueeze", "rows_col", {"ri", "i1"}, {"rc"});
  m.node("Greater", "upper", {"ci", "rc"}, {"gt"});
  OnnxBuilder::attr(m.node("Cast", "mask", {"gt"}, {"mk"}), "to", int64_t(onnx::TensorProto::FLOAT));
  m.node("Mul", "masked", {"x", "mk"}, {"z"});
  m.node("Expand", "rows_of_row", {"row", "sh"}, {"e"});
  m.output("y", {B, Hh, S, D / Hh});
  m.output("z", {B, S, D});
  m.output("e", {B, S, D});
  m.output("sh", {3}, onnx::TensorProto::INT64);  // a constant output: preloaded bytes, no code
  auto path = m.save("vtpu_shape_arith_" + id() + ".onnx");
  Vec x = uniform_values(size_t(B * S * D), 127, 300.0f), row = uniform_values(size_t(D), 131, 300.0f);
  std::map<std::string, Vec> in{{"x", x}, {"row", row}};
  Vec want_y(x.size()), want_z(x.size()), want_e(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d) {
        float v = x[size_t((b * S + s) * D + d)];
        want_y[size_t(((b * Hh + d / (D / Hh)) * S + s) * (D / Hh) + d % (D / Hh))] = v;
        want_z[size_t((b * S + s) * D + d)] = d > s ? v : 0.0f;
        want_e[size_t((b * S + s) * D + d)] = row[size_t(d)];
      }
  expect_close(compile_and_run(path, in, "y"), want_y, tolerance(0.01));
  expect_close(compile_and_run(path, in, "z"), want_z, tolerance(0.01));
  expect_close(compile_and_run(path, in, "e"), want_e, tolerance(0.01));
  EXPECT_EQ(compile_and_run(path, in, "sh"), (Vec{float(B), float(S), float(D)}));
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
  OnnxBuilder m;
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

// ArgMax along the last axis (150 values: several lane blocks on the tiny presets) and ArgMin
// along a middle one with the last of equal values, many ties, exactly. Integer inputs in
// [-127, 127] are exact in bf16 and in INT8 (calibrated scale 1).
TEST_P(CompileE2E, ArgMaxArgMinMatchDefinition) {
  const int64_t A = 3, B = 5, K = 150;
  std::mt19937 rng(151);
  Vec x(size_t(A * B * K));
  for (auto& v : x) v = float(int(rng() % 13) - 6);
  x[0] = 127, x[1] = -127;
  OnnxBuilder m;
  m.input("x", {A, B, K});
  auto* mx = m.node("ArgMax", "amax", {"x"}, {"i"});
  OnnxBuilder::attr(mx, "axis", int64_t(-1));
  OnnxBuilder::attr(mx, "keepdims", int64_t(0));
  auto* mn = m.node("ArgMin", "amin", {"x"}, {"j"});
  OnnxBuilder::attr(mn, "axis", int64_t(1));
  OnnxBuilder::attr(mn, "select_last_index", int64_t(1));
  m.output("i", {A, B}, onnx::TensorProto::INT64);
  m.output("j", {A, 1, K}, onnx::TensorProto::INT64);
  auto path = m.save("vtpu_argmax_" + id() + ".onnx");
  Vec want_i(size_t(A * B)), want_j(size_t(A * K));
  for (int64_t a = 0; a < A; ++a) {
    for (int64_t b = 0; b < B; ++b) {
      int64_t at = 0;
      for (int64_t k = 1; k < K; ++k) at = x[size_t((a * B + b) * K + k)] > x[size_t((a * B + b) * K + at)] ? k : at;
      want_i[size_t(a * B + b)] = float(at);
    }
    for (int64_t k = 0; k < K; ++k) {
      int64_t at = 0;
      for (int64_t b = 1; b < B; ++b) at = x[size_t((a * B + b) * K + k)] <= x[size_t((a * B + at) * K + k)] ? b : at;
      want_j[size_t(a * K + k)] = float(at);
    }
  }
  EXPECT_EQ(compile_and_run(path, {{"x", x}}, "i"), want_i);
  EXPECT_EQ(compile_and_run(path, {{"x", x}}, "j"), want_j);
}

// A 3-D Conv or ConvTranspose of x by w with bias b into y: groups, kernel, strides, and the
// pads at the start (pb) and end (pe) of each axis.
onnx::NodeProto* volume_node(OnnxBuilder& m, const std::string& op, int64_t groups, const std::vector<int64_t>& k,
                             const std::vector<int64_t>& s, const std::vector<int64_t>& pb, const std::vector<int64_t>& pe) {
  auto* c = m.node(op, op + "_3d", {"x", "w", "b"}, {"y"});
  OnnxBuilder::attr(c, "group", groups);
  OnnxBuilder::attr(c, "kernel_shape", k);
  OnnxBuilder::attr(c, "strides", s);
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{pb[0], pb[1], pb[2], pe[0], pe[1], pe[2]});
  return c;
}

// A 3-D Conv (2 groups, bias, strides, dilations and pads that differ per axis) against
// ONNX's definition.
TEST_P(CompileE2E, Conv3dMatchesDefinition) {
  const int64_t N = 2, CI = 4, G = 2, CO = 6, D = 5, H = 6, W = 7;
  const std::vector<int64_t> k{3, 2, 3}, s{2, 1, 1}, dl{1, 2, 1}, pb{1, 1, 0}, pe{1, 0, 1};
  std::vector<int64_t> out(3);
  const std::vector<int64_t> in{D, H, W};
  for (size_t i = 0; i < 3; ++i) out[i] = (in[i] + pb[i] + pe[i] - dl[i] * (k[i] - 1) - 1) / s[i] + 1;
  OnnxBuilder m;
  m.input("x", {N, CI, D, H, W});
  auto& w = m.init("w", {CO, CI / G, k[0], k[1], k[2]}, 0.3f);
  auto& b = m.init("b", {CO}, 0.2f);
  auto* c = volume_node(m, "Conv", G, k, s, pb, pe);
  OnnxBuilder::attr(c, "dilations", dl);
  m.output("y", {N, CO, out[0], out[1], out[2]});
  auto path = m.save("vtpu_conv3d_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * CI * D * H * W), 95, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  const int64_t CIg = CI / G, COg = CO / G, OD = out[0], OH = out[1], OW = out[2];
  Vec want(size_t(N * CO * OD * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = b[size_t(o)];
            for (int64_t ci = 0; ci < CIg; ++ci)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t bb = 0; bb < k[1]; ++bb)
                  for (int64_t cc = 0; cc < k[2]; ++cc) {
                    int64_t id = od * s[0] - pb[0] + a * dl[0], ih = oh * s[1] - pb[1] + bb * dl[1], iw = ow * s[2] - pb[2] + cc * dl[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= D || ih >= H || iw >= W) continue;
                    acc += double(x[size_t((((n * CI + o / COg * CIg + ci) * D + id) * H + ih) * W + iw)]) *
                           w[size_t((((o * CIg + ci) * k[0] + a) * k[1] + bb) * k[2] + cc)];
                  }
            want[size_t((((n * CO + o) * OD + od) * OH + oh) * OW + ow)] = float(acc);
          }
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

// Pad of an image's H and W in its three modes (a constant of 0.5, the edge repeated, the
// border mirrored), different pads on each side, against the definition.
TEST_P(CompileE2E, PadModesMatchDefinition) {
  const int64_t N = 2, C = 3, H = 4, W = 5, T = 1, L = 2, B = 2, R = 3;
  const int64_t OH = H + T + B, OW = W + L + R;
  Vec x = uniform_values(size_t(N * C * H * W), 97, 300.0f);
  for (std::string mode : {"constant", "edge", "reflect"}) {
    SCOPED_TRACE(mode);
    OnnxBuilder m;
    m.input("x", {N, C, H, W});
    m.init_i64("pads", {0, 0, T, L, 0, 0, B, R});
    m.init("value", {}, 0.0f, {0.5f});
    OnnxBuilder::attr_s(m.node("Pad", "pad", {"x", "pads", "value"}, {"y"}), "mode", mode);
    m.output("y", {N, C, OH, OW});
    auto path = m.save("vtpu_pad_" + mode + "_" + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
    auto src = [&](int64_t i, int64_t len) {  // the source index of padded index i, or -1 for the constant
      if (i >= 0 && i < len) return i;
      if (mode == "constant") return int64_t(-1);
      if (mode == "edge") return i < 0 ? int64_t(0) : len - 1;
      return i < 0 ? -i : 2 * (len - 1) - i;
    };
    Vec want(size_t(N * C * OH * OW));
    for (int64_t r = 0; r < N * C; ++r)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          int64_t iy = src(oy - T, H), ix = src(ox - L, W);
          want[size_t((r * OH + oy) * OW + ox)] = iy < 0 || ix < 0 ? 0.5f : x[size_t((r * H + iy) * W + ix)];
        }
    expect_close(got, want, tolerance(0.01));
  }
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

// A 3-D ConvTranspose (2 groups, bias, strides, pads and output_padding that differ per
// axis) against ONNX's definition: each input voxel scatters its kernel into the output.
TEST_P(CompileE2E, ConvTranspose3dMatchesDefinition) {
  const int64_t N = 2, CI = 4, G = 2, COg = 3, D = 3, H = 4, W = 5;
  const std::vector<int64_t> k{3, 2, 3}, s{2, 1, 2}, pb{1, 0, 1}, pe{0, 1, 1}, op{1, 0, 0};
  std::vector<int64_t> out(3);
  const std::vector<int64_t> in{D, H, W};
  for (size_t i = 0; i < 3; ++i) out[i] = (in[i] - 1) * s[i] - pb[i] - pe[i] + k[i] + op[i];
  OnnxBuilder m;
  m.input("x", {N, CI, D, H, W});
  auto& w = m.init("w", {CI, COg, k[0], k[1], k[2]}, 0.3f);
  auto& b = m.init("b", {G * COg}, 0.2f);
  auto* c = volume_node(m, "ConvTranspose", G, k, s, pb, pe);
  OnnxBuilder::attr(c, "output_padding", op);
  m.output("y", {N, G * COg, out[0], out[1], out[2]});
  auto path = m.save("vtpu_deconv3d_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * CI * D * H * W), 93, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  const int64_t CO = G * COg, OD = out[0], OH = out[1], OW = out[2];
  std::vector<double> acc(size_t(N * CO * OD * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t v = 0; v < OD * OH * OW; ++v) acc[size_t((n * CO + o) * OD * OH * OW + v)] = b[size_t(o)];
  const int64_t CIg = CI / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < CI; ++ci)
      for (int64_t id = 0; id < D; ++id)
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < W; ++iw)
            for (int64_t og = 0; og < COg; ++og)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t bb = 0; bb < k[1]; ++bb)
                  for (int64_t cc = 0; cc < k[2]; ++cc) {
                    int64_t od = id * s[0] - pb[0] + a, oh = ih * s[1] - pb[1] + bb, ow = iw * s[2] - pb[2] + cc;
                    if (od < 0 || oh < 0 || ow < 0 || od >= OD || oh >= OH || ow >= OW) continue;
                    int64_t o = ci / CIg * COg + og;
                    acc[size_t((((n * CO + o) * OD + od) * OH + oh) * OW + ow)] +=
                        double(x[size_t((((n * CI + ci) * D + id) * H + ih) * W + iw)]) *
                        w[size_t((((ci * COg + og) * k[0] + a) * k[1] + bb) * k[2] + cc)];
                  }
  Vec want(acc.begin(), acc.end());
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

// BatchNormalization in training mode normalizes with the batch's own mean and population
// variance per channel and returns the running statistics moved toward them by momentum.
TEST_P(CompileE2E, BatchNormTrainingModeMatchesDefinition) {
  const int64_t N = 3, C = 5, H = 6, W = 7;
  const float eps = 1e-3f, momentum = 0.8f;
  OnnxBuilder m;
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

// MaxPool's Indices (3x3 windows, strides 2, pads 1, more channels than a lane block on the
// tiny presets, many equal values): the flat NCHW index of each window's maximum, the
// smallest among equal maxima, in both storage orders, exactly. Integer inputs in
// [-127, 127] are exact in bf16 and in INT8 (calibrated scale 1).
TEST_P(CompileE2E, MaxPoolIndicesMatchDefinition) {
  const int64_t N = 2, C = 19, H = 9, W = 10, K = 3, S = 2, P = 1;
  const int64_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  std::mt19937 rng(101);
  Vec x(size_t(N * C * H * W));
  for (auto& v : x) v = float(int(rng() % 9) - 4);
  x[0] = 127, x[1] = -127;
  for (int64_t order : {0, 1}) {
    SCOPED_TRACE("storage_order " + std::to_string(order));
    OnnxBuilder m;
    m.input("x", {N, C, H, W});
    auto* mp = m.node("MaxPool", "pool", {"x"}, {"y", "z"});
    OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{K, K});
    OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{S, S});
    OnnxBuilder::attr(mp, "pads", std::vector<int64_t>{P, P, P, P});
    OnnxBuilder::attr(mp, "storage_order", order);
    m.output("y", {N, C, OH, OW});
    m.output("z", {N, C, OH, OW}, onnx::TensorProto::INT64);
    auto path = m.save("vtpu_pool_indices_" + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "z", /*nchw=*/true);
    Vec want(size_t(N * C * OH * OW));
    for (int64_t r = 0; r < N * C; ++r)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          float best = -INFINITY;
          int64_t at = -1;
          for (int64_t i = 0; i < K; ++i)
            for (int64_t j = 0; j < K; ++j) {
              int64_t h = oy * S + i - P, w = ox * S + j - P;
              if (h < 0 || w < 0 || h >= H || w >= W) continue;
              float v = x[size_t((r * H + h) * W + w)];
              int64_t idx = r * H * W + (order ? w * H + h : h * W + w);
              if (at < 0 || v > best || (v == best && idx < at)) best = v, at = idx;
            }
          want[size_t((r * OH + oy) * OW + ox)] = float(at);
        }
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << "element " << i;
  }
}

TEST_P(CompileE2E, OneDimensionalConvAndPoolMatchFp32Reference) {
  const int64_t N = 2, CI = 3, L = 40, CO = 8, K = 5, S = 2, D = 2, P = 3, PK = 3, PS = 2;
  const int64_t LC = (L + 2 * P - D * (K - 1) - 1) / S + 1, LP = (LC - PK) / PS + 1;
  OnnxBuilder m;
  m.input("x", {N, CI, L});
  auto& w = m.init("w", {CO, CI, K}, 0.4f);
  auto& b = m.init("b", {CO}, 0.2f);
  auto* c = m.node("Conv", "conv1d", {"x", "w", "b"}, {"c"});
  OnnxBuilder::attr(c, "strides", std::vector<int64_t>{S});
  OnnxBuilder::attr(c, "dilations", std::vector<int64_t>{D});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{P, P});
  m.node("Relu", "relu", {"c"}, {"r"});
  auto* mp = m.node("MaxPool", "pool1d", {"r"}, {"y"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{PK});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{PS});
  m.output("y", {N, CO, LP});
  auto path = m.save("vtpu_conv1d_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * CI * L), 67, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  Vec conv_out(size_t(N * CO * LC));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t t = 0; t < LC; ++t) {
        float acc = b[size_t(o)];
        for (int64_t ci = 0; ci < CI; ++ci)
          for (int64_t k = 0; k < K; ++k) {
            int64_t at = t * S - P + k * D;
            if (at >= 0 && at < L) acc += x[size_t((n * CI + ci) * L + at)] * w[size_t((o * CI + ci) * K + k)];
          }
        conv_out[size_t((n * CO + o) * LC + t)] = std::max(acc, 0.0f);
      }
  Vec want(size_t(N * CO * LP));
  for (int64_t r = 0; r < N * CO; ++r)
    for (int64_t t = 0; t < LP; ++t) {
      float mx = conv_out[size_t(r * LC + t * PS)];
      for (int64_t k = 1; k < PK; ++k) mx = std::max(mx, conv_out[size_t(r * LC + t * PS + k)]);
      want[size_t(r * LP + t)] = mx;
    }
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
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

// An embedding lookup: Gather(table, ids) with int64 ids given at run time, among them
// negative ids (counting from the end) and ids outside [-V, V) (zero rows). bf16 must select
// the table's rows exactly; INT8 its per-channel codes (within the quantization).
TEST_P(CompileE2E, EmbeddingLookupOfRuntimeIdsSelectsTableRows) {
  OnnxBuilder m;
  const int64_t V = 300, D = 20;
  m.input("ids", {2, 6}, onnx::TensorProto::INT64);
  const Vec& table = m.init("table", {V, D}, 1.0f);
  m.node("Gather", "embed", {"table", "ids"}, {"e"});
  m.node("Relu", "relu", {"e"}, {"y"});  // an ordinary layer reads the embeddings
  m.output("y", {2, 6, D});
  auto path = m.save("vtpu_embedding_" + id() + ".onnx");
  Vec ids{0, 1, 299, 137, -1, -300, 300, -301, 42, 255, 256, 7};
  Vec got = compile_and_run(path, {{"ids", ids}});
  ASSERT_EQ(got.size(), ids.size() * D);
  double mx = 0;
  for (float t : table) mx = std::max(mx, double(std::fabs(t)));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = int64_t(ids[i]) < 0 ? int64_t(ids[i]) + V : int64_t(ids[i]);
    for (int64_t d = 0; d < D; ++d) {
      float want = id >= 0 && id < V ? std::max(0.0f, table[size_t(id * D + d)]) : 0.0f;
      float g = got[i * D + size_t(d)];
      if (int8()) EXPECT_NEAR(g, want, 0.02 * mx) << "id " << ids[i] << " column " << d;
      else EXPECT_EQ(g, numerics::f32_from_bits(uint32_t(numerics::f32_to_bf16(numerics::f32_bits(want))) << 16))
          << "id " << ids[i] << " column " << d;
    }
  }
}

// Many ids and a wider table: on the tiny presets the ids go in several chunks (the one-hot
// rows fill the unified buffer) and the output blocks in several passes (they do not all fit
// the accumulators at once). Selection must stay exact (bf16).
TEST_P(CompileE2E, EmbeddingLookupOfManyIdsInChunksAndPasses) {
  OnnxBuilder m;
  const int64_t V = 300, D = 80, S = 200;
  m.input("ids", {S}, onnx::TensorProto::INT32);
  const Vec& table = m.init("table", {V, D}, 1.0f);
  m.node("Gather", "embed", {"table", "ids"}, {"y"});
  m.output("y", {S, D});
  auto path = m.save("vtpu_embedding_many_" + id() + ".onnx");
  std::mt19937 rng(3);
  Vec ids(static_cast<size_t>(S));
  for (auto& x : ids) x = float(int(rng() % (2 * V + 10)) - V - 5);
  Vec got = compile_and_run(path, {{"ids", ids}});
  ASSERT_EQ(got.size(), size_t(S * D));
  double mx = 0;
  for (float t : table) mx = std::max(mx, double(std::fabs(t)));
  for (size_t i = 0; i < ids.size(); ++i) {
    int64_t id = int64_t(ids[i]) < 0 ? int64_t(ids[i]) + V : int64_t(ids[i]);
    for (int64_t d = 0; d < D; ++d) {
      float want = id >= 0 && id < V ? table[size_t(id * D + d)] : 0.0f;
      float g = got[i * D + size_t(d)];
      if (int8()) EXPECT_NEAR(g, want, 0.01 * mx) << "id " << ids[i] << " column " << d;
      else EXPECT_EQ(g, numerics::f32_from_bits(uint32_t(numerics::f32_to_bf16(numerics::f32_bits(want))) << 16))
          << "id " << ids[i] << " column " << d;
    }
  }
}

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

INSTANTIATE_TEST_SUITE_P(Presets, CompileE2E,
                         ::testing::Values(E2EParam{"tiny-8x8", Precision::Bf16}, E2EParam{"tiny-16x16", Precision::Bf16},
                                           E2EParam{"tpu-v4-core", Precision::Bf16}, E2EParam{"tiny-8x8", Precision::Int8},
                                           E2EParam{"tiny-16x16", Precision::Int8}, E2EParam{"tpu-v4-core", Precision::Int8}),
                         [](const auto& info) {
                           std::string s = info.param.preset + (info.param.precision == Precision::Int8 ? "_int8" : "_bf16");
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(CompileErrors, UnsupportedOperatorNamesTheNode) {
  OnnxBuilder m;
  m.input("x", {1, 4});
  m.node("Tan", "my_tan", {"x"}, {"y"});
  m.output("y", {1, 4});
  try {
    compile_onnx(m.save("vtpu_tan.onnx"), config::load_preset("tiny-8x8"));
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'my_tan'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Tan"), std::string::npos) << e.what();
  }
}

TEST(CompileErrors, UnsupportedAttributeNamesIt) {
  OnnxBuilder m;
  m.input("x", {1, 4, 6, 6});
  auto* p = m.node("AveragePool", "dilated_pool", {"x"}, {"y"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "dilations", std::vector<int64_t>{2, 2});  // dilated pools are max pools only
  OnnxBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.output("y", {1, 4, 6, 6});
  try {
    compile_onnx(m.save("vtpu_dilated_pool.onnx"), config::load_preset("tiny-8x8"));
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'dilated_pool'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("dilations"), std::string::npos) << e.what();
  }
}

// A layout change of a large image is thousands of copies; they must share descriptors
// (addresses in registers), or the 4096-entry descriptor table overflows.
TEST(CompileLimits, LargeTransposeCopiesRunsOfRowsWithSharedDescriptors) {
  OnnxBuilder m;
  m.input("x", {1, 96, 32, 32});
  OnnxBuilder::attr(m.node("Transpose", "swap", {"x"}, {"y"}), "perm", std::vector<int64_t>{0, 1, 3, 2});
  m.output("y", {1, 96, 32, 32});
  CompileResult r = compile_onnx(m.save("vtpu_big_transpose.onnx"), config::load_preset("tpu-v4-core"));
  size_t copies = 0;
  for (size_t at = r.assembly.find("dma.copy"); at != std::string::npos; at = r.assembly.find("dma.copy", at + 1)) ++copies;
  // One copy per run of output rows (a whole image row of one channel: 96 x 32 runs of 32
  // rows), not one per row, and the copies share their descriptors.
  EXPECT_LE(copies, 96u * 32u / 32u + 8u);
  EXPECT_LT(r.program.descriptors.size(), 64u);
}

// What the compiler cannot do yet is an error naming the node and what to do instead.
TEST(CompileErrors, UnsupportedModesAndRunTimeIndicesNameTheNode) {
  {
    OnnxBuilder m;
    m.input("x", {1, 2, 4, 4});
    m.init("scales", {4}, 0, {1.0f, 1.0f, 2.0f, 2.0f});
    auto* rs = m.node("Resize", "bilinear_up", {"x", "", "scales"}, {"y"});
    OnnxBuilder::attr_s(rs, "mode", "linear");
    OnnxBuilder::attr(rs, "antialias", int64_t(1));
    m.output("y", {1, 2, 8, 8});
    try {
      compile_onnx(m.save("vtpu_resize_linear.onnx"), config::load_preset("tiny-8x8"));
      FAIL();
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'bilinear_up'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("antialias"), std::string::npos) << e.what();
    }
  }
  {
    OnnxBuilder m;
    m.input("table", {10, 4});
    m.input("ids", {3});
    m.node("Gather", "embed", {"table", "ids"}, {"y"});
    m.output("y", {3, 4});
    try {
      compile_onnx(m.save("vtpu_gather_runtime.onnx"), config::load_preset("tiny-8x8"));
      FAIL();
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'embed'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("run time"), std::string::npos) << e.what();
    }
  }
  {  // integer ids into a table that is not a constant: no one-hot matmul possible
    OnnxBuilder m;
    m.input("table", {10, 4});
    m.input("ids", {3}, onnx::TensorProto::INT64);
    m.node("Gather", "embed", {"table", "ids"}, {"y"});
    m.output("y", {3, 4});
    try {
      compile_onnx(m.save("vtpu_gather_runtime_table.onnx"), config::load_preset("tiny-8x8"));
      FAIL();
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("node 'embed'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("constant table"), std::string::npos) << e.what();
    }
  }
  {  // an input of a type int32 cannot carry names the input and the type
    OnnxBuilder m;
    m.input("x", {3}, onnx::TensorProto::COMPLEX64);
    m.node("Relu", "relu", {"x"}, {"y"});
    m.output("y", {3});
    try {
      compile_onnx(m.save("vtpu_complex_input.onnx"), config::load_preset("tiny-8x8"));
      FAIL();
    } catch (const CompileError& e) {
      EXPECT_NE(std::string(e.what()).find("input 'x'"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("COMPLEX64"), std::string::npos) << e.what();
    }
  }
}

TEST(CompileErrors, ModelTooBigForTheUnifiedBufferSaysByHowMuch) {
  OnnxBuilder m;
  m.input("x", {4096, 256});
  m.init("w", {256, 256}, 0.1f);
  m.node("MatMul", "mm", {"x", "w"}, {"y"});
  m.output("y", {4096, 256});
  try {
    compile_onnx(m.save("vtpu_big.onnx"), config::load_preset("tiny-4x4"));
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("unified buffer"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
  }
}

TEST(CompileErrors, NotAnOnnxFile) {
  auto p = std::filesystem::temp_directory_path() / "vtpu_not_onnx.onnx";
  std::ofstream(p) << "garbage";
  EXPECT_THROW(compile_onnx(p, config::load_preset("tiny-8x8")), UserError);
  EXPECT_THROW(compile_onnx("/nonexistent/model.onnx", config::load_preset("tiny-8x8")), UserError);
}

}  // namespace
}  // namespace vtpu::compiler
