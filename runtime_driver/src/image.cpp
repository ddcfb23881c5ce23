#include "vtpu/runtime/image.h"

#include <fmt/format.h>
#include <stb/stb_image.h>
#include <stb/stb_image_resize.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <memory>

#include "vtpu/support/error.h"

namespace vtpu::runtime {

const ImageNorm ImageNorm::kUnit{{0.0f}, {1.0f}, "unit"};
const ImageNorm ImageNorm::kImageNet{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, "imagenet"};

namespace {

// "M[,M,M]": one or three numbers.
std::vector<float> norm_values(const std::string& text, const std::string& spec, const char* part) {
  std::vector<float> v;
  for (size_t at = 0; at <= text.size();) {
    size_t end = std::min(text.find(',', at), text.size());
    std::string x = text.substr(at, end - at);
    size_t used = 0;
    float f = 0;
    try {
      f = std::stof(x, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (x.empty() || used != x.size() || !std::isfinite(f))
      throw UserError(fmt::format("--image-norm {}: '{}' in {} is not a number", spec, x, part));
    v.push_back(f);
    at = end + 1;
  }
  if (v.size() != 1 && v.size() != 3)
    throw UserError(fmt::format("--image-norm {}: {} takes one value (every channel) or three (R, G, B), not {}", spec, part,
                                v.size()));
  return v;
}

}  // namespace

ImageNorm image_norm_from_name(const std::string& name) {
  if (name == "unit") return ImageNorm::kUnit;
  if (name == "imagenet") return ImageNorm::kImageNet;
  ImageNorm n;
  n.name = name;
  bool any = false;
  for (size_t at = 0; at < name.size();) {
    size_t end = std::min(name.find(':', at), name.size());
    std::string part = name.substr(at, end - at);
    if (part.rfind("mean=", 0) == 0) n.mean = norm_values(part.substr(5), name, "mean"), any = true;
    else if (part.rfind("std=", 0) == 0) n.std = norm_values(part.substr(4), name, "std"), any = true;
    else
      throw UserError(fmt::format("--image-norm '{}': use unit (pixel / 255), imagenet (ImageNet mean and std) or "
                                  "mean=M[,M,M]:std=S[,S,S] (value = (pixel / 255 - mean) / std)",
                                  name));
    at = end + 1;
  }
  if (!any) throw UserError(fmt::format("--image-norm '{}': give unit, imagenet or mean=...:std=...", name));
  for (float s : n.std)
    if (s <= 0) throw UserError(fmt::format("--image-norm {}: std {} is not positive", name, s));
  return n;
}

std::string image_norm_error(const std::string& name) {
  try {
    image_norm_from_name(name);
    return "";
  } catch (const UserError& e) {
    return fmt::format("{} not in {{unit,imagenet}} and not mean=M[,M,M]:std=S[,S,S] ({})", name, e.what());
  }
}

std::string image_norm_name(const ImageNorm& n) { return n.name; }

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
  // Per channel: one value for all, three for RGB, the average of three for grey.
  auto per_channel = [&](const std::vector<float>& v, int64_t c) {
    if (v.size() == 1) return v[0];
    return C == 3 ? v[size_t(c)] : float((double(v[0]) + v[1] + v[2]) / 3);  // imagenet: 0.449, 0.226
  };
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
          if (norm.name != "unit") v = (v - per_channel(norm.mean, c)) / per_channel(norm.std, c);
          out[size_t(((n * C + c) * H + y) * W + x)] = v;
        }
  }
  return out;
}

}  // namespace vtpu::runtime
