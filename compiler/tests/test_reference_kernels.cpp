// The reference interpreter's convolution with its sums in AVX-512 registers
// (reference/conv_avx512.cpp) against the portable loop (reference/conv.cpp), bit for bit:
// calibration's ranges, and so every INT8 program, come from these values. Inputs hold the
// cases where the two could part: zeros of both signs (the portable loop skips them, the
// registers mask them off), NaN and infinities in inputs and weights, sums that are exactly
// zero, output channels that are not a multiple of the 32 in a register block, rows whose
// pixels are not a multiple of four, strides, dilations and padding, ReLU and Clip bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <cstring>
#include <random>

#include "pipeline/pipeline.h"
#include "reference/interpreter.h"
#include "vtpu/models/onnx_builder.h"

namespace vtpu::compiler {
namespace {

using testing::OnnxBuilder;

struct ConvCase {
  const char* name;
  int64_t n, ci, h, w, co, kh, kw, stride, dilation, pad;
  const char* activation;  // "", "Relu" or "Clip"
  bool special_weights;    // NaN, infinities and zeros of both signs among the weights
};

// Inputs: a third exact zeros (half of them -0), the rest uniform; with `special`, a few NaN
// and infinities too.
std::vector<float> input_values(size_t n, std::mt19937& rng, bool special) {
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::uniform_int_distribution<int> pick(0, 299);
  std::vector<float> x(n);
  for (float& v : x) {
    int k = pick(rng);
    v = k < 50 ? 0.0f : k < 100 ? -0.0f : u(rng);
    if (special && k == 100) v = NAN;
    if (special && k == 101) v = INFINITY;
    if (special && k == 102) v = -INFINITY;
  }
  return x;
}

std::filesystem::path conv_model(const ConvCase& c, std::mt19937& rng) {
  OnnxBuilder b;
  int64_t oh = (c.h + 2 * c.pad - c.dilation * (c.kh - 1) - 1) / c.stride + 1;
  int64_t ow = (c.w + 2 * c.pad - c.dilation * (c.kw - 1) - 1) / c.stride + 1;
  b.input("x", {c.n, c.ci, c.h, c.w});
  std::vector<float> w = input_values(size_t(c.co * c.ci * c.kh * c.kw), rng, c.special_weights);
  b.init("w", {c.co, c.ci, c.kh, c.kw}, 1.0f, w);
  // A bias of zero in some channels: sums of zero products stay exactly zero there.
  std::vector<float> bias(size_t(c.co));
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = i % 3 == 0 ? -0.0f : i % 3 == 1 ? 0.0f : 0.25f * float(i);
  b.init("b", {c.co}, 1.0f, bias);
  auto* conv = b.node("Conv", "conv", {"x", "w", "b"}, {std::string(c.activation).empty() ? "y" : "c"});
  OnnxBuilder::attr(conv, "kernel_shape", std::vector<int64_t>{c.kh, c.kw});
  OnnxBuilder::attr(conv, "strides", std::vector<int64_t>{c.stride, c.stride});
  OnnxBuilder::attr(conv, "dilations", std::vector<int64_t>{c.dilation, c.dilation});
  OnnxBuilder::attr(conv, "pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad});
  if (std::string(c.activation) == "Relu") b.node("Relu", "relu", {"c"}, {"y"});
  if (std::string(c.activation) == "Clip") {
    b.init("lo", {}, 1.0f, {-0.5f});
    b.init("hi", {}, 1.0f, {1.5f});
    b.node("Clip", "clip", {"c", "lo", "hi"}, {"y"});
  }
  b.output("y", {c.n, c.co, oh, ow});
  return b.save(std::string("vtpu_reference_kernels_") + c.name + ".onnx");
}

// Bits, so that -0 differs from 0 and NaN equals itself.
std::vector<uint32_t> bits(const std::vector<float>& x) {
  std::vector<uint32_t> r(x.size());
  std::memcpy(r.data(), x.data(), x.size() * sizeof(float));
  return r;
}

void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }

class ReferenceConv : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ReferenceConv, RegistersGiveThePortableLoopsValuesBitForBit) {
  if (!reference::avx512_kernels()) GTEST_SKIP() << "this processor has no AVX-512";
  const ConvCase& c = GetParam();
  std::mt19937 rng(17);
  auto path = conv_model(c, rng);
  Frontend front(path, CompileOptions{});
  front.import();
  front.lower();
  auto fn = front.main();
  auto t = mlir::cast<mlir::RankedTensorType>(fn.getArgument(0).getType());
  RefTensor x{{t.getShape().begin(), t.getShape().end()}, input_values(size_t(t.getNumElements()), rng, true)};
  // The first rows of each image (NHWC) all zeros: the first output row's sums are the bias
  // exactly, +0 or -0 in two channels of three.
  int64_t rows = std::min(c.h, c.kh * c.dilation), row_size = c.w * c.ci;
  for (int64_t n = 0; n < c.n; ++n) std::fill_n(x.data.begin() + n * c.h * row_size, rows * row_size, 0.0f);
  reference::allow_avx512_kernels(false);
  std::vector<RefTensor> portable = evaluate_reference(fn, {x});
  reference::allow_avx512_kernels(true);
  std::vector<RefTensor> simd = evaluate_reference(fn, {x});
  std::filesystem::remove(path);
  ASSERT_EQ(portable.size(), 1u);
  ASSERT_EQ(simd.size(), 1u);
  EXPECT_EQ(simd[0].shape, portable[0].shape);
  std::vector<uint32_t> want = bits(portable[0].data), got = bits(simd[0].data);
  ASSERT_EQ(got.size(), want.size());
  size_t differ = 0, negative_zeros = 0, nans = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    // Every bit of every number, and NaN where NaN: the sign of a NaN the processor makes
    // (inf x 0) is the instruction's choice, and the compiler's: the asan-ubsan preset's
    // unoptimised build gave the portable loop's separate multiply and add -NaN where the
    // fused one gives +NaN (scripts/asan-suite.sh, kernel5 and specials40).
    bool both_nan = std::isnan(portable[0].data[i]) && std::isnan(simd[0].data[i]);
    differ += got[i] != want[i] && !both_nan;
    negative_zeros += want[i] == 0x80000000u;
    nans += std::isnan(portable[0].data[i]);
  }
  EXPECT_EQ(differ, 0u) << "of " << want.size() << " outputs";
  // The cases reach what they are about: sums of -0, and NaN where weights are special.
  if (std::string(c.activation).empty()) {
    EXPECT_GT(negative_zeros, 0u);
  }
  if (c.special_weights) {
    EXPECT_GT(nans, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceConv,
    ::testing::Values(ConvCase{"pointwise64", 1, 16, 6, 9, 64, 1, 1, 1, 1, 0, "Relu", false},
                      ConvCase{"tail7", 2, 5, 7, 7, 7, 3, 3, 1, 1, 1, "", false},
                      ConvCase{"tail45", 1, 9, 8, 10, 45, 3, 3, 2, 1, 1, "Clip", false},
                      ConvCase{"dilated33", 1, 4, 11, 13, 33, 3, 3, 1, 2, 2, "Relu", false},
                      ConvCase{"kernel5", 1, 3, 9, 6, 32, 5, 5, 2, 1, 2, "", false},
                      ConvCase{"oneChannel", 1, 1, 5, 3, 1, 3, 3, 1, 1, 1, "", false},
                      ConvCase{"specials40", 1, 6, 6, 7, 40, 3, 3, 1, 1, 1, "", true},
                      ConvCase{"specialsRelu96", 2, 8, 5, 5, 96, 1, 1, 1, 1, 0, "Relu", true}),
    [](const ::testing::TestParamInfo<ConvCase>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace vtpu::compiler
