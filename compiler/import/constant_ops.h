#pragma once
// Internal to compiler/import: ONNX operators evaluated on constants at import (the shape
// arithmetic exporters write: Shape -> Gather -> Add -> Div -> Concat -> Reshape, Slice bounds,
// masks), each as the ONNX operator's definition says (onnx.ai/onnx/operators): integer
// operands in int64 (Add, Sub, Mul wrap around; Div truncates toward zero; Mod takes the
// divisor's sign unless fmod=1), floating ones in float, bools as integers 0 and 1.
// constant_ops.cpp; tested against the definitions and onnxruntime in
// compiler/tests/test_constant_ops.cpp.
#include <filesystem>
#include <optional>
#include <vector>

#include "import/constant.h"

namespace onnx {
class NodeProto;
}  // namespace onnx

namespace vtpu::compiler::onnx_import {

// The indices a Slice picks along a dimension of `dim`: negative bounds count from the end
// (dim is added); then for positive steps start and end are clamped to [0, dim], for negative
// ones start to [0, dim - 1] and end to [-1, dim - 1], so INT64_MAX and INT64_MIN bounds mean
// "to the end" either way.
std::vector<int64_t> slice_indices(int64_t dim, int64_t start, int64_t end, int64_t step);

// The output of node `n` from its inputs' values (`in[i]` null for an absent optional input),
// or nothing when `n`'s operator is not one folded here. Throws ConstantError. `dir` is the
// model's directory (tensor attributes may keep their data in files).
std::optional<Constant> fold_node(const onnx::NodeProto& n, const std::vector<const Constant*>& in,
                                  const std::filesystem::path& dir);

}  // namespace vtpu::compiler::onnx_import
