// The values nodes read and define, initializers read into constants (constant.cpp), and the
// TOSA building blocks every operator uses (f32 tensor types, constants, transposes, reshapes).
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

Constant Importer::read_tensor(const onnx::TensorProto& t) {
  try {
    return onnx_import::read_tensor(t, path_.parent_path(), file_.raw_data(t));
  } catch (const ConstantError& e) {
    fail(e.what(), t.name());
  }
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

// Program inputs and outputs of this type are int32 tensors: the integers, and bool as 0/1.
bool Importer::is_integer_io(int t) { return is_integer_type(t) || t == onnx::TensorProto::BOOL; }

mlir::RankedTensorType Importer::tensor_type(const std::vector<int64_t>& shape) {
  return mlir::RankedTensorType::get(shape, b_.getF32Type());
}

std::vector<int64_t> Importer::to_nhwc(const std::vector<int64_t>& s) { return {s[0], s[2], s[3], s[1]}; }

Value Importer::constant(const std::vector<int64_t>& shape, std::vector<float> data, mlir::Location loc) {
  auto type = tensor_type(shape);
  return b_.create<mlir::tosa::ConstOp>(loc, type, tpu::f32_elements(type, std::move(data)));
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

Constant Importer::take_const_input(const onnx::NodeProto& n, int i, const char* what) {
  const Constant& c = const_input(n, i, what);
  const std::string& name = n.input(i);
  auto r = readers_.find(name);
  bool last = subgraph_depth_ == 0 && r != readers_.end() && r->second == 1 && !graph_outputs_.count(name) &&
              std::count(n.input().begin(), n.input().end(), name) == 1;
  if (!last) return c;
  return std::move(constants_.at(name));  // the empty entry is erased once n is imported (driver.cpp)
}

void Importer::define(const onnx::NodeProto& n, Tensor t) { values_[n.output(0)] = std::move(t); }

// True for values of an integer type (integer inputs, MatMulInteger's results, ...), which
// the compiler carries as float activations holding integers.
bool Importer::is_integral(const std::string& name) const { return int_args_.count(name) || integer_valued_.count(name); }

}  // namespace vtpu::compiler::onnx_import
