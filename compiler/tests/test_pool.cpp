// Pools: models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// AveragePool with padding left out of the divisor (count_include_pad=0) and ceil_mode: the
// window divisors shrink at the borders, and the last row/column of windows hangs off the end.
TEST_P(CompileE2E, AveragePoolExcludingPaddingWithCeilModeMatchesOnnxRule) {
  const int64_t H = 10, C = 8, OH = 6;  // ONNX: ceil((10 + 1 + 1 - 3) / 2) + 1 = 6
  OnnxBuilder m;
  m.input("img", {1, 1, H, H});
  auto [w1, b1] = conv3x3(m, "conv1", "img", "c1", 1, C, 0.5f, 0.1f, "w1", "b1");
  auto* p = m.node("AveragePool", "pool", {"c1"}, {"y"});
  OnnxBuilder::attr(p, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(p, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(p, "ceil_mode", int64_t(1));
  m.output("y", {1, C, OH, OH});
  auto path = m.save("vtpu_avgpool_ceil_" + id() + ".onnx");
  config::Config cfg = config::load_preset(preset());
  Vec x = uniform_values(size_t(H * H), 17, 1000.0f);
  CompileOptions opt = options();
  opt.calibration = {{{"img", x}}};
  CompileResult r = compile_onnx(path, cfg, opt);
  ASSERT_EQ(tensor(r.program, "y").shape, (std::vector<int64_t>{1, OH, OH, C}));
  std::string out = simulate(cfg, r.program, {{"img", encode(r.program, "img", x)}}, "y");
  ASSERT_EQ(out.substr(0, 2), "OK") << out;
  int64_t CH, CW;
  Vec a = conv(x, 1, H, H, w1, b1, C, 3, 1, CH, CW);  // NCHW, 10x10
  Vec want(size_t(OH * OH * C));                      // NHWC, as the program stores images
  for (int64_t oy = 0; oy < OH; ++oy)
    for (int64_t ox = 0; ox < OH; ++ox)
      for (int64_t c = 0; c < C; ++c) {
        double sum = 0;
        int count = 0;
        for (int64_t iy = oy * 2 - 1; iy < oy * 2 + 2; ++iy)
          for (int64_t ix = ox * 2 - 1; ix < ox * 2 + 2; ++ix)
            if (iy >= 0 && ix >= 0 && iy < CH && ix < CW) sum += a[size_t((c * CH + iy) * CW + ix)], ++count;
        want[size_t((oy * OH + ox) * C + c)] = float(sum / count);
      }
  expect_close(decode(r.program, "y", out.substr(2)), want, tolerance(0.02));
}

// A dilated max pool (strides 2, dilations 2 on a 3x3 window) is the maximum of its taps,
// each every second pixel from (i * 2, j * 2) on.
TEST_P(CompileE2E, DilatedMaxPoolMatchesDefinition) {
  const int64_t N = 2, C = 3, H = 11, W = 12, K = 3, S = 2, D = 2;
  const int64_t OH = (H - D * (K - 1) - 1) / S + 1, OW = (W - D * (K - 1) - 1) / S + 1;
  OnnxBuilder m;
  m.input("x", {N, C, H, W});
  auto* mp = m.node("MaxPool", "pool", {"x"}, {"y"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{K, K});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{S, S});
  OnnxBuilder::attr(mp, "dilations", std::vector<int64_t>{D, D});
  m.output("y", {N, C, OH, OW});
  auto path = m.save("vtpu_dilated_pool_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 71, 5.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  Vec want(size_t(N * C * OH * OW));
  for (int64_t r = 0; r < N * C; ++r)
    for (int64_t oy = 0; oy < OH; ++oy)
      for (int64_t ox = 0; ox < OW; ++ox) {
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t i = 0; i < K; ++i)
          for (int64_t j = 0; j < K; ++j) mx = std::max(mx, x[size_t((r * H + oy * S + i * D) * W + ox * S + j * D)]);
        want[size_t((r * OH + oy) * OW + ox)] = mx;
      }
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

// Pools beside convolutions (compiler/codegen/plan.cpp pool_after and pool_background;
// docs/compiler.md "Pools off the vector unit's critical path") issue the same instructions,
// only earlier: the same bytes as where they run on their own, in fewer cycles.
// A stem (3x3 convolution, then a 3x3 max pool with stride 2 that is its only use) and an
// Inception-style module on its output: two 3x3 branches, a 3x3 average pool with a 1x1
// projection, concatenated. In `beside` the module's pool comes after the branches in the
// graph (they host it) and the stem's pool is its convolution's only use; in `alone` the
// module's pool comes first (no convolution between its input and it) and the stem's
// convolution is also an output, so neither pool runs beside a convolution.
TEST_P(CompileE2E, PoolsBesideConvolutionsGiveTheSameBytesInFewerCycles) {
  const int64_t N = 2, C = 16, H = 32, M = 16;
  auto build = [&](bool beside) {
    OnnxBuilder m;
    m.input("img", {N, 8, H, H});
    conv3x3(m, "stem", "img", "s", 8, C, 0.2f, 0.1f, "ws", "bs");
    auto* mp = m.node("MaxPool", "stem_pool", {"s"}, {"x"});
    OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
    OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
    OnnxBuilder::attr(mp, "pads", std::vector<int64_t>{1, 1, 1, 1});
    auto pool = [&] {
      auto* ap = m.node("AveragePool", "pool", {"x"}, {"p"});
      OnnxBuilder::attr(ap, "kernel_shape", std::vector<int64_t>{3, 3});
      OnnxBuilder::attr(ap, "pads", std::vector<int64_t>{1, 1, 1, 1});
    };
    if (!beside) pool();
    conv3x3(m, "a", "x", "ya", C, M, 0.2f, 0.1f, "wa", "ba");
    conv3x3(m, "b", "x", "yb", C, M, 0.2f, 0.1f, "wb", "bb");
    if (beside) pool();
    m.init("wq", {M, C, 1, 1}, 0.3f), m.init("bq", {M}, 0.1f);
    m.node("Conv", "proj", {"p", "wq", "bq"}, {"yq"});
    OnnxBuilder::attr(m.node("Concat", "cat", {"ya", "yb", "yq"}, {"y"}), "axis", int64_t(1));
    m.output("y", {N, 3 * M, H / 2, H / 2});
    if (!beside) m.output("s", {N, C, H, H});
    return m.save(std::string("vtpu_pools_") + (beside ? "beside_" : "alone_") + id() + ".onnx");
  };
  config::Config cfg = config::load_preset(preset());
  Vec img = uniform_values(size_t(N * 8 * H * H), 23, 500.0f);
  SimRun run[2];
  for (int beside = 0; beside < 2; ++beside) {
    CompileOptions opt = options();
    opt.calibration = {{{"img", img}}};
    CompileResult r = compile_onnx(build(beside), cfg, opt);
    run[beside] = run_program(cfg, r.program, {{"img", encode(r.program, "img", img)}}, "y");
    ASSERT_EQ(run[beside].error, "") << (beside ? "beside" : "alone");
  }
  EXPECT_EQ(run[1].output, run[0].output);
  EXPECT_LT(run[1].cycles, run[0].cycles) << "beside " << run[1].cycles << " cycles, alone " << run[0].cycles;
}

// 3-D pools with padding, strides and ceil_mode on the depth: MaxPool, and AveragePool
// both leaving padding out of the divisor and counting it, against ONNX's definition.
TEST_P(CompileE2E, Pool3dMatchesDefinition) {
  const int64_t N = 2, C = 3, D = 5, H = 6, W = 7;
  const std::vector<int64_t> k{3, 2, 3}, s{2, 1, 2}, pb{1, 0, 1}, pe{1, 1, 0};
  auto out_dim = [&](int64_t in, int i, bool ceil) {
    int64_t span = in + pb[size_t(i)] + pe[size_t(i)] - k[size_t(i)];
    int64_t o = (ceil ? (span + s[size_t(i)] - 1) / s[size_t(i)] : span / s[size_t(i)]) + 1;
    if (ceil && (o - 1) * s[size_t(i)] >= in + pb[size_t(i)]) --o;
    return o;
  };
  Vec x = uniform_values(size_t(N * C * D * H * W), 91, 300.0f);
  struct Case {
    const char* op;
    bool count_pad, ceil;
  };
  for (Case cs : {Case{"MaxPool", false, true}, Case{"AveragePool", false, true}, Case{"AveragePool", true, false}}) {
    SCOPED_TRACE(std::string(cs.op) + (cs.count_pad ? " count_include_pad" : "") + (cs.ceil ? " ceil_mode" : ""));
    const int64_t OD = out_dim(D, 0, cs.ceil), OH = out_dim(H, 1, cs.ceil), OW = out_dim(W, 2, cs.ceil);
    OnnxBuilder m;
    m.input("x", {N, C, D, H, W});
    auto* pn = m.node(cs.op, "pool3d", {"x"}, {"y"});
    OnnxBuilder::attr(pn, "kernel_shape", k);
    OnnxBuilder::attr(pn, "strides", s);
    OnnxBuilder::attr(pn, "pads", std::vector<int64_t>{pb[0], pb[1], pb[2], pe[0], pe[1], pe[2]});
    if (cs.ceil) OnnxBuilder::attr(pn, "ceil_mode", int64_t(1));
    if (cs.count_pad) OnnxBuilder::attr(pn, "count_include_pad", int64_t(1));
    m.output("y", {N, C, OD, OH, OW});
    auto path = m.save("vtpu_pool3d_" + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "y");
    Vec want(size_t(N * C * OD * OH * OW));
    bool avg = std::string(cs.op) == "AveragePool";
    for (int64_t r = 0; r < N * C; ++r)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = avg ? 0.0 : -INFINITY;
            int64_t cnt = 0;
            for (int64_t i = 0; i < k[0]; ++i)
              for (int64_t j = 0; j < k[1]; ++j)
                for (int64_t l = 0; l < k[2]; ++l) {
                  int64_t d = od * s[0] + i - pb[0], h = oh * s[1] + j - pb[1], w = ow * s[2] + l - pb[2];
                  bool inside = d >= 0 && d < D && h >= 0 && h < H && w >= 0 && w < W;
                  // count_include_pad counts the declared padding, not ceil_mode's extra end.
                  if (inside || (cs.count_pad && d < D + pe[0] && h < H + pe[1] && w < W + pe[2])) ++cnt;
                  if (!inside) continue;
                  double v = x[size_t(((r * D + d) * H + h) * W + w)];
                  acc = avg ? acc + v : std::max(acc, v);
                }
            want[size_t(((r * OD + od) * OH + oh) * OW + ow)] = float(avg ? acc / double(cnt) : acc);
          }
    ASSERT_EQ(got.size(), want.size());
    expect_close(got, want, tolerance(0.03));
  }
}

}  // namespace
}  // namespace vtpu::compiler
