// Constants (constant.h) and reading ONNX tensors into them: inline, raw or external data;
// float, float16, bfloat16 and double as float; every integer and bool type exactly.
#include "import/constant.h"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "vtpu/numerics/float.h"

namespace vtpu::compiler::onnx_import {

bool is_integer_elem_type(int t) {
  switch (t) {
    case onnx::TensorProto::INT64: case onnx::TensorProto::INT32: case onnx::TensorProto::INT16:
    case onnx::TensorProto::INT8: case onnx::TensorProto::UINT64: case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT16: case onnx::TensorProto::UINT8: case onnx::TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

int64_t cast_integer(int64_t v, int to) {
  switch (to) {
    case onnx::TensorProto::INT32: return int32_t(uint32_t(uint64_t(v)));
    case onnx::TensorProto::INT16: return int16_t(uint16_t(uint64_t(v)));
    case onnx::TensorProto::INT8: return int8_t(uint8_t(uint64_t(v)));
    case onnx::TensorProto::UINT32: return int64_t(uint32_t(uint64_t(v)));
    case onnx::TensorProto::UINT16: return int64_t(uint16_t(uint64_t(v)));
    case onnx::TensorProto::UINT8: return int64_t(uint8_t(uint64_t(v)));
    case onnx::TensorProto::BOOL: return v != 0;
    default: return v;  // INT64, UINT64
  }
}

int64_t saturate_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;  // 2^63, the first double past INT64_MAX
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return int64_t(v);  // truncates toward zero
}

Constant Constant::of_ints(std::vector<int64_t> shape, std::vector<int64_t> values) {
  Constant c;
  c.shape = std::move(shape);
  c.integer = true;
  c.data.reserve(values.size());
  for (int64_t v : values) c.data.push_back(float(v));
  c.ints = std::move(values);
  return c;
}

int64_t Constant::int_at(size_t i) const { return integer ? ints.at(i) : saturate_to_int64(data.at(i)); }

std::vector<int64_t> Constant::int_values() const {
  if (integer) return ints;
  std::vector<int64_t> r;
  for (float f : data) r.push_back(saturate_to_int64(f));
  return r;
}

Constant Constant::take(std::vector<int64_t> to_shape, const std::vector<int64_t>& from) const {
  Constant c;
  c.shape = std::move(to_shape);
  c.integer = integer;
  for (int64_t i : from) {
    c.data.push_back(data.at(size_t(i)));
    if (integer) c.ints.push_back(ints.at(size_t(i)));
  }
  return c;
}

Constant read_tensor(const onnx::TensorProto& t, const std::filesystem::path& dir, std::optional<std::string_view> given) {
  std::vector<int64_t> shape(t.dims().begin(), t.dims().end());
  int64_t n = numel(shape);
  std::string external;  // the bytes of external data, read from its file
  std::string_view raw;  // the raw bytes: external data, or the proto's own (not copied)
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string loc;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") loc = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    auto file = dir / loc;
    std::ifstream f(file, std::ios::binary);
    if (!f) throw ConstantError(fmt::format("external data file '{}' cannot be opened", file.string()));
    f.seekg(offset);
    external.assign(size_t(length >= 0 ? length : n * 8), '\0');
    f.read(external.data(), std::streamsize(external.size()));
    external.resize(size_t(f.gcount()));
    raw = external;
  } else if (t.has_raw_data()) {
    raw = given ? *given : std::string_view(t.raw_data());
  }
  std::vector<float> floats;
  std::vector<int64_t> ints;
  // Fixed-width little-endian values from the raw bytes.
  auto from_raw = [&](auto type_tag, auto&& put) {
    using T = decltype(type_tag);
    if (raw.size() != size_t(n) * sizeof(T))
      throw ConstantError(fmt::format("initializer holds {} bytes, its shape needs {}", raw.size(), size_t(n) * sizeof(T)));
    // n values are there: room for them in the vector `put` fills.
    if (is_integer_elem_type(t.data_type())) ints.reserve(size_t(n));
    else floats.reserve(size_t(n));
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + size_t(i) * sizeof(T), sizeof(T));
      put(v);
    }
  };
  auto count = [&](int given, const char* what) {
    if (given != n) throw ConstantError(fmt::format("{} initializer holds {} values, its shape needs {}", what, given, n));
  };
  auto put_float = [&](auto v) { floats.push_back(float(v)); };
  auto put_int = [&](auto v) { ints.push_back(int64_t(v)); };
  const std::string type_name = onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(t.data_type()));
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (raw.size() == size_t(n) * sizeof(float) && n > 0) {  // little-endian, as ONNX stores it and as held
        floats.resize(size_t(n));
        std::memcpy(floats.data(), raw.data(), raw.size());
      } else if (!raw.empty()) {
        from_raw(float{}, put_float);  // says what size is wrong
      } else {
        count(t.float_data_size(), "float"), floats.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    // Models exported in half or double precision: the values as fp32 (the program's
    // precision, bf16 or int8, is chosen by --dtype as for fp32 models).
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      bool half = t.data_type() == onnx::TensorProto::FLOAT16;
      auto put_bits = [&](uint16_t b) {
        floats.push_back(numerics::f32_from_bits(half ? numerics::f16_to_f32_bits(b) : numerics::bf16_to_f32_bits(b)));
      };
      if (!raw.empty()) {
        from_raw(uint16_t{}, put_bits);
      } else {
        count(t.int32_data_size(), type_name.c_str());  // one 16-bit pattern per int32
        for (int32_t v : t.int32_data()) put_bits(uint16_t(v));
      }
      break;
    }
    case onnx::TensorProto::DOUBLE:
      if (!raw.empty()) from_raw(double{}, put_float);
      else count(t.double_data_size(), "double"), floats.assign(t.double_data().begin(), t.double_data().end());
      break;
    // Integers exactly. Without raw data, int64 values are in int64_data, uint32 and uint64 in
    // uint64_data, the narrower types (and bool) in int32_data, one per entry.
    case onnx::TensorProto::INT64:
      if (!raw.empty()) from_raw(int64_t{}, put_int);
      else count(t.int64_data_size(), "int64"), ints.assign(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto::UINT64:  // as its int64 bit pattern: values past INT64_MAX wrap
    case onnx::TensorProto::UINT32: {
      bool u32 = t.data_type() == onnx::TensorProto::UINT32;
      if (!raw.empty() && u32) from_raw(uint32_t{}, put_int);
      else if (!raw.empty()) from_raw(uint64_t{}, put_int);
      else count(t.uint64_data_size(), type_name.c_str()), ints.assign(t.uint64_data().begin(), t.uint64_data().end());
      break;
    }
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL: {
      int et = t.data_type();
      if (!raw.empty()) {
        if (et == onnx::TensorProto::INT32) from_raw(int32_t{}, put_int);
        if (et == onnx::TensorProto::INT16) from_raw(int16_t{}, put_int);
        if (et == onnx::TensorProto::UINT16) from_raw(uint16_t{}, put_int);
        if (et == onnx::TensorProto::INT8) from_raw(int8_t{}, put_int);
        if (et == onnx::TensorProto::UINT8 || et == onnx::TensorProto::BOOL) from_raw(uint8_t{}, put_int);
      } else {
        count(t.int32_data_size(), type_name.c_str());
        for (int32_t v : t.int32_data()) ints.push_back(int64_t(v));
      }
      // Entries of int32_data hold the narrow type's value; keep them in its range.
      for (int64_t& v : ints) v = cast_integer(v, et);
      break;
    }
    default:
      throw ConstantError(fmt::format("initializer element type {} is not supported (a floating, integer or bool type)",
                                      type_name));
  }
  if (is_integer_elem_type(t.data_type())) return Constant::of_ints(std::move(shape), std::move(ints));
  Constant c;
  c.shape = std::move(shape);
  c.data = std::move(floats);
  return c;
}

}  // namespace vtpu::compiler::onnx_import
