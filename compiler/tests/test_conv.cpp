// Convolutions (packed first layers, tap stacks, fused residual adds, grouped, transposed, 3-D and 1-D): models built in C++, compiled, run on the simulator and compared with a plain
// fp32 forward pass written from the ONNX operator definitions (e2e_fixture.h).
#include "e2e_fixture.h"

namespace vtpu::compiler {
namespace {

TEST_P(CompileE2E, SmallCnnWithBatchNormMatchesFp32Reference) {
  OnnxBuilder m;
  m.input("img", {1, 1, 12, 12});
  auto& w1 = m.init("w1", {8, 1, 3, 3}, 0.5f);
  auto& b1 = m.init("b1", {8}, 0.1f);
  auto& gamma = m.init("g", {8}, 0, {1.2f, 0.8f, 1.5f, 0.6f, 1.0f, 0.9f, 1.3f, 0.7f});
  auto& beta = m.init("be", {8}, 0.2f);
  auto& mean = m.init("mu", {8}, 0.2f);
  auto& var = m.init("var", {8}, 0, {0.5f, 1.0f, 0.8f, 1.2f, 0.6f, 0.9f, 1.5f, 0.7f});
  auto& w2 = m.init("w2", {16, 8, 3, 3}, 0.2f);
  auto& b2 = m.init("b2", {16}, 0.1f);
  auto& w3 = m.init("w3", {10, 64}, 0.2f);
  auto& b3 = m.init("b3", {10}, 0.1f);
  auto* c1 = m.node("Conv", "conv1", {"img", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c1, "kernel_shape", std::vector<int64_t>{3, 3});
  m.node("BatchNormalization", "bn1", {"c1", "g", "be", "mu", "var"}, {"n1"});
  m.node("Relu", "relu1", {"n1"}, {"r1"});
  auto* p1 = m.node("MaxPool", "pool1", {"r1"}, {"p1"});
  OnnxBuilder::attr(p1, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p1, "strides", std::vector<int64_t>{2, 2});
  m.node("Conv", "conv2", {"p1", "w2", "b2"}, {"c2"});
  m.node("Relu", "relu2", {"c2"}, {"r2"});
  auto* p2 = m.node("MaxPool", "pool2", {"r2"}, {"p2"});
  OnnxBuilder::attr(p2, "kernel_shape", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(p2, "strides", std::vector<int64_t>{2, 2});
  m.node("Flatten", "flatten", {"p2"}, {"f"});
  OnnxBuilder::attr(m.node("Gemm", "fc", {"f", "w3", "b3"}, {"y"}), "transB", int64_t(1));
  m.output("y", {1, 10});
  auto path = m.save("vtpu_cnn_" + id() + ".onnx");

  Vec x = uniform_values(size_t(144), 6, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}});

  int64_t OH, OW;
  Vec a = conv(x, 1, 12, 12, w1, b1, 8, 3, 1, OH, OW);
  for (int64_t c = 0; c < 8; ++c)
    for (int64_t i = 0; i < OH * OW; ++i) {
      float& v = a[size_t(c * OH * OW + i)];
      v = (v - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5f) * gamma[size_t(c)] + beta[size_t(c)];
    }
  a = maxpool2(relu(a), 8, OH, OW);
  int64_t OH2 = 0, OW2 = 0;
  Vec c2 = relu(conv(a, 8, 6, 6, w2, b2, 16, 3, 0, OH2, OW2));
  c2 = maxpool2(c2, 16, OH2, OW2);
  Vec want = gemm(c2, 1, 64, w3, 10, b3, true);
  expect_close(got, want, tolerance(0.04));
}

// The importer takes over a 1 x 1 kernel's weights from the initializer when its Conv is the
// last node to read them (import/tensors.cpp, take_const_input): a weight read by two Convs
// must reach both whole, and one read by a single Conv its own.
TEST_P(CompileE2E, OneByOneWeightsSharedByTwoConvsReachBoth) {
  OnnxBuilder m;
  m.input("x", {1, 6, 5, 5});
  auto& w = m.init("w", {6, 6, 1, 1}, 0.5f);
  auto& b = m.init("b", {6}, 0.1f);
  auto& w2 = m.init("w2", {4, 6, 1, 1}, 0.5f);
  m.node("Conv", "first", {"x", "w", "b"}, {"c1"});
  m.node("Relu", "relu", {"c1"}, {"r1"});
  m.node("Conv", "second", {"r1", "w", "b"}, {"c2"});  // the same weights again
  m.node("Conv", "third", {"c2", "w2"}, {"y"});
  m.output("y", {1, 4, 5, 5});
  auto path = m.save("vtpu_shared_1x1_" + id() + ".onnx");
  Vec x = uniform_values(size_t(6 * 25), 31, 1000.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  int64_t OH, OW;
  ConvGeom g{1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  Vec r1 = relu(conv_nchw(x, 1, 6, 5, 5, w, b, 6, g, OH, OW));
  Vec c2 = conv_nchw(r1, 1, 6, 5, 5, w, b, 6, g, OH, OW);
  Vec want = conv_nchw(c2, 1, 6, 5, 5, w2, Vec(4, 0.0f), 4, g, OH, OW);
  expect_close(got, want, tolerance(0.03));
}

// First layers on few-channel images, which convolutions read packed from HBM with several
// kernel rows stacked in one matmul row where the array has room (docs/compiler.md): a
// ResNet-style 7x7 stride-2 convolution with ReLU (two kernel-row groups on tpu-v4-core,
// none on the tiny arrays), and a 3x2 kernel with vertical stride 3 and dilation 2 and
// uneven pads (two groups, the second half empty, on tiny-16x16; one on tpu-v4-core)
// followed by a 3x3 stride-2 max pool. Batch 2: the stacked copy is rebuilt per image, and
// where rows are stacked the pool of image 0 runs along image 1's matmuls.
TEST_P(CompileE2E, PackedFirstLayersWithStackedKernelRowsMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t N = 2, C = 3, H = 13, W = 14;
  m.input("a", {N, C, H, W});
  m.input("b", {N, C, H, W});
  const ConvGeom ga{7, 7, 2, 2, 1, 1, 3, 3, 3, 3}, gb{3, 2, 3, 1, 2, 1, 2, 0, 1, 1};
  auto& wa = m.init("wa", {12, C, 7, 7}, 0.2f);
  auto& ba = m.init("ba", {12}, 0.1f);
  auto& wb = m.init("wb", {10, C, 3, 2}, 0.3f);
  auto& bb = m.init("bb", {10}, 0.1f);
  auto* ca = m.node("Conv", "conv_a", {"a", "wa", "ba"}, {"ca"});
  OnnxBuilder::attr(ca, "kernel_shape", std::vector<int64_t>{7, 7});
  OnnxBuilder::attr(ca, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(ca, "pads", std::vector<int64_t>{3, 3, 3, 3});
  m.node("Relu", "relu_a", {"ca"}, {"ya"});
  auto* cb = m.node("Conv", "conv_b", {"b", "wb", "bb"}, {"yb"});
  auto* mp = m.node("MaxPool", "pool_b", {"yb"}, {"pb"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(mp, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(cb, "kernel_shape", std::vector<int64_t>{3, 2});
  OnnxBuilder::attr(cb, "strides", std::vector<int64_t>{3, 1});
  OnnxBuilder::attr(cb, "dilations", std::vector<int64_t>{2, 1});
  OnnxBuilder::attr(cb, "pads", std::vector<int64_t>{2, 0, 1, 1});
  int64_t OHa, OWa, OHb, OWb;
  Vec xa = uniform_values(size_t(N * C * H * W), 21, 1000.0f), xb = uniform_values(size_t(N * C * H * W), 22, 1000.0f);
  Vec want_a = relu(conv_nchw(xa, N, C, H, W, wa, ba, 12, ga, OHa, OWa));
  Vec yb = conv_nchw(xb, N, C, H, W, wb, bb, 10, gb, OHb, OWb);
  int64_t PH = (OHb + 2 - 3) / 2 + 1, PW = (OWb + 2 - 3) / 2 + 1;
  Vec want_b(size_t(N * 10 * PH * PW), -INFINITY);
  for (int64_t nc = 0; nc < N * 10; ++nc)
    for (int64_t py = 0; py < PH; ++py)
      for (int64_t px = 0; px < PW; ++px)
        for (int64_t dy = 0; dy < 3; ++dy)
          for (int64_t dx = 0; dx < 3; ++dx) {
            int64_t iy = py * 2 + dy - 1, ix = px * 2 + dx - 1;
            if (iy < 0 || ix < 0 || iy >= OHb || ix >= OWb) continue;
            float& o = want_b[size_t((nc * PH + py) * PW + px)];
            o = std::max(o, yb[size_t((nc * OHb + iy) * OWb + ix)]);
          }
  m.output("ya", {N, 12, OHa, OWa});
  m.output("pb", {N, 10, PH, PW});
  auto path = m.save("vtpu_packed_" + id() + ".onnx");
  std::map<std::string, Vec> in{{"a", xa}, {"b", xb}};
  expect_close(compile_and_run(path, in, "ya", /*nchw=*/true), want_a, tolerance(0.02));
  expect_close(compile_and_run(path, in, "pb", /*nchw=*/true), want_b, tolerance(0.02));
}

// "Same" convolutions on few channels, each its input's last user, stack kernel rows in one
// matmul row (tap stacks, docs/compiler.md): a 3x3 on 4 channels (two rows on tiny-8x8, all
// three on the others), a 5x5 with ReLU on 8 channels (two rows on tiny-16x16, all five on
// tpu-v4-core, output rows near the top from shorter stacks) and a 5x5 on 4 channels (four
// and one on tiny-16x16). Batch 2: each image's bottom rows stack with zeros.
TEST_P(CompileE2E, SameConvolutionsOnFewChannelsStackKernelRowsMatchFp32Reference) {
  OnnxBuilder m;
  const int64_t N = 2, H = 6, W = 7;
  m.input("a", {N, 4, H, W});
  m.input("b", {N, 8, H, W});
  m.node("Sigmoid", "sigmoid_a", {"a"}, {"ra"});  // may leave nonzero padding lanes: never read
  m.node("Relu", "relu_b", {"b"}, {"rb"});
  const ConvGeom ga{3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, gb{5, 5, 1, 1, 1, 1, 2, 2, 2, 2};
  auto& wa = m.init("wa", {7, 4, 3, 3}, 0.3f);
  auto& ba = m.init("ba", {7}, 0.1f);
  auto& wb = m.init("wb", {6, 8, 5, 5}, 0.15f);
  auto& bb = m.init("bb", {6}, 0.1f);
  auto* ca = m.node("Conv", "conv_a", {"ra", "wa", "ba"}, {"ya"});
  OnnxBuilder::attr(ca, "kernel_shape", std::vector<int64_t>{3, 3});
  OnnxBuilder::attr(ca, "pads", std::vector<int64_t>{1, 1, 1, 1});
  auto* cb = m.node("Conv", "conv_b", {"rb", "wb", "bb"}, {"cb"});
  OnnxBuilder::attr(cb, "kernel_shape", std::vector<int64_t>{5, 5});
  OnnxBuilder::attr(cb, "pads", std::vector<int64_t>{2, 2, 2, 2});
  m.node("Relu", "relu_cb", {"cb"}, {"yb"});
  m.input("c", {N, 4, H, W});
  m.node("Relu", "relu_c", {"c"}, {"rc"});
  auto& wc = m.init("wc", {5, 4, 5, 5}, 0.2f);
  auto& bc = m.init("bc", {5}, 0.1f);
  auto* cc = m.node("Conv", "conv_c", {"rc", "wc", "bc"}, {"yc"});
  OnnxBuilder::attr(cc, "kernel_shape", std::vector<int64_t>{5, 5});
  OnnxBuilder::attr(cc, "pads", std::vector<int64_t>{2, 2, 2, 2});
  m.output("ya", {N, 7, H, W});
  m.output("yb", {N, 6, H, W});
  m.output("yc", {N, 5, H, W});
  auto path = m.save("vtpu_pairs_" + id() + ".onnx");
  Vec xa = uniform_values(size_t(N * 4 * H * W), 31, 1000.0f), xb = uniform_values(size_t(N * 8 * H * W), 32, 1000.0f);
  int64_t OH, OW;
  Vec sa = xa;
  for (auto& v : sa) v = float(1.0 / (1.0 + std::exp(-double(v))));
  Vec want_a = conv_nchw(sa, N, 4, H, W, wa, ba, 7, ga, OH, OW);
  Vec want_b = relu(conv_nchw(relu(xb), N, 8, H, W, wb, bb, 6, gb, OH, OW));
  Vec xc = uniform_values(size_t(N * 4 * H * W), 33, 1000.0f);
  Vec want_c = conv_nchw(relu(xc), N, 4, H, W, wc, bc, 5, gb, OH, OW);
  std::map<std::string, Vec> in{{"a", xa}, {"b", xb}, {"c", xc}};
  expect_close(compile_and_run(path, in, "ya", /*nchw=*/true), want_a, tolerance(0.02));
  expect_close(compile_and_run(path, in, "yb", /*nchw=*/true), want_b, tolerance(0.02));
  expect_close(compile_and_run(path, in, "yc", /*nchw=*/true), want_c, tolerance(0.02));
}

// A residual block (1x1 conv + ReLU, 3x3 conv, add of the block's input, ReLU), batch 2:
// the add goes into the 3x3 convolution's epilogue, in place in the shortcut
// (docs/compiler.md), and must give what the separate add gives; then a global average
// pool over both images.
TEST_P(CompileE2E, ResidualAddFusedIntoTheConvolutionMatchesFp32Reference) {
  OnnxBuilder m;
  const int64_t N = 2, C = 12, H = 5, W = 6;
  m.input("x", {N, C, H, W});
  m.node("Relu", "relu0", {"x"}, {"a"});
  auto& w1 = m.init("w1", {6, C, 1, 1}, 0.3f);
  auto& b1 = m.init("b1", {6}, 0.1f);
  auto* c1 = m.node("Conv", "conv1", {"a", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "kernel_shape", std::vector<int64_t>{1, 1});
  m.node("Relu", "relu1", {"c1"}, {"r1"});
  auto [w2, b2] = conv3x3(m, "conv2", "r1", "c2", 6, C, 0.2f, 0.1f, "w2", "b2");
  m.node("Add", "add", {"c2", "a"}, {"s"});
  m.node("Relu", "relu2", {"s"}, {"y"});
  m.node("GlobalAveragePool", "gap", {"y"}, {"g"});  // one instruction per lane block for both images
  m.output("y", {N, C, H, W});
  m.output("g", {N, C, 1, 1});
  auto path = m.save("vtpu_residual_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 41, 1000.0f);
  int64_t OH, OW;
  Vec a = relu(x);
  Vec r1 = relu(conv_nchw(a, N, C, H, W, w1, b1, 6, {1, 1, 1, 1, 1, 1, 0, 0, 0, 0}, OH, OW));
  Vec want = conv_nchw(r1, N, 6, H, W, w2, b2, C, {3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, OH, OW);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0f, want[i] + a[i]);
  Vec want_g(size_t(N * C), 0.0f);
  for (size_t i = 0; i < want.size(); ++i) want_g[i / size_t(H * W)] += want[i] / float(H * W);
  expect_close(compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true), want, tolerance(0.02));
  expect_close(compile_and_run(path, {{"x", x}}, "g", /*nchw=*/true), want_g, tolerance(0.02));
}

// MobileNet-style separable blocks: depthwise 3x3 + batch norm + ReLU6, a depthwise
// convolution with channel multiplier 2 and stride 2, then a 1x1 convolution in 4 groups.
// 24 channels straddle the lane blocks of every preset.
TEST_P(CompileE2E, DepthwiseAndGroupedConvolutionsMatchFp32Reference) {
  const int64_t C = 24, H = 9, W = 9;
  OnnxBuilder m;
  m.input("img", {1, C, H, W});
  auto& w1 = m.init("w1", {C, 1, 3, 3}, 0.6f);
  auto& b1 = m.init("b1", {C}, 0.2f);
  Vec g(static_cast<size_t>(C)), vr(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) g[size_t(c)] = 0.7f + 0.05f * float(c % 11), vr[size_t(c)] = 0.6f + 0.1f * float(c % 7);
  auto& gamma = m.init("g", {C}, 0, g);
  auto& beta = m.init("be", {C}, 0.2f);
  auto& mean = m.init("mu", {C}, 0.2f);
  auto& var = m.init("var", {C}, 0, vr);
  auto& w2 = m.init("w2", {2 * C, 1, 3, 3}, 0.5f);
  auto& b2 = m.init("b2", {2 * C}, 0.1f);
  auto& w3 = m.init("w3", {32, 2 * C / 4, 1, 1}, 0.4f);
  auto& b3 = m.init("b3", {32}, 0.1f);
  auto* c1 = m.node("Conv", "dw1", {"img", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c1, "group", C);
  m.node("BatchNormalization", "bn1", {"c1", "g", "be", "mu", "var"}, {"n1"});
  auto& lo = m.init("lo", {}, 0, {0.0f});
  auto& hi = m.init("hi", {}, 0, {6.0f});
  m.node("Clip", "relu6", {"n1", "lo", "hi"}, {"r1"});
  auto* c2 = m.node("Conv", "dw2", {"r1", "w2", "b2"}, {"c2"});
  OnnxBuilder::attr(c2, "pads", std::vector<int64_t>{1, 1, 1, 1});
  OnnxBuilder::attr(c2, "strides", std::vector<int64_t>{2, 2});
  OnnxBuilder::attr(c2, "group", C);
  OnnxBuilder::attr(m.node("Conv", "gconv", {"c2", "w3", "b3"}, {"c3"}), "group", int64_t(4));
  m.node("Relu", "relu3", {"c3"}, {"y"});
  m.output("y", {1, 32, 5, 5});
  auto path = m.save("vtpu_depthwise_" + id() + ".onnx");

  Vec x = uniform_values(size_t(C * H * W), 21, 300.0f);
  Vec got = compile_and_run(path, {{"img", x}}, "y", /*nchw=*/true);

  int64_t OH, OW;
  Vec a = conv_grouped(x, C, H, W, w1, b1, C, 3, 1, 1, C, OH, OW);
  int clipped = 0;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < OH * OW; ++i) {
      float& v = a[size_t(c * OH * OW + i)];
      v = (v - mean[size_t(c)]) / std::sqrt(var[size_t(c)] + 1e-5f) * gamma[size_t(c)] + beta[size_t(c)];
      clipped += v < lo[0] || v > hi[0];
      v = std::clamp(v, lo[0], hi[0]);
    }
  ASSERT_GT(clipped, 0) << "the inputs should reach ReLU6's bounds";
  int64_t OH2, OW2, OH3, OW3;
  Vec c2v = conv_grouped(a, C, OH, OW, w2, b2, 2 * C, 3, 2, 1, C, OH2, OW2);
  Vec want = relu(conv_grouped(c2v, 2 * C, OH2, OW2, w3, b3, 32, 1, 1, 0, 4, OH3, OW3));
  ASSERT_EQ(OH3, 5);
  expect_close(got, want, tolerance(0.03));
}

// A depthwise convolution whose whole padded copy does not fit the unified buffer beside its
// input and output, and whose rows are too few and wide for row bands (the OCR classifier's
// 5x5, stride (2, 1) layer over 3 x 96 pixels of 104-200 channels) pads and runs one channel
// block at a time. Here 200 channels: input 120 KB and output 80 KB in bf16 on tiny-16x16's
// 256 KiB, the whole padded copy 291 KB, one channel block of it 22 KB (INT8: half of each,
// on a 128 KiB buffer). Before: refused.
TEST_P(CompileE2E, DepthwisePaddedOneChannelBlockAtATime) {
  if (preset() != "tiny-16x16") GTEST_SKIP() << "sized for tiny-16x16's buffer and 16 lanes";
  const int64_t C = 200, H = 3, W = 96;
  tweak_config = [this](config::Config& cfg) {
    if (int8()) cfg.core.unified_buffer.bytes = 128 * 1024;
  };
  OnnxBuilder m;
  m.input("img", {1, C, H, W});
  auto& w = m.init("w", {C, 1, 5, 5}, 0.3f);
  auto& b = m.init("b", {C}, 0.2f);
  auto* c = m.node("Conv", "dw", {"img", "w", "b"}, {"y"});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{2, 2, 2, 2});
  OnnxBuilder::attr(c, "strides", std::vector<int64_t>{2, 1});
  OnnxBuilder::attr(c, "group", C);
  m.output("y", {1, C, 2, W});
  auto path = m.save("vtpu_depthwise_blocks_" + id() + ".onnx");
  Vec x = uniform_values(size_t(C * H * W), 23, 300.0f);
  Vec got = compile_and_run(path, {{"img", x}}, "y", /*nchw=*/true);
  ConvGeom g{5, 5, 2, 1, 1, 1, 2, 2, 2, 2};
  std::vector<float> wv(w.begin(), w.end());
  Vec want(size_t(C * 2 * W));
  for (int64_t ch = 0; ch < C; ++ch)
    for (int64_t oy = 0; oy < 2; ++oy)
      for (int64_t ox = 0; ox < W; ++ox) {
        double s = b[size_t(ch)];
        for (int64_t ky = 0; ky < 5; ++ky)
          for (int64_t kx = 0; kx < 5; ++kx) {
            int64_t iy = oy * g.sh + ky - g.pt, ix = ox * g.sw + kx - g.pl;
            if (iy < 0 || ix < 0 || iy >= H || ix >= W) continue;
            s += double(x[size_t((ch * H + iy) * W + ix)]) * wv[size_t((ch * 5 + ky) * 5 + kx)];
          }
        want[size_t((ch * 2 + oy) * W + ox)] = float(s);
      }
  expect_close(got, want, tolerance(0.02));
}

// Output rows wider than an accumulator region (512 pixels here, 256 on tiny-8x8): a same
// convolution, a valid one and a stride-2 one over a 600-pixel-wide strip run in column
// pieces of each row.
TEST_P(CompileE2E, RowsWiderThanTheAccumulatorsMatchFp32Reference) {
  const int64_t C = 4, H = 3, W = 600;
  OnnxBuilder m;
  m.input("img", {1, C, H, W});
  auto& w1 = m.init("w1", {8, C, 3, 3}, 0.4f);
  auto& b1 = m.init("b1", {8}, 0.1f);
  auto& w2 = m.init("w2", {6, 8, 3, 3}, 0.3f);
  auto& b2 = m.init("b2", {6}, 0.1f);
  auto& w3 = m.init("w3", {5, 6, 1, 3}, 0.3f);
  auto& b3 = m.init("b3", {5}, 0.1f);
  auto* c1 = m.node("Conv", "same", {"img", "w1", "b1"}, {"c1"});
  OnnxBuilder::attr(c1, "pads", std::vector<int64_t>{1, 1, 1, 1});
  m.node("Relu", "r1", {"c1"}, {"a1"});
  m.node("Conv", "valid", {"a1", "w2", "b2"}, {"c2"});
  auto* c3 = m.node("Conv", "strided", {"c2", "w3", "b3"}, {"y"});
  OnnxBuilder::attr(c3, "strides", std::vector<int64_t>{1, 2});
  m.output("y", {1, 5, 1, 298});
  auto path = m.save("vtpu_wide_rows_" + id() + ".onnx");

  Vec x = uniform_values(size_t(C * H * W), 5, 1000.0f);
  Vec got = compile_and_run(path, {{"img", x}}, "y", /*nchw=*/true);
  int64_t OH, OW, OH2, OW2, OH3, OW3;
  Vec a1 = relu(conv_nchw(x, 1, C, H, W, w1, b1, 8, {3, 3, 1, 1, 1, 1, 1, 1, 1, 1}, OH, OW));
  Vec a2 = conv_nchw(a1, 1, 8, OH, OW, w2, b2, 6, {3, 3, 1, 1, 1, 1, 0, 0, 0, 0}, OH2, OW2);
  Vec want = conv_nchw(a2, 1, 6, OH2, OW2, w3, b3, 5, {1, 3, 1, 2, 1, 1, 0, 0, 0, 0}, OH3, OW3);
  ASSERT_EQ(OW3, 298);
  expect_close(got, want, tolerance(0.03));
}

// ConvTranspose (a decoder's upsampling layer): stride 2, pads 1, output_padding 1, two
// groups, from its definition: every input pixel scatters its kernel-weighted value.
TEST_P(CompileE2E, ConvTransposeMatchesItsScatterDefinition) {
  // A ConvTranspose of CI -> COg x G channels on a 4x5 image against the scatter loop of its
  // ONNX definition: outputs, and useful MACs as the loop's products.
  auto expect_as_defined = [&](int64_t CI, int64_t COg, int64_t G, int64_t K, int64_t S, int64_t P, int64_t OP) {
    const int64_t H = 4, W = 5;
    const int64_t OH = (H - 1) * S + K - 2 * P + OP, OW = (W - 1) * S + K - 2 * P + OP;
    OnnxBuilder m;
    m.input("x", {1, CI, H, W});
    auto& w = m.init("w", {CI, COg, K, K}, 0.4f);
    auto& b = m.init("b", {COg * G}, 0.2f);
    auto* ct = m.node("ConvTranspose", "up", {"x", "w", "b"}, {"y"});
    OnnxBuilder::attr(ct, "strides", std::vector<int64_t>{S, S});
    OnnxBuilder::attr(ct, "pads", std::vector<int64_t>{P, P, P, P});
    OnnxBuilder::attr(ct, "output_padding", std::vector<int64_t>{OP, OP});
    OnnxBuilder::attr(ct, "group", G);
    m.output("y", {1, COg * G, OH, OW});
    auto path = m.save("vtpu_convtranspose_" + id() + ".onnx");
    Vec x = uniform_values(size_t(CI * H * W), 61, 700.0f);
    Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
    Vec want(size_t(COg * G * OH * OW));
    for (int64_t o = 0; o < COg * G; ++o)
      for (int64_t i = 0; i < OH * OW; ++i) want[size_t(o * OH * OW + i)] = b[size_t(o)];
    const int64_t CIg = CI / G;
    uint64_t macs = 0;
    for (int64_t ci = 0; ci < CI; ++ci)
      for (int64_t iy = 0; iy < H; ++iy)
        for (int64_t ix = 0; ix < W; ++ix)
          for (int64_t og = 0; og < COg; ++og)
            for (int64_t kh = 0; kh < K; ++kh)
              for (int64_t kw = 0; kw < K; ++kw) {
                int64_t oy = iy * S - P + kh, ox = ix * S - P + kw, o = ci / CIg * COg + og;
                if (oy < 0 || ox < 0 || oy >= OH || ox >= OW) continue;
                want[size_t((o * OH + oy) * OW + ox)] +=
                    x[size_t((ci * H + iy) * W + ix)] * w[size_t(((ci * COg + og) * K + kh) * K + kw)];
                ++macs;
              }
    expect_close(got, want, tolerance(0.03));
    // Useful MACs are the definition's products, not the equivalent convolution's taps on the
    // zeros between the spread input's pixels (3.4 times as many in the 3x3 case).
    CompileResult r = compile_onnx(path, config::load_preset(preset()), options());
    uint64_t counted = 0;  // the spread's row and the convolution's
    for (const LayerBound& b : r.bounds) counted += b.layer == "up" ? b.macs : 0;
    EXPECT_EQ(counted, macs);
  };
  // 3x3 of stride 2, two groups, output padding: a convolution of the spread input.
  expect_as_defined(10, 6, 2, 3, 2, 1, 1);
  // 2x2 of stride 2 (a detector's upsampling head): phases of 1x1 convolutions through HBM
  // however large the buffer (pipeline/band_subpixel.cpp, phases_through_hbm).
  expect_as_defined(10, 6, 1, 2, 2, 0, 0);
}

// A "same" convolution whose kernel reaches past a narrow image (5x5 on 3x1 pixels, pads 2;
// pytorch's Conv1d_pad2size1 is the 1-D case): taps that land outside every row read nothing.
TEST_P(CompileE2E, SameConvWiderThanTheImageMatchesDefinition) {
  const int64_t N = 2, C = 4, H = 3, W = 1, CO = 6, K = 5, P = 2;
  OnnxBuilder m;
  m.input("x", {N, C, H, W});
  auto& w = m.init("w", {CO, C, K, K}, 0.3f);
  auto& b = m.init("b", {CO}, 0.2f);
  auto* c = m.node("Conv", "conv", {"x", "w", "b"}, {"y"});
  OnnxBuilder::attr(c, "kernel_shape", std::vector<int64_t>{K, K});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{P, P, P, P});
  m.output("y", {N, CO, H, W});
  auto path = m.save("vtpu_same_conv_narrow_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * C * H * W), 89, 600.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  int64_t OH, OW;
  Vec want = conv_nchw(x, N, C, H, W, w, b, CO, {K, K, 1, 1, 1, 1, P, P, P, P}, OH, OW);
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

// A 3-D Conv or ConvTranspose of x by w with bias b into y: groups, kernel, strides, and the
// pads at the start (pb) and end (pe) of each axis.
onnx::NodeProto* volume_node(OnnxBuilder& m, const std::string& op, int64_t groups, const std::vector<int64_t>& k,
                             const std::vector<int64_t>& s, const std::vector<int64_t>& pb, const std::vector<int64_t>& pe) {
  auto* c = m.node(op, op + "_3d", {"x", "w", "b"}, {"y"});
  OnnxBuilder::attr(c, "group", groups);
  OnnxBuilder::attr(c, "kernel_shape", k);
  OnnxBuilder::attr(c, "strides", s);
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{pb[0], pb[1], pb[2], pe[0], pe[1], pe[2]});
  return c;
}

// A 3-D Conv (2 groups, bias, strides, dilations and pads that differ per axis) against
// ONNX's definition.
TEST_P(CompileE2E, Conv3dMatchesDefinition) {
  const int64_t N = 2, CI = 4, G = 2, CO = 6, D = 5, H = 6, W = 7;
  const std::vector<int64_t> k{3, 2, 3}, s{2, 1, 1}, dl{1, 2, 1}, pb{1, 1, 0}, pe{1, 0, 1};
  std::vector<int64_t> out(3);
  const std::vector<int64_t> in{D, H, W};
  for (size_t i = 0; i < 3; ++i) out[i] = (in[i] + pb[i] + pe[i] - dl[i] * (k[i] - 1) - 1) / s[i] + 1;
  OnnxBuilder m;
  m.input("x", {N, CI, D, H, W});
  auto& w = m.init("w", {CO, CI / G, k[0], k[1], k[2]}, 0.3f);
  auto& b = m.init("b", {CO}, 0.2f);
  auto* c = volume_node(m, "Conv", G, k, s, pb, pe);
  OnnxBuilder::attr(c, "dilations", dl);
  m.output("y", {N, CO, out[0], out[1], out[2]});
  auto path = m.save("vtpu_conv3d_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * CI * D * H * W), 95, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  const int64_t CIg = CI / G, COg = CO / G, OD = out[0], OH = out[1], OW = out[2];
  Vec want(size_t(N * CO * OD * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t oh = 0; oh < OH; ++oh)
          for (int64_t ow = 0; ow < OW; ++ow) {
            double acc = b[size_t(o)];
            for (int64_t ci = 0; ci < CIg; ++ci)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t bb = 0; bb < k[1]; ++bb)
                  for (int64_t cc = 0; cc < k[2]; ++cc) {
                    int64_t id = od * s[0] - pb[0] + a * dl[0], ih = oh * s[1] - pb[1] + bb * dl[1], iw = ow * s[2] - pb[2] + cc * dl[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= D || ih >= H || iw >= W) continue;
                    acc += double(x[size_t((((n * CI + o / COg * CIg + ci) * D + id) * H + ih) * W + iw)]) *
                           w[size_t((((o * CIg + ci) * k[0] + a) * k[1] + bb) * k[2] + cc)];
                  }
            want[size_t((((n * CO + o) * OD + od) * OH + oh) * OW + ow)] = float(acc);
          }
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

// A 3-D ConvTranspose (2 groups, bias, strides, pads and output_padding that differ per
// axis) against ONNX's definition: each input voxel scatters its kernel into the output.
TEST_P(CompileE2E, ConvTranspose3dMatchesDefinition) {
  const int64_t N = 2, CI = 4, G = 2, COg = 3, D = 3, H = 4, W = 5;
  const std::vector<int64_t> k{3, 2, 3}, s{2, 1, 2}, pb{1, 0, 1}, pe{0, 1, 1}, op{1, 0, 0};
  std::vector<int64_t> out(3);
  const std::vector<int64_t> in{D, H, W};
  for (size_t i = 0; i < 3; ++i) out[i] = (in[i] - 1) * s[i] - pb[i] - pe[i] + k[i] + op[i];
  OnnxBuilder m;
  m.input("x", {N, CI, D, H, W});
  auto& w = m.init("w", {CI, COg, k[0], k[1], k[2]}, 0.3f);
  auto& b = m.init("b", {G * COg}, 0.2f);
  auto* c = volume_node(m, "ConvTranspose", G, k, s, pb, pe);
  OnnxBuilder::attr(c, "output_padding", op);
  m.output("y", {N, G * COg, out[0], out[1], out[2]});
  auto path = m.save("vtpu_deconv3d_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * CI * D * H * W), 93, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y");
  const int64_t CO = G * COg, OD = out[0], OH = out[1], OW = out[2];
  std::vector<double> acc(size_t(N * CO * OD * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t v = 0; v < OD * OH * OW; ++v) acc[size_t((n * CO + o) * OD * OH * OW + v)] = b[size_t(o)];
  const int64_t CIg = CI / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ci = 0; ci < CI; ++ci)
      for (int64_t id = 0; id < D; ++id)
        for (int64_t ih = 0; ih < H; ++ih)
          for (int64_t iw = 0; iw < W; ++iw)
            for (int64_t og = 0; og < COg; ++og)
              for (int64_t a = 0; a < k[0]; ++a)
                for (int64_t bb = 0; bb < k[1]; ++bb)
                  for (int64_t cc = 0; cc < k[2]; ++cc) {
                    int64_t od = id * s[0] - pb[0] + a, oh = ih * s[1] - pb[1] + bb, ow = iw * s[2] - pb[2] + cc;
                    if (od < 0 || oh < 0 || ow < 0 || od >= OD || oh >= OH || ow >= OW) continue;
                    int64_t o = ci / CIg * COg + og;
                    acc[size_t((((n * CO + o) * OD + od) * OH + oh) * OW + ow)] +=
                        double(x[size_t((((n * CI + ci) * D + id) * H + ih) * W + iw)]) *
                        w[size_t((((ci * COg + og) * k[0] + a) * k[1] + bb) * k[2] + cc)];
                  }
  Vec want(acc.begin(), acc.end());
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

TEST_P(CompileE2E, OneDimensionalConvAndPoolMatchFp32Reference) {
  const int64_t N = 2, CI = 3, L = 40, CO = 8, K = 5, S = 2, D = 2, P = 3, PK = 3, PS = 2;
  const int64_t LC = (L + 2 * P - D * (K - 1) - 1) / S + 1, LP = (LC - PK) / PS + 1;
  OnnxBuilder m;
  m.input("x", {N, CI, L});
  auto& w = m.init("w", {CO, CI, K}, 0.4f);
  auto& b = m.init("b", {CO}, 0.2f);
  auto* c = m.node("Conv", "conv1d", {"x", "w", "b"}, {"c"});
  OnnxBuilder::attr(c, "strides", std::vector<int64_t>{S});
  OnnxBuilder::attr(c, "dilations", std::vector<int64_t>{D});
  OnnxBuilder::attr(c, "pads", std::vector<int64_t>{P, P});
  m.node("Relu", "relu", {"c"}, {"r"});
  auto* mp = m.node("MaxPool", "pool1d", {"r"}, {"y"});
  OnnxBuilder::attr(mp, "kernel_shape", std::vector<int64_t>{PK});
  OnnxBuilder::attr(mp, "strides", std::vector<int64_t>{PS});
  m.output("y", {N, CO, LP});
  auto path = m.save("vtpu_conv1d_" + id() + ".onnx");
  Vec x = uniform_values(size_t(N * CI * L), 67, 700.0f);
  Vec got = compile_and_run(path, {{"x", x}}, "y", /*nchw=*/true);
  Vec conv_out(size_t(N * CO * LC));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t t = 0; t < LC; ++t) {
        float acc = b[size_t(o)];
        for (int64_t ci = 0; ci < CI; ++ci)
          for (int64_t k = 0; k < K; ++k) {
            int64_t at = t * S - P + k * D;
            if (at >= 0 && at < L) acc += x[size_t((n * CI + ci) * L + at)] * w[size_t((o * CI + ci) * K + k)];
          }
        conv_out[size_t((n * CO + o) * LC + t)] = std::max(acc, 0.0f);
      }
  Vec want(size_t(N * CO * LP));
  for (int64_t r = 0; r < N * CO; ++r)
    for (int64_t t = 0; t < LP; ++t) {
      float mx = conv_out[size_t(r * LC + t * PS)];
      for (int64_t k = 1; k < PK; ++k) mx = std::max(mx, conv_out[size_t(r * LC + t * PS + k)]);
      want[size_t(r * LP + t)] = mx;
    }
  ASSERT_EQ(got.size(), want.size());
  expect_close(got, want, tolerance(0.03));
}

}  // namespace
}  // namespace vtpu::compiler
