// Initializers (inline, raw or external data; float, float16, bfloat16, double and integer
// element types), the values nodes read and define, and the TOSA building blocks every operator
// uses (f32 tensor types, constants, transposes, reshapes).
#include <fmt/format.h>

#include <cstring>
#include <fstream>

#include "import/importer.h"
#include "vtpu/numerics/float.h"

namespace vtpu::compiler::onnx_import {

Constant Importer::read_tensor(const onnx::TensorProto& t) {
  Constant c;
  for (int64_t d : t.dims()) c.shape.push_back(d);
  int64_t n = numel(c.shape);
  std::string raw;
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string loc;
    int64_t offset = 0, length = -1;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location") loc = kv.value();
      else if (kv.key() == "offset") offset = std::stoll(kv.value());
      else if (kv.key() == "length") length = std::stoll(kv.value());
    }
    auto file = path_.parent_path() / loc;
    std::ifstream f(file, std::ios::binary);
    if (!f) fail(fmt::format("external data file '{}' cannot be opened", file.string()), t.name());
    f.seekg(offset);
    raw.assign(size_t(length >= 0 ? length : n * 8), '\0');
    f.read(raw.data(), std::streamsize(raw.size()));
    raw.resize(size_t(f.gcount()));
  } else if (t.has_raw_data()) {
    raw = t.raw_data();
  }
  c.data.resize(size_t(n));
  auto from_raw = [&](auto type_tag) {
    using T = decltype(type_tag);
    if (raw.size() != size_t(n) * sizeof(T))
      fail(fmt::format("initializer holds {} bytes, its shape needs {}", raw.size(), size_t(n) * sizeof(T)), t.name());
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + size_t(i) * sizeof(T), sizeof(T));
      c.data[size_t(i)] = float(v);
    }
  };
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      if (!raw.empty()) from_raw(float{});
      else if (t.float_data_size() == n) for (int64_t i = 0; i < n; ++i) c.data[size_t(i)] = t.float_data(int(i));
      else fail("float initializer has the wrong number of values", t.name());
      break;
    // Models exported in half or double precision: the values as fp32 (the program's
    // precision, bf16 or int8, is chosen by --dtype as for fp32 models).
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16: {
      bool half = t.data_type() == onnx::TensorProto::FLOAT16;
      std::vector<uint16_t> bits(static_cast<size_t>(n));
      if (!raw.empty()) {
        if (raw.size() != size_t(n) * 2)
          fail(fmt::format("initializer holds {} bytes, its shape needs {}", raw.size(), size_t(n) * 2), t.name());
        std::memcpy(bits.data(), raw.data(), raw.size());
      } else if (t.int32_data_size() == n) {  // one 16-bit pattern per int32
        for (int64_t i = 0; i < n; ++i) bits[size_t(i)] = uint16_t(t.int32_data(int(i)));
      } else {
        fail("float16 initializer has the wrong number of values", t.name());
      }
      for (int64_t i = 0; i < n; ++i)
        c.data[size_t(i)] = numerics::f32_from_bits(half ? numerics::f16_to_f32_bits(bits[size_t(i)])
                                                         : numerics::bf16_to_f32_bits(bits[size_t(i)]));
      break;
    }
    case onnx::TensorProto::DOUBLE:
      if (!raw.empty()) from_raw(double{});
      else if (t.double_data_size() == n) for (int64_t i = 0; i < n; ++i) c.data[size_t(i)] = float(t.double_data(int(i)));
      else fail("double initializer has the wrong number of values", t.name());
      break;
    case onnx::TensorProto::INT64:
      if (!raw.empty()) from_raw(int64_t{});
      else for (int64_t i = 0; i < n && i < t.int64_data_size(); ++i) c.data[size_t(i)] = float(t.int64_data(int(i)));
      break;
    case onnx::TensorProto::INT32:
      if (!raw.empty()) from_raw(int32_t{});
      else for (int64_t i = 0; i < n && i < t.int32_data_size(); ++i) c.data[size_t(i)] = float(t.int32_data(int(i)));
      break;
    case onnx::TensorProto::INT8:  // quantized weights and zero points (int32_data holds them unpacked)
      if (!raw.empty()) from_raw(int8_t{});
      else for (int64_t i = 0; i < n && i < t.int32_data_size(); ++i) c.data[size_t(i)] = float(int8_t(t.int32_data(int(i))));
      break;
    case onnx::TensorProto::UINT8:
      if (!raw.empty()) from_raw(uint8_t{});
      else for (int64_t i = 0; i < n && i < t.int32_data_size(); ++i) c.data[size_t(i)] = float(uint8_t(t.int32_data(int(i))));
      break;
    default:
      fail(fmt::format("initializer element type {} is not supported (float, float16, bfloat16, double, int64, int32, int8, uint8)",
                       onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(t.data_type()))),
           t.name());
  }
  return c;
}

// Floating element types a model's inputs and outputs may have: given and returned as
// float32, computed in the program's precision.
bool Importer::is_float_type(int t) {
  return t == onnx::TensorProto::FLOAT || t == onnx::TensorProto::FLOAT16 || t == onnx::TensorProto::BFLOAT16 ||
         t == onnx::TensorProto::DOUBLE;
}

// ONNX integer element types carried as int32: exact for the narrow ones; for int64,
// uint32 and uint64 (token ids, small counts) the runtime checks every value it places
// and refuses one int32 cannot hold.
bool Importer::is_integer_type(int t) {
  return t == onnx::TensorProto::INT64 || t == onnx::TensorProto::INT32 || t == onnx::TensorProto::INT16 ||
         t == onnx::TensorProto::UINT16 || t == onnx::TensorProto::INT8 || t == onnx::TensorProto::UINT8 ||
         t == onnx::TensorProto::UINT32 || t == onnx::TensorProto::UINT64;
}

mlir::RankedTensorType Importer::tensor_type(const std::vector<int64_t>& shape) {
  return mlir::RankedTensorType::get(shape, b_.getF32Type());
}

std::vector<int64_t> Importer::to_nhwc(const std::vector<int64_t>& s) { return {s[0], s[2], s[3], s[1]}; }

Value Importer::constant(const std::vector<int64_t>& shape, const std::vector<float>& data, mlir::Location loc) {
  auto type = tensor_type(shape);
  auto attr = mlir::DenseElementsAttr::get(type, llvm::ArrayRef<float>(data));
  return b_.create<mlir::tosa::ConstOp>(loc, type, attr);
}

Value Importer::transpose(Value v, const std::vector<int32_t>& perm, mlir::Location loc) {
  auto in = mlir::cast<mlir::RankedTensorType>(v.getType());
  std::vector<int64_t> out;
  for (int32_t p : perm) out.push_back(in.getShape()[size_t(p)]);
  auto ptype = mlir::RankedTensorType::get({int64_t(perm.size())}, b_.getI32Type());
  Value perms = b_.create<mlir::tosa::ConstOp>(loc, ptype, mlir::DenseElementsAttr::get(ptype, llvm::ArrayRef<int32_t>(perm)));
  return b_.create<mlir::tosa::TransposeOp>(loc, tensor_type(out), v, perms);
}

Value Importer::to_nchw_value(const Tensor& t, mlir::Location loc) { return transpose(t.value, {0, 3, 1, 2}, loc); }

Value Importer::reshape(Value v, const std::vector<int64_t>& shape, mlir::Location loc) {
  return b_.create<mlir::tosa::ReshapeOp>(loc, tensor_type(shape), v, b_.getDenseI64ArrayAttr(shape));
}

const Tensor& Importer::input(const onnx::NodeProto& n, int i) {
  if (i >= n.input_size() || n.input(i).empty()) fail(fmt::format("{} needs input {}", n.op_type(), i), node_name(n));
  auto it = values_.find(n.input(i));
  if (it != values_.end()) return it->second;
  if (auto ia = int_args_.find(n.input(i)); ia != int_args_.end()) {
    // An integer graph input used as an activation: converted on chip from its int32 tensor.
    Tensor t = ia->second;
    auto it32 = mlir::cast<mlir::RankedTensorType>(t.value.getType());
    mlir::Location l = mlir::NameLoc::get(b_.getStringAttr("input " + n.input(i)));
    t.value = b_.create<tpu::CastOp>(l, tensor_type(it32.getShape().vec()), t.value, b_.getStringAttr("input " + n.input(i)));
    values_[n.input(i)] = t;
    return values_[n.input(i)];
  }
  auto c = constants_.find(n.input(i));
  if (c == constants_.end()) fail(fmt::format("input '{}' is not produced by any node", n.input(i)), node_name(n));
  mlir::Location loc = mlir::NameLoc::get(b_.getStringAttr(n.input(i)));
  values_[n.input(i)] = {constant(c->second.shape, c->second.data, loc), c->second.shape, false};
  return values_[n.input(i)];
}

const Constant& Importer::const_input(const onnx::NodeProto& n, int i, const char* what) {
  auto c = constants_.find(n.input(i));
  if (c == constants_.end())
    fail(fmt::format("{} must be a constant (an initializer) for the vtpu compiler", what), node_name(n));
  return c->second;
}

void Importer::define(const onnx::NodeProto& n, Tensor t) { values_[n.output(0)] = std::move(t); }

// True for values of an integer type (integer inputs, MatMulInteger's results, ...), which
// the compiler carries as float activations holding integers.
bool Importer::is_integral(const std::string& name) const { return int_args_.count(name) || integer_valued_.count(name); }

}  // namespace vtpu::compiler::onnx_import
