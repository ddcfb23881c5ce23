#include "vtpu/models/zoo.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "vtpu/models/onnx_builder.h"
#include "vtpu/support/error.h"

namespace vtpu::models {
namespace embedded {
extern const uint8_t lenet5_fmnist[];
extern const size_t lenet5_fmnist_size;
}  // namespace embedded
namespace {

using testing::OnnxBuilder;

// He-style uniform bound so activations keep their scale through ReLU layers.
float he(int64_t fan_in) { return std::sqrt(6.0f / float(fan_in)); }

void mlp0(OnnxBuilder& m) {
  // TPU v1's MLP0 (Jouppi et al. ISCA 2017, Table 1): 5 fully connected layers, 20M weights,
  // batch 200. Widths of 2000 give 5 x 4M = 20M weights.
  const int64_t B = 200, W = 2000;
  m.input("x", {B, W});
  std::string prev = "x";
  for (int l = 1; l <= 5; ++l) {
    std::string w = fmt::format("fc{}.w", l), b = fmt::format("fc{}.b", l), out = fmt::format("fc{}", l);
    m.init(w, {W, W}, he(W));
    m.init(b, {W}, 0.05f);
    OnnxBuilder::attr(m.node("Gemm", out, {prev, w, b}, {out}), "transB", int64_t(1));
    prev = out;
    if (l < 5) {
      m.node("Relu", fmt::format("relu{}", l), {prev}, {prev + "_relu"});
      prev += "_relu";
    }
  }
  m.output(prev, {B, W});
}

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

// One transformer layer's parts, named as torch exports them (opset 17).
struct Transformer {
  OnnxBuilder& m;
  int64_t S, D, heads, F;
  std::string linear(const std::string& name, const std::string& x, int64_t in, int64_t out) {
    m.init(name + ".weight", {in, out}, std::sqrt(3.0f / float(in)));
    m.init(name + ".bias", {out}, 0.02f);
    m.node("MatMul", name, {x, name + ".weight"}, {name + ".mm"});
    m.node("Add", name + ".add", {name + ".mm", name + ".bias"}, {name + ".out"});
    return name + ".out";
  }
  std::string layernorm(const std::string& name, const std::string& x) {
    const size_t n = static_cast<size_t>(D);
    std::vector<float> g(n), b(n);
    for (size_t i = 0; i < n; ++i) g[i] = 0.9f + 0.2f * float(i % 5) / 5.0f, b[i] = 0.02f * float(int(i % 3) - 1);
    m.init(name + ".weight", {D}, 0, g);
    m.init(name + ".bias", {D}, 0, b);
    OnnxBuilder::attr_f(m.node("LayerNormalization", name, {x, name + ".weight", name + ".bias"}, {name + ".out"}), "epsilon",
                        1e-5f);
    return name + ".out";
  }
  // Multi-head self-attention; `mask` (optional) is added to the scores.
  std::string attention(const std::string& name, const std::string& x, const std::string& mask = "") {
    int64_t d = D / heads;
    std::string q = linear(name + ".query", x, D, D), k = linear(name + ".key", x, D, D), v = linear(name + ".value", x, D, D);
    if (!m.has_init("heads.shape")) {
      m.init_i64("heads.shape", {0, S, heads, d});  // 0: the batch dimension as given
      m.init_i64("merged.shape", {0, S, D});
      m.init("heads.scale", {}, 0, {std::sqrt(float(d))});
    }
    auto split = [&](const std::string& t, std::vector<int64_t> perm) {
      m.node("Reshape", t + ".split", {t, "heads.shape"}, {t + ".heads"});
      OnnxBuilder::attr(m.node("Transpose", t + ".perm", {t + ".heads"}, {t + ".t"}), "perm", std::move(perm));
      return t + ".t";
    };
    std::string qt = split(q, {0, 2, 1, 3}), kt = split(k, {0, 2, 3, 1}), vt = split(v, {0, 2, 1, 3});
    m.node("MatMul", name + ".scores", {qt, kt}, {name + ".scores"});
    m.node("Div", name + ".scale", {name + ".scores", "heads.scale"}, {name + ".scaled"});
    std::string s = name + ".scaled";
    if (!mask.empty()) {
      m.node("Add", name + ".mask", {s, mask}, {name + ".masked"});
      s = name + ".masked";
    }
    OnnxBuilder::attr(m.node("Softmax", name + ".softmax", {s}, {name + ".probs"}), "axis", int64_t(-1));
    m.node("MatMul", name + ".context", {name + ".probs", vt}, {name + ".context"});
    OnnxBuilder::attr(m.node("Transpose", name + ".merge.perm", {name + ".context"}, {name + ".merge.t"}), "perm",
                      std::vector<int64_t>{0, 2, 1, 3});
    m.node("Reshape", name + ".merge", {name + ".merge.t", "merged.shape"}, {name + ".merged"});
    return linear(name + ".output", name + ".merged", D, D);
  }
  std::string add(const std::string& name, const std::string& a, const std::string& b) {
    m.node("Add", name, {a, b}, {name});
    return name;
  }
  // GELU as torch exports it: erf form, or the tanh approximation (GPT-2).
  std::string gelu(const std::string& name, const std::string& x, bool tanh_form) {
    if (!m.has_init("gelu.half")) {
      m.init("gelu.half", {}, 0, {0.5f});
      m.init("gelu.one", {}, 0, {1.0f});
      m.init("gelu.sqrt2", {}, 0, {std::sqrt(2.0f)});
      m.init("gelu.three", {}, 0, {3.0f});
      m.init("gelu.c", {}, 0, {0.044715f});
      m.init("gelu.sqrt2pi", {}, 0, {std::sqrt(2.0f / 3.14159265f)});
    }
    std::string inner;
    if (!tanh_form) {
      m.node("Div", name + ".div", {x, "gelu.sqrt2"}, {name + ".div"});
      m.node("Erf", name + ".erf", {name + ".div"}, {name + ".erf"});
      inner = name + ".erf";
    } else {
      m.node("Pow", name + ".pow", {x, "gelu.three"}, {name + ".pow"});
      m.node("Mul", name + ".cubic", {name + ".pow", "gelu.c"}, {name + ".cubic"});
      m.node("Add", name + ".poly", {x, name + ".cubic"}, {name + ".poly"});
      m.node("Mul", name + ".arg", {name + ".poly", "gelu.sqrt2pi"}, {name + ".arg"});
      m.node("Tanh", name + ".tanh", {name + ".arg"}, {name + ".tanh"});
      inner = name + ".tanh";
    }
    m.node("Add", name + ".plus1", {inner, "gelu.one"}, {name + ".plus1"});
    m.node("Mul", name + ".mul", {x, name + ".plus1"}, {name + ".mul"});
    m.node("Mul", name + ".half", {name + ".mul", "gelu.half"}, {name + ".out"});
    return name + ".out";
  }
};

// BERT's post-layer-norm encoder layers on x (the same for both BERT entries).
std::string bert_encoder(Transformer& t, std::string x, int layers) {
  for (int l = 0; l < layers; ++l) {
    std::string n = fmt::format("encoder.layer.{}", l);
    std::string a = t.attention(n + ".attention", x);
    x = t.layernorm(n + ".attention.norm", t.add(n + ".attention.residual", a, x));
    std::string h = t.gelu(n + ".intermediate.gelu", t.linear(n + ".intermediate", x, t.D, t.F), false);
    x = t.layernorm(n + ".output.norm", t.add(n + ".output.residual", t.linear(n + ".output", h, t.F, t.D), x));
  }
  return x;
}

void bert_base(OnnxBuilder& m, int layers) {
  // BERT-base (Devlin et al. 2019): hidden 768, 12 heads, feed-forward 3072, post-layer-norm
  // encoder layers on a sequence of 128 token embeddings (the embedding lookup is the host's).
  Transformer t{m, 128, 768, 12, 3072};
  m.input("hidden_states", {1, t.S, t.D});
  std::string x = "hidden_states";
  x = bert_encoder(t, x, layers);
  m.output(x, {1, t.S, t.D});
}

// BERT-base from token ids (Hugging Face's BertModel as exported): int64 input_ids and
// token_type_ids through the word (30522 x 768) and token-type (2 x 768) embedding Gathers,
// plus the position embeddings of positions 0..127 (a constant Gather), layer norm, then the
// encoder layers. The lookups by run-time ids run on the chip (tpu.embedding).
void bert_base_ids(OnnxBuilder& m, int layers) {
  Transformer t{m, 128, 768, 12, 3072};
  m.input("input_ids", {1, t.S}, onnx::TensorProto::INT64);
  m.input("token_type_ids", {1, t.S}, onnx::TensorProto::INT64);
  m.init("embeddings.word_embeddings.weight", {30522, t.D}, 0.05f);
  m.init("embeddings.token_type_embeddings.weight", {2, t.D}, 0.05f);
  m.init("embeddings.position_embeddings.weight", {512, t.D}, 0.05f);
  std::vector<int64_t> positions(static_cast<size_t>(t.S));
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = int64_t(i);
  m.init_i64("embeddings.position_ids", positions);
  m.node("Gather", "embeddings.word_embeddings", {"embeddings.word_embeddings.weight", "input_ids"}, {"words"});
  m.node("Gather", "embeddings.token_type_embeddings", {"embeddings.token_type_embeddings.weight", "token_type_ids"}, {"types"});
  m.node("Gather", "embeddings.position_embeddings", {"embeddings.position_embeddings.weight", "embeddings.position_ids"},
         {"positions"});
  std::string x = t.add("embeddings.add_types", "words", "types");
  x = t.add("embeddings.add_positions", x, "positions");
  x = t.layernorm("embeddings.LayerNorm", x);
  x = bert_encoder(t, x, layers);
  m.output(x, {1, t.S, t.D});
}

void gpt2_block(OnnxBuilder& m) {
  // One GPT-2 small decoder block (Radford et al. 2019): pre-layer-norm, causal multi-head
  // self-attention (768, 12 heads) and a 3072-wide MLP with GELU's tanh form, on 128 tokens.
  Transformer t{m, 128, 768, 12, 3072};
  m.input("hidden_states", {1, t.S, t.D});
  const size_t S = static_cast<size_t>(t.S);
  std::vector<float> causal(S * S);
  for (size_t i = 0; i < S; ++i)
    for (size_t j = 0; j < S; ++j) causal[i * S + j] = j <= i ? 0.0f : -1e9f;
  m.init("attn.causal_mask", {1, 1, t.S, t.S}, 0, causal);
  std::string x = "hidden_states";
  std::string a = t.attention("h.0.attn", t.layernorm("h.0.ln_1", x), "attn.causal_mask");
  x = t.add("h.0.attn.residual", x, a);
  std::string h = t.gelu("h.0.mlp.gelu", t.linear("h.0.mlp.c_fc", t.layernorm("h.0.ln_2", x), t.D, t.F), true);
  x = t.add("h.0.mlp.residual", x, t.linear("h.0.mlp.c_proj", h, t.F, t.D));
  m.output(x, {1, t.S, t.D});
}

void lstm0(OnnxBuilder& m) {
  // Shaped like TPU v1's LSTM0 (Jouppi et al. ISCA 2017, Table 1: 52M weights, batch 64):
  // 6 stacked LSTM layers of 1024 cells and a 1024-wide output projection (51.4M weights),
  // batch 64, 8 time steps. The paper's 58 "layers" are not described further.
  const int64_t T = 8, B = 64, H = 1024, L = 6;
  m.input("x", {B, T, H});  // batch first (layout = 1), so the batch is the leading dimension
  std::string x = "x";
  for (int64_t l = 0; l < L; ++l) {
    std::string n = fmt::format("lstm{}", l);
    m.init(n + ".W", {1, 4 * H, H}, std::sqrt(1.0f / float(H)));
    m.init(n + ".R", {1, 4 * H, H}, std::sqrt(1.0f / float(H)));
    m.init(n + ".B", {1, 8 * H}, 0.05f);
    auto* lstm = m.node("LSTM", n, {x, n + ".W", n + ".R", n + ".B"}, {n + ".y"});
    OnnxBuilder::attr(lstm, "hidden_size", H);
    OnnxBuilder::attr(lstm, "layout", int64_t(1));
    if (!m.has_init("squeeze.axes")) m.init_i64("squeeze.axes", {2});
    m.node("Squeeze", n + ".squeeze", {n + ".y", "squeeze.axes"}, {n + ".out"});  // [B, T, 1, H] -> [B, T, H]
    x = n + ".out";
  }
  m.init("proj.w", {H, H}, he(H));
  m.init("proj.b", {H}, 0.05f);
  m.node("MatMul", "proj", {x, "proj.w"}, {"proj.mm"});
  m.node("Add", "proj.add", {"proj.mm", "proj.b"}, {"y"});
  m.output("y", {B, T, H});
}

void gemm2048(OnnxBuilder& m) {
  // The 2048^3 GEMM of the compiler's quality figures: activations [2048, 2048] x weights.
  m.input("a", {2048, 2048});
  m.init("b", {2048, 2048}, 0.05f);
  m.node("MatMul", "gemm", {"a", "b"}, {"c"});
  m.output("c", {2048, 2048});
}

}  // namespace

const std::vector<ZooEntry>& zoo() {
  static const std::vector<ZooEntry> z = {
      {"mlp0", "5 fully connected layers of 2000, 20M weights, batch 200, seeded weights",
       "TPU v1's MLP0 (Jouppi et al., ISCA 2017, Table 1)", "tpu-v1", "int8"},
      {"lenet5", "LeNet-5 on 28x28 images (2 conv, 2 max pool, 3 fully connected, softmax), seeded weights",
       "LeCun et al. 1998; the Fashion-MNIST-trained weights are not in the zoo yet", "tiny-16x16", "bf16"},
      {"resnet50", "ResNet-50 v1.5 on 224x224 images (53 conv layers with batch norm, 16 residual adds, 25.6M weights), seeded weights",
       "He et al. 2016 (torchvision's resnet50)", "tpu-v1", "int8", "", "imagenet"},
      {"lenet5-fmnist", "LeNet-5 trained on Fashion-MNIST (models/scripts/train_lenet_fmnist.py): 88.8% fp32 test accuracy",
       "LeCun et al. 1998; weights from Debian's python3-torch, seed 0, 4 epochs", "tiny-16x16", "int8", "fashion-mnist"},
      {"mobilenetv2", "MobileNetV2 1.0 on 224x224 images (17 inverted residual blocks with depthwise 3x3 convs, ReLU6, 3.5M weights), seeded weights",
       "Sandler et al. 2018 (torchvision's mobilenet_v2)", "tpu-v4-core", "int8", "", "imagenet"},
      {"lstm0", "6 stacked LSTM layers of 1024 cells + output projection, 51.4M weights, batch 64, 8 time steps, seeded weights",
       "TPU v1's LSTM0 (Jouppi et al., ISCA 2017, Table 1: 52M weights, batch 64)", "tpu-v1", "int8"},
      {"bert-base", "BERT-base encoder: 12 layers (hidden 768, 12 heads, feed-forward 3072, GELU, layer norm), sequence 128, 85M weights, seeded",
       "Devlin et al. 2019 (Hugging Face's bert-base-uncased encoder, without the embedding lookup)", "tpu-v4-core", "bf16"},
      {"bert-base-layer", "one BERT-base encoder layer (sequence 128), the unit the compiler's transformer figures are measured on",
       "Devlin et al. 2019", "tpu-v4-core", "bf16"},
      {"bert-base-ids", "BERT-base from token ids: int64 input_ids and token_type_ids through the word (30522 x 768), token-type and position embeddings and layer norm, then the 12 encoder layers; 109M weights, seeded",
       "Devlin et al. 2019 (Hugging Face's bert-base-uncased BertModel, without the pooler)", "tpu-v4-core", "bf16"},
      {"bert-base-ids-layer", "the embeddings of bert-base-ids (token ids in) and one encoder layer",
       "Devlin et al. 2019", "tpu-v4-core", "bf16"},
      {"gpt2-block", "one GPT-2 small decoder block: causal self-attention (768, 12 heads), tanh-GELU MLP 3072, pre-layer-norm, 128 tokens, 7M weights, seeded",
       "Radford et al. 2019 (Hugging Face's gpt2, one of its 12 blocks)", "tpu-v4-core", "bf16"},
      {"gemm2048", "one 2048 x 2048 x 2048 matrix multiply (activation x constant weights), seeded weights",
       "the GEMM the compiler's roofline figures are measured on", "tpu-v4-core", "bf16"},
  };
  return z;
}

const ZooEntry* find(const std::string& name) {
  for (const auto& e : zoo())
    if (e.name == name) return &e;
  return nullptr;
}

std::filesystem::path default_dir() {
  if (const char* d = std::getenv("VTPU_MODEL_DIR")) return d;
  // Versioned: a model cached by an older build is not reused after the zoo changes.
  return std::filesystem::temp_directory_path() / "vtpu-zoo-3";
}

std::filesystem::path materialize(const std::string& name, const std::filesystem::path& dir) {
  const ZooEntry* e = find(name);
  if (!e) {
    std::string names;
    for (const auto& z : zoo()) names += " " + z.name;
    throw UserError(fmt::format("'{}' is neither a model file nor a zoo model; the zoo has:{} (vtpu models)", name, names));
  }
  std::filesystem::create_directories(dir);
  auto path = dir / (name + ".onnx");
  if (std::filesystem::exists(path)) return path;
  if (name == "lenet5-fmnist") {  // trained, shipped inside the library
    auto tmp = dir / fmt::format("{}.onnx.{}.partial", name, ::getpid());
    std::ofstream(tmp, std::ios::binary)
        .write(reinterpret_cast<const char*>(embedded::lenet5_fmnist), std::streamsize(embedded::lenet5_fmnist_size));
    std::filesystem::rename(tmp, path);
    return path;
  }
  bool opset17 = name.rfind("bert", 0) == 0 || name.rfind("gpt2", 0) == 0 || name == "lstm0";  // LayerNormalization, LSTM layout
  OnnxBuilder m(opset17 ? 17 : 13, /*seed=*/20261130);
  if (name == "mlp0") mlp0(m);
  else if (name == "lenet5") lenet5(m);
  else if (name == "gemm2048") gemm2048(m);
  else if (name == "resnet50") resnet50(m);
  else if (name == "mobilenetv2") mobilenetv2(m);
  else if (name == "bert-base") bert_base(m, 12);
  else if (name == "bert-base-layer") bert_base(m, 1);
  else if (name == "bert-base-ids") bert_base_ids(m, 12);
  else if (name == "bert-base-ids-layer") bert_base_ids(m, 1);
  else if (name == "gpt2-block") gpt2_block(m);
  else if (name == "lstm0") lstm0(m);
  // Write under a name of this process first, then rename (atomic): concurrent runs never
  // see a half-written model.
  auto tmp = dir / fmt::format("{}.onnx.{}.partial", name, ::getpid());
  m.save_to(tmp);
  std::filesystem::rename(tmp, path);
  return path;
}

}  // namespace vtpu::models
