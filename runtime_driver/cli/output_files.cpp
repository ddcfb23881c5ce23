#include "output_files.h"

#include <fmt/format.h>

#include <cstring>

#include "vtpu/runtime/npy.h"
#include "vtpu/support/error.h"
#include "vtpu/support/files.h"
#include "vtpu/support/layout.h"

namespace vtpu::cli {

void write_output_files(const std::filesystem::path& dir, const std::vector<isa::TensorInfo>& tensors,
                        const std::map<std::string, std::vector<float>>& outputs,
                        const std::map<std::string, std::vector<int64_t>>& shapes,
                        const std::map<std::string, std::vector<uint8_t>>& raw) {
  make_output_dir(dir);
  for (const auto& [name, v] : outputs) {
    runtime::NpyArray arr{"<f4", shapes.at(name), std::vector<uint8_t>(v.size() * 4)};
    std::memcpy(arr.data.data(), v.data(), arr.data.size());
    for (const auto& t : tensors)
      if (t.name == name && t.role == isa::TensorRole::Output && t.dtype == isa::Dtype::Int32) {
        // Integer outputs are written as int32, bit for bit (images back in NCHW order).
        const auto& b = raw.at(name);
        std::vector<float> pos(b.size() / 4);
        for (size_t i = 0; i < pos.size(); ++i) pos[i] = float(i);
        if (t.nhwc) pos = nhwc_to_nchw(pos, t.shape);
        arr.descr = "<i4";
        for (size_t i = 0; i < pos.size(); ++i) std::memcpy(&arr.data[i * 4], &b[size_t(pos[i]) * 4], 4);
      }
    runtime::write_npy(file_in_dir(dir, name, ".npy", "output"), arr);
  }
}

}  // namespace vtpu::cli
