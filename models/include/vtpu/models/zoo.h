#pragma once
// The model zoo: real architectures as ONNX, generated deterministically (fixed seeds) by
// C++ so a user never needs a network or Python. `vtpu models` lists them and `vtpu run
// NAME` materializes one on first use.
#include <filesystem>
#include <string>
#include <vector>

namespace vtpu::models {

struct ZooEntry {
  std::string name;
  std::string description;
  std::string source;        // what the shape follows
  std::string default_config;
  std::string default_dtype;
  std::string dataset;  // "fashion-mnist" when the model is trained on a dataset vtpu can load
  std::string image_norm = "unit";  // how image files become its input: unit or imagenet
};

const std::vector<ZooEntry>& zoo();
const ZooEntry* find(const std::string& name);

// Writes NAME.onnx into `dir` unless it is there already; returns its path. Throws
// vtpu::UserError for an unknown name (listing the zoo).
std::filesystem::path materialize(const std::string& name, const std::filesystem::path& dir);

// Where `vtpu run NAME` keeps generated models: $VTPU_MODEL_DIR, else <tmp>/vtpu-zoo-N (N: the zoo version).
std::filesystem::path default_dir();

}  // namespace vtpu::models
