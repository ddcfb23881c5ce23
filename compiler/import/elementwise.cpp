// Elementwise operators: activations, clamps, arithmetic of two operands with ONNX's
// broadcasting, and the functions the vector unit's tables and affine steps make.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

Value Importer::make_clamp(Value v, float lo, float hi, mlir::Location loc) {
  // A NaN bound is no bound: onnxruntime's Clip computes min(max(x, lo), hi), and a
  // comparison with NaN keeps x.
  if (std::isnan(lo)) lo = -std::numeric_limits<float>::infinity();
  if (std::isnan(hi)) hi = std::numeric_limits<float>::infinity();
  float flo = std::max(lo, -std::numeric_limits<float>::max()), fhi = std::min(hi, std::numeric_limits<float>::max());
  return b_.create<mlir::tosa::ClampOp>(loc, v.getType(), v, b_.getI64IntegerAttr(int64_t(std::max(-1e9f, flo))),
                                        b_.getI64IntegerAttr(int64_t(std::min(1e9f, fhi))), b_.getF32FloatAttr(flo),
                                        b_.getF32FloatAttr(fhi));
}

void Importer::clamp(const onnx::NodeProto& n, mlir::Location loc, float lo, float hi) {
  const Tensor& x = input(n, 0);
  define(n, {make_clamp(x.value, lo, hi, loc), x.shape, x.nhwc});
}

void Importer::relu(const onnx::NodeProto& n, mlir::Location loc) {
  clamp(n, loc, 0.0f, std::numeric_limits<float>::infinity());
}

void Importer::clip(const onnx::NodeProto& n, mlir::Location loc) {
  float lo = attr_f(n, "min", -std::numeric_limits<float>::infinity());
  float hi = attr_f(n, "max", std::numeric_limits<float>::infinity());
  if (n.input_size() > 1 && !n.input(1).empty()) lo = const_input(n, 1, "Clip min").data.at(0);
  if (n.input_size() > 2 && !n.input(2).empty()) hi = const_input(n, 2, "Clip max").data.at(0);
  clamp(n, loc, lo, hi);
}

// Two operands of an elementwise op brought to one rank and layout (ONNX multidirectional
// broadcasting, right-aligned); `out` gets the result's logical shape and layout.
std::pair<Value, Value> Importer::broadcast_pair(const onnx::NodeProto& n, const Tensor& a, const Tensor& c, Tensor& out,
                                                 mlir::Location loc) {
  const Tensor& big = a.shape.size() >= c.shape.size() ? a : c;
  auto align = [&](const Tensor& t) -> Value {
    if (t.shape.size() == big.shape.size()) {
      if (t.nhwc == big.nhwc) return t.value;
      return t.nhwc ? to_nchw_value(t, loc) : transpose(t.value, {0, 2, 3, 1}, loc);
    }
    std::vector<int64_t> s(big.shape.size() - t.shape.size(), 1);
    s.insert(s.end(), t.shape.begin(), t.shape.end());
    Value r = reshape(t.value, s, loc);
    return big.nhwc ? transpose(r, {0, 2, 3, 1}, loc) : r;
  };
  out.shape = big.shape;
  out.nhwc = big.nhwc;
  size_t off_a = big.shape.size() - a.shape.size(), off_c = big.shape.size() - c.shape.size();
  for (size_t i = 0; i < big.shape.size(); ++i) {
    int64_t da = i >= off_a ? a.shape[i - off_a] : 1, dc = i >= off_c ? c.shape[i - off_c] : 1;
    if (da != dc && da != 1 && dc != 1)
      fail(fmt::format("{} operands of shapes [{}] and [{}] do not broadcast", n.op_type(), fmt::join(a.shape, ", "),
                       fmt::join(c.shape, ", ")),
           node_name(n));
    out.shape[i] = std::max(da, dc);
  }
  return {align(a), align(c)};
}

// Add, Sub, Mul; Div multiplies by the reciprocal (of a constant: folded here, so x / 8
// becomes one scale step; of an activation: the vector unit's reciprocal table).
void Importer::binary(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});  // opset < 7 had `broadcast` and `axis`
  Tensor out;
  Tensor rhs = input(n, 1);
  if (n.op_type() == "Div" && (is_integral(n.input(0)) || is_integral(n.input(1)))) {
    // ONNX truncates an integer quotient: tpu.binary "div" (exact for integers below 2^24).
    if (constants_.count(n.input(0)) || constants_.count(n.input(1)))
      fail("Div of integers with a constant operand is not supported; Cast the operands to float first", node_name(n));
    const Tensor& a = input(n, 0);
    if (a.shape != rhs.shape || a.nhwc != rhs.nhwc)
      fail("Div of integers needs operands of one shape (no broadcasting)", node_name(n));
    Value y = b_.create<tpu::BinaryOp>(loc, a.value.getType(), a.value, rhs.value, b_.getStringAttr("div"),
                                       b_.getStringAttr(node_name(n)));
    define(n, {y, a.shape, a.nhwc});
    return;
  }
  if (n.op_type() == "Div") {
    auto c = constants_.find(n.input(1));
    if (c != constants_.end()) {
      std::vector<float> inv(c->second.data.size());
      for (size_t i = 0; i < inv.size(); ++i) {
        if (c->second.data[i] == 0.0f) fail(fmt::format("Div by a constant holding 0 (element {})", i), node_name(n));
        inv[i] = 1.0f / c->second.data[i];
      }
      rhs.value = constant(c->second.shape, inv, loc);
    } else if (auto r = rhs.value.getDefiningOp<mlir::tosa::ReciprocalOp>()) {
      rhs.value = r.getInput1();  // a / (1 / b) = a * b: Div by a Sqrt (1 / rsqrt) multiplies by the rsqrt
    } else {
      rhs.value = b_.create<mlir::tosa::ReciprocalOp>(loc, rhs.value.getType(), rhs.value);
    }
  }
  auto [x, y] = broadcast_pair(n, input(n, 0), rhs, out, loc);
  auto out_type = tensor_type(out.nhwc ? to_nhwc(out.shape) : out.shape);
  if (n.op_type() == "Add") out.value = b_.create<mlir::tosa::AddOp>(loc, out_type, x, y);
  else if (n.op_type() == "Sub") out.value = b_.create<mlir::tosa::SubOp>(loc, out_type, x, y);
  else out.value = b_.create<mlir::tosa::MulOp>(loc, out_type, x, y, b_.getI8IntegerAttr(0));
  // Integers in, integers out (a mask's 1 - m stays a mask: logical.cpp takes it as one).
  if (n.op_type() != "Div" && integer_typed(n.input(0)) && integer_typed(n.input(1))) whole_values_.insert(n.output(0));
  define(n, out);
}

// Variadic Max, Min, Sum and Mean: a chain of pairwise maxima/minima/sums (one input is the
// identity), times 1/n for a mean.
void Importer::variadic(const onnx::NodeProto& n, mlir::Location loc) {
  const std::string& op = n.op_type();
  Tensor acc = input(n, 0);
  for (int i = 1; i < n.input_size(); ++i) {
    Tensor out;
    auto [a, c] = broadcast_pair(n, acc, input(n, i), out, loc);
    auto t = tensor_type(out.nhwc ? to_nhwc(out.shape) : out.shape);
    out.value = op == "Max"   ? Value(b_.create<mlir::tosa::MaximumOp>(loc, t, a, c))
                : op == "Min" ? Value(b_.create<mlir::tosa::MinimumOp>(loc, t, a, c))
                              : Value(b_.create<mlir::tosa::AddOp>(loc, t, a, c));
    acc = out;
  }
  if (op == "Mean" && n.input_size() > 1)
    acc.value = b_.create<mlir::tosa::MulOp>(loc, acc.value.getType(), acc.value,
                                             constant(std::vector<int64_t>(acc.shape.size(), 1), {1.0f / float(n.input_size())}, loc),
                                             b_.getI8IntegerAttr(0));
  define(n, acc);
}

// Sigmoid, Tanh, Erf, Exp, Reciprocal, Sqrt and Log: the vector unit's table functions.
void Importer::unary_table(const onnx::NodeProto& n, mlir::Location loc) {
  const std::string& op = n.op_type();
  const Tensor& x = input(n, 0);
  auto t = x.value.getType();
  Value y;
  if (op == "Sigmoid") y = b_.create<mlir::tosa::SigmoidOp>(loc, t, x.value);
  else if (op == "Tanh") y = b_.create<mlir::tosa::TanhOp>(loc, t, x.value);
  else if (op == "Erf") y = b_.create<mlir::tosa::ErfOp>(loc, t, x.value);
  else if (op == "Exp") y = b_.create<mlir::tosa::ExpOp>(loc, t, x.value);
  else if (op == "Reciprocal") y = b_.create<mlir::tosa::ReciprocalOp>(loc, t, x.value);
  else if (op == "Log") y = b_.create<mlir::tosa::LogOp>(loc, t, x.value);
  // The vector unit has 1/sqrt; sqrt(x) = 1 / rsqrt(x) holds at 0 and +inf too.
  else y = b_.create<mlir::tosa::ReciprocalOp>(loc, t, b_.create<mlir::tosa::RsqrtOp>(loc, t, x.value));
  define(n, {y, x.shape, x.nhwc});
}

// A constant exponent of 1, 2, 3 or 4 (products) or 0.5 (sqrt); GELU's tanh form has x^3.
void Importer::pow(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});
  const Tensor& x = input(n, 0);
  const Constant& e = const_input(n, 1, "Pow exponent");
  if (e.data.size() != 1) fail("Pow needs a scalar exponent", node_name(n));
  float p = e.data[0];
  auto t = x.value.getType();
  Value y = x.value;
  if (p == 0.5f) {
    y = b_.create<mlir::tosa::ReciprocalOp>(loc, t, b_.create<mlir::tosa::RsqrtOp>(loc, t, x.value));
  } else if (p == 2.0f || p == 3.0f || p == 4.0f) {
    for (int i = 1; i < int(p); ++i) y = b_.create<mlir::tosa::MulOp>(loc, t, y, x.value, b_.getI8IntegerAttr(0));
  } else if (p != 1.0f) {
    fail(fmt::format("Pow exponent {} is not supported (1, 2, 3, 4 or 0.5)", p), node_name(n));
  }
  define(n, {y, x.shape, x.nhwc});
}

// LeakyRelu: max(x, alpha * x) for alpha <= 1, min(x, alpha * x) above: one scale and one compare.
void Importer::leaky_relu(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"alpha"});
  const Tensor& x = input(n, 0);
  float alpha = attr_f(n, "alpha", 0.01f);
  auto t = x.value.getType();
  Value ax = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(std::vector<int64_t>(x.shape.size(), 1), {alpha}, loc),
                                          b_.getI8IntegerAttr(0));
  Value y = alpha <= 1.0f ? Value(b_.create<mlir::tosa::MaximumOp>(loc, t, x.value, ax))
                          : Value(b_.create<mlir::tosa::MinimumOp>(loc, t, x.value, ax));
  define(n, {y, x.shape, x.nhwc});
}

// HardSwish: x * HardSigmoid(x) with alpha 1/6, beta 1/2 (MobileNetV3).
void Importer::hard_swish(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});
  const Tensor& x = input(n, 0);
  std::vector<int64_t> one(x.shape.size(), 1);
  auto t = x.value.getType();
  Value g = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(one, {1.0f / 6.0f}, loc), b_.getI8IntegerAttr(0));
  g = make_clamp(b_.create<mlir::tosa::AddOp>(loc, t, g, constant(one, {0.5f}, loc)), 0.0f, 1.0f, loc);
  define(n, {b_.create<mlir::tosa::MulOp>(loc, t, x.value, g, b_.getI8IntegerAttr(0)), x.shape, x.nhwc});
}

// HardSigmoid and Neg: alpha * x + beta (then clamped to [0, 1]) as a scale and shift the
// vector unit does in one affine step.
void Importer::scale_shift(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"alpha", "beta"});
  const Tensor& x = input(n, 0);
  bool hs = n.op_type() == "HardSigmoid";
  float alpha = hs ? attr_f(n, "alpha", 0.2f) : -1.0f, beta = hs ? attr_f(n, "beta", 0.5f) : 0.0f;
  std::vector<int64_t> one(x.shape.size(), 1);
  auto t = x.value.getType();
  Value y = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(one, {alpha}, loc), b_.getI8IntegerAttr(0));
  if (beta != 0.0f) y = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(one, {beta}, loc));
  if (hs) y = make_clamp(y, 0.0f, 1.0f, loc);
  define(n, {y, x.shape, x.nhwc});
}

// v * k + c (one affine step after lowering).
Value Importer::scaled(Value v, const std::vector<int64_t>& shape, float k, float c, mlir::Location loc) {
  auto t = v.getType();
  std::vector<int64_t> one(shape.size(), 1);
  Value y = v;
  if (k != 1.0f) y = b_.create<mlir::tosa::MulOp>(loc, t, y, constant(one, {k}, loc), b_.getI8IntegerAttr(0));
  if (c != 0.0f) y = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(one, {c}, loc));
  return y;
}

// |v| = max(v, -v).
Value Importer::magnitude(Value v, const std::vector<int64_t>& shape, mlir::Location loc) {
  return b_.create<mlir::tosa::MaximumOp>(loc, v.getType(), v, scaled(v, shape, -1.0f, 0.0f, loc));
}

// Elementwise operators made of the vector unit's others: Abs = max(x, -x); Softsign =
// x / (1 + |x|); Elu = max(x, 0) + alpha * (exp(min(x, 0)) - 1); Selu = gamma * Elu(x) with
// Selu's alpha; Celu = max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1); Softplus =
// log(1 + exp(x)) = max(x, 0) + log(1 + exp(-|x|)) (no overflow of exp for large x).
void Importer::elementwise_extra(const onnx::NodeProto& n, mlir::Location loc) {
  const std::string& op = n.op_type();
  only_attrs(n, {"alpha", "gamma"});
  const Tensor& x = input(n, 0);
  auto t = x.value.getType();
  std::vector<int64_t> one(x.shape.size(), 1);
  auto scale = [&](Value v, float k) { return Value(b_.create<mlir::tosa::MulOp>(loc, t, v, constant(one, {k}, loc), b_.getI8IntegerAttr(0))); };
  float inf = std::numeric_limits<float>::infinity();
  Value y;
  if (op == "Abs" || op == "Softsign") {
    y = magnitude(x.value, x.shape, loc);
    if (op == "Softsign") {
      Value den = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(one, {1.0f}, loc));
      y = b_.create<mlir::tosa::MulOp>(loc, t, x.value, b_.create<mlir::tosa::ReciprocalOp>(loc, t, den), b_.getI8IntegerAttr(0));
    }
  } else if (op == "Softplus") {
    Value neg_abs = b_.create<mlir::tosa::MinimumOp>(loc, t, x.value, scale(x.value, -1.0f));
    Value one_plus = b_.create<mlir::tosa::AddOp>(loc, t, b_.create<mlir::tosa::ExpOp>(loc, t, neg_abs), constant(one, {1.0f}, loc));
    y = b_.create<mlir::tosa::AddOp>(loc, t, make_clamp(x.value, 0.0f, inf, loc), b_.create<mlir::tosa::LogOp>(loc, t, one_plus));
  } else {
    bool selu = op == "Selu", celu = op == "Celu";
    float alpha = attr_f(n, "alpha", selu ? 1.67326319217681884765625f : 1.0f), gamma = attr_f(n, "gamma", 1.05070102214813232421875f);
    if (celu && !(alpha > 0)) fail("Celu alpha must be positive", node_name(n));
    // Celu: alpha * (exp(min(x, 0) / alpha) - 1) for the negative part.
    Value neg = b_.create<mlir::tosa::ExpOp>(loc, t, celu ? scale(make_clamp(x.value, -inf, 0.0f, loc), 1.0f / alpha)
                                                           : make_clamp(x.value, -inf, 0.0f, loc));
    neg = b_.create<mlir::tosa::AddOp>(loc, t, scale(neg, alpha), constant(one, {-alpha}, loc));
    y = b_.create<mlir::tosa::AddOp>(loc, t, make_clamp(x.value, 0.0f, inf, loc), neg);
    if (selu) y = scale(y, gamma);
  }
  define(n, {y, x.shape, x.nhwc});
}

// PRelu(x, slope) = max(x, 0) + slope * min(x, 0): two clamps, a per-channel scale, an add.
void Importer::prelu(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});
  const Tensor& x = input(n, 0);
  Tensor out;
  auto [xv, slope] = broadcast_pair(n, x, input(n, 1), out, loc);
  if (out.shape != x.shape) fail("PRelu slope must broadcast to the input's shape", node_name(n));
  auto t = xv.getType();
  Value pos = make_clamp(xv, 0.0f, std::numeric_limits<float>::infinity(), loc);
  Value neg = make_clamp(xv, -std::numeric_limits<float>::infinity(), 0.0f, loc);
  Value scaled = b_.create<mlir::tosa::MulOp>(loc, t, neg, slope, b_.getI8IntegerAttr(0));
  out.value = b_.create<mlir::tosa::AddOp>(loc, t, pos, scaled);
  define(n, out);
}

// Cast: integers are carried as float values (int32 in HBM at the model's edges), so a
// cast between integer types, or from integers to float, is the identity. A cast of
// float values to an integer type would round them, which is not supported. Constants cast
// to any type (constant_ops.h).
void Importer::cast(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"to", "saturate"});
  int to = int(attr_i(n, "to", 0));
  if (to == onnx::TensorProto::BOOL && !constants_.count(n.input(0))) return cast_to_bool(n, loc);  // logical.cpp
  bool to_int = is_integer_type(to);
  if (constants_.count(n.input(0))) {  // a constant that is also an activation elsewhere: any type
    constants_[n.output(0)] = *folded(n);
    return;
  }
  if (!to_int && to != onnx::TensorProto::FLOAT)
    fail(fmt::format("Cast to {} is not supported (float32 or an integer type)",
                     onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(to))),
         node_name(n));
  if (auto ia = int_args_.find(n.input(0)); ia != int_args_.end() && to_int) {
    int_args_[n.output(0)] = ia->second;  // still the integer input (e.g. int64 ids cast to int32 for a Gather)
    if (auto ai = arg_index_.find(n.input(0)); ai != arg_index_.end()) arg_index_[n.output(0)] = ai->second;
    return;
  }
  bool integral = is_integral(n.input(0));
  if (to_int && !integral)
    fail(fmt::format("Cast of float values '{}' to {} is not supported (only values that are integers already)", n.input(0),
                     onnx::TensorProto::DataType_Name(onnx::TensorProto::DataType(to))),
         node_name(n));
  values_[n.output(0)] = input(n, 0);
  if (integral && to_int) integer_valued_.insert(n.output(0));
  if (integral) whole_values_.insert(n.output(0));  // of a float type too: the values are still integers
}

}  // namespace vtpu::compiler::onnx_import
