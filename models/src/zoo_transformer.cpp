// The zoo's transformers: BERT-base (encoder, from token ids, one layer), a GPT-2 block.
#include <fmt/format.h>

#include <cmath>

#include "zoo_builders.h"

namespace vtpu::models::builders {

namespace {

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

}  // namespace

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

}  // namespace vtpu::models::builders
