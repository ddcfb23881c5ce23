// Layout and data movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Slice, Split,
// Concat, Tile, Expand, Gather, Pad, Identity.
#include <fmt/format.h>

#include <cmath>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {
void Importer::identity(const onnx::NodeProto& n, mlir::Location) { values_[n.output(0)] = input(n, 0); }

// Flatten and Reshape follow NCHW order: images go back to NCHW first.
void Importer::reshape_to(const onnx::NodeProto& n, const std::vector<int64_t>& shape, mlir::Location loc) {
  const Tensor& x = input(n, 0);
  if (numel(shape) != numel(x.shape)) fail("reshape changes the number of elements", node_name(n));
  if (x.empty()) return define(n, {Value(), shape, false});
  Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
  if (shape.size() == 4 && x.nhwc) {
    // Stay in the chip's layout for images.
    Value r = reshape(v, shape, loc);
    define(n, {transpose(r, {0, 2, 3, 1}, loc), shape, true});
    return;
  }
  define(n, {reshape(v, shape, loc), shape, false});
}

// Squeeze/Unsqueeze only change the shape: reshapes. Axes are an attribute before opset 13
// and a constant input from 13 on.
void Importer::squeeze(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axes"});
  reshape_to(n, reshaped_shape(n, input(n, 0).shape), loc);
}

void Importer::flatten(const onnx::NodeProto& n, mlir::Location loc) {
  reshape_to(n, reshaped_shape(n, input(n, 0).shape), loc);
}

void Importer::reshape_op(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"allowzero"});
  reshape_to(n, reshaped_shape(n, input(n, 0).shape), loc);
}

// The output shape of a Reshape, Flatten, Squeeze or Unsqueeze of a tensor of shape `in`:
// one set of rules for activations and for constants folded at import. Reshape: 0 copies
// the input's dimension (is an empty dimension with allowzero=1), -1 is inferred.
std::vector<int64_t> Importer::reshaped_shape(const onnx::NodeProto& n, const std::vector<int64_t>& in) {
  const std::string& op = n.op_type();
  std::vector<int64_t> shape;
  if (op == "Flatten") {
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < 0) axis += int64_t(in.size());
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < in.size(); ++i) (int64_t(i) < axis ? outer : inner) *= in[i];
    return {outer, inner};
  }
  if (op == "Reshape") {
    const Constant& s = const_input(n, 1, "Reshape shape");
    bool allowzero = attr_i(n, "allowzero", 0) != 0;
    int64_t known = 1, infer = -1;
    for (size_t i = 0; i < s.data.size(); ++i) {
      int64_t d = s.int_at(i);
      if (d == 0 && i >= in.size() && !allowzero)
        fail(fmt::format("Reshape shape[{}] = 0 copies a dimension the {}-D input does not have", i, in.size()), node_name(n));
      if (d == 0 && !allowzero) d = in.at(i);
      if (d == -1) infer = int64_t(i), d = 1;
      else known *= d;
      shape.push_back(d);
    }
    if (infer >= 0) {
      if (known == 0) fail("Reshape cannot infer a -1 dimension beside a 0 (allowzero=1)", node_name(n));
      shape[size_t(infer)] = numel(in) / known;
    }
    if (numel(shape) != numel(in))
      fail(fmt::format("Reshape of [{}] to [{}] changes the number of elements", fmt::join(in, ", "), fmt::join(shape, ", ")),
           node_name(n));
    return shape;
  }
  bool unsqueeze = op == "Unsqueeze";  // or Squeeze; axes are an attribute before opset 13, an input from 13 on
  std::vector<int64_t> axes = attr_ints(n, "axes", {});
  if (n.input_size() > 1 && !n.input(1).empty())
    for (int64_t a : const_input(n, 1, unsqueeze ? "Unsqueeze axes" : "Squeeze axes").int_values()) axes.push_back(a);
  int64_t rank = int64_t(in.size()) + (unsqueeze ? int64_t(axes.size()) : 0);
  std::vector<bool> picked(size_t(rank), false);
  for (int64_t a : axes) {
    int64_t k = a < 0 ? a + rank : a;
    if (k < 0 || k >= rank || picked[size_t(k)])
      fail(fmt::format("axis {} is out of range or repeated for a {}-D result", a, rank), node_name(n));
    picked[size_t(k)] = true;
  }
  if (unsqueeze) {
    if (axes.empty()) fail("Unsqueeze needs axes", node_name(n));
    size_t j = 0;
    for (int64_t k = 0; k < rank; ++k) shape.push_back(picked[size_t(k)] ? 1 : in[j++]);
  } else {
    for (size_t k = 0; k < in.size(); ++k) {
      bool drop = axes.empty() ? in[k] == 1 : bool(picked[k]);
      if (drop && in[k] != 1) fail(fmt::format("cannot squeeze dimension {} of size {}", k, in[k]), node_name(n));
      if (!drop) shape.push_back(in[k]);
    }
  }
  return shape;
}

// A window [start, start + size) per logical dimension, as tosa.slice on the stored layout.
Tensor Importer::window(const Tensor& x, const std::vector<int64_t>& start, const std::vector<int64_t>& size, mlir::Location loc) {
  static const size_t kPos[4] = {0, 3, 1, 2};
  std::vector<int64_t> vs(start.size()), vz(size.size());
  for (size_t d = 0; d < start.size(); ++d) {
    size_t k = x.nhwc ? kPos[d] : d;
    vs[k] = start[d], vz[k] = size[d];
  }
  Value y = b_.create<mlir::tosa::SliceOp>(loc, tensor_type(vz), x.value, b_.getDenseI64ArrayAttr(vs),
                                           b_.getDenseI64ArrayAttr(vz));
  return {y, size, x.nhwc};
}

// Slice: starts, ends, axes and steps as constant inputs (opset 10 on), or starts, ends and
// axes as attributes (Slice-1, before opset 10; paddle2onnx writes them).
void Importer::slice(const onnx::NodeProto& n, mlir::Location loc) {
  bool attrs = n.input_size() == 1;
  if (attrs) only_attrs(n, {"starts", "ends", "axes"});
  else only_attrs(n, {});
  const Tensor& x = input(n, 0);
  size_t r = x.shape.size();
  auto ints = [&](int i, const char* what) {
    if (attrs) return attr_ints(n, std::string(what).substr(6), {});
    std::vector<int64_t> v;
    if (n.input_size() > i && !n.input(i).empty()) v = const_input(n, i, what).int_values();
    return v;
  };
  auto starts = ints(1, "Slice starts"), ends = ints(2, "Slice ends"), axes = ints(3, "Slice axes"), steps = ints(4, "Slice steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (starts.size() != ends.size() || axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size()))
    fail("Slice starts, ends, axes and steps must have one length", node_name(n));
  std::vector<int64_t> start(r, 0), size = x.shape;
  std::vector<std::pair<int64_t, std::vector<int64_t>>> strided;  // axis, indices (in the window) for steps != 1
  std::vector<int64_t> out_shape = x.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i] < 0 ? axes[i] + int64_t(r) : axes[i];
    if (a < 0 || a >= int64_t(r)) fail(fmt::format("Slice axis {} is out of range", axes[i]), node_name(n));
    int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) fail("Slice step 0 is not allowed", node_name(n));
    std::vector<int64_t> idx = slice_indices(x.shape[size_t(a)], starts[i], ends[i], step);
    out_shape[size_t(a)] = int64_t(idx.size());
    if (idx.empty()) continue;  // an empty output (no data)
    if (step == 1) {
      start[size_t(a)] = idx.front(), size[size_t(a)] = int64_t(idx.size());
    } else {
      int64_t lo = *std::min_element(idx.begin(), idx.end()), hi = *std::max_element(idx.begin(), idx.end());
      start[size_t(a)] = lo, size[size_t(a)] = hi - lo + 1;
      for (auto& k : idx) k -= lo;
      strided.push_back({a, idx});
    }
  }
  if (Tensor{Value(), out_shape}.empty()) return define(n, {Value(), out_shape, false});
  Tensor y = window(x, start, size, loc);
  for (const auto& [a, idx] : strided) y = pick(y, a, idx, loc);
  define(n, y);
}

// x's entries idx[0], idx[1], ... along `axis` (same rank): runs of consecutive indices
// as one window each, joined by a concat.
Tensor Importer::pick(const Tensor& x, int64_t axis, const std::vector<int64_t>& idx, mlir::Location loc) {
  size_t r = x.shape.size();
  std::vector<Value> parts;
  for (size_t k = 0; k < idx.size();) {
    size_t len = 1;
    while (k + len < idx.size() && idx[k + len] == idx[k] + int64_t(len)) ++len;
    std::vector<int64_t> start(r, 0), size = x.shape;
    start[size_t(axis)] = idx[k], size[size_t(axis)] = int64_t(len);
    parts.push_back(window(x, start, size, loc).value);
    k += len;
  }
  std::vector<int64_t> joined = x.shape;
  joined[size_t(axis)] = int64_t(idx.size());
  if (parts.size() == 1) return {parts[0], joined, x.nhwc};
  static const int32_t kPos[4] = {0, 3, 1, 2};
  int32_t vaxis = x.nhwc ? kPos[axis] : int32_t(axis);
  Value v = b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(x.nhwc ? to_nhwc(joined) : joined), parts, vaxis);
  return {v, joined, x.nhwc};
}

void Importer::split(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis", "split"});
  const Tensor& x = input(n, 0);
  int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(fmt::format("Split axis {} is out of range", axis), node_name(n));
  std::vector<int64_t> parts = attr_ints(n, "split", {});
  if (n.input_size() > 1 && !n.input(1).empty())
    parts = const_input(n, 1, "Split sizes").int_values();
  int64_t dim = x.shape[size_t(axis)], outs = n.output_size();
  if (parts.empty()) {
    if (dim % outs) fail(fmt::format("Split of {} into {} equal parts", dim, outs), node_name(n));
    parts.assign(size_t(outs), dim / outs);
  }
  int64_t total = 0;
  for (int64_t p : parts) {
    if (p < 0) fail(fmt::format("Split part {} is negative", p), node_name(n));
    total += p;
  }
  if (int64_t(parts.size()) != outs || total != dim)
    fail(fmt::format("Split sizes add up to {} in {} parts for a dimension of {} and {} outputs", total, parts.size(), dim,
                     outs),
         node_name(n));
  std::vector<int64_t> start(size_t(r), 0);
  for (int64_t i = 0; i < outs; ++i) {
    std::vector<int64_t> size = x.shape;
    size[size_t(axis)] = parts[size_t(i)];
    values_[n.output(int(i))] = Tensor{Value(), size}.empty() ? Tensor{Value(), size, false} : window(x, start, size, loc);
    start[size_t(axis)] += parts[size_t(i)];
  }
}

void Importer::concat(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis"});
  std::vector<Tensor> xs;
  for (int i = 0; i < n.input_size(); ++i) xs.push_back(input(n, i));
  size_t r = xs[0].shape.size();
  int64_t axis = attr_i(n, "axis", 1);
  if (axis < 0) axis += int64_t(r);
  if (axis < 0 || axis >= int64_t(r)) fail(fmt::format("axis {} is out of range for {}-D inputs", axis, r), node_name(n));
  std::vector<int64_t> shape = xs[0].shape;
  shape[size_t(axis)] = 0;
  for (const Tensor& t : xs) {
    for (size_t d = 0; d < r; ++d)
      if (t.shape.size() != r || (int64_t(d) != axis && t.shape[d] != xs[0].shape[d]))
        fail("Concat inputs must agree in every dimension but the axis", node_name(n));
    shape[size_t(axis)] += t.shape[size_t(axis)];
  }
  // Images stay NHWC (the axis moves with the layout); anything else is joined as given.
  bool nhwc = r == 4 && std::any_of(xs.begin(), xs.end(), [](const Tensor& t) { return t.nhwc; });
  static const int32_t kPos[4] = {0, 3, 1, 2};
  std::vector<Value> vals;
  for (const Tensor& t : xs) vals.push_back(nhwc && !t.nhwc ? transpose(t.value, {0, 2, 3, 1}, loc) : t.value);
  int32_t vaxis = nhwc ? kPos[axis] : int32_t(axis);
  Value y = b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(nhwc ? to_nhwc(shape) : shape), vals, vaxis);
  define(n, {y, shape, nhwc});
}

void Importer::transpose_op(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"perm"});
  const Tensor& x = input(n, 0);
  size_t r = x.shape.size();
  std::vector<int64_t> perm = attr_ints(n, "perm", {});
  if (perm.empty())
    for (size_t k = r; k-- > 0;) perm.push_back(int64_t(k));
  std::vector<bool> seen(r, false);
  if (perm.size() != r) fail(fmt::format("perm has {} entries for a {}-D input", perm.size(), r), node_name(n));
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(r) || seen[size_t(p)]) fail("perm is not a permutation of the input's dimensions", node_name(n));
    seen[size_t(p)] = true;
  }
  // An image's value is NHWC: logical (NCHW) dimension d is value dimension kPos[d].
  static const int32_t kPos[4] = {0, 3, 1, 2};
  std::vector<int32_t> q;
  std::vector<int64_t> shape;
  for (int64_t p : perm) q.push_back(x.nhwc ? kPos[p] : int32_t(p)), shape.push_back(x.shape[size_t(p)]);
  define(n, {x.empty() ? Value() : transpose(x.value, q, loc), shape, false});
}

// Tile: copies of the input side by side along each axis (a concat per repeated axis).
void Importer::tile(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});
  Tensor x = input(n, 0);
  const auto& reps = const_input(n, 1, "Tile repeats").data;
  if (reps.size() != x.shape.size()) fail(fmt::format("Tile needs {} repeats, got {}", x.shape.size(), reps.size()), node_name(n));
  static const int kPos[4] = {0, 3, 1, 2};
  for (size_t d = 0; d < reps.size(); ++d) {
    int64_t k = int64_t(reps[d]);
    if (k < 1) fail("Tile repeats must be positive", node_name(n));
    if (k == 1) continue;
    std::vector<Value> parts(size_t(k), x.value);
    x.shape[d] *= k;
    int axis = x.nhwc ? kPos[d] : int(d);
    x.value = b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(x.nhwc ? to_nhwc(x.shape) : x.shape), parts, axis);
  }
  define(n, x);
}

// Expand: x + zeros of the target shape, the usual broadcast of a binary op.
void Importer::expand(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {});
  std::vector<int64_t> want = const_input(n, 1, "Expand shape").int_values();
  Tensor zeros{constant(want, std::vector<float>(size_t(numel(want)), 0.0f), loc), want, false}, out;
  auto [a, c] = broadcast_pair(n, input(n, 0), zeros, out, loc);
  out.value = b_.create<mlir::tosa::AddOp>(loc, tensor_type(out.nhwc ? to_nhwc(out.shape) : out.shape), a, c);
  define(n, out);
}

// Gather with constant indices: of a constant, folded; of an activation, one slice per
// index along the axis, joined by a concat (e.g. BERT's [CLS] token, channel picks).
// Indices that arrive at run time (embedding lookups of token ids) are not supported: the
// chip has no data-dependent addressing.
void Importer::gather(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"axis"});
  auto ic = constants_.find(n.input(1));
  if (ic == constants_.end()) return gather_runtime(n, loc);
  const Constant& ind = ic->second;
  if (constants_.count(n.input(0))) {  // of a constant that is also an activation elsewhere
    constants_[n.output(0)] = *folded(n);
    return;
  }
  const Tensor& x = input(n, 0);
  int64_t r = int64_t(x.shape.size()), axis = attr_i(n, "axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(fmt::format("Gather axis {} is out of range for {} dimensions", axis, r), node_name(n));
  int64_t dim = x.shape[size_t(axis)];
  std::vector<int64_t> idx;
  for (int64_t k : ind.int_values()) {
    if (k < -dim || k >= dim) fail(fmt::format("Gather index {} is out of range for a dimension of {}", k, dim), node_name(n));
    idx.push_back(k < 0 ? k + dim : k);
  }
  std::vector<int64_t> out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ind.shape.begin(), ind.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  if (idx.empty()) fail("Gather with no indices (an empty tensor) is not supported", node_name(n));
  Tensor j = pick(x, axis, idx, loc);
  std::vector<int64_t> joined = j.shape;
  if (joined == out) {
    define(n, j);
    return;
  }
  Value v = j.nhwc ? to_nchw_value(j, loc) : j.value;
  define(n, {reshape(v, out, loc), out, false});
}

// Gather of a constant table by indices known only at run time (an embedding lookup of
// token ids): a tpu.embedding (one-hot rows times the table on the MXUs) of the table seen
// as [V, outer x inner] (V the gathered axis), then the gathered axis moved back into
// place when it was not the first.
void Importer::gather_runtime(const onnx::NodeProto& n, mlir::Location loc) {
  auto ia = int_args_.find(n.input(1));
  if (ia == int_args_.end())
    fail(fmt::format("Gather indices '{}' are computed at run time from float values; run-time indices must come "
                     "straight from an integer model input (int64/int32 token ids) or be constant",
                     n.input(1)),
         node_name(n));
  auto dc = constants_.find(n.input(0));
  if (dc == constants_.end())
    fail("Gather with run-time indices needs a constant table (an initializer) as its data input: the chip has no "
         "data-dependent addressing, so the lookup is a one-hot matrix times the table on the MXUs",
         node_name(n));
  const Constant& data = dc->second;
  const Tensor& ids = ia->second;
  if (ids.shape.size() == 4)
    fail("Gather with 4-D run-time indices is not supported (reshape them to fewer dimensions)", node_name(n));
  int64_t r = int64_t(data.shape.size()), axis = attr_i(n, "axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) fail(fmt::format("Gather axis {} is out of range for {} dimensions", axis, r), node_name(n));
  int64_t V = data.shape[size_t(axis)], outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape[size_t(d)];
  for (int64_t d = axis + 1; d < r; ++d) inner *= data.shape[size_t(d)];
  // The one-hot rows compare fp32 integers: exact below 2^24.
  if (V >= (int64_t(1) << 24)) fail(fmt::format("Gather table of {} rows: run-time indices need fewer than 2^24", V), node_name(n));
  int64_t D = outer * inner, S = numel(ids.shape);
  if (S == 0 || D == 0) fail("Gather with an empty table or no indices is not supported", node_name(n));
  // Non-finite table values are looked up through masks (codegen/embedding.cpp).
  std::vector<float> table(size_t(V * D));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t v = 0; v < V; ++v)
      for (int64_t i = 0; i < inner; ++i) table[size_t(v * D + o * inner + i)] = data.data[size_t((o * V + v) * inner + i)];
  // Calibration (INT8) then draws ids that pick rows of this table.
  if (auto ai = arg_index_.find(n.input(1)); ai != arg_index_.end()) {
    fn_.setArgAttr(ai->second, tpu::kIntLoAttr, b_.getI64IntegerAttr(0));
    fn_.setArgAttr(ai->second, tpu::kIntHiAttr, b_.getI64IntegerAttr(V - 1));
  }
  Value y = b_.create<tpu::EmbeddingOp>(loc, tensor_type({S, D}), ids.value, constant({V, D}, table, loc),
                                        b_.getStringAttr(node_name(n)));
  std::vector<int64_t> out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), ids.shape.begin(), ids.shape.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  if (outer > 1) {  // [S, outer, inner] -> [outer, S, inner]
    y = reshape(y, {S, outer, inner}, loc);
    y = transpose(y, {1, 0, 2}, loc);
  }
  define(n, {out == tpu::shape_of(y) ? y : reshape(y, out, loc), out, false});
}

// Pad. On the H and W of an image: constant mode is the spread of tpu.zero_insert with
// stride 1 (its pads), plus the constant on the border when it is not 0; edge and reflect
// modes a concat of single-column (then single-row) slices around the image: the edge
// column repeated, or the columns next to it mirrored. Any other pads (any rank, batch or
// channel axes): negative pads crop (a slice), then the padded axes two at a time are moved
// last and padded as the H and W of a one-channel image whose batch is every other axis.
void Importer::pad(const onnx::NodeProto& n, mlir::Location loc) {
  only_attrs(n, {"mode", "pads", "value"});
  std::string mode = attr_s(n, "mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    fail(fmt::format("Pad mode '{}' is not supported (constant, edge, reflect)", mode), node_name(n));
  const Tensor& x = input(n, 0);
  std::vector<int64_t> p = attr_ints(n, "pads", {});
  float value = attr_f(n, "value", 0.0f);
  if (n.input_size() > 1 && !n.input(1).empty())
    p = const_input(n, 1, "Pad pads").int_values();
  if (n.input_size() > 2 && !n.input(2).empty()) {
    const auto& v = const_input(n, 2, "Pad constant_value").data;
    if (v.size() != 1) fail("Pad constant_value must be a scalar", node_name(n));
    value = v[0];
  }
  if (n.input_size() > 3 && !n.input(3).empty()) fail("Pad's axes input is not supported (pad every axis)", node_name(n));
  size_t r = x.shape.size();
  if (p.size() != 2 * r) fail(fmt::format("Pad needs {} pads for a {}-D input, got {}", 2 * r, r, p.size()), node_name(n));
  bool image = r == 4 && !p[0] && !p[1] && !p[4] && !p[5] && std::all_of(p.begin(), p.end(), [](int64_t v) { return v >= 0; });
  if (!image) return pad_any(n, x, p, mode, value, loc);
  int64_t N = x.shape[0], C = x.shape[1], OH = x.shape[2] + p[2] + p[6], OW = x.shape[3] + p[3] + p[7];
  Value in = x.nhwc ? x.value : transpose(x.value, {0, 2, 3, 1}, loc);
  define(n, {pad_image(n, in, x.shape, p[2], p[6], p[3], p[7], mode, value, loc), {N, C, OH, OW}, true});
}

// The NHWC image `in` (logical NCHW shape `s`) padded on H and W in `mode`.
Value Importer::pad_image(const onnx::NodeProto& n, Value in, const std::vector<int64_t>& s, int64_t top, int64_t bottom,
                          int64_t left, int64_t right, const std::string& mode, float value, mlir::Location loc) {
  if (mode == "constant") return padded_image(n, in, s, top, bottom, left, right, value, loc);
  // NHWC dimension d (2: W, then 1: H), `before` and `after` new entries.
  auto pad_dim = [&](Value v, int d, int64_t before, int64_t after) {
    if (!before && !after) return v;
    auto shape = mlir::cast<mlir::RankedTensorType>(v.getType()).getShape().vec();
    int64_t len = shape[size_t(d)];
    if (mode == "reflect" && (before >= len || after >= len))
      fail(fmt::format("reflect Pad of {} needs pads below {}", len, len), node_name(n));
    auto entry = [&](int64_t i) {
      std::vector<int64_t> start(4, 0), size = shape;
      start[size_t(d)] = i, size[size_t(d)] = 1;
      return Value(b_.create<mlir::tosa::SliceOp>(loc, tensor_type(size), v, b_.getDenseI64ArrayAttr(start), b_.getDenseI64ArrayAttr(size)));
    };
    std::vector<Value> parts;
    for (int64_t j = 0; j < before; ++j) parts.push_back(entry(mode == "edge" ? 0 : before - j));
    parts.push_back(v);
    for (int64_t j = 0; j < after; ++j) parts.push_back(entry(mode == "edge" ? len - 1 : len - 2 - j));
    shape[size_t(d)] = len + before + after;
    return Value(b_.create<mlir::tosa::ConcatOp>(loc, tensor_type(shape), parts, d));
  };
  return pad_dim(pad_dim(in, 2, left, right), 1, top, bottom);
}

void Importer::pad_any(const onnx::NodeProto& n, const Tensor& x, const std::vector<int64_t>& p, const std::string& mode,
                       float value, mlir::Location loc) {
  const size_t r = x.shape.size();
  std::vector<int64_t> shape = x.shape;
  Value v = x.nhwc ? to_nchw_value(x, loc) : x.value;
  // Negative pads remove entries: a slice of what stays.
  std::vector<int64_t> start(r, 0), size = shape;
  bool crop = false;
  for (size_t d = 0; d < r; ++d) {
    int64_t cut = std::max<int64_t>(0, -p[d]) + std::max<int64_t>(0, -p[d + r]);
    if (cut > shape[d]) fail(fmt::format("Pad's negative pads remove {} entries of a dimension of {}", cut, shape[d]), node_name(n));
    start[d] = std::max<int64_t>(0, -p[d]), size[d] = shape[d] - cut, crop |= cut > 0;
  }
  if (crop) {
    v = b_.create<mlir::tosa::SliceOp>(loc, tensor_type(size), v, b_.getDenseI64ArrayAttr(start), b_.getDenseI64ArrayAttr(size));
    shape = size;
  }
  std::vector<size_t> axes;
  for (size_t d = 0; d < r; ++d)
    if (p[d] > 0 || p[d + r] > 0) axes.push_back(d);
  for (size_t k = 0; k < axes.size(); k += 2) {
    // Axes a1 (H; none: a dimension of 1) and a2 (W) last, everything else the batch.
    const bool two = k + 1 < axes.size();
    const size_t a1 = axes[k], a2 = two ? axes[k + 1] : axes[k];
    std::vector<int32_t> perm;
    for (size_t d = 0; d < r; ++d)
      if (d != a1 && d != a2) perm.push_back(int32_t(d));
    if (two) perm.push_back(int32_t(a1));
    perm.push_back(int32_t(a2));
    std::vector<int64_t> moved;
    for (int32_t d : perm) moved.push_back(shape[size_t(d)]);
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i) identity &= perm[i] == int32_t(i);
    Value t = identity ? v : transpose(v, perm, loc);
    int64_t H = two ? shape[a1] : 1, W = shape[a2], B = numel(moved) / (H * W);
    int64_t top = two ? std::max<int64_t>(0, p[a1]) : 0, bottom = two ? std::max<int64_t>(0, p[a1 + r]) : 0;
    int64_t left = std::max<int64_t>(0, p[a2]), right = std::max<int64_t>(0, p[a2 + r]);
    Value img = reshape(t, {B, H, W, 1}, loc);  // NHWC of a one-channel image: the same order
    Value padded = pad_image(n, img, {B, 1, H, W}, top, bottom, left, right, mode, value, loc);
    if (two) moved[moved.size() - 2] += top + bottom;
    moved.back() += left + right;
    Value back = reshape(padded, moved, loc);
    std::vector<int32_t> inverse(r);
    for (size_t i = 0; i < r; ++i) inverse[size_t(perm[i])] = int32_t(i);
    v = identity ? back : transpose(back, inverse, loc);
    if (two) shape[a1] += top + bottom;
    shape[a2] += left + right;
  }
  // An image goes on as the importer keeps images: NHWC.
  if (x.nhwc) return define(n, {transpose(v, {0, 2, 3, 1}, loc), shape, true});
  define(n, {v, shape, false});
}

// The NHWC image `in` (logical NCHW shape `s`) with pads top, bottom, left, right holding
// `value`: tpu.zero_insert with stride 1, plus the value on the border when it is not 0.
Value Importer::padded_image(const onnx::NodeProto& n, Value in, const std::vector<int64_t>& s, int64_t top, int64_t bottom, int64_t left,
                             int64_t right, float value, mlir::Location loc) {
  int64_t N = s[0], C = s[1], OH = s[2] + top + bottom, OW = s[3] + left + right;
  Value y = b_.create<tpu::ZeroInsertOp>(loc, tensor_type({N, OH, OW, C}), in, b_.getDenseI64ArrayAttr({1, 1}),
                                         b_.getDenseI64ArrayAttr({top, bottom, left, right}), b_.getStringAttr(node_name(n)));
  if (value == 0.0f) return y;
  std::vector<float> border(size_t(N * OH * OW * C), 0.0f);
  for (int64_t i = 0; i < N * OH * OW * C; ++i) {
    int64_t h = i / (OW * C) % OH, w = i / C % OW;
    if (h < top || h >= OH - bottom || w < left || w >= OW - right) border[size_t(i)] = value;
  }
  return b_.create<mlir::tosa::AddOp>(loc, tensor_type({N, OH, OW, C}), y, constant({N, OH, OW, C}, border, loc));
}

}  // namespace vtpu::compiler::onnx_import
