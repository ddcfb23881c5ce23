// Images larger than the unified buffer run in row bands through HBM (compiler/pipeline/bands.cpp,
// codegen/bands.cpp): a model whose one sample does not fit compiles, and its outputs, useful
// MACs and layers are those of the same model on a chip whose buffer holds it whole.
#include <unistd.h>

#include <algorithm>
#include <set>
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
// x4 to a probability per pixel; their spread inputs are the large images. `kernel` 2 (as
// PaddleOCR's), or 3 with pads 1 and output_padding 1 (a decoder's): the same sizes.
std::filesystem::path upsampling_head_model(int64_t kernel = 2) {
  OnnxBuilder m;
  m.input("feat", {1, 8, 24, 24});
  for (auto [name, in, out, ci, co] : {std::tuple{"up1", "feat", "u1", 8, 8}, std::tuple{"up2", "r1", "u2", 8, 4}}) {
    m.init(std::string("w") + name, {ci, co, kernel, kernel}, 0.4f);
    m.init(std::string("b") + name, {co}, 0.1f);
    auto* c = m.node("ConvTranspose", name, {in, std::string("w") + name, std::string("b") + name}, {out});
    OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{kernel, kernel});
    OnnxBuilder::attr(c, "strides", std::vector<int64_t>{2, 2});
    if (kernel == 3) {
      OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
      OnnxBuilder::attr(c, "output_padding", std::vector<int64_t>{1, 1});
    }
    if (out == std::string("u1")) m.node("Relu", "relu1", {"u1"}, {"r1"});
  }
  m.node("Sigmoid", "prob", {"u2"}, {"p"});
  m.output("p", {1, 4, 96, 96});
  return m.save("vtpu_bands_upsampling" + std::to_string(kernel) + "_" + std::to_string(::getpid()) + ".onnx");
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

// An OCR classifier's late block (PaddleOCR's MobileNetV3): a 1x1 expansion to 200 channels
// over 3 rows of 96 pixels, a 5x5 depthwise convolution, a squeeze-and-excitation gate, a 1x1
// projection. One row of a 200-channel image (13 lane blocks on a 16x16 array) takes 39 KiB
// in bf16 and every band of the depthwise layer reads all 3 rows, so on a small buffer no band
// of rows fits: the layers run in bands of channels.
std::filesystem::path channel_band_model() {
  OnnxBuilder m;
  m.input("x", {1, 32, 4, 96});
  m.init("we", {200, 32, 1, 1}, 0.3f), m.init("be", {200}, 0.1f);
  m.node("Conv", "expand", {"x", "we", "be"}, {"e"});
  m.node("Relu", "r0", {"e"}, {"a"});
  m.init("wd", {200, 1, 5, 5}, 0.3f), m.init("bd", {200}, 0.1f);
  auto* dw = m.node("Conv", "dw", {"a", "wd", "bd"}, {"d"});
  OnnxBuilder::attr(dw, "group", int64_t(200));
  OnnxBuilder::attr(dw, "kernel_shape", std::vector<int64_t>{5, 5});
  OnnxBuilder::attr(dw, "pads", std::vector<int64_t>{2, 2, 2, 2});
  m.node("Relu", "r1", {"d"}, {"h"});
  m.node("GlobalAveragePool", "squeeze", {"h"}, {"s"});
  m.init("w1", {50, 200, 1, 1}, 0.3f), m.init("b1", {50}, 0.1f);
  m.init("w2", {200, 50, 1, 1}, 0.3f), m.init("b2", {200}, 0.1f);
  m.node("Conv", "fc1", {"s", "w1", "b1"}, {"f1"});
  m.node("Relu", "r2", {"f1"}, {"g1"});
  m.node("Conv", "fc2", {"g1", "w2", "b2"}, {"f2"});
  m.node("Sigmoid", "gate", {"f2"}, {"g"});
  m.node("Mul", "excite", {"h", "g"}, {"y"});
  m.init("wp", {32, 200, 1, 1}, 0.3f), m.init("bp", {32}, 0.1f);
  m.node("Conv", "project", {"y", "wp", "bp"}, {"p"});
  m.output("p", {1, 32, 4, 96});
  m.output("h", {1, 200, 4, 96});
  return m.save("vtpu_bands_channels_" + std::to_string(::getpid()) + ".onnx");
}

// Two 1x1 expansions of one image joined along channels (256: a 48 KiB row in bf16 on a 16x16
// array) before a 1x1 head: a band of the joined image's rows fits no small buffer beside its
// inputs, so the concat stores each input into its channels of the image in HBM.
std::filesystem::path channel_concat_model() {
  OnnxBuilder m;
  m.input("x", {1, 32, 2, 96});
  for (const char* name : {"a", "b"}) {
    m.init(std::string("w") + name, {128, 32, 1, 1}, 0.3f), m.init(std::string("b") + name, {128}, 0.1f);
    m.node("Conv", name, {"x", std::string("w") + name, std::string("b") + name}, {std::string(name) + "o"});
    m.node("Relu", std::string("r") + name, {std::string(name) + "o"}, {std::string(name) + "r"});
  }
  auto* cat = m.node("Concat", "cat", {"ar", "br"}, {"j"});
  OnnxBuilder::attr(cat, "axis", int64_t(1));
  m.init("wh", {16, 256, 1, 1}, 0.2f), m.init("bh", {16}, 0.1f);
  m.node("Conv", "head", {"j", "wh", "bh"}, {"y"});
  m.output("y", {1, 16, 2, 96});
  return m.save("vtpu_bands_concat_" + std::to_string(::getpid()) + ".onnx");
}

// A text recognizer's head (PaddleOCR's): a 1x1 convolution over one row of 40 time steps,
// the row as a sequence, a classifier over 2,000 characters for every step, a softmax. The
// probabilities, 40 x 2,000 (160 KB in bf16 on a 16x16 array), fit no small buffer: the
// classifier and its softmax run in bands of time steps into the output.
std::filesystem::path classifier_rows_model() {
  OnnxBuilder m;
  m.input("x", {1, 16, 1, 40});
  m.init("wc", {32, 16, 1, 1}, 0.3f), m.init("bc", {32}, 0.1f);
  m.node("Conv", "neck", {"x", "wc", "bc"}, {"c"});
  m.node("Relu", "act", {"c"}, {"a"});
  m.init_i64("seq", {1, 32, 40});
  m.node("Reshape", "squeeze", {"a", "seq"}, {"s"});
  OnnxBuilder::attr(m.node("Transpose", "steps", {"s"}, {"t"}), "perm", std::vector<int64_t>{0, 2, 1});
  m.init("wf", {32, 2000}, 0.3f), m.init("bf", {2000}, 0.1f);
  m.node("MatMul", "classify", {"t", "wf"}, {"l0"});
  m.node("Add", "bias", {"l0", "bf"}, {"l"});
  OnnxBuilder::attr(m.node("Softmax", "prob", {"l"}, {"p"}), "axis", int64_t(-1));
  m.output("p", {1, 40, 2000});
  return m.save("vtpu_bands_classifier_" + std::to_string(::getpid()) + ".onnx");
}

// Five 3x3 convolutions over a 96x96 image: four 16-channel images between them, 295 KB each
// in HBM (bf16), more than a 2 MiB HBM holds beside its page of zeros, the input and the
// output unless an image
// read for the last time gives its bytes to the next.
std::filesystem::path hbm_chain_model() {
  OnnxBuilder m;
  m.input("x", {1, 4, 96, 96});
  std::string in = "x";
  for (int i = 0; i < 5; ++i) {
    std::string name = "c" + std::to_string(i), out = i == 4 ? "y" : "r" + std::to_string(i);
    conv3x3(m, name, in, i == 4 ? out : name + "o", i == 0 ? 4 : 16, i == 4 ? 4 : 16, 0.2f, 0.1f, "w" + name, "b" + name);
    if (i < 4) m.node("Relu", "relu" + std::to_string(i), {name + "o"}, {out});
    in = out;
  }
  m.output("y", {1, 4, 96, 96});
  return m.save("vtpu_bands_hbm_" + std::to_string(::getpid()) + ".onnx");
}

// A CNN's stem, small: a 3x3 stride-2 convolution of a 3-channel 96x96 image with ReLU, then
// a 3x3 convolution. On a 16x16 array the first convolution is packed (a kernel row's three
// taps side by side in a matmul row, conv_packed.cpp) whether the image fits or not.
std::filesystem::path stem_model() {
  OnnxBuilder m;
  m.input("img", {1, 3, 96, 96});
  m.init("ws", {16, 3, 3, 3}, 0.3f), m.init("bs", {16}, 0.1f);
  auto* c = m.node("Conv", "stem", {"img", "ws", "bs"}, {"so"});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(c, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", "relu", {"so"}, {"s"});
  conv3x3(m, "next", "s", "y", 16, 8, 0.1f, 0.1f, "wn", "bn");
  m.output("y", {1, 8, 48, 48});
  return m.save("vtpu_bands_stem_" + std::to_string(::getpid()) + ".onnx");
}

// A narrow image in HBM (4 channels of a 16-lane array's blocks): a 3x3 convolution whose
// output a hard swish reads twice, as PaddleOCR's detector writes it (x * clip(x + 3, 0, 6) / 6),
// and a one-channel 3x3 head with a sigmoid, a probability map.
std::filesystem::path narrow_model() {
  OnnxBuilder m;
  m.input("img", {1, 3, 64, 64});
  conv3x3(m, "conv", "img", "x", 3, 4, 0.3f, 0.1f, "wc", "bc");
  m.init("three", {}, 0, {3.0f}), m.init("six", {}, 0, {6.0f}), m.init("zero", {}, 0, {0.0f});
  m.node("Add", "plus3", {"x", "three"}, {"x3"});
  m.node("Clip", "clip", {"x3", "zero", "six"}, {"c"});
  m.node("Mul", "gate", {"x", "c"}, {"g"});
  m.node("Div", "swish", {"g", "six"}, {"h"});
  conv3x3(m, "head", "h", "hp", 4, 1, 0.2f, 0.1f, "wh", "bh");
  m.node("Sigmoid", "prob", {"hp"}, {"p"});
  m.output("p", {1, 1, 64, 64});
  return m.save("vtpu_bands_narrow_" + std::to_string(::getpid()) + ".onnx");
}

// A ShuffleNetV2 unit (torchvision's, as torch exports it): the image's channels split in
// halves, one half through a convolution, joined again and shuffled (a view into two groups,
// the group axes swapped, a view back). The channel shuffle is a permutation convolution
// (transforms/channel_shuffle.cpp); the halves of an image in HBM are read in place.
std::filesystem::path shuffle_unit_model() {
  OnnxBuilder m;
  m.input("img", {1, 8, 48, 48});
  conv3x3(m, "c1", "img", "a0", 8, 16, 0.3f, 0.1f, "w1", "b1");
  m.node("Relu", "r1", {"a0"}, {"a"});
  m.init_i64("halves", {8, 8});
  OnnxBuilder::attr(m.node("Split", "split", {"a", "halves"}, {"l", "r"}), "axis", int64_t(1));
  conv3x3(m, "c2", "r", "r0", 8, 8, 0.3f, 0.1f, "w2", "b2");
  m.node("Relu", "r2", {"r0"}, {"rr"});
  OnnxBuilder::attr(m.node("Concat", "cat", {"l", "rr"}, {"j"}), "axis", int64_t(1));
  m.init_i64("groups", {1, 2, 8, 48, 48});
  m.init_i64("merged", {1, 16, 48, 48});
  m.node("Reshape", "view", {"j", "groups"}, {"g"});
  OnnxBuilder::attr(m.node("Transpose", "shuffle", {"g"}, {"gt"}), "perm", std::vector<int64_t>{0, 2, 1, 3, 4});
  m.node("Reshape", "unview", {"gt", "merged"}, {"s"});
  conv3x3(m, "c3", "s", "y", 16, 8, 0.2f, 0.1f, "w3", "b3");
  m.output("y", {1, 8, 48, 48});
  return m.save("vtpu_bands_shuffle_" + std::to_string(::getpid()) + ".onnx");
}

// What a layer's code does, from the lines after its `.tag` lines up to the next tag: the
// number of lines containing `what`, or with `rows` the sum of their `rows=` fields.
size_t count_of(const std::string& assembly, const std::string& layer, const std::string& what, bool rows = false) {
  size_t n = 0;
  bool in = false;
  for (size_t at = 0, end; at < assembly.size(); at = end + 1) {
    end = assembly.find('\n', at);
    if (end == std::string::npos) end = assembly.size();
    std::string_view line(assembly.data() + at, end - at);
    if (line.rfind(".tag ", 0) == 0) in = line == ".tag \"" + layer + "\"";
    for (size_t m = line.find(what); in && m != std::string_view::npos; m = line.find(what, m + 1)) {
      size_t r = line.find(" rows=", m);
      n += rows && r != std::string_view::npos ? std::stoul(std::string(line.substr(r + 6, line.find(' ', r + 6) - r - 6))) : 1;
    }
  }
  return n;
}

// The matmuls of a layer's code.
size_t matmuls_of(const std::string& assembly, const std::string& layer) { return count_of(assembly, layer, "mxu.matmul"); }

// The model compiled for tiny-16x16 with 1 MiB of unified buffer and with `small_bytes`.
std::pair<CompileResult, CompileResult> whole_and_banded(const std::filesystem::path& model, Precision precision,
                                                         uint64_t small_bytes) {
  config::Config small = config::load_preset("tiny-16x16"), big = small;
  small.name = "tiny-16x16-small", small.core.unified_buffer.bytes = small_bytes;
  big.name = "tiny-16x16-1MiB", big.core.unified_buffer.bytes = 1 << 20;
  CompileOptions o;
  o.precision = precision;
  return {compile_onnx(model, big, o), compile_onnx(model, small, o)};
}

// The same model compiled for a unified buffer that holds it and one that does not: the
// second in row bands, with the first one's outputs, useful MACs and layers.
// `int8_slack` > 0: INT8 outputs may differ by that many steps (a pool over the whole image
// pooled band by band rounds each band's part to int8). `pooled`: the outputs that follow such
// a pool (the others exact); bf16 ones within 2^-6 of their largest magnitude (each band's
// average is rounded).
// `layers`, when given: the banded bf16 program's layers. `int8_small_bytes`: the INT8 run's
// smaller buffer, when not `small_bytes`.
void expect_bands_as_whole(const std::filesystem::path& model, const std::vector<std::string>& outputs, uint64_t small_bytes,
                           const std::string& banded_layer, int int8_slack = 0, const std::set<std::string>& pooled = {},
                           std::vector<LayerBound>* layers = nullptr, uint64_t int8_small_bytes = 0) {
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
    small.core.unified_buffer.bytes = precision == Precision::Int8 && int8_small_bytes ? int8_small_bytes : small_bytes;
    CompileResult banded = compile_onnx(model, small, o);
    if (layers) *layers = banded.bounds;
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
      const bool rounded = pooled.empty() || pooled.count(out);
      if (precision == Precision::Bf16 && pooled.count(out)) {
        Vec va = from_bf16(a.output), vb = from_bf16(b.output);
        ASSERT_EQ(va.size(), vb.size());
        float largest = 0, worst = 0;
        for (size_t i = 0; i < va.size(); ++i) largest = std::max(largest, std::abs(vb[i])), worst = std::max(worst, std::abs(va[i] - vb[i]));
        EXPECT_LE(worst, largest / 64);
      } else if (precision == Precision::Int8 && int8_slack > 0 && rounded) {
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

TEST(Bands, APackedFirstConvolutionReadsItsBandsStraightFromHbm) {
  auto model = stem_model();
  expect_bands_as_whole(model, {"y"}, 48 * 1024, "stem");
  // Packed in bands too: the bands' output rows take as many matmuls as the whole layer's
  // (one per kernel row and output row), where by taps they would take one per tap (three
  // times as many); the 96x96 image (144 KiB blocked in INT8) is never in the 48 KiB buffer.
  // The old code ran such bands by taps.
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    auto [whole, banded] = whole_and_banded(model, precision, 48 * 1024);
    const size_t rows = 48u * 3u, taps = 48u * 9u;
    if (precision == Precision::Bf16) {
      EXPECT_EQ(matmuls_of(whole.assembly, "stem"), rows);
      EXPECT_EQ(matmuls_of(banded.assembly, "stem"), rows);
    } else {  // and the placement matmuls spreading the INT8 image's pixels, per band
      EXPECT_GT(matmuls_of(banded.assembly, "stem"), rows);
      EXPECT_LT(matmuls_of(banded.assembly, "stem"), taps / 2);
    }
  }
}

TEST(Bands, TransposedConvolutionsRunInRowBandsOfTheirSpreadInput) {
  expect_bands_as_whole(upsampling_head_model(), {"p"}, 48 * 1024, "up2");
  // A 3x3 kernel of stride 2 runs as a convolution of the spread input in bands; its useful
  // MACs (the products of the spread's own pixels) as the whole layer's.
  expect_bands_as_whole(upsampling_head_model(3), {"p"}, 48 * 1024, "up2");
}

// A 2x2, stride-2 ConvTranspose whose output is in HBM runs as two phases of 1x1 convolutions
// of its input (pipeline/band_subpixel.cpp), not as a 2x2 convolution of the spread input,
// four times larger and three quarters zeros, in bands and (phases_through_hbm) in a buffer
// that holds every image; ConvTransposeMatchesItsScatterDefinition holds the phases' outputs
// to the ONNX definition on every preset. Here, the work. up1 (input in the unified buffer, 16 of 16 lanes a phase): a
// matmul row per input pixel and phase. up2 (input in HBM, 8 lanes a phase): two input
// pixels a row, their weights twice on the diagonal. The spread form streams a row per output
// pixel and tap of the 2x2 kernel: 16 times as many.
TEST(Bands, TransposedConvolutionsWhoseKernelIsTheirStrideRunInPhases) {
  auto model = upsampling_head_model();
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    auto [whole, banded] = whole_and_banded(model, precision, 48 * 1024);
    const size_t in1 = 24 * 24, in2 = 48 * 48;
    // 1 MiB holds every image, yet the transposed convolutions run in phases through HBM
    // too (phases_through_hbm), as in bands (up2's input, up1's output, in HBM): not the
    // spread form's row per output pixel and tap, 4 * 96 * 96 = 16 times as many for up2.
    EXPECT_EQ(count_of(whole.assembly, "up1", "mxu.matmul", true), 2 * in1);
    EXPECT_EQ(count_of(whole.assembly, "up2", "mxu.matmul", true), 2 * in2 / 2);
    EXPECT_EQ(count_of(banded.assembly, "up1", "mxu.matmul", true), 2 * in1);
    EXPECT_EQ(count_of(banded.assembly, "up2", "mxu.matmul", true), 2 * in2 / 2);
    uint64_t macs = 0;  // the definition's products: every input pixel through every tap
    for (const LayerBound& b : banded.bounds) macs += b.layer == "up2" ? b.macs : 0;
    EXPECT_EQ(macs, uint64_t(in2) * 8 * 4 * 4);
  }
}

TEST(Bands, ElementwiseLayersOnANarrowImageInHbmRunFlat) {
  auto model = narrow_model();
  expect_bands_as_whole(model, {"p"}, 48 * 1024, "head");
  // Flat: the 64x64 images of 4 channels and of 1 seen as rows of 16 elements, not a pixel a
  // row (16 lanes, 4 or 1 of them used); the sigmoid apart from its convolution. The old
  // code ran them a pixel a row in bands too: 4096 rows per vector step.
  for (Precision precision : {Precision::Int8, Precision::Bf16}) {
    SCOPED_TRACE(precision == Precision::Int8 ? "int8" : "bf16");
    auto [whole, banded] = whole_and_banded(model, precision, 48 * 1024);
    const size_t pixels = 64 * 64;
    EXPECT_EQ(count_of(whole.assembly, "prob", "vec.sigmoid", true), pixels);
    EXPECT_EQ(count_of(banded.assembly, "prob", "vec.sigmoid", true), pixels / 16);
    EXPECT_EQ(count_of(banded.assembly, "clip", "vec.", true) * 4, count_of(whole.assembly, "clip", "vec.", true));
    EXPECT_EQ(count_of(banded.assembly, "gate", "vec.mul", true), pixels * 4 / 16);
  }
}

TEST(Bands, AChannelShuffleAndASplitOfChannelsRunInRowBands) {
  // Before, the shuffle's NCHW moves and the split loaded the image whole: on 48 KiB no
  // program, on 1 MiB the layers below (and the outputs are the same).
  auto model = shuffle_unit_model();
  expect_bands_as_whole(model, {"y"}, 48 * 1024, "c2");
  auto [whole, banded] = whole_and_banded(model, Precision::Bf16, 48 * 1024);
  EXPECT_GT(matmuls_of(banded.assembly, "shuffle"), 0u);  // the permutation convolution
  EXPECT_EQ(count_of(banded.assembly, "split", ".tag"), 0u);  // the halves read in place
}

TEST(Bands, GlobalPoolsAndAGateOverTheImageRunInRowBands) {
  // bf16 byte-identical; int8 within one step (each band's average is rounded to int8).
  expect_bands_as_whole(squeeze_excite_model(), {"y", "p"}, 48 * 1024, "squeeze", 1);
}

TEST(Bands, LayersWhoseOneRowDoesNotFitRunInBandsOfChannels) {
  // The depthwise layer's output byte-identical; after the squeeze, whose global pool runs in
  // bands of rows too, within rounding.
  expect_bands_as_whole(channel_band_model(), {"h", "p"}, 64 * 1024, "dw", 2, {"p"});
}

TEST(Bands, AConcatOfChannelsStoresItsInputsIntoTheImageInHbm) {
  // INT8 on 32 KiB (its rows are half as wide): the two inputs' scales differ from the joined
  // image's, so they are rescaled on the way.
  std::vector<LayerBound> layers;
  expect_bands_as_whole(channel_concat_model(), {"y"}, 64 * 1024, "cat", 0, {}, &layers, 32 * 1024);
  auto cat = std::find_if(layers.begin(), layers.end(), [](const LayerBound& b) { return b.layer == "cat"; });
  ASSERT_NE(cat, layers.end());
  EXPECT_EQ(cat->op, "store_rows");  // no concat: each input stored into its channels
}

TEST(Bands, AClassifierWhoseOutputDoesNotFitRunsInBandsOfRows) {
  expect_bands_as_whole(classifier_rows_model(), {"p"}, 64 * 1024, "classify");
}

TEST(Bands, ImagesInHbmReuseTheBytesOfThoseReadForTheLastTime) {
  auto model = hbm_chain_model();
  config::Config small = config::load_preset("tiny-16x16"), roomy = small;
  small.name = "tiny-16x16-2MiB-hbm";
  small.core.unified_buffer.bytes = 64 * 1024;
  small.memory.bytes = 2 << 20;  // a 1 MiB page of zeros, the input and output, and 880 KB
  roomy.name = "tiny-16x16-4MiB-hbm";
  roomy.core.unified_buffer.bytes = 64 * 1024;
  roomy.memory.bytes = 4 << 20;
  CompileOptions o;
  o.precision = Precision::Bf16;
  CompileResult reused = compile_onnx(model, small, o);  // about 1.4 MB of images without reuse
  CompileResult apart = compile_onnx(model, roomy, o);
  const isa::TensorInfo& x = only(apart.program, isa::TensorRole::Input);
  // The images share bytes: the output, allocated last, sits lower.
  EXPECT_LT(only(reused.program, isa::TensorRole::Output).hbm_addr, only(apart.program, isa::TensorRole::Output).hbm_addr);
  Vec in = uniform_values(size_t(x.bytes() / isa::dtype_bytes(x.dtype)), 5, 1000.0f);
  SimRun a = run_program(small, reused.program, {{x.name, encode(reused.program, x.name, in)}}, "y");
  SimRun b = run_program(roomy, apart.program, {{x.name, encode(apart.program, x.name, in)}}, "y");
  ASSERT_TRUE(a.error.empty()) << a.error;
  ASSERT_TRUE(b.error.empty()) << b.error;
  EXPECT_EQ(a.output, b.output);
}

// When not even one row of a layer's band fits, its bands hold some of the columns too
// (pipeline/band_tiles.cpp): the 48x48 model on 2 KiB, where a band of one row of the 3x3
// convolutions (three input rows of 48 pixels, 768 bytes each in INT8, and a padded copy) does
// not fit; as on 1 MiB. The old code refused it.
TEST(Bands, WhenNotEvenOneRowFitsTheBandsHoldSomeColumns) {
  expect_bands_as_whole(banded_model(), {"y", "a2"}, 2048, "c2");
}

TEST(Bands, WhenEvenOnePixelDoesNotFitTheErrorSaysSo) {
  auto model = banded_model();
  config::Config cfg = config::load_preset("tiny-16x16");
  cfg.core.unified_buffer.bytes = 256;
  try {
    compile_onnx(model, cfg, {});
    FAIL() << "256 bytes of unified buffer should not hold a band of the 3x3 convolutions";
  } catch (const DoesNotFitError& e) {
    EXPECT_EQ(e.key(), "core.unified_buffer.bytes");
    EXPECT_NE(std::string(e.what()).find("row bands"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vtpu::compiler
