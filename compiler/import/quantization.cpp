// Quantized models (QDQ and QLinear operators), carried as dequantized values.
#include <fmt/format.h>

#include <cmath>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

Importer::QParams Importer::qparams(const onnx::NodeProto& n, int scale_at, int zero_at, int64_t axis) {
  QParams p;
  p.scale = const_input(n, scale_at, "quantization scale").data;
  p.zero.assign(p.scale.size(), 0.0f);
  p.axis = axis;
  if (n.input_size() > zero_at && !n.input(zero_at).empty()) {
    auto c = constants_.find(n.input(zero_at));
    if (c == constants_.end()) fail("the zero point must be a constant", node_name(n));
    p.zero = c->second.data;
    if (p.zero.size() != p.scale.size()) fail("scale and zero point must have one size", node_name(n));
    // The zero point's element type gives the integer range; uint8 unless it is int8.
    const onnx::TensorProto* zt = nullptr;
    for (const auto& init : file_.proto().graph().initializer())
      if (init.name() == n.input(zero_at)) zt = &init;
    if (zt && zt->data_type() == onnx::TensorProto::UINT8) p.qmin = 0, p.qmax = 255;
  } else if (n.op_type() == "QuantizeLinear" && n.input_size() <= zero_at) {
    p.qmin = 0, p.qmax = 255;  // no zero point: uint8 with zero point 0
  }
  for (float sc : p.scale)
    if (!(sc > 0)) fail(fmt::format("quantization scale {} is not positive", sc), node_name(n));
  return p;
}

// A constant's dequantized values ((q - zero) * scale, per channel along p.axis).
Constant Importer::dequantized(const Constant& q, const QParams& p, const onnx::NodeProto& n) {
  Constant c{q.shape, q.data};  // floats: integer weights become their real values
  int64_t axis = p.axis < 0 ? p.axis + int64_t(q.shape.size()) : p.axis;
  int64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < q.shape.size(); ++d) inner *= q.shape[d];
  if (p.scale.size() > 1 && (axis < 0 || axis >= int64_t(q.shape.size()) || q.shape[size_t(axis)] != int64_t(p.scale.size())))
    fail(fmt::format("{} per-axis scales do not match axis {} of [{}]", p.scale.size(), p.axis, fmt::join(q.shape, ", ")),
         node_name(n));
  for (size_t i = 0; i < c.data.size(); ++i) {
    size_t ch = p.scale.size() == 1 ? 0 : (i / size_t(inner)) % p.scale.size();
    c.data[i] = (q.data[i] - p.zero[ch]) * p.scale[ch];
  }
  return c;
}

Tensor Importer::fake_quant(const Tensor& x, const QParams& p, const onnx::NodeProto& n, mlir::Location loc) {
  if (p.scale.size() != 1) fail("per-axis quantization of an activation is not supported (per-tensor only)", node_name(n));
  Value y = b_.create<tpu::FakeQuantOp>(loc, x.value.getType(), x.value, b_.getF64FloatAttr(p.scale[0]),
                                        b_.getF64FloatAttr(p.qmin - p.zero[0]), b_.getF64FloatAttr(p.qmax - p.zero[0]),
                                        b_.getStringAttr(node_name(n)));
  return {y, x.shape, x.nhwc};
}

void Importer::quantize_linear(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis", "saturate"});
  QParams p = qparams(n, 1, 2, attr_i(n, "axis", 1));
  quantized_[n.output(0)] = p;
  if (constants_.count(n.input(0))) {  // quantizing a constant: fold to its dequantized value
    const Constant& x = constants_.at(n.input(0));
    Constant c{x.shape, x.data};
    for (size_t i = 0; i < c.data.size(); ++i) {
      size_t ch = p.scale.size() == 1 ? 0 : i % p.scale.size();
      c.data[i] = (std::clamp(std::nearbyint(c.data[i] / p.scale[ch]) + p.zero[ch], p.qmin, p.qmax) - p.zero[ch]) * p.scale[ch];
    }
    constants_[n.output(0)] = c;
    return;
  }
  define(n, fake_quant(input(n, 0), p, n, loc));
}

void Importer::dequantize_linear(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis"});
  QParams p = qparams(n, 1, 2, attr_i(n, "axis", 1));
  auto c = constants_.find(n.input(0));
  if (c != constants_.end() && !quantized_.count(n.input(0))) {  // quantized weights: dequantize now
    constants_[n.output(0)] = dequantized(c->second, p, n);
    return;
  }
  if (c != constants_.end()) {  // a constant quantized by QuantizeLinear: already dequantized
    constants_[n.output(0)] = c->second;
    return;
  }
  // An activation: carried dequantized already. With other parameters than it was
  // quantized with, (q - z2) s2 = (v / s1 + z1 - z2) s2.
  const Tensor& x = input(n, 0);
  auto q = quantized_.find(n.input(0));
  if (q == quantized_.end())
    fail(fmt::format("DequantizeLinear of '{}', which no QuantizeLinear or QLinear operator produced", n.input(0)), node_name(n));
  if (p.scale.size() != 1 || q->second.scale.size() != 1) fail("per-axis dequantization of an activation is not supported", node_name(n));
  float s1 = q->second.scale[0], z1 = q->second.zero[0], s2 = p.scale[0], z2 = p.zero[0];
  if (s1 == s2 && z1 == z2) {
    define(n, x);
    return;
  }
  auto ones = std::vector<int64_t>(x.shape.size(), 1);
  auto t = x.value.getType();
  Value y = b_.create<mlir::tosa::MulOp>(loc, t, x.value, constant(ones, {s2 / s1}, loc), b_.getI8IntegerAttr(0));
  y = b_.create<mlir::tosa::AddOp>(loc, t, y, constant(ones, {(z1 - z2) * s2}, loc));
  define(n, {y, x.shape, x.nhwc});
}

// QLinearMatMul / QLinearConv: on dequantized values, then quantized to the output's
// parameters (an int32 bias B counts in units of x_scale * w_scale).
void Importer::qlinear(const onnx::NodeProto& n, mlir::Location loc) {
  bool conv = n.op_type() == "QLinearConv";
  if (conv) only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  else only_attrs(n, {});
  if (n.input_size() < 8) fail(fmt::format("{} needs 8 inputs (9 with a bias)", n.op_type()), node_name(n));
  QParams px = qparams(n, 1, 2, 1), pw = qparams(n, 4, 5, conv ? 0 : 1), py = qparams(n, 6, 7, 1);
  if (px.scale.size() != 1) fail("the input must be quantized per tensor", node_name(n));
  const Tensor& x = input(n, 0);
  Tensor y;
  if (constants_.count(n.input(3))) {
    Constant w = dequantized(constants_.at(n.input(3)), pw, n);
    if (conv) {
      std::vector<float> bias;
      if (n.input_size() > 8 && !n.input(8).empty()) {
        bias = const_input(n, 8, "QLinearConv bias").data;
        for (size_t co = 0; co < bias.size(); ++co) bias[co] *= px.scale[0] * pw.scale[pw.scale.size() == 1 ? 0 : co];
      }
      y = conv_of(n, x, w, bias, loc);
    } else {
      y = matmul_const(n, x, w, loc);
    }
  } else {
    if (conv) fail("QLinearConv weights must be constants", node_name(n));
    y = batch_matmul_of(n, x, input(n, 3), loc);  // both carried dequantized
  }
  quantized_[n.output(0)] = py;
  define(n, fake_quant(y, py, n, loc));
}

}  // namespace vtpu::compiler::onnx_import
