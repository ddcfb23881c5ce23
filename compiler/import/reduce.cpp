// ReduceMean/ReduceSum and ArgMax/ArgMin: the reduced axes moved last and merged into rows.
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

// ReduceMean/ReduceSum: the reduced axes moved last (a transpose when they are not) and
// merged, then a row sum (times 1/K for a mean): the form the lowering recognizes inside a
// layer normalization exported as its parts (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt,
// Div: opsets before 17), and otherwise makes a matmul with a column of ones. Over H and W
// of an image: a global average pool (times H*W for a sum).
void Importer::reduce(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axes", "keepdims", "noop_with_empty_axes"});
  const Tensor& x = input(n, 0);
  int64_t r = int64_t(x.shape.size());
  std::vector<int64_t> axes = attr_ints(n, "axes", {});
  if (n.input_size() > 1 && !n.input(1).empty())
    axes = const_input(n, 1, "axes").int_values();
  for (auto& a : axes) {
    a = a < 0 ? a + r : a;
    if (a < 0 || a >= r) fail(fmt::format("{} axis out of range for a {}-D input", n.op_type(), r), node_name(n));
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  bool keep = attr_i(n, "keepdims", 1) != 0, mean = n.op_type() == "ReduceMean";
  if (axes.empty() && attr_i(n, "noop_with_empty_axes", 0)) return define(n, x);
  if (axes.empty())
    for (int64_t a = 0; a < r; ++a) axes.push_back(a);
  if (r == 4 && axes == std::vector<int64_t>{2, 3}) {
    std::vector<int64_t> out{x.shape[0], x.shape[1], 1, 1};
    Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
    Value y = b_.create<mlir::tosa::AvgPool2dOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr({x.shape[2], x.shape[3]}),
                                                 b_.getDenseI64ArrayAttr({1, 1}), b_.getDenseI64ArrayAttr({0, 0, 0, 0}),
                                                 mlir::TypeAttr::get(b_.getF32Type()), nullptr);
    if (!mean)
      y = b_.create<mlir::tosa::MulOp>(loc, y.getType(), y, constant({1, 1, 1, 1}, {float(x.shape[2] * x.shape[3])}, loc),
                                       b_.getI8IntegerAttr(0));
    Tensor t{y, out, true};
    if (keep) return define(n, t);
    values_[n.output(0) + "#4d"] = t;
    onnx::NodeProto m;
    m.set_op_type("Flatten"), m.add_input(n.output(0) + "#4d"), m.add_output(n.output(0)), m.set_name(node_name(n));
    return flatten(m, loc);
  }
  // [kept..., K]: the kept axes in order, then the reduced ones merged.
  Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
  std::vector<int32_t> perm;
  std::vector<int64_t> kept, out;
  int64_t K = 1;
  for (int64_t a = 0; a < r; ++a)
    if (!std::binary_search(axes.begin(), axes.end(), a)) perm.push_back(int32_t(a)), kept.push_back(x.shape[size_t(a)]);
  for (int64_t a : axes) perm.push_back(int32_t(a)), K *= x.shape[size_t(a)];
  bool moved = false;
  for (size_t i = 0; i < perm.size(); ++i) moved |= perm[i] != int32_t(i);
  if (moved) v = transpose(v, perm, loc);
  std::vector<int64_t> rows = kept;
  rows.push_back(K);
  if (rows.size() != size_t(r)) v = reshape(v, rows, loc);
  std::vector<int64_t> red = kept;
  red.push_back(1);
  Value y = b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), v, b_.getI32IntegerAttr(int32_t(red.size() - 1)));
  if (mean)
    y = b_.create<mlir::tosa::MulOp>(loc, tensor_type(red), y, constant(std::vector<int64_t>(red.size(), 1), {1.0f / float(K)}, loc),
                                     b_.getI8IntegerAttr(0));
  for (int64_t a = 0; a < r; ++a)
    if (!std::binary_search(axes.begin(), axes.end(), a)) out.push_back(x.shape[size_t(a)]);
    else if (keep) out.push_back(1);
  if (out.empty()) out.push_back(1);  // a full reduction without keepdims: one value
  if (out != red) y = reshape(y, out, loc);
  define(n, {y, out, false});
}

// ArgMax/ArgMin along one axis: the axis moved last, the rest merged into rows, then
// tpu.argmax, whose row r is element r of the (int32) output: the kept axes' order.
void Importer::argmax(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis", "keepdims", "select_last_index"});
  const Tensor& x = input(n, 0);
  int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(fmt::format("{} axis {} is out of range for {} dimensions", n.op_type(), axis, r), node_name(n));
  Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
  std::vector<int32_t> perm;
  std::vector<int64_t> out;
  for (int64_t a = 0; a < r; ++a)
    if (a != axis) perm.push_back(int32_t(a));
  perm.push_back(int32_t(axis));
  if (axis != r - 1) v = transpose(v, perm, loc);
  int64_t K = x.shape[size_t(axis)];
  v = reshape(v, {numel(x.shape) / K, K}, loc);
  bool keep = attr_i(n, "keepdims", 1) != 0;
  for (int64_t a = 0; a < r; ++a)
    if (a != axis) out.push_back(x.shape[size_t(a)]);
    else if (keep) out.push_back(1);
  Value y = b_.create<tpu::ArgMaxOp>(loc, mlir::RankedTensorType::get(out, b_.getI32Type()), v,
                                     n.op_type() == "ArgMin" ? b_.getUnitAttr() : nullptr,
                                     attr_i(n, "select_last_index", 0) ? b_.getUnitAttr() : nullptr, b_.getStringAttr(node_name(n)));
  define(n, {y, out, false});
}

}  // namespace vtpu::compiler::onnx_import
