// Image files as model inputs: decoding, resizing/cropping and scaling checked against the
// pixels written, and a Fashion-MNIST test image as a PNG through the trained LeNet-5.
#include <gtest/gtest.h>
#include <stb/stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "vtpu/models/datasets.h"
#include "vtpu/models/zoo.h"
#include "vtpu/runtime/image.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"

namespace vtpu::runtime {
namespace {

std::filesystem::path tmp(const std::string& name) { return std::filesystem::temp_directory_path() / name; }

TEST(Image, PngPixelsScaleToUnitAndImageNetRanges) {
  // 2x2 RGB: each pixel's channels are distinct known bytes.
  const unsigned char px[12] = {0, 128, 255, 10, 20, 30, 200, 100, 50, 255, 255, 255};
  auto f = tmp("vtpu_img_rgb.png");
  ASSERT_TRUE(stbi_write_png(f.string().c_str(), 2, 2, 3, px, 6));
  auto unit = image_tensor({f}, {1, 3, 2, 2}, ImageNorm::kUnit, "x");
  ASSERT_EQ(unit.size(), 12u);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(unit[size_t(c * 4 + i)], float(px[i * 3 + c]) / 255.0f) << c << " " << i;
  auto in = image_tensor({f}, {1, 3, 2, 2}, ImageNorm::kImageNet, "x");
  EXPECT_NEAR(in[0], (0.0f - 0.485f) / 0.229f, 1e-6);           // R of pixel 0
  EXPECT_NEAR(in[4 + 3], (1.0f - 0.456f) / 0.224f, 1e-6);       // G of pixel 3
}

TEST(Image, MeanAndStdOfTheUsersChoice) {
  const unsigned char px[12] = {0, 128, 255, 10, 20, 30, 200, 100, 50, 255, 255, 255};
  auto f = tmp("vtpu_img_rgb_norm.png");
  ASSERT_TRUE(stbi_write_png(f.string().c_str(), 2, 2, 3, px, 6));
  // One value for every channel: [-1, 1] as many exporters train with.
  ImageNorm half = image_norm_from_name("mean=0.5:std=0.5");
  auto v = image_tensor({f}, {1, 3, 2, 2}, half, "x");
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(v[size_t(c * 4 + i)], (float(px[i * 3 + c]) / 255.0f - 0.5f) / 0.5f);
  // Per channel, in either order; the same figures as the imagenet preset.
  auto a = image_tensor({f}, {1, 3, 2, 2}, image_norm_from_name("std=0.229,0.224,0.225:mean=0.485,0.456,0.406"), "x");
  EXPECT_EQ(a, image_tensor({f}, {1, 3, 2, 2}, ImageNorm::kImageNet, "x"));
  // A grey image takes the average of three: imagenet's 0.449 and 0.226.
  auto g = image_tensor({f}, {1, 1, 2, 2}, ImageNorm::kImageNet, "x");
  auto u = image_tensor({f}, {1, 1, 2, 2}, ImageNorm::kUnit, "x");
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(g[i], (u[i] - 0.449f) / 0.226f);
  EXPECT_EQ(image_norm_name(half), "mean=0.5:std=0.5");
  for (const char* bad : {"mean=0.5,0.5", "std=0", "mean=x", "mean=0.5:scale=2", "", "mean=1e99"}) {
    EXPECT_THROW(image_norm_from_name(bad), UserError) << bad;
    EXPECT_NE(image_norm_error(bad), "") << bad;
  }
  EXPECT_EQ(image_norm_error("mean=0.5,0.4,0.3:std=0.2"), "");
}

TEST(Image, ShorterSideIsResizedAndTheCenterCropped) {
  // A 8x4 grey image: left half 0, right half 255; taken as 2x2 it is resized to 4x2 and the
  // center 2x2 straddles the edge: its left column dark, its right column bright.
  std::vector<unsigned char> px(8 * 4);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 8; ++x) px[size_t(y * 8 + x)] = x < 4 ? 0 : 255;
  auto f = tmp("vtpu_img_wide.png");
  ASSERT_TRUE(stbi_write_png(f.string().c_str(), 8, 4, 1, px.data(), 8));
  auto v = image_tensor({f}, {1, 1, 2, 2}, ImageNorm::kUnit, "x");
  ASSERT_EQ(v.size(), 4u);
  EXPECT_LT(v[0], 0.5f);
  EXPECT_GT(v[1], 0.5f);
  EXPECT_LT(v[2], 0.5f);
  EXPECT_GT(v[3], 0.5f);
}

TEST(Image, BadFilesAndShapesAreClearErrors) {
  auto junk = tmp("vtpu_img_junk.png");
  std::ofstream(junk) << "not a png";
  try {
    image_tensor({junk}, {1, 1, 28, 28}, ImageNorm::kUnit, "image");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("vtpu_img_junk.png"), std::string::npos) << e.what();
  }
  EXPECT_THROW(image_tensor({junk, junk}, {1, 1, 28, 28}, ImageNorm::kUnit, "image"), UserError);  // 2 files, batch 1
  EXPECT_THROW(image_tensor({junk}, {1, 4, 28, 28}, ImageNorm::kUnit, "image"), UserError);        // 4 channels
  EXPECT_THROW(image_norm_from_name("zscore"), UserError);
}

// Fashion-MNIST test images written as PNGs and given to the trained LeNet-5 (INT8 on the
// chip): at least 9 of the first 10 classified as their labels (the model scores ~90% over
// the test set; a wrong pixel order, scale or channel count would fall to chance).
TEST(Image, TrainedLeNetClassifiesPngsOfTestImages) {
  auto set = models::load_fashion_mnist(/*test=*/true, 10);
  auto model = models::materialize("lenet5-fmnist", models::default_dir());
  std::vector<std::filesystem::path> files;
  for (int64_t i = 0; i < set.count; ++i) {
    std::vector<unsigned char> px(28 * 28);
    for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<unsigned char>(std::lround(set.pixels[size_t(i) * 784 + k] * 255.0f));
    files.push_back(tmp("vtpu_fmnist_" + std::to_string(i) + ".png"));
    ASSERT_TRUE(stbi_write_png(files.back().string().c_str(), 28, 28, 1, px.data(), 28));
  }
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "" : ",") + f.string();
  std::string out = run_in_child(
      [&] {
        RunOptions o;
        o.precision = compiler::Precision::Int8;
        o.batch = set.count;
        o.input_files["image"] = list;
        auto run = run_model(model, config::load_preset("edge"), o);
        const auto& y = run.outputs.begin()->second;  // [batch, 10]
        std::string classes;
        for (int64_t i = 0; i < set.count; ++i)
          classes += char('0' + (std::max_element(y.begin() + i * 10, y.begin() + i * 10 + 10) - (y.begin() + i * 10)));
        return classes;
      },
      [](const std::exception& e) { return std::string("ERR ") + e.what(); }, "ERR child crashed");
  ASSERT_EQ(out.size(), size_t(set.count)) << out;
  int right = 0;
  for (int64_t i = 0; i < set.count; ++i) right += out[size_t(i)] - '0' == set.labels[size_t(i)];
  EXPECT_GE(right, 9) << "predicted " << out;
}

}  // namespace
}  // namespace vtpu::runtime
