#include "vtpu/runtime/image.h"

#include <fmt/format.h>
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "vtpu/support/error.h"

namespace vtpu::runtime {

ImageNorm image_norm_from_name(const std::string& name) {
  if (name == "unit") return ImageNorm::kUnit;
  if (name == "imagenet") return ImageNorm::kImageNet;
  throw UserError(fmt::format("--image-norm '{}': use unit (pixel / 255) or imagenet (ImageNet mean and std)", name));
}

std::string image_norm_name(ImageNorm n) { return n == ImageNorm::kUnit ? "unit" : "imagenet"; }

bool is_image_file(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  for (const char* x : {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".pnm", ".tga"})
    if (e == x) return true;
  return false;
}

std::vector<float> image_tensor(const std::vector<std::filesystem::path>& files, const std::vector<int64_t>& nchw,
                                ImageNorm norm, const std::string& tensor) {
  if (nchw.size() != 4 || (nchw[1] != 1 && nchw[1] != 3))
    throw UserError(fmt::format("input '{}' has shape [{}]: image files fill [N, 1 or 3, H, W] inputs only; give a .npy file",
                                tensor, fmt::join(nchw, ", ")));
  const int64_t N = nchw[0], C = nchw[1], H = nchw[2], W = nchw[3];
  if (int64_t(files.size()) != N)
    throw UserError(fmt::format("input '{}' is a batch of {} images but {} image file(s) were given (separate them with "
                                "commas, or run with --batch {})",
                                tensor, N, files.size(), files.size()));
  static const float kMean[3] = {0.485f, 0.456f, 0.406f}, kStd[3] = {0.229f, 0.224f, 0.225f};
  std::vector<float> out(size_t(N * C * H * W));
  for (int64_t n = 0; n < N; ++n) {
    const auto& f = files[size_t(n)];
    int w = 0, h = 0, channels_in_file = 0;
    std::unique_ptr<unsigned char, void (*)(void*)> px(stbi_load(f.string().c_str(), &w, &h, &channels_in_file, int(C)),
                                                       stbi_image_free);
    if (!px)
      throw UserError(fmt::format("{}: cannot read the image ({}); PNG, JPEG, BMP, PPM/PGM and TGA are supported", f.string(),
                                  stbi_failure_reason() ? stbi_failure_reason() : "unknown error"));
    // Resize so the shorter side fits, then take the center H x W.
    double s = std::max(double(H) / h, double(W) / w);
    int rw = std::max<int>(int(W), int(std::lround(w * s))), rh = std::max<int>(int(H), int(std::lround(h * s)));
    std::vector<unsigned char> resized(size_t(rw) * size_t(rh) * size_t(C));
    if (rw == w && rh == h) {
      std::copy(px.get(), px.get() + resized.size(), resized.begin());
    } else if (!stbir_resize_uint8(px.get(), w, h, 0, resized.data(), rw, rh, 0, int(C))) {
      throw UserError(fmt::format("{}: resizing the {}x{} image to {}x{} failed", f.string(), w, h, rw, rh));
    }
    int x0 = (rw - int(W)) / 2, y0 = (rh - int(H)) / 2;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          float v = float(resized[(size_t(y0 + y) * size_t(rw) + size_t(x0 + x)) * size_t(C) + size_t(c)]) / 255.0f;
          if (norm == ImageNorm::kImageNet) v = C == 3 ? (v - kMean[c]) / kStd[c] : (v - 0.449f) / 0.226f;
          out[size_t(((n * C + c) * H + y) * W + x)] = v;
        }
  }
  return out;
}

}  // namespace vtpu::runtime
