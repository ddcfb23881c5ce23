// Layout ops: transpose, concat, split, slice, pad, shape arithmetic, empty tensors: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

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

// Concat of 4 + 12 + 6 conv channels and a Slice of channels [4, 18): every input and the
// slice start on a unified-buffer word in INT8 and bf16, so runs of lanes move in the
// activations' own type, across lane blocks on the tiny presets (8 and 16 lanes).
TEST_P(CompileE2E, ConcatAndSliceOfChannelRunsOnWordsMatchFp32Reference) {
  const int64_t H = 5, W = 6;
  const std::vector<int64_t> parts{4, 12, 6};
  const int64_t C = 22, S0 = 4, S1 = 18;
  OnnxBuilder m;
  m.input("img", {1, 1, H, W});
  std::vector<std::pair<Vec, Vec>> wb;
  std::vector<std::string> names;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string n = "c" + std::to_string(i);
    auto [w, b] = conv3x3(m, "conv" + n, "img", n, 1, parts[i], 0.5f + 0.5f * float(i), 0.1f, "w" + n, "b" + n);
    wb.push_back({w, b});
    names.push_back(n);
  }
  OnnxBuilder::attr(m.node("Concat", "cat", names, {"y"}), "axis", int64_t(1));
  m.init_i64("s0", {S0});
  m.init_i64("s1", {S1});
  m.init_i64("ax", {1});
  m.node("Slice", "mid", {"y", "s0", "s1", "ax"}, {"s"});
  m.output("y", {1, C, H, W});
  m.output("s", {1, S1 - S0, H, W});
  auto path = m.save("vtpu_concat_runs_" + id() + ".onnx");
  Vec x = uniform_values(size_t(H * W), 43, 1000.0f);
  Vec want(size_t(H * W * C)), want_s(size_t(H * W * (S1 - S0)));  // NHWC
  int64_t c0 = 0, OH, OW;
  for (size_t i = 0; i < parts.size(); ++i) {
    Vec f = conv(x, 1, H, W, wb[i].first, wb[i].second, parts[i], 3, 1, OH, OW);
    for (int64_t p = 0; p < H * W; ++p)
      for (int64_t c = 0; c < parts[i]; ++c) want[size_t(p * C + c0 + c)] = f[size_t(c * H * W + p)];
    c0 += parts[i];
  }
  for (int64_t p = 0; p < H * W; ++p)
    for (int64_t c = S0; c < S1; ++c) want_s[size_t(p * (S1 - S0) + c - S0)] = want[size_t(p * C + c)];
  expect_close(compile_and_run(path, {{"img", x}}, "y"), want, tolerance(0.02));
  expect_close(compile_and_run(path, {{"img", x}}, "s"), want_s, tolerance(0.02));
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

// Pad of any rank and axis, against the definition: a 3-D tensor in the three modes, a 5-D
// one with negative pads (cropping) beside positive ones, and an image's batch and channels.
TEST_P(CompileE2E, PadOfAnyRankAndAxisMatchesDefinition) {
  struct Case {
    std::vector<int64_t> in, pads;
    std::string mode;
  };
  for (const Case& c : {Case{{2, 5, 6}, {0, 1, 2, 0, 3, 1}, "constant"}, Case{{2, 5, 6}, {1, 1, 2, 1, 3, 1}, "edge"},
                        Case{{2, 5, 6}, {0, 1, 2, 0, 3, 1}, "reflect"},
                        Case{{2, 3, 5, 6, 7}, {0, 1, -1, 1, 1, 0, 2, -2, 1, 1}, "constant"},
                        Case{{1, 3, 4, 5}, {1, 1, 0, 2, 0, 2, 1, 1}, "constant"}, Case{{7}, {2, 3}, "reflect"}}) {
    SCOPED_TRACE(c.mode + " " + std::to_string(c.in.size()) + "-D");
    const size_t r = c.in.size();
    std::vector<int64_t> out(r);
    for (size_t d = 0; d < r; ++d) out[d] = c.in[d] + c.pads[d] + c.pads[d + r];
    int64_t n_in = 1, n_out = 1;
    for (size_t d = 0; d < r; ++d) n_in *= c.in[d], n_out *= out[d];
    Vec x = uniform_values(size_t(n_in), 101, 300.0f);
    OnnxBuilder m;
    m.input("x", c.in);
    m.init_i64("pads", c.pads);
    m.init("value", {}, 0.0f, {0.5f});
    OnnxBuilder::attr_s(m.node("Pad", "pad", {"x", "pads", "value"}, {"y"}), "mode", c.mode);
    m.output("y", out);
    auto path = m.save("vtpu_pad_any_" + c.mode + std::to_string(r) + "_" + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
    auto src = [&](int64_t i, int64_t len) {  // the source index of padded index i, or -1 for the constant
      if (i >= 0 && i < len) return i;
      if (c.mode == "constant") return int64_t(-1);
      if (c.mode == "edge") return i < 0 ? int64_t(0) : len - 1;
      return i < 0 ? -i : 2 * (len - 1) - i;
    };
    Vec want(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t rest = o, at = 0, stride = 1;
      bool constant = false;
      for (size_t d = r; d-- > 0;) {
        int64_t i = src(rest % out[d] - c.pads[d], c.in[d]);
        rest /= out[d];
        constant |= i < 0;
        at += (i < 0 ? 0 : i) * stride, stride *= c.in[d];
      }
      want[size_t(o)] = constant ? 0.5f : x[size_t(at)];
    }
    expect_close(got, want, tolerance(0.01));
  }
}

}  // namespace
}  // namespace vtpu::compiler
