// LSTM and GRU: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

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

}  // namespace
}  // namespace vtpu::compiler
