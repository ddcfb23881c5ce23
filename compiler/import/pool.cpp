// MaxPool (with its Indices output), AveragePool (2-D, and 3-D as separable passes), and the
// global pools.
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

void Importer::pool(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
  const Tensor& x = input(n, 0);
  if (x.shape.size() == 5) return pool_3d(n, x, loc);
  bool indices = n.output_size() > 1 && !n.output(1).empty();
  if (indices && x.shape.size() != 4) fail("MaxPool's Indices output is supported for 2-D pools only", node_name(n));
  if (x.shape.size() != 4) fail("only 1-D, 2-D and 3-D pooling is supported", node_name(n));
  auto k = attr_ints(n, "kernel_shape", {});
  if (k.size() != 2) fail("kernel_shape must have 2 values", node_name(n));
  auto stride = attr_ints(n, "strides", {1, 1});
  auto dil = attr_ints(n, "dilations", {1, 1});
  if (dil.size() != 2 || dil[0] < 1 || dil[1] < 1) fail("dilations must be 2 positive values", node_name(n));
  bool dilated = dil[0] != 1 || dil[1] != 1, avg = n.op_type() == "AveragePool";
  if (dilated && (indices || avg)) fail("dilations are supported on MaxPool without the Indices output", node_name(n));
  auto pad = pads_of(n, {x.shape[2], x.shape[3]}, k, stride, dil);
  // The extent a window spans: dilation x (kernel - 1) + 1.
  std::vector<int64_t> ke{dil[0] * (k[0] - 1) + 1, dil[1] * (k[1] - 1) + 1};
  if (attr_i(n, "ceil_mode", 0)) {
    // Round the output size up, dropping a last window that would start in the end padding,
    // and pad the end far enough for it. Those pads are never counted in a divisor.
    if (avg && attr_i(n, "count_include_pad", 0))
      fail("AveragePool with ceil_mode=1 and count_include_pad=1 is not supported", node_name(n));
    for (int d = 0; d < 2; ++d) {
      int64_t size = x.shape[size_t(2 + d)], before = pad[size_t(2 * d)], after = pad[size_t(2 * d + 1)];
      int64_t span = size + before + after - ke[size_t(d)], s = stride[size_t(d)];
      int64_t out = (span + s - 1) / s + 1;
      if ((out - 1) * s >= size + before) --out;
      pad[size_t(2 * d + 1)] = std::max(after, (out - 1) * s + ke[size_t(d)] - size - before);
    }
  }
  int64_t OH = (x.shape[2] + pad[0] + pad[1] - ke[0]) / stride[0] + 1, OW = (x.shape[3] + pad[2] + pad[3] - ke[1]) / stride[1] + 1;
  if (OH < 1 || OW < 1) fail("the pooling window is larger than the padded input", node_name(n));
  std::vector<int64_t> out{x.shape[0], x.shape[1], OH, OW};
  Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  if (dilated) {  // TOSA's max_pool2d has no dilation: straight to tpu.pool
    Value y = b_.create<tpu::PoolOp>(loc, tensor_type(to_nhwc(out)), in, b_.getStringAttr("max"), b_.getDenseI64ArrayAttr(k),
                                     b_.getDenseI64ArrayAttr(stride), b_.getDenseI64ArrayAttr(pad), b_.getStringAttr(node_name(n)),
                                     nullptr, b_.getDenseI64ArrayAttr(dil));
    return define(n, {y, out, true});
  }
  bool padded = pad[0] || pad[1] || pad[2] || pad[3];
  if (avg && padded && attr_i(n, "count_include_pad", 0)) {
    // TOSA's avg_pool2d leaves padding out of the divisor; ONNX's count_include_pad=1
    // counts it, which is average pooling of an explicitly zero-padded input.
    auto ptype = mlir::RankedTensorType::get({4, 2}, b_.getI64Type());
    std::vector<int64_t> p{0, 0, pad[0], pad[1], pad[2], pad[3], 0, 0};
    Value pads = b_.create<mlir::tosa::ConstOp>(loc, ptype, mlir::DenseElementsAttr::get(ptype, llvm::ArrayRef<int64_t>(p)));
    auto is = mlir::cast<mlir::RankedTensorType>(in.getType()).getShape();
    in = b_.create<mlir::tosa::PadOp>(loc, tensor_type({is[0], is[1] + pad[0] + pad[1], is[2] + pad[2] + pad[3], is[3]}), in,
                                      pads);
    pad = {0, 0, 0, 0};
  }
  Value y;
  if (avg)
    y = b_.create<mlir::tosa::AvgPool2dOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr(k),
                                           b_.getDenseI64ArrayAttr(stride), b_.getDenseI64ArrayAttr(pad),
                                           mlir::TypeAttr::get(b_.getF32Type()), nullptr);
  else
    y = b_.create<mlir::tosa::MaxPool2dOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr(k),
                                           b_.getDenseI64ArrayAttr(stride), b_.getDenseI64ArrayAttr(pad));
  define(n, {y, out, true});
  if (indices) {
    int64_t order = attr_i(n, "storage_order", 0);
    if (order != 0 && order != 1) fail(fmt::format("MaxPool storage_order {} is not 0 or 1", order), node_name(n));
    if (numel(x.shape) > (int64_t(1) << 24))
      fail(fmt::format("MaxPool's Indices of a {}-element input: indices are computed in fp32 and must stay below 2^24",
                       numel(x.shape)),
           node_name(n));
    Value z = b_.create<tpu::PoolArgmaxOp>(loc, mlir::RankedTensorType::get(to_nhwc(out), b_.getI32Type()), in,
                                           b_.getDenseI64ArrayAttr(k), b_.getDenseI64ArrayAttr(stride),
                                           b_.getDenseI64ArrayAttr(pad), b_.getI64IntegerAttr(order),
                                           b_.getStringAttr(node_name(n)));
    values_[n.output(1)] = {z, out, true};
  }
}

// A 3-D pool is separable. H and W are pooled with the depth folded into the channels
// ([N, C*D, H, W], channel c*D + d), then the depth across channels: output channel
// (c, od) is the maximum (or the weighted sum) of input channels (c, od*sd + kd*dd - pd),
// picked by 1x1 convolutions with 0/1 weights (exact: one nonzero term each). The image
// stays C*D channels wide (pooling the depth as a height would leave C in the lanes).
void Importer::pool_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc) {
  if (n.output_size() > 1 && !n.output(1).empty()) fail("MaxPool's Indices output is supported for 2-D pools only", node_name(n));
  auto k = attr_ints(n, "kernel_shape", {});
  if (k.size() != 3) fail("kernel_shape of a 3-D pool must have 3 values", node_name(n));
  auto stride = per_axis(n, "strides", 1, 3), dil = per_axis(n, "dilations", 1, 3);
  int64_t N = x.shape[0], C = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
  auto p = explicit_pads(n, {D, H, W}, k, stride, dil);
  onnx::NodeProto hw = derived_node(n, "#hw", {"auto_pad", "kernel_shape", "strides", "dilations", "pads", "storage_order"});
  values_[n.input(0) + "#hw"] = {reshape(x.value, {N, C * D, H, W}, loc), {N, C * D, H, W}, false};
  hw.add_input(n.input(0) + "#hw");
  set_ints(hw, "kernel_shape", {k[1], k[2]});
  set_ints(hw, "strides", {stride[1], stride[2]});
  set_ints(hw, "dilations", {dil[1], dil[2]});
  set_ints(hw, "pads", {p[1], p[2], p[4], p[5]});
  Tensor y1 = sub_node(hw);
  // The depth's windows, with ceil_mode's rule (no window starts in the end padding).
  bool avg = n.op_type() == "AveragePool", ceil = attr_i(n, "ceil_mode", 0) != 0;
  int64_t span = D + p[0] + p[3] - (k[0] - 1) * dil[0] - 1;
  int64_t OD = (ceil ? (span + stride[0] - 1) / stride[0] : span / stride[0]) + 1;
  if (ceil && (OD - 1) * stride[0] >= D + p[0]) --OD;
  if (span < 0 || OD < 1) fail("the pooling window is deeper than the padded input", node_name(n));
  bool count_pad = avg && attr_i(n, "count_include_pad", 0) != 0;
  // taps[od]: the source depth of each tap inside the input; counted: taps inside the declared padding too.
  auto taps = std::vector<std::vector<int64_t>>(size_t(OD));
  std::vector<int64_t> counted(size_t(OD), 0);
  for (int64_t od = 0; od < OD; ++od)
    for (int64_t kd = 0; kd < k[0]; ++kd) {
      int64_t d = od * stride[0] + kd * dil[0] - p[0];
      if (d >= 0 && d < D) taps[size_t(od)].push_back(d);
      if (d >= -p[0] && d < D + p[3]) ++counted[size_t(od)];
    }
  for (const auto& t : taps)
    if (t.empty()) fail("a pooling window lies entirely in the depth padding", node_name(n));
  ConvGeometry one{{1, 1}, {1, 1}, {0, 0, 0, 0}};
  auto pick = [&](const std::function<float(int64_t od, int64_t d)>& weight) {
    Constant w{{C * OD, C * D, 1, 1}, std::vector<float>(size_t(C * OD * C * D), 0.0f)};
    for (int64_t c = 0; c < C; ++c)
      for (int64_t od = 0; od < OD; ++od)
        for (int64_t d = 0; d < D; ++d) w.data[size_t((c * OD + od) * C * D + c * D + d)] = weight(od, d);
    return conv_of(n, y1, w, {}, loc, &one);
  };
  Tensor y;
  if (avg) {
    y = pick([&](int64_t od, int64_t d) {
      const auto& t = taps[size_t(od)];
      float cnt = float(count_pad ? counted[size_t(od)] : int64_t(t.size()));
      return float(std::count(t.begin(), t.end(), d)) / cnt;
    });
  } else {
    // One pick per tap; a tap in the padding repeats the window's first tap (max is idempotent).
    for (int64_t kd = 0; kd < k[0]; ++kd) {
      Tensor t = pick([&](int64_t od, int64_t d) {
        const auto& ts = taps[size_t(od)];
        return float(d == (size_t(kd) < ts.size() ? ts[size_t(kd)] : ts[0]));
      });
      y = kd == 0 ? t : Tensor{b_.create<mlir::tosa::MaximumOp>(loc, y.value.getType(), y.value, t.value), t.shape, true};
    }
  }
  std::vector<int64_t> out{N, C, OD, y1.shape[2], y1.shape[3]};
  define(n, {reshape(to_nchw_value(y, loc), out, loc), out, false});
}

void Importer::global_pool(const onnx::NodeProto& n, mlir::Location loc) {
  const Tensor& x = input(n, 0);
  if (x.shape.size() != 4) fail(fmt::format("{} needs a 4-D input", n.op_type()), node_name(n));
  std::vector<int64_t> out{x.shape[0], x.shape[1], 1, 1};
  Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  auto k = b_.getDenseI64ArrayAttr({x.shape[2], x.shape[3]}), one = b_.getDenseI64ArrayAttr({1, 1}),
       none = b_.getDenseI64ArrayAttr({0, 0, 0, 0});
  Value y = n.op_type() == "GlobalMaxPool"
                ? Value(b_.create<mlir::tosa::MaxPool2dOp>(loc, tensor_type(to_nhwc(out)), in, k, one, none))
                : Value(b_.create<mlir::tosa::AvgPool2dOp>(loc, tensor_type(to_nhwc(out)), in, k, one, none,
                                                           mlir::TypeAttr::get(b_.getF32Type()), nullptr));
  define(n, {y, out, true});
}

}  // namespace vtpu::compiler::onnx_import
