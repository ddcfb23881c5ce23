// Conv (2-D, grouped and depthwise; 3-D by depth folding; 1-D arrives as 2-D, dispatch.cpp) and
// ConvTranspose (2-D and 3-D), and the pads every windowed operator works out.
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

// A 2-D node's pads in TOSA order: top, bottom, left, right.
std::vector<int64_t> Importer::pads_of(const onnx::NodeProto& n, const std::vector<int64_t>& in_hw, const std::vector<int64_t>& kernel,
                                       const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation) {
  auto p = explicit_pads(n, in_hw, kernel, stride, dilation);  // top, left, bottom, right
  return {p[0], p[2], p[1], p[3]};
}

// Explicit [begin..., end...] pads of a Conv or pooling node over `in`, from auto_pad or pads.
std::vector<int64_t> Importer::explicit_pads(const onnx::NodeProto& n, const std::vector<int64_t>& in, const std::vector<int64_t>& k,
                                             const std::vector<int64_t>& stride, const std::vector<int64_t>& dil) {
  size_t r = in.size();
  std::string ap = attr_s(n, "auto_pad", "NOTSET");
  std::vector<int64_t> p = attr_ints(n, "pads", std::vector<int64_t>(2 * r, 0));
  if (p.size() != 2 * r) fail(fmt::format("pads must have {} values", 2 * r), node_name(n));
  if (ap == "VALID") p.assign(2 * r, 0);
  else if (ap == "SAME_UPPER" || ap == "SAME_LOWER")
    for (size_t i = 0; i < r; ++i) {
      int64_t out = (in[i] + stride[i] - 1) / stride[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * stride[i] + (k[i] - 1) * dil[i] + 1 - in[i]);
      int64_t small = total / 2;
      p[i] = ap == "SAME_UPPER" ? small : total - small;
      p[i + r] = total - p[i];
    }
  else if (ap != "NOTSET") fail(fmt::format("auto_pad '{}' is not supported", ap), node_name(n));
  return p;
}

// Conv with `group`: depthwise (one group per input channel) becomes
// tosa.depthwise_conv2d; other groupings become one convolution per group on a channel
// window of the input, joined by a concat (TOSA has no grouped convolution).
void Importer::conv(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  if (input(n, 0).shape.size() == 5) return conv_3d(n, input(n, 0), loc);
  std::vector<float> bias;
  if (n.input_size() > 2 && !n.input(2).empty()) bias = const_input(n, 2, "Conv bias").data;
  define(n, conv_of(n, input(n, 0), take_const_input(n, 1, "Conv weight"), bias, loc));
}

// A 3-D Conv as a 2-D one with the depth folded into the channels: output channel
// (co, od) of [N, CO*OD, OH, OW] reads input channel (ci, id) of [N, CI*D, H, W] through
// the kernel's depth tap kd where id = od*sd - pad + kd*dd (zero weights elsewhere; a
// group's channels stay contiguous, so groups carry over).
void Importer::conv_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc) {
  const Constant& w = const_input(n, 1, "Conv weight");
  if (w.shape.size() != 5) fail("the 3-D Conv weight must be 5-D [CO, CI/group, KD, KH, KW]", node_name(n));
  int64_t G = attr_i(n, "group", 1), CO = w.shape[0], CIg = w.shape[1], KD = w.shape[2], KH = w.shape[3], KW = w.shape[4];
  int64_t N = x.shape[0], CI = x.shape[1], D = x.shape[2], H = x.shape[3], W = x.shape[4];
  if (G < 1 || CI % G || CO % G || CIg * G != CI)
    fail(fmt::format("Conv weight [{}] does not fit {} input channels in {} groups", fmt::join(w.shape, ", "), CI, G), node_name(n));
  auto stride = per_axis(n, "strides", 1, 3), dil = per_axis(n, "dilations", 1, 3);
  auto p = explicit_pads(n, {D, H, W}, {KD, KH, KW}, stride, dil);
  int64_t OD = (D + p[0] + p[3] - (KD - 1) * dil[0] - 1) / stride[0] + 1;
  if (OD < 1) fail("the Conv output depth would be empty", node_name(n));
  int64_t CIg2 = CIg * D;
  Constant w2;
  w2.shape = {CO * OD, CIg2, KH, KW};
  w2.data.assign(size_t(CO * OD * CIg2 * KH * KW), 0.0f);
  for (int64_t co = 0; co < CO; ++co)
    for (int64_t od = 0; od < OD; ++od)
      for (int64_t kd = 0; kd < KD; ++kd) {
        int64_t id = od * stride[0] - p[0] + kd * dil[0];
        if (id < 0 || id >= D) continue;
        for (int64_t ci = 0; ci < CIg; ++ci)
          for (int64_t hw = 0; hw < KH * KW; ++hw)
            w2.data[size_t(((co * OD + od) * CIg2 + ci * D + id) * KH * KW + hw)] = w.data[size_t(((co * CIg + ci) * KD + kd) * KH * KW + hw)];
      }
  std::vector<float> bias;
  if (n.input_size() > 2 && !n.input(2).empty()) {
    for (float b : const_input(n, 2, "Conv bias").data) bias.insert(bias.end(), size_t(OD), b);
    if (int64_t(bias.size()) != CO * OD) fail(fmt::format("Conv bias does not have {} values", CO), node_name(n));
  }
  onnx::NodeProto m = derived_node(n, "#2d", {"kernel_shape", "strides", "dilations", "pads", "auto_pad"});
  set_ints(m, "strides", {stride[1], stride[2]});
  set_ints(m, "dilations", {dil[1], dil[2]});
  set_ints(m, "pads", {p[1], p[2], p[4], p[5]});
  Tensor x2{reshape(x.value, {N, CI * D, H, W}, loc), {N, CI * D, H, W}, false};
  Tensor y = conv_of(m, x2, std::move(w2), bias, loc);
  std::vector<int64_t> out{N, CO, OD, y.shape[2], y.shape[3]};
  define(n, {reshape(y.nhwc ? to_nchw_value(y, loc) : y.value, out, loc), out, false});
}

Tensor Importer::conv_of(const onnx::NodeProto& n, const Tensor& x, Constant w, std::vector<float> bias, mlir::Location loc,
                         const ConvGeometry* geometry) {
  if (x.shape.size() != 4) fail("only 2-D convolutions (4-D inputs) are supported", node_name(n));
  if (w.shape.size() != 4) fail("the Conv weight must be 4-D [CO, CI/group, KH, KW]", node_name(n));
  int64_t G = attr_i(n, "group", 1);
  int64_t CO = w.shape[0], CIg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  if (G < 1 || x.shape[1] % G || CO % G)
    fail(fmt::format("Conv group {} does not divide the {} input and {} output channels", G, x.shape[1], CO), node_name(n));
  if (CIg * G != x.shape[1])
    fail(fmt::format("Conv weight has {} channels per group but the input has {} channels in {} groups", CIg, x.shape[1], G),
         node_name(n));
  auto stride = geometry ? geometry->stride : attr_ints(n, "strides", {1, 1});
  auto dil = geometry ? geometry->dilation : attr_ints(n, "dilations", {1, 1});
  auto pad = geometry ? geometry->pad : pads_of(n, {x.shape[2], x.shape[3]}, {KH, KW}, stride, dil);
  int64_t OH = (x.shape[2] + pad[0] + pad[1] - ((KH - 1) * dil[0] + 1)) / stride[0] + 1;
  int64_t OW = (x.shape[3] + pad[2] + pad[3] - ((KW - 1) * dil[1] + 1)) / stride[1] + 1;
  if (OH < 1 || OW < 1) fail("the Conv output would be empty", node_name(n));
  if (bias.empty()) bias.assign(size_t(CO), 0.0f);
  if (bias.size() != size_t(CO)) fail(fmt::format("Conv bias has {} values for {} output channels", bias.size(), CO), node_name(n));
  Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  std::vector<int64_t> out{x.shape[0], CO, OH, OW};
  auto pad_a = b_.getDenseI64ArrayAttr(pad), stride_a = b_.getDenseI64ArrayAttr(stride), dil_a = b_.getDenseI64ArrayAttr(dil);
  if (G > 1 && CIg == 1) {
    // Depthwise: [CO, 1, KH, KW] with CO = C x M -> TOSA's [KH, KW, C, M] (same order of co).
    int64_t C = x.shape[1], M = CO / C;
    std::vector<float> wt(w.data.size());
    for (int64_t o = 0; o < CO; ++o)
      for (int64_t h = 0; h < KH; ++h)
        for (int64_t ww = 0; ww < KW; ++ww) wt[size_t((h * KW + ww) * CO + o)] = w.data[size_t((o * KH + h) * KW + ww)];
    Value y = b_.create<mlir::tosa::DepthwiseConv2DOp>(loc, tensor_type(to_nhwc(out)), in, constant({KH, KW, C, M}, std::move(wt), loc),
                                                       constant({CO}, bias, loc), pad_a, stride_a, dil_a, nullptr);
    return {y, out, true};
  }
  int64_t COg = CO / G;
  std::vector<Value> parts;
  for (int64_t g = 0; g < G; ++g) {
    // OIHW -> OHWI, output channels [g*COg, (g+1)*COg), written in order (a 1 x 1 kernel's
    // are the same order: one group's weights are taken over as they are, others copied).
    std::vector<float> wt;
    const float* wg = w.data.data() + g * COg * CIg * KH * KW;
    if (KH * KW == 1 && G == 1) wt = std::move(w.data);
    else if (KH * KW == 1) wt.assign(wg, wg + COg * CIg);
    else wt.reserve(size_t(COg * KH * KW * CIg));
    for (int64_t o = 0; KH * KW > 1 && o < COg; ++o)
      for (int64_t h = 0; h < KH; ++h)
        for (int64_t ww = 0; ww < KW; ++ww)
          for (int64_t i = 0; i < CIg; ++i) wt.push_back(wg[((o * CIg + i) * KH + h) * KW + ww]);
    std::vector<float> bg(bias.begin() + g * COg, bias.begin() + (g + 1) * COg);
    Value xg = in;
    if (G > 1)
      xg = b_.create<mlir::tosa::SliceOp>(loc, tensor_type({x.shape[0], x.shape[2], x.shape[3], CIg}), in,
                                           b_.getDenseI64ArrayAttr({0, 0, 0, g * CIg}),
                                           b_.getDenseI64ArrayAttr({x.shape[0], x.shape[2], x.shape[3], CIg}));
    parts.push_back(b_.create<mlir::tosa::Conv2DOp>(loc, tensor_type({x.shape[0], OH, OW, COg}), xg,
                                                    constant({COg, KH, KW, CIg}, std::move(wt), loc), constant({COg}, bg, loc), pad_a,
                                                    stride_a, dil_a, nullptr));
  }
  Value y = G == 1 ? parts[0] : b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(to_nhwc(out)), parts, 3).getResult();
  return {y, out, true};
}

// ConvTranspose as a convolution: the input spread out by the stride (zeros between its
// pixels, tpu.zero_insert) and padded by dilation x (K - 1) minus the pads (plus
// output_padding at the end), then a stride-1 convolution with the kernel flipped and its
// channel axes swapped: [CI, CO/g, KH, KW] -> [CO, CI/g, KH, KW].
void Importer::conv_transpose(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides"});
  const Tensor& x = input(n, 0);
  if (x.shape.size() == 5) return conv_transpose_3d(n, x, loc);
  if (x.shape.size() != 4) fail("only 1-D, 2-D and 3-D ConvTranspose is supported", node_name(n));
  const Constant& w = const_input(n, 1, "ConvTranspose weight");
  if (w.shape.size() != 4) fail("the ConvTranspose weight must be 4-D [CI, CO/group, KH, KW]", node_name(n));
  int64_t G = attr_i(n, "group", 1), CI = w.shape[0], COg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  if (G < 1 || CI != x.shape[1] || CI % G)
    fail(fmt::format("ConvTranspose weight [{}] does not fit {} input channels in {} groups", fmt::join(w.shape, ", "), x.shape[1], G),
         node_name(n));
  int64_t CIg = CI / G, CO = COg * G;
  auto stride = attr_ints(n, "strides", {1, 1}), dil = attr_ints(n, "dilations", {1, 1});
  auto opad = attr_ints(n, "output_padding", {0, 0});
  std::vector<int64_t> p = attr_ints(n, "pads", {0, 0, 0, 0});  // top, left, bottom, right
  std::vector<int64_t> k{KH, KW}, in{x.shape[2], x.shape[3]};
  std::string ap = attr_s(n, "auto_pad", "NOTSET");
  auto out_shape = attr_ints(n, "output_shape", {});
  if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (int i = 0; i < 2; ++i) {
      int64_t want = !out_shape.empty() ? out_shape[out_shape.size() - 2 + size_t(i)] : in[size_t(i)] * stride[size_t(i)];
      int64_t total = stride[size_t(i)] * (in[size_t(i)] - 1) + opad[size_t(i)] + (k[size_t(i)] - 1) * dil[size_t(i)] + 1 - want;
      // ONNX's rule with floor division: a negative total (a larger output_shape) pads the
      // end, like output_padding. SAME_UPPER puts the larger half at the end.
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = ap == "SAME_UPPER";
      p[size_t(i)] = upper ? half : total - half;
      p[size_t(i) + 2] = upper ? total - half : half;
    }
  } else if (ap == "VALID") {
    p = {0, 0, 0, 0};
  } else if (ap != "NOTSET") {
    fail(fmt::format("auto_pad '{}' is not supported", ap), node_name(n));
  }
  // Padding of the spread input (TOSA order top, bottom, left, right).
  std::vector<int64_t> spread_pad(4);
  for (int i = 0; i < 2; ++i) {
    int64_t edge = dil[size_t(i)] * (k[size_t(i)] - 1);
    spread_pad[size_t(2 * i)] = edge - p[size_t(i)];
    spread_pad[size_t(2 * i + 1)] = edge - p[size_t(i) + 2] + opad[size_t(i)];
    if (spread_pad[size_t(2 * i)] < 0 || spread_pad[size_t(2 * i + 1)] < 0)
      fail("ConvTranspose pads larger than dilation x (kernel - 1) are not supported", node_name(n));
  }
  Value in_v = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  int64_t SH = (x.shape[2] - 1) * stride[0] + 1 + spread_pad[0] + spread_pad[1];
  int64_t SW = (x.shape[3] - 1) * stride[1] + 1 + spread_pad[2] + spread_pad[3];
  Value spread = b_.create<tpu::ZeroInsertOp>(loc, tensor_type({x.shape[0], SH, SW, CI}), in_v, b_.getDenseI64ArrayAttr(stride),
                                              b_.getDenseI64ArrayAttr(spread_pad), b_.getStringAttr(node_name(n)));
  Constant wc;
  wc.shape = {CO, CIg, KH, KW};
  wc.data.resize(w.data.size());
  for (int64_t g = 0; g < G; ++g)
    for (int64_t o = 0; o < COg; ++o)
      for (int64_t i = 0; i < CIg; ++i)
        for (int64_t h = 0; h < KH; ++h)
          for (int64_t ww = 0; ww < KW; ++ww)
            wc.data[size_t((((g * COg + o) * CIg + i) * KH + h) * KW + ww)] =
                w.data[size_t((((g * CIg + i) * COg + o) * KH + (KH - 1 - h)) * KW + (KW - 1 - ww))];
  std::vector<float> bias;
  if (n.input_size() > 2 && !n.input(2).empty()) bias = const_input(n, 2, "ConvTranspose bias").data;
  ConvGeometry geo{{1, 1}, dil, {0, 0, 0, 0}};
  define(n, conv_of(n, {spread, {x.shape[0], CI, SH, SW}, true}, std::move(wc), bias, loc, &geo));
}

// A 3-D ConvTranspose as a 2-D one with the depth folded into the channels: input channel
// (ci, id) of [N, CI*D, H, W] feeds output channel (co, od) of [N, CO*OD, H', W'] through
// the kernel's depth tap kd where od = id*sd - pad + kd*dd (zero weights elsewhere).
void Importer::conv_transpose_3d(const onnx::NodeProto& n, const Tensor& x, mlir::Location loc) {
  const Constant& w = const_input(n, 1, "ConvTranspose weight");
  if (w.shape.size() != 5) fail("the 3-D ConvTranspose weight must be 5-D [CI, CO/group, KD, KH, KW]", node_name(n));
  int64_t G = attr_i(n, "group", 1), CI = w.shape[0], COg = w.shape[1], KD = w.shape[2], KH = w.shape[3], KW = w.shape[4];
  int64_t N = x.shape[0], D = x.shape[2], H = x.shape[3], W = x.shape[4];
  if (G < 1 || CI != x.shape[1] || CI % G)
    fail(fmt::format("ConvTranspose weight [{}] does not fit {} input channels in {} groups", fmt::join(w.shape, ", "), x.shape[1], G),
         node_name(n));
  auto stride = per_axis(n, "strides", 1, 3), dil = per_axis(n, "dilations", 1, 3), opad = per_axis(n, "output_padding", 0, 3);
  auto p = attr_ints(n, "pads", {0, 0, 0, 0, 0, 0});
  if (p.size() != 6) fail("ConvTranspose pads must have 6 values for a 3-D input", node_name(n));
  std::string ap = attr_s(n, "auto_pad", "NOTSET");
  auto out_shape = attr_ints(n, "output_shape", {});
  // The depth's pads (the 2-D node works out H and W's itself from the same attributes).
  int64_t pd0 = p[0], pd1 = p[3];
  if (!out_shape.empty() || ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    int64_t want = !out_shape.empty() ? out_shape[out_shape.size() - 3] : D * stride[0];
    int64_t total = stride[0] * (D - 1) + opad[0] + (KD - 1) * dil[0] + 1 - want;
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    pd0 = ap == "SAME_UPPER" ? half : total - half;
    pd1 = total - pd0;
  } else if (ap == "VALID") {
    pd0 = pd1 = 0;
  }
  int64_t OD = (D - 1) * stride[0] - pd0 - pd1 + (KD - 1) * dil[0] + 1 + opad[0];
  if (OD < 1) fail("the ConvTranspose output depth would be empty", node_name(n));
  int64_t CI2 = CI * D, COg2 = COg * OD;
  Constant w2;
  w2.shape = {CI2, COg2, KH, KW};
  w2.data.assign(size_t(CI2 * COg2 * KH * KW), 0.0f);
  for (int64_t ci = 0; ci < CI; ++ci)
    for (int64_t id = 0; id < D; ++id)
      for (int64_t kd = 0; kd < KD; ++kd) {
        int64_t od = id * stride[0] - pd0 + kd * dil[0];
        if (od < 0 || od >= OD) continue;
        for (int64_t o = 0; o < COg; ++o)
          for (int64_t hw = 0; hw < KH * KW; ++hw)
            w2.data[size_t(((ci * D + id) * COg2 + o * OD + od) * KH * KW + hw)] = w.data[size_t(((ci * COg + o) * KD + kd) * KH * KW + hw)];
      }
  onnx::NodeProto m = derived_node(n, "#2d", {"kernel_shape", "strides", "dilations", "output_padding", "output_shape", "pads"});
  values_[n.input(0) + "#2d"] = {reshape(x.value, {N, CI2, H, W}, loc), {N, CI2, H, W}, false};
  m.add_input(n.input(0) + "#2d");
  constants_[n.input(1) + "#2d"] = w2;
  m.add_input(n.input(1) + "#2d");
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const auto& bias = const_input(n, 2, "ConvTranspose bias").data;
    if (int64_t(bias.size()) != COg * G) fail(fmt::format("ConvTranspose bias has {} values for {} output channels", bias.size(), COg * G), node_name(n));
    Constant b2{{COg * G * OD}, {}};
    for (float b : bias) b2.data.insert(b2.data.end(), size_t(OD), b);
    constants_[n.input(2) + "#2d"] = b2;
    m.add_input(n.input(2) + "#2d");
  }
  set_ints(m, "kernel_shape", {KH, KW});
  set_ints(m, "strides", {stride[1], stride[2]});
  set_ints(m, "dilations", {dil[1], dil[2]});
  set_ints(m, "output_padding", {opad[1], opad[2]});
  if (!out_shape.empty()) set_ints(m, "output_shape", {out_shape[out_shape.size() - 2], out_shape.back()});
  if (ap == "NOTSET") set_ints(m, "pads", {p[1], p[2], p[4], p[5]});
  Tensor y = sub_node(m);
  std::vector<int64_t> out{N, COg * G, OD, y.shape[2], y.shape[3]};
  define(n, {reshape(y.nhwc ? to_nchw_value(y, loc) : y.value, out, loc), out, false});
}

}  // namespace vtpu::compiler::onnx_import
