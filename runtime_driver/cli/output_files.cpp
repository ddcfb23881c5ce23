#include "output_files.h"

#include <fmt/format.h>

#include <cstring>
#include <map>

#include "vtpu/runtime/npy.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/error.h"
#include "vtpu/support/files.h"
#include "vtpu/support/layout.h"

namespace vtpu::cli {

std::map<std::string, std::string> model_output_types(const std::string& model) {
  if (std::filesystem::path(model).extension() == ".vtpu") return {};
  return runtime::onnx_output_types(model);
}

std::string descr_of_model_type(const std::string& t) {
  static const std::map<std::string, std::string> kDescr{
      {"float16", "<f2"}, {"float64", "<f8"}, {"int64", "<i8"},  {"int32", "<i4"},  {"int16", "<i2"}, {"int8", "|i1"},
      {"uint64", "<u8"},  {"uint32", "<u4"},  {"uint16", "<u2"}, {"uint8", "|u1"},  {"bool", "|b1"}};
  auto it = kDescr.find(t);
  return it == kDescr.end() ? "" : it->second;
}

std::vector<int32_t> int32_values(const std::vector<uint8_t>& bytes) {
  std::vector<int32_t> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

runtime::NpyArray integer_output(const std::vector<int32_t>& v, const std::vector<int64_t>& shape, const std::string& type) {
  // The int32 values each integer type holds (every int32 fits int64).
  static const std::map<std::string, std::pair<double, double>> kRange = {
      {"<i8", {-2147483648.0, 2147483647.0}}, {"|b1", {0, 1}},     {"|i1", {-128, 127}},
      {"|u1", {0, 255}},                      {"<i2", {-32768, 32767}}, {"<u2", {0, 65535}},
      {"<u4", {0, 4294967295.0}},             {"<u8", {0, 4294967295.0}}};
  std::vector<double> values(v.begin(), v.end());
  auto range = kRange.find(type);
  bool fits = range != kRange.end();
  for (size_t i = 0; fits && i < values.size(); ++i) fits = values[i] >= range->second.first && values[i] <= range->second.second;
  return runtime::npy_of(fits ? type : "<i4", shape, values);
}

void write_output_files(const std::filesystem::path& dir, const std::vector<isa::TensorInfo>& tensors,
                        const std::map<std::string, std::vector<float>>& outputs,
                        const std::map<std::string, std::vector<int64_t>>& shapes,
                        const std::map<std::string, std::vector<uint8_t>>& raw,
                        const std::map<std::string, std::string>& given_types) {
  make_output_dir(dir);
  // The ONNX file's types when the run had one, else those the program records.
  std::map<std::string, std::string> types = given_types;
  for (const auto& t : tensors)
    if (t.role == isa::TensorRole::Output && !t.model_type.empty() && !types.count(t.name))
      if (std::string d = descr_of_model_type(t.model_type); !d.empty()) types[t.name] = d;
  for (const auto& [name, v] : outputs) {
    runtime::NpyArray arr{"<f4", shapes.at(name), std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(arr.data.data(), v.data(), arr.data.size());
    // A float16 or float64 output in its own type (the chip's values rounded to float16 as
    // the model would, or widened exactly).
    if (auto type = types.find(name); type != types.end() && (type->second == "<f2" || type->second == "<f8"))
      arr = runtime::npy_of(type->second, arr.shape, std::vector<double>(v.begin(), v.end()));
    for (const auto& t : tensors)
      if (t.name == name && t.role == isa::TensorRole::Output && t.dtype == isa::Dtype::Int32) {
        // Integer outputs exactly, in the model's own integer type (images back in NCHW order).
        const auto& b = raw.at(name);
        std::vector<int32_t> v32 = int32_values(b);
        if (t.nhwc) v32 = nhwc_to_nchw(v32, t.shape);
        auto type = types.find(name);
        arr = integer_output(v32, arr.shape, type == types.end() ? "<i4" : type->second);
      }
    runtime::write_npy(file_in_dir(dir, name, ".npy", "output"), arr);
  }
}

}  // namespace vtpu::cli
