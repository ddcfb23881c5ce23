// Images larger than the unified buffer run in row bands through HBM (compiler/pipeline/bands.cpp,
// codegen/bands.cpp): a model whose one sample does not fit compiles, and its outputs, useful
// MACs and layers are those of the same model on a chip whose buffer holds it whole.
#include <unistd.h>

#include <tuple>

#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// Convolutions (3x3, a stride-2 3x3, padding on every side), a residual add with ReLU, a max
// pool with padding and an average pool on a 48x48 image of 8 channels: 36 KiB per 16-channel
// INT8 image on a 16x16 array, so a 32 KiB unified buffer holds none of them.
std::filesystem::path banded_model() {
  OnnxBuilder m;
  m.input("x", {1, 8, 48, 48});
  conv3x3(m, "c1", "x", "c1o", 8, 16, 0.2f, 0.1f, "w1", "b1");
  m.node("Relu", "r1", {"c1o"}, {"a1"});
  conv3x3(m, "c2", "a1", "c2o", 16, 16, 0.1f, 0.1f, "w2", "b2");
  m.node("Add", "add", {"c2o", "a1"}, {"s"});
  m.node("Relu", "r2", {"s"}, {"a2"});
  auto* p = m.node("MaxPool", "pool", {"a2"}, {"p"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.init("w3", {32, 16, 3, 3}, 0.1f);
  m.init("b3", {32}, 0.1f);
  auto* c3 = m.node("Conv", "c3", {"p", "w3", "b3"}, {"c3o"});
  OnnxBuilder::attr(c3, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(c3, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(c3, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto* ap = m.node("AveragePool", "avg", {"c3o"}, {"y"});
  OnnxBuilder::attr(ap, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(ap, "strides", std::vector<int64_t>{2, 2});
  m.output("y", {1, 32, 6, 6});
  m.output("a2", {1, 16, 48, 48});  // an output that itself stays in HBM
  return m.save("vtpu_bands_" + std::to_string(::getpid()) + ".onnx");
}

// A detector's shape (a text detector's feature pyramid, small): two stride-2 convolutions,
// the deeper map upsampled by a nearest Resize and joined to the shallower one's channels,
// then a 3x3 head to one channel and a sigmoid: a probability map at a quarter of the input.
std::filesystem::path pyramid_model() {
  OnnxBuilder m;
  m.input("img", {1, 3, 96, 96});
  for (auto [name, in, ci, co] : {std::tuple{"s1", "img", 3, 16}, std::tuple{"s2", "f1", 16, 32}}) {
    m.init(std::string("w") + name, {co, ci, 3, 3}, 0.3f);
    m.init(std::string("b") + name, {co}, 0.1f);
    auto* c = m.node("Conv", name, {in, std::string("w") + name, std::string("b") + name}, {std::string(name) + "o"});
    OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{3, 3});
    OnnxBuilder::attr(c, "strides", std::vector<int64_t>{2, 2});
    OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
    m.node("Relu", std::string("r") + name, {std::string(name) + "o"}, {name == std::string("s1") ? "f1" : "f2"});
  }
  m.init("up", {4}, 0, {1.0f, 1.0f, 2.0f, 2.0f});
  auto* up = m.node("Resize", "up", {"f2", "", "up"}, {"u"});
  OnnxBuilder::attr_s(up, "mode", "nearest");
  auto* cat = m.node("Concat", "cat", {"f1", "u"}, {"j"});
  OnnxBuilder::attr(cat, "axis", int64_t(1));
  conv3x3(m, "head", "j", "h", 48, 1, 0.1f, 0.1f, "wh", "bh");
  m.node("Sigmoid", "prob", {"h"}, {"p"});
  m.output("p", {1, 1, 48, 48});
  return m.save("vtpu_bands_pyramid_" + std::to_string(::getpid()) + ".onnx");
}

// A text detector's head (DB, as PaddleOCR's): two stride-2 ConvTransposes upsample the map
// x4 to a probability per pixel; their spread inputs are the large images.
std::filesystem::path upsampling_head_model() {
  OnnxBuilder m;
  m.input("feat", {1, 8, 24, 24});
  for (auto [name, in, out, ci, co] : {std::tuple{"up1", "feat", "u1", 8, 8}, std::tuple{"up2", "r1", "u2", 8, 4}}) {
    m.init(std::string("w") + name, {ci, co, 2, 2}, 0.4f);
    m.init(std::string("b") + name, {co}, 0.1f);
    auto* c = m.node("ConvTranspose", name, {in, std::string("w") + name, std::string("b") + name}, {out});
    OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{2, 2});
    OnnxBuilder::attr(c, "strides", std::vector<int64_t>{2, 2});
    if (out == std::string("u1")) m.node("Relu", "relu1", {"u1"}, {"r1"});
  }
  m.node("Sigmoid", "prob", {"u2"}, {"p"});
  m.output("p", {1, 4, 96, 96});
  return m.save("vtpu_bands_upsampling_" + std::to_string(::getpid()) + ".onnx");
}

// A squeeze-and-excitation block (MobileNetV3's, PaddleOCR's detector's): a global average
// pool of the image, two 1x1 convolutions to a gate per channel, the image times the gate;
// and a global max pool to a second output.
std::filesystem::path squeeze_excite_model() {
  OnnxBuilder m;
  m.input("img", {1, 3, 64, 64});
  conv3x3(m, "stem", "img", "x", 3, 16, 0.4f, 0.1f, "ws", "bs");
  m.node("GlobalAveragePool", "squeeze", {"x"}, {"s"});
  m.init("w1", {4, 16, 1, 1}, 0.4f), m.init("b1", {4}, 0.1f);
  m.init("w2", {16, 4, 1, 1}, 0.4f), m.init("b2", {16}, 0.1f);
  m.node("Conv", "fc1", {"s", "w1", "b1"}, {"f1"});
  m.node("Relu", "relu", {"f1"}, {"r1"});
  m.node("Conv", "fc2", {"r1", "w2", "b2"}, {"f2"});
  m.node("Sigmoid", "gate", {"f2"}, {"g"});
  m.node("Mul", "excite", {"x", "g"}, {"y"});
  m.node("GlobalMaxPool", "peak", {"y"}, {"p"});
  m.output("y", {1, 16, 64, 64});
  m.output("p", {1, 16, 1, 1});
  return m.save("vtpu_bands_se_" + std::to_string(::getpid()) + ".onnx");
}

// The same model compiled for a unified buffer that holds it and one that does not: the
// second in row bands, with the first one's outputs, useful MACs and layers.
// `int8_slack` > 0: INT8 outputs may differ by that many steps (a pool over the whole image
// pooled band by band rounds each band's part to int8).
void expect_bands_as_whole(const std::filesystem::path& model, const std::vector<std::string>& outputs, uint64_t small_bytes,
                           const std::string& banded_layer, int int8_slack = 0) {
  config::Config small = config::load_preset("tiny-16x16"), big = small;
  small.name = "tiny-16x16-small";
  small.core.unified_buffer.bytes = small_bytes;
  big.name = "tiny-16x16-1MiB";
  big.core.unified_buffer.bytes = 1 << 20;
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    CompileOptions o;
    o.precision = precision;
    CompileResult whole = compile_onnx(model, big, o);
    o.calibration_scales = whole.calibration_scales;
    CompileResult banded = compile_onnx(model, small, o);
    // Bands: a layer's code more than once (each band under the layer's tag).
    const std::string tag = ".tag \"" + banded_layer + "\"";
    size_t tags = 0, whole_tags = 0;
    for (size_t at = banded.assembly.find(tag); at != std::string::npos; at = banded.assembly.find(tag, at + 1)) ++tags;
    for (size_t at = whole.assembly.find(tag); at != std::string::npos; at = whole.assembly.find(tag, at + 1)) ++whole_tags;
    EXPECT_GT(tags, whole_tags + 1);
    // Reported as the same layers, whole: shapes and useful MACs.
    ASSERT_EQ(banded.bounds.size(), whole.bounds.size());
    for (size_t i = 0; i < whole.bounds.size(); ++i) {
      EXPECT_EQ(banded.bounds[i].layer, whole.bounds[i].layer);
      EXPECT_EQ(banded.bounds[i].shape, whole.bounds[i].shape) << whole.bounds[i].layer;
      EXPECT_EQ(banded.bounds[i].macs, whole.bounds[i].macs) << whole.bounds[i].layer;
    }
    const isa::TensorInfo& x = only(whole.program, isa::TensorRole::Input);
    Vec in = uniform_values(size_t(x.bytes() / isa::dtype_bytes(x.dtype)), 3, 1000.0f);
    for (const std::string& out : outputs) {
      SCOPED_TRACE(out);
      SimRun a = run_program(small, banded.program, {{x.name, encode(banded.program, x.name, in)}}, out);
      SimRun b = run_program(big, whole.program, {{x.name, encode(whole.program, x.name, in)}}, out);
      ASSERT_TRUE(a.error.empty()) << a.error;
      ASSERT_TRUE(b.error.empty()) << b.error;
      if (precision == Precision::Int8 && int8_slack > 0) {
        ASSERT_EQ(a.output.size(), b.output.size());
        int worst = 0;
        for (size_t i = 0; i < a.output.size(); ++i) worst = std::max(worst, std::abs(int(int8_t(a.output[i])) - int(int8_t(b.output[i]))));
        EXPECT_LE(worst, int8_slack);
      } else {
        EXPECT_EQ(a.output, b.output);
      }
    }
  }
}

TEST(Bands, AnImageLargerThanTheUnifiedBufferRunsInRowBandsAsOnALargerBuffer) {
  expect_bands_as_whole(banded_model(), {"y", "a2"}, 32 * 1024, "c2");
}

TEST(Bands, ADetectorsPyramidWithAnUpsampleAndAConcatRunsInRowBands) {
  expect_bands_as_whole(pyramid_model(), {"p"}, 48 * 1024, "s1");
}

TEST(Bands, TransposedConvolutionsRunInRowBandsOfTheirSpreadInput) {
  expect_bands_as_whole(upsampling_head_model(), {"p"}, 48 * 1024, "up2");
}

TEST(Bands, GlobalPoolsAndAGateOverTheImageRunInRowBands) {
  // bf16 byte-identical; int8 within one step (each band's average is rounded to int8).
  expect_bands_as_whole(squeeze_excite_model(), {"y", "p"}, 48 * 1024, "squeeze", 1);
}

TEST(Bands, WhenEvenOneRowDoesNotFitTheErrorSaysSo) {
  auto model = banded_model();
  config::Config cfg = config::load_preset("tiny-16x16");
  cfg.core.unified_buffer.bytes = 2048;
  try {
    compile_onnx(model, cfg, {});
    FAIL() << "2 KiB of unified buffer should not hold a 48-pixel row's bands";
  } catch (const DoesNotFitError& e) {
    EXPECT_EQ(e.key(), "core.unified_buffer.bytes");
    EXPECT_NE(std::string(e.what()).find("row bands"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtpu::compiler
