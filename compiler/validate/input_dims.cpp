// A graph input's dimensions as the compiler builds it (validate.h, input_dims): the one
// place the batch (--batch) and the user's shapes (--shape NAME=...) meet the model's
// declared dimensions, for the validator's checks and the importer alike.
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "validate.h"
#include "vtpu/support/error.h"

namespace vtpu::compiler {

std::string model_dims(const onnx::ValueInfoProto& in) {
  std::vector<std::string> dims;
  for (const auto& d : in.type().tensor_type().shape().dim())
    dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param().empty() ? "?" : d.dim_param());
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::vector<int64_t> input_dims(const onnx::ValueInfoProto& in, int64_t batch, const InputShapes& shapes) {
  const auto& shape = in.type().tensor_type().shape();
  std::vector<int64_t> dims;
  auto given = shapes.find(in.name());
  if (given == shapes.end()) {
    for (int i = 0; i < shape.dim_size(); ++i) {
      const auto& d = shape.dim(i);
      int64_t v = d.has_dim_value() ? d.dim_value() : -1;
      if (i == 0 && (batch > 0 || v < 0)) v = batch > 0 ? batch : 1;
      dims.push_back(v);
    }
    return dims;
  }
  const std::vector<int64_t>& g = given->second;
  std::string spec = fmt::format("--shape {}={}", in.name(), fmt::join(g, "x"));
  if (int64_t(g.size()) != shape.dim_size())
    throw UserError(fmt::format("{}: input '{}' has {} dimensions {}, not {}; give one value per dimension", spec,
                                in.name(), shape.dim_size(), model_dims(in), g.size()));
  for (int i = 0; i < shape.dim_size(); ++i) {
    if (g[size_t(i)] < 1)
      throw UserError(fmt::format("{}: dimension {} is {}; dimensions are 1 or more", spec, i, g[size_t(i)]));
    const auto& d = shape.dim(i);
    if (i > 0 && d.has_dim_value() && d.dim_value() != g[size_t(i)])
      throw UserError(fmt::format("{}: the model fixes dimension {} of input '{}' at {} {}; only symbolic dimensions (and "
                                  "the first, the batch) can be set",
                                  spec, i, in.name(), d.dim_value(), model_dims(in)));
  }
  dims = g;
  if (batch > 0) dims[0] = batch;  // a compile at another batch (chunks, slices, micro-batches) of the same shapes
  return dims;
}

}  // namespace vtpu::compiler
