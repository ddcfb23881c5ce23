// Resize and Upsample: nearest as index tables, linear and cubic as per-axis weight matrices.
#include <fmt/format.h>

#include <cmath>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

// Resize / Upsample, mode nearest, of the H and W of an image: each output coordinate's
// source under ONNX's coordinate transformation and nearest rounding, as index tables.
void Importer::resize(const onnx::NodeProto& n, mlir::Location loc) {
  bool upsample = n.op_type() == "Upsample";
  only_attrs(n, {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                 "extrapolation_value", "scales", "antialias", "keep_aspect_ratio_policy", "axes"});
  std::string mode = attr_s(n, "mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    fail(fmt::format("{} mode '{}' is not supported (nearest, linear, cubic)", n.op_type(), mode), node_name(n));
  if (attr(n, "axes") || attr(n, "keep_aspect_ratio_policy") || attr_i(n, "antialias", 0))
    fail(fmt::format("{} attributes axes, keep_aspect_ratio_policy and antialias are not supported", n.op_type()), node_name(n));
  Tensor x = input(n, 0);
  if (x.shape.size() != 4) fail(fmt::format("{} of a {}-D tensor: only images (4-D) are supported", n.op_type(), x.shape.size()), node_name(n));
  // Opset 10's Resize and Upsample: scales as input 1 (or Upsample-7's attribute), asymmetric.
  bool v10 = upsample || (opset_ && opset_ < 11);
  std::string ct = attr_s(n, "coordinate_transformation_mode", v10 ? "asymmetric" : "half_pixel");
  std::string nm = attr_s(n, "nearest_mode", v10 ? "floor" : "round_prefer_floor");
  if (!v10 && ct == "half_pixel" && !attr(n, "nearest_mode") && opset_ && opset_ < 13) nm = "round_prefer_floor";
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  auto optional_const = [&](int i) -> const Constant* {
    if (n.input_size() <= i || n.input(i).empty()) return nullptr;
    return &const_input(n, i, i == 3 ? "Resize sizes" : "Resize scales");
  };
  if (upsample && attr(n, "scales")) {
    for (float f : attr(n, "scales")->floats()) scales.push_back(f);
  } else if (v10) {
    if (auto* c = optional_const(1)) scales = c->data;
  } else {
    if (auto* c = optional_const(2); c && !c->data.empty()) scales = c->data;
    if (auto* c = optional_const(3); c && !c->data.empty())
      sizes = c->int_values();
  }
  if (scales.empty() && sizes.empty()) fail(n.op_type() + " needs scales or sizes", node_name(n));
  std::vector<int64_t> out = x.shape;
  std::vector<double> sc(4, 1.0);
  for (size_t d = 0; d < 4; ++d) {
    if (!sizes.empty()) {
      if (sizes.size() != 4) fail("Resize sizes must have 4 values", node_name(n));
      out[d] = sizes[d];
      sc[d] = double(out[d]) / double(x.shape[d]);
    } else {
      if (scales.size() != 4) fail("Resize scales must have 4 values", node_name(n));
      sc[d] = scales[d];
      out[d] = int64_t(std::floor(double(x.shape[d]) * sc[d]));
    }
    if (out[d] < 1) fail("Resize would produce an empty tensor", node_name(n));
  }
  if (out[0] != x.shape[0] || out[1] != x.shape[1])
    fail(fmt::format("{} of the batch or channel dimension is not supported (H and W only)", n.op_type()), node_name(n));
  if (mode != "nearest") return resize_interpolated(n, x, out, sc, ct, mode == "cubic", loc);
  auto table = [&](int64_t in, int64_t o_n, double s) {
    std::vector<int64_t> idx;
    for (int64_t o = 0; o < o_n; ++o) {
      double xo;
      if (ct == "asymmetric") xo = o / s;
      else if (ct == "half_pixel") xo = (o + 0.5) / s - 0.5;
      else if (ct == "pytorch_half_pixel") xo = o_n > 1 ? (o + 0.5) / s - 0.5 : 0.0;
      else if (ct == "tf_half_pixel_for_nn") xo = (o + 0.5) / s;
      else if (ct == "align_corners") xo = o_n > 1 ? double(o) * double(in - 1) / double(o_n - 1) : 0.0;
      else fail(fmt::format("Resize coordinate_transformation_mode '{}' is not supported", ct), node_name(n));
      double r;
      if (nm == "floor") r = std::floor(xo);
      else if (nm == "ceil") r = std::ceil(xo);
      else if (nm == "round_prefer_floor") r = xo - std::floor(xo) == 0.5 ? std::floor(xo) : std::round(xo);
      else if (nm == "round_prefer_ceil") r = xo - std::floor(xo) == 0.5 ? std::ceil(xo) : std::round(xo);
      else fail(fmt::format("Resize nearest_mode '{}' is not supported", nm), node_name(n));
      idx.push_back(std::clamp<int64_t>(int64_t(r), 0, in - 1));
    }
    return idx;
  };
  auto rows = table(x.shape[2], out[2], sc[2]), cols = table(x.shape[3], out[3], sc[3]);
  Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  Value y = b_.create<tpu::ResizeNearestOp>(loc, tensor_type(to_nhwc(out)), in, b_.getDenseI64ArrayAttr(rows),
                                            b_.getDenseI64ArrayAttr(cols), b_.getStringAttr(node_name(n)));
  define(n, {y, out, true});
}

// Linear and cubic Resize are separable and linear in the input: each output row (column)
// is a fixed weighted sum of input rows (columns). The weights form a matrix per axis,
// computed here as ONNX's reference defines them (source coordinate, taps nearest to it,
// edge values beyond the border, exclude_outside renormalizing), and the resize is two
// matmuls with them: W with the image transposed to [N, H, C, W], then H. A
// tf_crop_and_resize coordinate outside the input gives extrapolation_value: a zero
// weight row, and the value added afterwards.
void Importer::resize_interpolated(const onnx::NodeProto& n, const Tensor& x, const std::vector<int64_t>& out,
                                   const std::vector<double>& sc, const std::string& ct, bool cubic, mlir::Location loc) {
  double A = attr_f(n, "cubic_coeff_a", -0.75f), extrap = attr_f(n, "extrapolation_value", 0.0f);
  bool exclude = attr_i(n, "exclude_outside", 0) != 0;
  std::vector<float> roi;
  if (ct == "tf_crop_and_resize") {
    roi = const_input(n, 1, "Resize roi").data;
    if (roi.size() != 8) fail("Resize roi must have 8 values (starts and ends of the 4 dimensions)", node_name(n));
  }
  // weights[o * in + i]; outside[o]: the coordinate lies outside the input (extrapolated).
  auto matrix = [&](int d, std::vector<bool>& outside) {
    int64_t in = x.shape[size_t(d)], on = out[size_t(d)];
    double s = sc[size_t(d)], out_width = s * double(in);
    std::vector<float> w(size_t(on * in), 0.0f);
    outside.assign(size_t(on), false);
    for (int64_t o = 0; o < on; ++o) {
      double xo;
      if (ct == "align_corners") xo = out_width == 1 ? 0.0 : double(o) * double(in - 1) / (out_width - 1);
      else if (ct == "asymmetric") xo = double(o) / s;
      else if (ct == "half_pixel") xo = (double(o) + 0.5) / s - 0.5;
      else if (ct == "pytorch_half_pixel") xo = out_width == 1 ? -0.5 : (double(o) + 0.5) / s - 0.5;
      else if (ct == "tf_crop_and_resize") {
        double r0 = roi[size_t(d)], r1 = roi[size_t(d + 4)];
        xo = (out_width == 1 ? (r1 - r0) * double(in - 1) / 2 : double(o) * (r1 - r0) * double(in - 1) / (out_width - 1)) +
             r0 * double(in - 1);
        if (xo < 0 || xo > double(in - 1)) {
          outside[size_t(o)] = true;
          continue;
        }
      } else {
        fail(fmt::format("Resize coordinate_transformation_mode '{}' is not supported with mode {}", ct,
                         cubic ? "cubic" : "linear"),
             node_name(n));
      }
      // The taps to the left of xo first: ratio in (0, 1].
      double base = std::floor(xo);
      if (base == xo) base -= 1;
      double r = xo - base;
      std::vector<double> c;
      int64_t first;
      if (cubic) {
        c = {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
             ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
             ((A * (2 - r) - 5 * A) * (2 - r) + 8 * A) * (2 - r) - 4 * A};
        first = int64_t(base) - 1;
      } else {
        c = {1 - r, r};
        first = int64_t(base);
      }
      if (exclude) {
        double sum = 0;
        for (size_t t = 0; t < c.size(); ++t) {
          int64_t i = first + int64_t(t);
          if (i < 0 || i >= in) c[t] = 0;
          sum += c[t];
        }
        for (double& v : c) v /= sum;
      }
      for (size_t t = 0; t < c.size(); ++t) {
        int64_t i = std::clamp<int64_t>(first + int64_t(t), 0, in - 1);  // edge values beyond the border
        w[size_t(o * in + i)] += float(c[t]);
      }
    }
    return w;
  };
  int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3], OH = out[2], OW = out[3];
  std::vector<bool> out_h, out_w;
  auto wh = matrix(2, out_h), ww = matrix(3, out_w);
  auto identity = [](const std::vector<float>& m, int64_t k) {
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < k; ++j)
        if (m.size() != size_t(k * k) || m[size_t(i * k + j)] != (i == j ? 1.0f : 0.0f)) return false;
    return true;
  };
  auto fc = [&](Value v, int64_t rows, int64_t k, int64_t o, const std::vector<float>& m) {
    return Value(b_.create<mlir::tosa::FullyConnectedOp>(loc, tensor_type({rows, o}), v, constant({o, k}, m, loc),
                                                         constant({o}, std::vector<float>(size_t(o), 0.0f), loc), nullptr));
  };
  Value v = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);  // [N, H, W, C]
  if (!(OW == W && identity(ww, W))) {
    Value t = reshape(transpose(v, {0, 1, 3, 2}, loc), {N * H * C, W}, loc);
    t = reshape(fc(t, N * H * C, W, OW, ww), {N, H, C, OW}, loc);
    v = transpose(t, {0, 1, 3, 2}, loc);  // [N, H, OW, C]
  }
  if (!(OH == H && identity(wh, H))) {
    Value t = reshape(transpose(v, {0, 2, 3, 1}, loc), {N * OW * C, H}, loc);
    t = reshape(fc(t, N * OW * C, H, OH, wh), {N, OW, C, OH}, loc);
    v = transpose(t, {0, 3, 1, 2}, loc);  // [N, OH, OW, C]
  }
  bool any_outside = std::count(out_h.begin(), out_h.end(), true) + std::count(out_w.begin(), out_w.end(), true) > 0;
  if (any_outside && extrap != 0.0) {
    std::vector<float> e(size_t(N * OH * OW * C), 0.0f);
    for (int64_t i = 0; i < N * OH * OW * C; ++i) {
      int64_t oh = i / (OW * C) % OH, ow = i / C % OW;
      if (out_h[size_t(oh)] || out_w[size_t(ow)]) e[size_t(i)] = float(extrap);
    }
    v = b_.create<mlir::tosa::AddOp>(loc, tensor_type({N, OH, OW, C}), v, constant({N, OH, OW, C}, e, loc));
  }
  define(n, {v, out, true});
}

}  // namespace vtpu::compiler::onnx_import
