// Small ONNX models in the shapes the tiny presets hold, compiled through the public compiler
// API for the core cross-check (compiled_programs.h).
#include "compiled_programs.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <random>
#include <stdexcept>

#include "vtpu/config/config.h"
#include "vtpu/models/datasets.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/models/zoo.h"
#include "vtpu/numerics/convert.h"

namespace vtpu::rtl {
namespace {

using testing::OnnxBuilder;

// Conv 3x3 (8 -> 16 channels) + ReLU, 2x2 max pool, conv 3x3 (16 -> 16), the residual add of
// the pooled map, ReLU: 12x12 input, 6x6 output.
void conv_block(OnnxBuilder& m) {
  m.input("x", {1, 8, 12, 12});
  m.init("conv1.w", {16, 8, 3, 3}, 0.25f);
  m.init("conv1.b", {16}, 0.05f);
  m.init("conv2.w", {16, 16, 3, 3}, 0.15f);
  m.init("conv2.b", {16}, 0.05f);
  OnnxBuilder::attr(m.node("Conv", "conv1", {"x", "conv1.w", "conv1.b"}, {"c1"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", "relu1", {"c1"}, {"r1"});
  auto* p = m.node("MaxPool", "pool", {"r1"}, {"p1"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(m.node("Conv", "conv2", {"p1", "conv2.w", "conv2.b"}, {"c2"}), "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Add", "residual", {"c2", "p1"}, {"sum"});
  m.node("Relu", "relu2", {"sum"}, {"y"});
  m.output("y", {1, 16, 6, 6});
}

// Self-attention of 8 tokens of width 16 in two heads (Q, K, V and output projections,
// scaled scores, softmax), the residual add and a layer norm, as torch exports it.
void attention_block(OnnxBuilder& m) {
  const int64_t S = 8, D = 16, H = 2, d = D / H;
  m.input("x", {1, S, D});
  for (const char* n : {"q", "k", "v", "o"}) {
    m.init(fmt::format("{}.w", n), {D, D}, 0.4f);
    m.init(fmt::format("{}.b", n), {D}, 0.05f);
  }
  m.init_i64("heads.shape", {1, S, H, d});
  m.init_i64("merged.shape", {1, S, D});
  m.init("scale", {}, 0, {std::sqrt(float(d))});
  std::vector<float> g(static_cast<size_t>(D)), b(static_cast<size_t>(D));
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.9f + 0.05f * float(i % 4), b[i] = 0.02f * float(int(i % 3) - 1);
  m.init("norm.g", {D}, 0, g);
  m.init("norm.b", {D}, 0, b);
  auto linear = [&](const std::string& n, const std::string& in) {
    m.node("MatMul", n + ".mm", {in, n + ".w"}, {n + ".mm"});
    m.node("Add", n + ".add", {n + ".mm", n + ".b"}, {n});
    return n;
  };
  auto heads = [&](const std::string& t, std::vector<int64_t> perm) {
    m.node("Reshape", t + ".split", {t, "heads.shape"}, {t + ".h"});
    OnnxBuilder::attr(m.node("Transpose", t + ".perm", {t + ".h"}, {t + ".t"}), "perm", std::move(perm));
    return t + ".t";
  };
  std::string q = heads(linear("q", "x"), {0, 2, 1, 3}), k = heads(linear("k", "x"), {0, 2, 3, 1});
  std::string v = heads(linear("v", "x"), {0, 2, 1, 3});
  m.node("MatMul", "scores", {q, k}, {"scores"});
  m.node("Div", "scaled", {"scores", "scale"}, {"scaled"});
  OnnxBuilder::attr(m.node("Softmax", "softmax", {"scaled"}, {"probs"}), "axis", int64_t(-1));
  m.node("MatMul", "context", {"probs", v}, {"context"});
  OnnxBuilder::attr(m.node("Transpose", "merge.perm", {"context"}, {"merge.t"}), "perm", std::vector<int64_t>{0, 2, 1, 3});
  m.node("Reshape", "merge", {"merge.t", "merged.shape"}, {"merged"});
  std::string o = linear("o", "merged");
  m.node("Add", "residual", {o, "x"}, {"res"});
  OnnxBuilder::attr_f(m.node("LayerNormalization", "norm", {"res", "norm.g", "norm.b"}, {"y"}), "epsilon", 1e-5f);
  m.output("y", {1, S, D});
}

// One time step of an LSTM layer (hidden 16, input 16) on a batch of 4.
void lstm_step(OnnxBuilder& m) {
  const int64_t B = 4, I = 16, H = 16;
  m.input("x", {1, B, I});
  m.init("W", {1, 4 * H, I}, 0.3f);
  m.init("R", {1, 4 * H, H}, 0.3f);
  m.init("B", {1, 8 * H}, 0.05f);
  OnnxBuilder::attr(m.node("LSTM", "lstm", {"x", "W", "R", "B"}, {"y"}), "hidden_size", H);
  m.output("y", {1, 1, B, H});
}

// Values of one input tensor in the program's layout (NHWC images), as floats.
std::vector<float> input_values(const std::string& model, const isa::TensorInfo& t, uint64_t seed) {
  size_t n = 1;
  for (int64_t d : t.shape) n *= size_t(d);
  if (model == "lenet5-fmnist" && n == 28 * 28) {
    try {
      models::ImageSet img = models::load_fashion_mnist(/*test=*/true, /*limit=*/int64_t(seed % 100) + 1);
      return std::vector<float>(img.pixels.end() - 28 * 28, img.pixels.end());  // 1 channel: NCHW = NHWC
    } catch (const std::exception&) {  // the dataset is not installed: seeded values below
    }
  }
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + n);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

std::vector<uint8_t> encode(const isa::TensorInfo& t, const std::vector<float>& v) {
  std::vector<uint8_t> b(t.bytes());
  for (size_t i = 0; i < v.size(); ++i) {
    switch (t.dtype) {
      case isa::Dtype::Int8: {
        const double s = t.quant_scale > 0 ? t.quant_scale : 1.0;
        const double q = std::nearbyint(double(v[i]) / s) + t.zero_point;
        b[i] = uint8_t(int8_t(std::max(-128.0, std::min(127.0, q))));
        break;
      }
      case isa::Dtype::Bf16: numerics::store_f32(numerics::NumType::Bf16, b.data(), i, numerics::f64_to_f32(v[i])); break;
      case isa::Dtype::Fp32: numerics::store_f32(numerics::NumType::Fp32, b.data(), i, numerics::f64_to_f32(v[i])); break;
      default: throw std::invalid_argument(fmt::format("input '{}': no encoding for its type", t.name));
    }
  }
  return b;
}

}  // namespace

const std::vector<std::string>& compiled_model_names() {
  static const std::vector<std::string> names = {"lenet5-fmnist", "conv-block", "attention-block", "lstm-step"};
  return names;
}

std::filesystem::path compiled_model_file(const std::string& name, const std::filesystem::path& dir) {
  if (name == "lenet5-fmnist") return models::materialize(name, dir);
  OnnxBuilder m(17, /*seed=*/20261130);
  if (name == "conv-block") conv_block(m);
  else if (name == "attention-block") attention_block(m);
  else if (name == "lstm-step") lstm_step(m);
  else throw std::invalid_argument(fmt::format("no compiled cross-check model '{}'", name));
  std::filesystem::create_directories(dir);
  // Written whole under a name of this process, then renamed: ctest -j runs the cross-checks
  // of several presets at once on the same file, and one read another's half-written model
  // (CompiledCosim.Tiny8x8TwoMxus/conv_block_int8 failed that way in a full run).
  const auto path = dir / (name + ".onnx");
  const auto tmp = dir / fmt::format("{}.onnx.{}.partial", name, ::getpid());
  m.save_to(tmp);
  std::filesystem::rename(tmp, path);
  return path;
}

CompiledProgram compile_for_rtl(const std::string& model, const std::string& preset, const std::string& dtype,
                                const std::filesystem::path& dir, uint64_t seed) {
  compiler::CompileOptions opt;
  opt.precision = dtype == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16;
  opt.seed = seed;
  compiler::CompileResult r = compiler::compile_onnx(compiled_model_file(model, dir), config::load_preset(preset), opt);
  CompiledProgram p{model, preset, dtype, std::move(r.program), std::move(r.assembly), {}};
  for (const auto& t : p.program.tensors)
    if (t.role == isa::TensorRole::Input) p.inputs[t.name] = encode(t, input_values(model, t, seed));
  return p;
}

}  // namespace vtpu::rtl
