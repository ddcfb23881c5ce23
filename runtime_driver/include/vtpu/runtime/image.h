#pragma once
// Image files as model inputs (PNG, JPEG, BMP, PPM/PGM, TGA through Debian's libstb):
// decoded, resized so the shorter side matches the model and center-cropped, then scaled to
// floats the way the model was trained.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace vtpu::runtime {

// How pixels become values: (pixel / 255 - mean[c]) / std[c] for channel c, with one value
// for every channel or one per RGB channel (a grey image takes the average of three).
struct ImageNorm {
  std::vector<float> mean{0.0f}, std{1.0f};
  std::string name = "unit";
  static const ImageNorm kUnit;      // pixel / 255, in [0, 1] (LeNet on Fashion-MNIST)
  static const ImageNorm kImageNet;  // torchvision's ImageNet mean and std per RGB channel
};
// "unit", "imagenet", or "mean=M[,M,M]:std=S[,S,S]" (either part may be left out: mean 0,
// std 1; e.g. mean=0.5,0.5,0.5:std=0.5,0.5,0.5 for values in [-1, 1]); UserError otherwise.
ImageNorm image_norm_from_name(const std::string& name);
// Why `name` is not an image normalisation, or "" when it is (for the command line's check).
std::string image_norm_error(const std::string& name);
std::string image_norm_name(const ImageNorm& n);

// True for file names the image loader takes (by extension, case-insensitive).
bool is_image_file(const std::filesystem::path& p);

// One NCHW float tensor [N, C, H, W] (C = 1: grey, C = 3: RGB) from N image files. Errors
// (unreadable file, wrong count, a shape that is not an image) name the file and the fix.
std::vector<float> image_tensor(const std::vector<std::filesystem::path>& files, const std::vector<int64_t>& nchw,
                                ImageNorm norm, const std::string& tensor);

}  // namespace vtpu::runtime
