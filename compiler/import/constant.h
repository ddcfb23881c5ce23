#pragma once
// Internal to compiler/import: a value known at import (an initializer, a Constant node, or a
// node folded at import, fold.h). Floating constants hold their values as float. Integer ones
// (ONNX's integer and bool types: shapes, indices, slice bounds, the arithmetic exporters do on
// them) also hold them exactly as int64, so INT64_MAX as a Slice end, or a count beyond 2^24,
// stays what the model says from the file through every fold.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "vtpu/support/layout.h"

namespace onnx {
class TensorProto;
}  // namespace onnx

namespace vtpu::compiler::onnx_import {

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// The [cols, rows] transpose of a row-major [rows, cols] matrix, f applied to each value
// (blocked_matrix: in cache-friendly blocks).
template <class F>
std::vector<float> transposed(const std::vector<float>& m, int64_t rows, int64_t cols, F f) {
  return blocked_matrix(cols, rows, [&](int64_t c, int64_t r) { return f(m[size_t(r * cols + c)]); });
}

// A constant's or a folded node's error, without the node's name (the importer adds it).
class ConstantError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Constant {
  std::vector<int64_t> shape;
  std::vector<float> data;    // the values; of an integer constant, as the nearest floats
  bool integer = false;       // of an ONNX integer or bool type: `ints` holds the values exactly
  std::vector<int64_t> ints = {};  // when `integer`; one per element of `data`

  // An integer constant (`data` follows from `values`).
  static Constant of_ints(std::vector<int64_t> shape, std::vector<int64_t> values);
  // Element i as an integer: exact for integer constants; a float one's value truncated
  // toward zero and saturated to the int64 range (NaN: 0).
  int64_t int_at(size_t i) const;
  std::vector<int64_t> int_values() const;
  // The elements at the flat indices `from`, in order, as a constant of `shape` and of this
  // constant's kind (exact integers stay exact).
  Constant take(std::vector<int64_t> shape, const std::vector<int64_t>& from) const;
};

// A float truncated toward zero and saturated to int64 (NaN: 0).
int64_t saturate_to_int64(double v);

// An ONNX TensorProto's values: inline, raw, or external data in a file relative to `dir`.
// `raw`: t's raw_data bytes when they are held outside t (ModelFile::raw_data), else t's own
// are read. Throws ConstantError.
Constant read_tensor(const onnx::TensorProto& t, const std::filesystem::path& dir,
                     std::optional<std::string_view> raw = std::nullopt);

// ONNX element types whose constants hold integers (the integer types and bool).
bool is_integer_elem_type(int onnx_type);

// v converted to the integer (or bool) ONNX type `to` as C++ converts integers: the low bits,
// two's complement (Cast int64 -> int32 of 2^32 + 5 is 5); bool: v != 0. uint64 keeps the bits.
int64_t cast_integer(int64_t v, int to);

}  // namespace vtpu::compiler::onnx_import
