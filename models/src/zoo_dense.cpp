// The zoo's fully connected and recurrent models: TPU v1's MLPs and LSTMs, the 2048^3 GEMM.
#include <fmt/format.h>

#include <cmath>

#include "zoo_builders.h"

namespace vtpu::models::builders {

namespace {

// `layers` fully connected layers of `W` x `W` (Gemm with bias), ReLU between them, on a
// batch of `B` rows.
void mlp(OnnxBuilder& m, int64_t B, int64_t W, int layers) {
  m.input("x", {B, W});
  std::string prev = "x";
  for (int l = 1; l <= layers; ++l) {
    std::string w = fmt::format("fc{}.w", l), b = fmt::format("fc{}.b", l), out = fmt::format("fc{}", l);
    m.init(w, {W, W}, he(W));
    m.init(b, {W}, 0.05f);
    OnnxBuilder::attr(m.node("Gemm", out, {prev, w, b}, {out}), "transB", int64_t(1));
    prev = out;
    if (l < layers) {
      m.node("Relu", fmt::format("relu{}", l), {prev}, {prev + "_relu"});
      prev += "_relu";
    }
  }
  m.output(prev, {B, W});
}

// `L` stacked LSTM layers of `H` cells on inputs of width `H`, batch first ([B, T, H]).
std::string lstm_stack(OnnxBuilder& m, int64_t B, int64_t T, int64_t H, int64_t L) {
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
  return x;
}

}  // namespace

void mlp0(OnnxBuilder& m) {
  // TPU v1's MLP0 (Jouppi et al. ISCA 2017, Table 1): 5 fully connected layers, 20M weights,
  // batch 200. Widths of 2000 give 5 x 4M = 20M weights.
  mlp(m, 200, 2000, 5);
}

void mlp1(OnnxBuilder& m) {
  // TPU v1's MLP1 (Table 1): 4 fully connected layers, 5M weights, batch 168. Widths of 1120
  // give 4 x 1.25M = 5.02M weights (the paper gives no widths; 1120 is the multiple of 32
  // nearest the square layers' 1118).
  mlp(m, 168, 1120, 4);
}

void lstm0(OnnxBuilder& m) {
  // Shaped like TPU v1's LSTM0 (Jouppi et al. ISCA 2017, Table 1: 52M weights, batch 64):
  // 6 stacked LSTM layers of 1024 cells and a 1024-wide output projection (51.4M weights),
  // batch 64, 8 time steps. The paper's 58 "layers" are not described further.
  const int64_t T = 8, B = 64, H = 1024;
  std::string x = lstm_stack(m, B, T, H, 6);
  m.init("proj.w", {H, H}, he(H));
  m.init("proj.b", {H}, 0.05f);
  m.node("MatMul", "proj", {x, "proj.w"}, {"proj.mm"});
  m.node("Add", "proj.add", {"proj.mm", "proj.b"}, {"y"});
  m.output("y", {B, T, H});
}

void lstm1(OnnxBuilder& m) {
  // TPU v1's LSTM1 (Table 1: 56 layers, 34M weights, batch 96). Section 7 of the paper names
  // its 600 x 600 weight matrices: 12 stacked LSTM layers of 600 cells (8 matrices of 600 x
  // 600 each, 34.6M weights), batch 96, 8 time steps (as lstm0; the paper gives none).
  const int64_t T = 8, B = 96, H = 600;
  std::string x = lstm_stack(m, B, T, H, 12);
  m.output(x, {B, T, H});
}

void gemm2048(OnnxBuilder& m) {
  // The 2048^3 GEMM of the compiler's quality figures: activations [2048, 2048] x weights.
  m.input("a", {2048, 2048});
  m.init("b", {2048, 2048}, 0.05f);
  m.node("MatMul", "gemm", {"a", "b"}, {"c"});
  m.output("c", {2048, 2048});
}

}  // namespace vtpu::models::builders
