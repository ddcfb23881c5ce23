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
        std::vector<int32_t> v32(b.size() / 4);
        std::memcpy(v32.data(), b.data(), v32.size() * 4);
        if (t.nhwc) v32 = nhwc_to_nchw(v32, t.shape);
        arr.descr = "<i4";
        arr.data.assign(v32.size() * 4, 0);
        std::memcpy(arr.data.data(), v32.data(), arr.data.size());
      }
    runtime::write_npy(file_in_dir(dir, name, ".npy", "output"), arr);
  }
}

}  // namespace vtpu::cli
