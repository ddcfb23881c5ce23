#include "vtpu/models/datasets.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

#include "vtpu/support/error.h"

namespace vtpu::models {
namespace {

std::vector<uint8_t> gunzip(const std::filesystem::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");
  if (!f)
    throw UserError(fmt::format("{}: cannot open; install Debian's dataset-fashion-mnist (scripts/install-deps.sh)",
                                p.string()));
  std::vector<uint8_t> out;
  uint8_t buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | b[at + 3];
}

}  // namespace

ImageSet load_fashion_mnist(bool test, int64_t limit, const std::filesystem::path& dir) {
  std::string prefix = test ? "t10k" : "train";
  auto images = gunzip(dir / (prefix + "-images-idx3-ubyte.gz"));
  auto labels = gunzip(dir / (prefix + "-labels-idx1-ubyte.gz"));
  if (images.size() < 16 || be32(images, 0) != 2051 || labels.size() < 8 || be32(labels, 0) != 2049)
    throw UserError(fmt::format("{}: not Fashion-MNIST IDX files", dir.string()));
  ImageSet s;
  s.count = be32(images, 4);
  s.height = be32(images, 8), s.width = be32(images, 12);
  if (limit >= 0) s.count = std::min<int64_t>(s.count, limit);
  size_t px = size_t(s.height * s.width);
  s.pixels.resize(size_t(s.count) * px);
  for (size_t i = 0; i < s.pixels.size(); ++i) s.pixels[i] = float(images[16 + i]) / 255.0f;
  s.labels.assign(labels.begin() + 8, labels.begin() + 8 + s.count);
  return s;
}

}  // namespace vtpu::models
