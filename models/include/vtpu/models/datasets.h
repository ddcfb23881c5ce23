#pragma once
// Datasets Debian packages, for measuring accuracy on real data.
#include <cstdint>
#include <filesystem>
#include <vector>

namespace vtpu::models {

// Grey images as floats in [0, 1], row-major [count, 28, 28], and their labels.
struct ImageSet {
  std::vector<float> pixels;
  std::vector<uint8_t> labels;
  int64_t count = 0, height = 0, width = 0;
};

// Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist). `test` picks the
// 10,000-image test split, else the 60,000-image training split; `limit` caps the count.
// Throws vtpu::UserError naming the package when it is not installed.
ImageSet load_fashion_mnist(bool test, int64_t limit = -1,
                            const std::filesystem::path& dir = "/usr/share/datasets/fashion-mnist");

}  // namespace vtpu::models
