// ArgMax/ArgMin and MaxPool's Indices: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

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

}  // namespace
}  // namespace vtpu::compiler
