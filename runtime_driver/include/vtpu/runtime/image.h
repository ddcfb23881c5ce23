#pragma once
// Image files as model inputs (PNG, JPEG, BMP, PPM/PGM, TGA through Debian's libstb):
// decoded, resized so the shorter side matches the model and center-cropped, then scaled to
// floats the way the model was trained.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vtpu::runtime {

enum class ImageNorm {
  kUnit,      // pixel / 255, in [0, 1] (LeNet on Fashion-MNIST)
  kImageNet,  // (pixel / 255 - mean) / std per RGB channel (torchvision's ImageNet models)
};
ImageNorm image_norm_from_name(const std::string& name);  // "unit" or "imagenet"; UserError otherwise
std::string image_norm_name(ImageNorm n);

// True for file names the image loader takes (by extension, case-insensitive).
bool is_image_file(const std::filesystem::path& p);

// One NCHW float tensor [N, C, H, W] (C = 1: grey, C = 3: RGB) from N image files. Errors
// (unreadable file, wrong count, a shape that is not an image) name the file and the fix.
std::vector<float> image_tensor(const std::vector<std::filesystem::path>& files, const std::vector<int64_t>& nchw,
                                ImageNorm norm, const std::string& tensor);

}  // namespace vtpu::runtime
