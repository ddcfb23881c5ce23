// Resize (nearest, linear, cubic): models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

// Nearest upsampling as detection and segmentation heads use it: H x 2 by whole-row copies,
// W x 3 as one repeating copy per row; then a half-pixel downsample back to odd sizes.
TEST_P(CompileE2E, NearestResizeUpAndDownMatchesOnnxIndexing) {
  const int64_t C = 12, H = 5, W = 7;
  OnnxBuilder m;
  m.input("x", {1, C, H, W});
  m.init("up", {4}, 0, {1.0f, 1.0f, 2.0f, 3.0f});
  m.init_i64("down", {1, C, 4, 9});
  auto* up = m.node("Resize", "up", {"x", "", "up"}, {"u"});
  OnnxBuilder::attr_s(up, "coordinate_transformation_mode", "asymmetric");
  OnnxBuilder::attr_s(up, "nearest_mode", "floor");
  m.node("Resize", "down", {"u", "", "", "down"}, {"y"});  // half_pixel, round_prefer_floor
  m.output("y", {1, C, 4, 9});
  auto path = m.save("vtpu_resize_" + id() + ".onnx");
  Vec x = uniform_values(size_t(C * H * W), 59, 800.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  // u[c][y][x] = x[c][y / 2][x / 3] (10 x 21); y picks u at round_prefer_floor((o + 0.5) / s - 0.5).
  auto src = [](int64_t o, int64_t in, int64_t out) {
    double s = double(out) / double(in), xo = (o + 0.5) / s - 0.5;
    double r = xo - std::floor(xo) == 0.5 ? std::floor(xo) : std::round(xo);
    return std::clamp<int64_t>(int64_t(r), 0, in - 1);
  };
  Vec want(size_t(C * 4 * 9));
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < 4; ++oy)
      for (int64_t ox = 0; ox < 9; ++ox) {
        int64_t uy = src(oy, 2 * H, 4), ux = src(ox, 3 * W, 9);
        want[size_t((c * 4 + oy) * 9 + ox)] = x[size_t((c * H + uy / 2) * W + ux / 3)];
      }
  expect_close(got, want, tolerance(0.01));
}

// Bilinear and bicubic Resize (H up, W down, a batch of 2, more channels than a lane block on
// the tiny presets) against the 2-D definition evaluated pixel by pixel: each output pixel
// is the weighted sum of the 2x2 (4x4) input pixels around its source coordinate, edge
// pixels repeated beyond the border.
TEST_P(CompileE2E, LinearAndCubicResizeMatchDefinition) {
  const int64_t N = 2, C = 11, H = 5, W = 9, OH = 8, OW = 6;
  Vec x = uniform_values(size_t(N * C * H * W), 61, 900.0f);
  for (bool cubic : {false, true}) {
    SCOPED_TRACE(cubic ? "cubic, align_corners" : "linear, half_pixel");
    OnnxBuilder m;
    m.input("x", {N, C, H, W});
    m.init_i64("sizes", {N, C, OH, OW});
    auto* rs = m.node("Resize", "resize", {"x", "", "", "sizes"}, {"y"});
    OnnxBuilder::attr_s(rs, "mode", cubic ? "cubic" : "linear");
    if (cubic) OnnxBuilder::attr_s(rs, "coordinate_transformation_mode", "align_corners");
    m.output("y", {N, C, OH, OW});
    auto path = m.save(std::string("vtpu_resize_") + (cubic ? "cubic_" : "linear_") + id() + ".onnx");
    Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
    // Source coordinate, first tap and tap weights along one axis.
    auto taps = [&](int64_t o, int64_t in, int64_t on, std::vector<double>& wt) {
      double src = cubic ? double(o) * double(in - 1) / double(on - 1) : (double(o) + 0.5) * double(in) / double(on) - 0.5;
      double f = std::floor(src), t = src - f, a = -0.75;
      if (!cubic) {
        wt = {1 - t, t};
        return int64_t(f);
      }
      auto k = [&](double d) {  // Keys' kernel with a = -0.75
        d = std::fabs(d);
        return d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0.0;
      };
      wt = {k(t + 1), k(t), k(1 - t), k(2 - t)};
      return int64_t(f) - 1;
    };
    Vec want(size_t(N * C * OH * OW));
    for (int64_t r = 0; r < N * C; ++r)
      for (int64_t oy = 0; oy < OH; ++oy)
        for (int64_t ox = 0; ox < OW; ++ox) {
          std::vector<double> wy, wx;
          int64_t y0 = taps(oy, H, OH, wy), x0 = taps(ox, W, OW, wx);
          double acc = 0;
          for (size_t i = 0; i < wy.size(); ++i)
            for (size_t j = 0; j < wx.size(); ++j) {
              int64_t iy = std::clamp<int64_t>(y0 + int64_t(i), 0, H - 1), ix = std::clamp<int64_t>(x0 + int64_t(j), 0, W - 1);
              acc += wy[i] * wx[j] * x[size_t((r * H + iy) * W + ix)];
            }
          want[size_t((r * OH + oy) * OW + ox)] = float(acc);
        }
    expect_close(got, want, tolerance(0.03));
  }
}

}  // namespace
}  // namespace vtpu::compiler
