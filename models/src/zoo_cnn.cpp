// The zoo's convolutional models: LeNet-5, ResNet-50, MobileNetV2, TPU v1's CNNs.
#include <fmt/format.h>

#include <cmath>

#include "zoo_builders.h"

namespace vtpu::models::builders {

namespace {

enum class Act { kNone, kRelu, kRelu6 };

// Conv (no bias) + BatchNormalization + activation: the building unit of ResNet and
// MobileNet. `groups` = ci makes it depthwise.
std::string conv_bn_act(OnnxBuilder& m, const std::string& name, const std::string& in, int64_t ci, int64_t co, int64_t k,
                        int64_t stride, Act act, int64_t groups = 1) {
  m.init(name + ".w", {co, ci / groups, k, k}, he(ci / groups * k * k));
  auto* c = m.node("Conv", name, {in, name + ".w"}, {name});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{k, k});
  OnnxBuilder::attr(c, "strides", std::vector<int64_t>{stride, stride});
  int64_t p = k / 2;
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{p, p, p, p});
  if (groups != 1) OnnxBuilder::attr(c, "group", groups);
  const size_t n = static_cast<size_t>(co);
  std::vector<float> gamma(n), beta(n), mean(n), var(n);
  for (int64_t i = 0; i < co; ++i)
    gamma[size_t(i)] = 0.8f + 0.4f * float(i % 7) / 7.0f, beta[size_t(i)] = 0.05f * float(i % 5 - 2),
    mean[size_t(i)] = 0.02f * float(i % 3 - 1), var[size_t(i)] = 0.9f + 0.2f * float(i % 4) / 4.0f;
  m.init(name + ".bn.g", {co}, 0, gamma);
  m.init(name + ".bn.b", {co}, 0, beta);
  m.init(name + ".bn.m", {co}, 0, mean);
  m.init(name + ".bn.v", {co}, 0, var);
  m.node("BatchNormalization", name + ".bn", {name, name + ".bn.g", name + ".bn.b", name + ".bn.m", name + ".bn.v"},
         {name + ".bn"});
  if (act == Act::kNone) return name + ".bn";
  if (act == Act::kRelu) {
    m.node("Relu", name + ".relu", {name + ".bn"}, {name + ".relu"});
    return name + ".relu";
  }
  m.node("Clip", name + ".relu6", {name + ".bn", "relu6.min", "relu6.max"}, {name + ".relu6"});
  return name + ".relu6";
}
std::string conv_bn(OnnxBuilder& m, const std::string& name, const std::string& in, int64_t ci, int64_t co, int64_t k,
                    int64_t stride, bool relu) {
  return conv_bn_act(m, name, in, ci, co, k, stride, relu ? Act::kRelu : Act::kNone);
}


}  // namespace

void lenet5(OnnxBuilder& m) {
  // LeNet-5 (LeCun et al. 1998) on 28x28 grey images, as used for Fashion-MNIST.
  m.input("image", {1, 1, 28, 28});
  m.init("conv1.w", {6, 1, 5, 5}, he(25));
  m.init("conv1.b", {6}, 0.05f);
  m.init("conv2.w", {16, 6, 5, 5}, he(150));
  m.init("conv2.b", {16}, 0.05f);
  m.init("fc1.w", {120, 400}, he(400));
  m.init("fc1.b", {120}, 0.05f);
  m.init("fc2.w", {84, 120}, he(120));
  m.init("fc2.b", {84}, 0.05f);
  m.init("fc3.w", {10, 84}, he(84));
  m.init("fc3.b", {10}, 0.05f);
  auto* c1 = m.node("Conv", "conv1", {"image", "conv1.w", "conv1.b"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{2, 2, 2, 2});
  m.node("Relu", "relu1", {"c1"}, {"r1"});
  auto* p1 = m.node("MaxPool", "pool1", {"r1"}, {"p1"});
  OnnxBuilder::attr(p1, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p1, "strides", std::vector<int64_t>{2, 2});
  m.node("Conv", "conv2", {"p1", "conv2.w", "conv2.b"}, {"c2"});
  m.node("Relu", "relu2", {"c2"}, {"r2"});
  auto* p2 = m.node("MaxPool", "pool2", {"r2"}, {"p2"});
  OnnxBuilder::attr(p2, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p2, "strides", std::vector<int64_t>{2, 2});
  m.node("Flatten", "flatten", {"p2"}, {"f"});
  OnnxBuilder::attr(m.node("Gemm", "fc1", {"f", "fc1.w", "fc1.b"}, {"h1"}), "transB", int64_t(1));
  m.node("Relu", "relu3", {"h1"}, {"h1r"});
  OnnxBuilder::attr(m.node("Gemm", "fc2", {"h1r", "fc2.w", "fc2.b"}, {"h2"}), "transB", int64_t(1));
  m.node("Relu", "relu4", {"h2"}, {"h2r"});
  OnnxBuilder::attr(m.node("Gemm", "fc3", {"h2r", "fc3.w", "fc3.b"}, {"logits"}), "transB", int64_t(1));
  m.node("Softmax", "softmax", {"logits"}, {"probs"});
  m.output("probs", {1, 10});
}

void resnet50(OnnxBuilder& m) {
  // ResNet-50 v1.5 (He et al. 2016; the stride sits on the 3x3 conv), 224x224 input.
  m.input("image", {1, 3, 224, 224});
  std::string x = conv_bn(m, "conv1", "image", 3, 64, 7, 2, true);
  auto* mp = m.node("MaxPool", "maxpool", {x}, {"maxpool"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "pads", std::vector<int64_t>{1, 1, 1, 1});
  x = "maxpool";
  int64_t ch = 64;
  const int blocks[4] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s) {
    int64_t width = 64 << s, out = width * 4;
    for (int b = 0; b < blocks[s]; ++b) {
      std::string n = fmt::format("layer{}.{}", s + 1, b);
      int64_t stride = (b == 0 && s > 0) ? 2 : 1;
      std::string y = conv_bn(m, n + ".conv1", x, ch, width, 1, 1, true);
      y = conv_bn(m, n + ".conv2", y, width, width, 3, stride, true);
      y = conv_bn(m, n + ".conv3", y, width, out, 1, 1, false);
      std::string shortcut = x;
      if (b == 0) shortcut = conv_bn(m, n + ".downsample", x, ch, out, 1, stride, false);
      m.node("Add", n + ".add", {y, shortcut}, {n + ".add"});
      m.node("Relu", n + ".relu", {n + ".add"}, {n + ".out"});
      x = n + ".out";
      ch = out;
    }
  }
  m.node("GlobalAveragePool", "avgpool", {x}, {"avgpool"});
  m.node("Flatten", "flatten", {"avgpool"}, {"flat"});
  m.init("fc.w", {1000, 2048}, he(2048));
  m.init("fc.b", {1000}, 0.05f);
  OnnxBuilder::attr(m.node("Gemm", "fc", {"flat", "fc.w", "fc.b"}, {"logits"}), "transB", int64_t(1));
  m.output("logits", {1, 1000});
}

void mobilenetv2(OnnxBuilder& m) {
  // MobileNetV2 1.0 (Sandler et al. 2018, Table 2), 224x224 input: inverted residual
  // blocks (1x1 expand + ReLU6, 3x3 depthwise + ReLU6, 1x1 linear projection, residual add
  // when the shape is kept), batch norm after every conv.
  m.input("image", {1, 3, 224, 224});
  m.init("relu6.min", {}, 0, {0.0f});
  m.init("relu6.max", {}, 0, {6.0f});
  std::string x = conv_bn_act(m, "features.0", "image", 3, 32, 3, 2, Act::kRelu6);
  int64_t ch = 32;
  struct Stage {
    int64_t expand, out, repeat, stride;
  };
  const Stage stages[] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                          {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int block = 1;
  for (const Stage& st : stages)
    for (int64_t r = 0; r < st.repeat; ++r, ++block) {
      std::string n = fmt::format("features.{}", block);
      int64_t stride = r == 0 ? st.stride : 1, hidden = ch * st.expand;
      std::string y = x;
      if (st.expand != 1) y = conv_bn_act(m, n + ".expand", y, ch, hidden, 1, 1, Act::kRelu6);
      y = conv_bn_act(m, n + ".dw", y, hidden, hidden, 3, stride, Act::kRelu6, hidden);
      y = conv_bn_act(m, n + ".project", y, hidden, st.out, 1, 1, Act::kNone);
      if (stride == 1 && ch == st.out) {
        m.node("Add", n + ".add", {y, x}, {n + ".add"});
        y = n + ".add";
      }
      x = y;
      ch = st.out;
    }
  x = conv_bn_act(m, "features.18", x, ch, 1280, 1, 1, Act::kRelu6);
  m.node("GlobalAveragePool", "avgpool", {x}, {"avgpool"});
  m.node("Flatten", "flatten", {"avgpool"}, {"flat"});
  m.init("classifier.w", {1000, 1280}, he(1280));
  m.init("classifier.b", {1000}, 0.05f);
  OnnxBuilder::attr(m.node("Gemm", "classifier", {"flat", "classifier.w", "classifier.b"}, {"logits"}), "transB", int64_t(1));
  m.output("logits", {1, 1000});
}

void cnn0(OnnxBuilder& m) {
  // TPU v1's CNN0 (Jouppi et al. ISCA 2017, Table 1: 16 conv layers, 8M weights, batch 8, 2888
  // MACs per weight byte). 2888 = 8 x 361: every layer runs on the 19 x 19 Go board (the
  // paper names DeepMind's AlphaGo), as in its policy network (Silver et al. 2016): 48 input
  // feature planes, a 5 x 5 conv to 256 channels, 14 3 x 3 convs of 256 channels, a 1 x 1
  // conv to one plane of move logits; ReLU after all but the last, "same" padding. 256
  // channels (the paper does not say) fill the 256 x 256 array, as Table 3's 0% unused MACs
  // suggests, and give 8.57M weights.
  const int64_t B = 8, N = 19, C = 256;
  m.input("board", {B, 48, N, N});
  std::string x = "board";
  int64_t ci = 48;
  for (int l = 1; l <= 16; ++l) {
    const int64_t k = l == 1 ? 5 : l == 16 ? 1 : 3, co = l == 16 ? 1 : C;
    std::string n = fmt::format("conv{}", l);
    m.init(n + ".w", {co, ci, k, k}, he(ci * k * k));
    m.init(n + ".b", {co}, 0.05f);
    auto* c = m.node("Conv", n, {x, n + ".w", n + ".b"}, {n});
    OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{k, k});
    OnnxBuilder::attr(c, "pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    x = n;
    if (l < 16) {
      m.node("Relu", n + ".relu", {x}, {n + ".relu"});
      x = n + ".relu";
    }
    ci = co;
  }
  m.output(x, {B, 1, N, N});
}

namespace {

// One Inception module of BN-Inception (Ioffe & Szegedy 2015, Figure 5): a 1 x 1 branch, a
// 1 x 1 -> 3 x 3 branch, a 1 x 1 -> 3 x 3 -> 3 x 3 branch and a pooling branch (3 x 3 average
// pooling and a 1 x 1 projection; with stride 2: max pooling passed through), concatenated.
struct InceptionSpec {
  int64_t b1, r3, b3, rd, d3, proj, stride;
  bool max_proj = false;  // pooling branch: max pooling before the projection (5b)
};
std::string inception(OnnxBuilder& m, const std::string& n, const std::string& x, int64_t& ch, const InceptionSpec& s) {
  std::vector<std::string> branches;
  int64_t out = 0;
  if (s.b1) branches.push_back(conv_bn(m, n + ".1x1", x, ch, s.b1, 1, 1, true)), out += s.b1;
  std::string y = conv_bn(m, n + ".3x3_reduce", x, ch, s.r3, 1, 1, true);
  branches.push_back(conv_bn(m, n + ".3x3", y, s.r3, s.b3, 3, s.stride, true)), out += s.b3;
  y = conv_bn(m, n + ".double_3x3_reduce", x, ch, s.rd, 1, 1, true);
  y = conv_bn(m, n + ".double_3x3_1", y, s.rd, s.d3, 3, 1, true);
  branches.push_back(conv_bn(m, n + ".double_3x3_2", y, s.d3, s.d3, 3, s.stride, true)), out += s.d3;
  const bool avg = s.proj && !s.max_proj;
  auto* p = m.node(avg ? "AveragePool" : "MaxPool", n + ".pool", {x}, {n + ".pool"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(p, "strides", std::vector<int64_t>{s.stride, s.stride});
  OnnxBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  if (avg) OnnxBuilder::attr(p, "count_include_pad", int64_t(0));
  if (s.proj) branches.push_back(conv_bn(m, n + ".pool_proj", n + ".pool", ch, s.proj, 1, 1, true)), out += s.proj;
  else branches.push_back(n + ".pool"), out += ch;
  OnnxBuilder::attr(m.node("Concat", n + ".concat", branches, {n + ".out"}), "axis", int64_t(1));
  ch = out;
  return n + ".out";
}

}  // namespace

void cnn1(OnnxBuilder& m) {
  // TPU v1's CNN1 (Table 1: 72 conv, 13 pool and 4 fully connected layers, 100M weights, batch
  // 32, 1750 MACs per weight byte), which the paper says derives from Inception. vtpu's
  // choices: BN-Inception's ten modules (Ioffe & Szegedy 2015; 66 convs, 10 pools) behind a
  // six-conv stem with two max pools (Inception-v3's stem plus one 3 x 3 conv of 192), global
  // average pooling (13 pools), and 4 fully connected layers 1024 -> 4096 -> 4096 -> 4096 ->
  // 12800 (90.2M weights, run at 32 MACs per weight byte as the paper says of its FC layers).
  // A 280 x 280 input (10.6M conv weights, 5.50G MACs per image) gives 100.8M weights and
  // 1747 MACs per weight byte at batch 32. The file holds one image: the compiler keeps a
  // layer's whole activation in the unified buffer (channels padded to the array's lanes), so
  // no preset holds batch 32 yet (tpu-v1: 2; `--batch` sets it, docs/validation.md).
  const int64_t B = 1, S = 280;
  m.input("image", {B, 3, S, S});
  auto maxpool = [&](const std::string& n, const std::string& x) {
    auto* p = m.node("MaxPool", n, {x}, {n});
    OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{3, 3});
    OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
    OnnxBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
    return n;
  };
  std::string x = conv_bn(m, "stem.conv1", "image", 3, 32, 3, 2, true);
  x = conv_bn(m, "stem.conv2", x, 32, 32, 3, 1, true);
  x = conv_bn(m, "stem.conv3", x, 32, 64, 3, 1, true);
  x = maxpool("stem.pool1", x);
  x = conv_bn(m, "stem.conv4", x, 64, 80, 1, 1, true);
  x = conv_bn(m, "stem.conv5", x, 80, 192, 3, 1, true);
  x = conv_bn(m, "stem.conv6", x, 192, 192, 3, 1, true);
  x = maxpool("stem.pool2", x);
  int64_t ch = 192;
  const std::pair<const char*, InceptionSpec> modules[] = {
      {"3a", {64, 64, 64, 64, 96, 32, 1}},     {"3b", {64, 64, 96, 64, 96, 64, 1}},
      {"3c", {0, 128, 160, 64, 96, 0, 2}},     {"4a", {224, 64, 96, 96, 128, 128, 1}},
      {"4b", {192, 96, 128, 96, 128, 128, 1}}, {"4c", {160, 128, 160, 128, 160, 128, 1}},
      {"4d", {96, 128, 192, 160, 192, 128, 1}}, {"4e", {0, 128, 192, 192, 256, 0, 2}},
      {"5a", {352, 192, 320, 160, 224, 128, 1}}, {"5b", {352, 192, 320, 192, 224, 128, 1, true}}};
  for (const auto& [name, spec] : modules) x = inception(m, std::string("inception_") + name, x, ch, spec);
  m.node("GlobalAveragePool", "avgpool", {x}, {"avgpool"});
  m.node("Flatten", "flatten", {"avgpool"}, {"flat"});
  x = "flat";
  const int64_t widths[] = {4096, 4096, 4096, 12800};
  for (int l = 0; l < 4; ++l) {
    std::string n = fmt::format("fc{}", l + 1);
    m.init(n + ".w", {widths[l], ch}, he(ch));
    m.init(n + ".b", {widths[l]}, 0.05f);
    OnnxBuilder::attr(m.node("Gemm", n, {x, n + ".w", n + ".b"}, {n}), "transB", int64_t(1));
    x = n;
    if (l < 3) {
      m.node("Relu", n + ".relu", {x}, {n + ".relu"});
      x = n + ".relu";
    }
    ch = widths[l];
  }
  m.output(x, {B, 12800});
}

}  // namespace vtpu::models::builders
