// Comparisons, logical operators, Where and Cast to bool of values computed at run time
// (docs/compiler.md, "Booleans at run time"). The chip computes no booleans: a bool is a float
// 0 or 1 like any activation, and each operator is the elementwise arithmetic that gives
// exactly 0 or 1 when its operands are integers (masks, ids, counts), which their ONNX type
// says they are:
//   a != b  = min(|a - b|, 1)        a == b  = 1 - min(|a - b|, 1)
//   a > b   = clamp(a - b, 0, 1)     a >= b  = 1 - clamp(b - a, 0, 1)   (< and <= swap a, b)
//   not a   = 1 - a   a and b = a * b   a or b = max(a, b)   a xor b = |a - b|
//   bool(x) = min(|x|, 1)            where(c, a, b) = c * a + (1 - c) * b (each product exact)
// Comparisons of float values scale the difference by 2^100 twice first: any nonzero
// difference of normal floats then passes 1 and clamps to exactly 1 (bf16; INT8 refuses them,
// since those intermediate values have no useful int8 scale). Where's constant operands beyond bf16's largest finite value (the
// -inf or float32 min of an attention mask) are taken as +-3.38e38: 0 * inf would be a NaN.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

// Whether `name` holds integers: its ONNX type says so, the importer knows it (a float Cast
// of integers, 1 - mask), or it is a constant of integer values.
bool Importer::integer_typed(const std::string& name) const {
  if (is_integral(name) || whole_values_.count(name)) return true;
  if (auto k = constants_.find(name); k != constants_.end()) {
    if (k->second.integer) return true;
    for (float v : k->second.data)
      if (v != std::nearbyint(v)) return false;
    return true;
  }
  auto it = elem_types_.find(name);
  return it != elem_types_.end() && (it->second == onnx::TensorProto::BOOL || is_integer_type(it->second));
}

// The operands of a two-input operator broadcast to one shape; out takes that shape.
std::pair<Value, Value> Importer::logical_operands(const onnx::NodeProto& n, Tensor& out, mlir::Location loc) {
  Tensor a = input(n, 0), c = input(n, 1);
  if (a.nhwc) a = {to_nchw_value(a, loc), a.shape, false};
  if (c.nhwc) c = {to_nchw_value(c, loc), c.shape, false};
  return broadcast_pair(n, a, c, out, loc);
}

void Importer::boolean_op(const onnx::NodeProto& n, mlir::Location loc) {
  const std::string& op = n.op_type();
  only_attrs(n, {});
  bool floats = false;
  for (int i = 0; i < n.input_size(); ++i)
    if (!integer_typed(n.input(i))) {
      floats = true;
      if (opt_.precision != Precision::Int8) continue;
      auto [from, fix] = fix_advice({n.input(i)});
      fail(fmt::format("{} of float values computed at run time ('{}'{}) is not supported in INT8: the chip compares "
                       "floats by scaling their difference past 1, which no int8 scale holds; run in bf16 (--dtype bf16), "
                       "compare integers, or fold it{}",
                       op, n.input(i), from, fix),
           node_name(n));
    }
  // A float difference: times 2^100 twice, so that any nonzero one clamps to 1.
  auto steep = [&](Value d, const std::vector<int64_t>& shape) {
    return floats ? scaled(scaled(d, shape, 0x1p100f, 0.0f, loc), shape, 0x1p100f, 0.0f, loc) : d;
  };
  Tensor out;
  Value y;
  if (op == "Not") {
    const Tensor& a = input(n, 0);
    out = {Value(), a.shape, a.nhwc};
    y = scaled(a.value, a.shape, -1.0f, 1.0f, loc);
  } else {
    auto [a, c] = logical_operands(n, out, loc);
    mlir::Type t = tensor_type(out.shape);
    auto sub = [&](Value x, Value z) { return Value(b_.create<mlir::tosa::SubOp>(loc, t, x, z)); };
    const float inf = std::numeric_limits<float>::infinity();
    if (op == "And") {
      y = b_.create<mlir::tosa::MulOp>(loc, t, a, c, b_.getI8IntegerAttr(0));
    } else if (op == "Or") {
      y = b_.create<mlir::tosa::MaximumOp>(loc, t, a, c);
    } else if (op == "Xor") {
      y = magnitude(sub(a, c), out.shape, loc);
    } else if (op == "Equal") {
      y = scaled(make_clamp(steep(magnitude(sub(a, c), out.shape, loc), out.shape), -inf, 1.0f, loc), out.shape, -1.0f,
                 1.0f, loc);
    } else {
      // a >= b is 1 - (b > a), so floats need no "+ 1" (which would round their difference).
      bool swap = op == "Less" || op == "GreaterOrEqual", negate = op == "GreaterOrEqual" || op == "LessOrEqual";
      Value d = steep(swap ? sub(c, a) : sub(a, c), out.shape);
      y = make_clamp(d, 0.0f, 1.0f, loc);
      if (negate) y = scaled(y, out.shape, -1.0f, 1.0f, loc);
    }
  }
  out.value = y;
  integer_valued_.insert(n.output(0));
  define(n, out);
}

// Cast of integer values to bool: min(|x|, 1).
void Importer::cast_to_bool(const onnx::NodeProto& n, mlir::Location loc) {
  if (!integer_typed(n.input(0)))
    fail(fmt::format("Cast of float values '{}' to BOOL at run time is not supported (only of integer values: bool(x) is "
                     "min(|x|, 1) on the chip)",
                     n.input(0)),
         node_name(n));
  const Tensor& x = input(n, 0);
  Value y = make_clamp(magnitude(x.value, x.shape, loc), -std::numeric_limits<float>::infinity(), 1.0f, loc);
  integer_valued_.insert(n.output(0));
  define(n, {y, x.shape, x.nhwc});
}

// Where(c, a, b) = c * a + (1 - c) * b, c a bool (0 or 1) computed at run time: one product
// is the value, the other 0, so the sum is exact.
void Importer::where(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});
  const float big = 3.38e38f;  // below bf16's largest finite value (3.3895e38)
  auto operand = [&](int i) -> Tensor {
    if (auto k = constants_.find(n.input(i)); k != constants_.end() && i > 0) {
      std::vector<float> v = k->second.data;
      for (float& x : v) {
        if (std::isnan(x)) fail(fmt::format("Where's constant '{}' holds a NaN", n.input(i)), node_name(n));
        if (std::fabs(x) <= big) continue;
        // A mask value beside data: one int8 scale cannot hold both (the data would round to 0).
        if (opt_.precision == Precision::Int8)
          fail(fmt::format("Where puts the constant {} (from '{}', a mask value) beside values computed at run time; one "
                           "INT8 scale cannot hold both, so the other values would all round to 0. Run this model in "
                           "bf16 (--dtype bf16)",
                           x, n.input(i)),
               node_name(n));
        x = std::copysign(big, x);
      }
      return {constant(k->second.shape, v, loc), k->second.shape, false};
    }
    Tensor t = input(n, i);
    if (t.nhwc) t = {to_nchw_value(t, loc), t.shape, false};
    return t;
  };
  Tensor c = operand(0), a = operand(1), b = operand(2);
  Tensor not_c{scaled(c.value, c.shape, -1.0f, 1.0f, loc), c.shape, false};
  auto times = [&](const Tensor& p, const Tensor& q) {
    Tensor r;
    auto [pv, qv] = broadcast_pair(n, p, q, r, loc);
    r.value = b_.create<mlir::tosa::MulOp>(loc, tensor_type(r.shape), pv, qv, b_.getI8IntegerAttr(0));
    return r;
  };
  Tensor ca = times(c, a), cb = times(not_c, b), y;
  auto [x1, x2] = broadcast_pair(n, ca, cb, y, loc);
  y.value = b_.create<mlir::tosa::AddOp>(loc, tensor_type(y.shape), x1, x2);
  if (integer_typed(n.input(1)) && integer_typed(n.input(2))) whole_values_.insert(n.output(0));
  define(n, y);
}

}  // namespace vtpu::compiler::onnx_import
