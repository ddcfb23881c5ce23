// BatchNormalization (inference and training mode), InstanceNormalization,
// LayerNormalization and Softmax, in the TOSA forms the lowering matches back into tpu ops.
#include <fmt/format.h>

#include <cmath>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

void Importer::batchnorm(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"epsilon", "momentum", "spatial", "training_mode"});
  if (attr_i(n, "spatial", 1) == 0)
    fail("BatchNormalization with spatial=0 (per-element statistics) is not supported", node_name(n));
  const Tensor& x = input(n, 0);
  float eps = attr_f(n, "epsilon", 1e-5f);
  const auto& gamma = const_input(n, 1, "BatchNormalization scale").data;
  const auto& beta = const_input(n, 2, "BatchNormalization bias").data;
  const auto& mean = const_input(n, 3, "BatchNormalization mean").data;
  const auto& var = const_input(n, 4, "BatchNormalization var").data;
  size_t C = gamma.size();
  int64_t channels = x.shape.size() > 1 ? x.shape[1] : 0;
  for (const auto* v : {&beta, &mean, &var})
    if (v->size() != C || int64_t(C) != channels)
      fail(fmt::format("BatchNormalization parameters must have one value per channel ({})", channels), node_name(n));
  if (attr_i(n, "training_mode", 0) != 0) return batchnorm_training(n, x, gamma, beta, mean, var, eps, loc);
  std::vector<float> s(C), t(C);
  for (size_t c = 0; c < C; ++c) {
    if (!(var[c] + eps > 0))
      fail(fmt::format("BatchNormalization variance {} + epsilon {} at channel {} is not positive", var[c], eps, c),
           node_name(n));
    s[c] = gamma[c] / std::sqrt(var[c] + eps);
    t[c] = beta[c] - mean[c] * s[c];
  }
  // y = x * s + t per channel (the last dimension in NHWC).
  std::vector<int64_t> cs = x.nhwc ? std::vector<int64_t>{1, 1, 1, int64_t(C)} : std::vector<int64_t>{1, int64_t(C)};
  if (!x.nhwc && x.shape.size() != 2) fail("BatchNormalization needs an image or a 2-D input", node_name(n));
  Value m = b_.create<mlir::tosa::MulOp>(loc, x.value.getType(), x.value, constant(cs, s, loc), b_.getI8IntegerAttr(0));
  Value a = b_.create<mlir::tosa::AddOp>(loc, x.value.getType(), m, constant(cs, t, loc));
  define(n, {a, x.shape, x.nhwc});
}

// Training mode normalizes with the batch's own statistics: the mean and population
// variance of each channel over every other dimension, and also returns the running
// statistics moved toward them by `momentum`. A channel's sum over the P = numel / C
// positions is a matmul of the channel-major [C, P] activation with a column of ones
// (fp32 accumulation); the variance is taken of the centred values, not E[x^2] - mean^2.
void Importer::batchnorm_training(const onnx::NodeProto& n, const Tensor& x, const std::vector<float>& gamma,
                                  const std::vector<float>& beta, const std::vector<float>& mean_in,
                                  const std::vector<float>& var_in, float eps, mlir::Location loc) {
  if (!x.nhwc && x.shape.size() != 2) fail("BatchNormalization needs an image or a 2-D input", node_name(n));
  int64_t C = int64_t(gamma.size()), P = numel(x.shape) / C;
  float momentum = attr_f(n, "momentum", 0.9f);
  std::vector<int64_t> row{1, C}, bshape = x.nhwc ? std::vector<int64_t>{1, 1, 1, C} : row;
  auto xtype = x.value.getType();
  auto scalar = [&](float v) { return constant({1, 1}, {v}, loc); };
  // The per-channel mean over positions of v (the stored shape of x) as a [1, C] row.
  auto channel_mean = [&](Value v) {
    Value cp = transpose(reshape(v, {P, C}, loc), {1, 0}, loc);
    Value sum = b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({C, 1}), cp, constant({1, P}, std::vector<float>(size_t(P), 1.0f), loc),
                                                        constant({1}, {0.0f}, loc), nullptr);
    Value m = b_.create<mlir::tosa::MulOp>(loc, tensor_type({C, 1}), sum, scalar(1.0f / float(P)), b_.getI8IntegerAttr(0));
    return transpose(m, {1, 0}, loc);
  };
  Value mean = channel_mean(x.value);
  Value centred = b_.create<mlir::tosa::SubOp>(loc, xtype, x.value, reshape(mean, bshape, loc));
  Value sq = b_.create<mlir::tosa::MulOp>(loc, xtype, centred, centred, b_.getI8IntegerAttr(0));
  Value var = channel_mean(sq);
  Value rstd = b_.create<mlir::tosa::RsqrtOp>(loc, tensor_type(row), b_.create<mlir::tosa::AddOp>(loc, tensor_type(row), var, scalar(eps)));
  Value y = b_.create<mlir::tosa::MulOp>(loc, xtype, centred, reshape(rstd, bshape, loc), b_.getI8IntegerAttr(0));
  y = b_.create<mlir::tosa::MulOp>(loc, xtype, y, constant(bshape, gamma, loc), b_.getI8IntegerAttr(0));
  y = b_.create<mlir::tosa::AddOp>(loc, xtype, y, constant(bshape, beta, loc));
  define(n, {y, x.shape, x.nhwc});
  // running = given * momentum + batch * (1 - momentum)
  auto running = [&](Value batch, const std::vector<float>& given) {
    std::vector<float> g(given);
    for (float& v : g) v *= momentum;
    Value r = b_.create<mlir::tosa::MulOp>(loc, tensor_type(row), batch, scalar(1.0f - momentum), b_.getI8IntegerAttr(0));
    return reshape(b_.create<mlir::tosa::AddOp>(loc, tensor_type(row), r, constant(row, g, loc)), {C}, loc);
  };
  if (n.output_size() > 1 && !n.output(1).empty()) values_[n.output(1)] = {running(mean, mean_in), {C}, false};
  if (n.output_size() > 2 && !n.output(2).empty()) values_[n.output(2)] = {running(var, var_in), {C}, false};
}

// InstanceNormalization: each image's channel normalized over its H and W. The mean and the
// variance of the centred values are global average pools ([N, 1, 1, C], broadcast back over
// the pixels); then the per-channel scale and bias.
void Importer::instance_norm(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"epsilon"});
  const Tensor& x = input(n, 0);
  if (x.shape.size() != 4) fail("InstanceNormalization is supported on images (4-D inputs)", node_name(n));
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const auto& scale = const_input(n, 1, "InstanceNormalization scale").data;
  const auto& bias = const_input(n, 2, "InstanceNormalization B").data;
  if (int64_t(scale.size()) != C || int64_t(bias.size()) != C)
    fail(fmt::format("InstanceNormalization scale and B need {} values (one per channel)", C), node_name(n));
  Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  auto type = tensor_type({N, H, W, C}), stat = tensor_type({N, 1, 1, C});
  auto shift = b_.getI8IntegerAttr(0);
  auto mean_of = [&](Value v) {
    return Value(b_.create<mlir::tosa::AvgPool2dOp>(loc, stat, v, b_.getDenseI64ArrayAttr({H, W}), b_.getDenseI64ArrayAttr({1, 1}),
                                                    b_.getDenseI64ArrayAttr({0, 0, 0, 0}), mlir::TypeAttr::get(b_.getF32Type()), nullptr));
  };
  Value c = b_.create<mlir::tosa::SubOp>(loc, type, in, mean_of(in));
  Value var = mean_of(b_.create<mlir::tosa::MulOp>(loc, type, c, c, shift));
  Value ve = b_.create<mlir::tosa::AddOp>(loc, stat, var, constant({1, 1, 1, 1}, {attr_f(n, "epsilon", 1e-5f)}, loc));
  Value y = b_.create<mlir::tosa::MulOp>(loc, type, c, b_.create<mlir::tosa::RsqrtOp>(loc, stat, ve), shift);
  y = b_.create<mlir::tosa::MulOp>(loc, type, y, constant({1, 1, 1, C}, scale, loc), shift);
  y = b_.create<mlir::tosa::AddOp>(loc, type, y, constant({1, 1, 1, C}, bias, loc));
  define(n, {y, x.shape, true});
}

// LayerNormalization over the last axis, as TOSA: c = x - mean(x),
// y = c * rsqrt(mean(c * c) + epsilon) * scale + bias. The lowering matches the
// normalization back into one tpu.layernorm; scale and bias become an affine step.
void Importer::layernorm(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis", "epsilon", "stash_type"});
  Tensor x = input(n, 0);
  int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", -1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(fmt::format("LayerNormalization axis {} is out of range for {} dimensions", axis, r), node_name(n));
  for (int i = 1; i < n.output_size(); ++i)
    if (!n.output(i).empty()) fail("LayerNormalization's Mean and InvStdDev outputs are not supported", node_name(n));
  // Normalizing over dimensions axis.. is normalizing the last dimension of the 2-D view
  // [rows, features] (an image in its logical NCHW order first).
  std::vector<int64_t> logical = x.shape;
  if (x.nhwc) x = {to_nchw_value(x, loc), x.shape, false};
  int64_t D = 1;
  for (int64_t i = axis; i < r; ++i) D *= x.shape[size_t(i)];
  if (axis != r - 1) x = {reshape(x.value, {numel(x.shape) / D, D}, loc), {numel(x.shape) / D, D}, false};
  const Constant& g = const_input(n, 1, "LayerNormalization scale");
  std::vector<float> beta(size_t(D), 0.0f);
  if (n.input_size() > 2 && !n.input(2).empty()) beta = const_input(n, 2, "LayerNormalization bias").data;
  if (g.data.size() != size_t(D) || beta.size() != size_t(D))
    fail(fmt::format("LayerNormalization scale and bias need {} values (the last dimension)", D), node_name(n));
  auto type = mlir::cast<mlir::RankedTensorType>(x.value.getType());
  std::vector<int64_t> red(x.shape), ones(x.shape.size(), 1);
  red.back() = 1;
  auto ax = b_.getI32IntegerAttr(int32_t(x.shape.size() - 1));
  auto shift = b_.getI8IntegerAttr(0);
  Value inv_d = constant(ones, {1.0f / float(D)}, loc);
  Value mean = b_.create<mlir::tosa::MulOp>(loc, tensor_type(red),
                                            b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), x.value, ax), inv_d, shift);
  Value c = b_.create<mlir::tosa::SubOp>(loc, type, x.value, mean);
  Value sq = b_.create<mlir::tosa::MulOp>(loc, type, c, c, shift);
  Value var = b_.create<mlir::tosa::MulOp>(loc, tensor_type(red), b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), sq, ax),
                                           inv_d, shift);
  Value ve = b_.create<mlir::tosa::AddOp>(loc, tensor_type(red), var, constant(ones, {attr_f(n, "epsilon", 1e-5f)}, loc));
  Value norm = b_.create<mlir::tosa::MulOp>(loc, type, c, b_.create<mlir::tosa::RsqrtOp>(loc, tensor_type(red), ve), shift);
  std::vector<int64_t> cs(ones);
  cs.back() = D;
  Value y = b_.create<mlir::tosa::MulOp>(loc, type, norm, constant(cs, g.data, loc), shift);
  y = b_.create<mlir::tosa::AddOp>(loc, type, y, constant(cs, beta, loc));
  define(n, {x.shape == logical ? y : reshape(y, logical, loc), logical, false});
}

// Softmax over the last dimension of v, as TOSA (the lowering matches it back); with `log`,
// LogSoftmax: (x - max) - log(sum(exp(x - max))), which stays finite where softmax underflows.
Value Importer::softmax_last(Value v, const std::vector<int64_t>& shape, mlir::Location loc, bool log) {
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  std::vector<int64_t> red(shape);
  red.back() = 1;
  auto ax = b_.getI32IntegerAttr(int32_t(shape.size() - 1));
  Value mx = b_.create<mlir::tosa::ReduceMaxOp>(loc, tensor_type(red), v, ax);
  Value sub = b_.create<mlir::tosa::SubOp>(loc, type, v, mx);
  Value ex = b_.create<mlir::tosa::ExpOp>(loc, type, sub);
  Value sum = b_.create<mlir::tosa::ReduceSumOp>(loc, tensor_type(red), ex, ax);
  if (log) return b_.create<mlir::tosa::SubOp>(loc, type, sub, b_.create<mlir::tosa::LogOp>(loc, tensor_type(red), sum));
  Value rcp = b_.create<mlir::tosa::ReciprocalOp>(loc, tensor_type(red), sum);
  return b_.create<mlir::tosa::MulOp>(loc, type, ex, rcp, b_.getI8IntegerAttr(0));
}

// Opset 13 on: softmax along one axis (moved last by a transpose when it is not). Before
// 13: the input is flattened to 2-D at the axis and the softmax covers the whole tail.
// LogSoftmax follows the same rules.
void Importer::softmax(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis"});
  Tensor x = input(n, 0);
  if (x.nhwc) x = {to_nchw_value(x, loc), x.shape, false};
  int64_t r = int64_t(x.shape.size());
  bool old_rule = opset_ && opset_ < 13;
  int64_t axis = attr_i(n, "axis", old_rule ? 1 : -1);
  const bool log = n.op_type() == "LogSoftmax";
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(fmt::format("{} axis {} is out of range for {} dimensions", n.op_type(), axis, r), node_name(n));
  Value y;
  if (axis == r - 1) {
    y = softmax_last(x.value, x.shape, loc, log);
  } else if (old_rule) {
    int64_t tail = 1;
    for (int64_t i = axis; i < r; ++i) tail *= x.shape[size_t(i)];
    std::vector<int64_t> flat{numel(x.shape) / tail, tail};
    y = reshape(softmax_last(reshape(x.value, flat, loc), flat, loc, log), x.shape, loc);
  } else {
    std::vector<int32_t> perm;
    for (int32_t i = 0; i < int32_t(r); ++i) perm.push_back(i);
    std::swap(perm[size_t(axis)], perm.back());
    std::vector<int64_t> moved = x.shape;
    std::swap(moved[size_t(axis)], moved.back());
    y = transpose(softmax_last(transpose(x.value, perm, loc), moved, loc, log), perm, loc);
  }
  define(n, {y, x.shape, false});
}

}  // namespace vtpu::compiler::onnx_import
