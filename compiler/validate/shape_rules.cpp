// Rules that need a node's input shapes or constant inputs, which onnxruntime checks when it
// creates the operator's kernel: convolution and pooling geometry (one attribute value per
// spatial axis, kernel_shape matching the weights, channels divisible by the groups, a kernel
// no larger than the padded input), normalization and recurrent weight shapes, constant
// Gather indices inside their axis, Resize scales > 0. One row per operator family.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "checks.h"

namespace vtpu::compiler::validate {
namespace {

using Node = onnx::NodeProto;

const onnx::AttributeProto* attr(const Node& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}
int64_t attr_i(const Node& n, const char* name, int64_t dflt) {
  const auto* a = attr(n, name);
  return a ? a->i() : dflt;
}
std::vector<int64_t> attr_ints(const Node& n, const char* name) {
  const auto* a = attr(n, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}
const std::vector<int64_t>* input_shape(const Node& n, int i, const Shapes& s) {
  return i < n.input_size() && !n.input(i).empty() ? s.of(n.input(i)) : nullptr;
}
std::string shape_str(const std::vector<int64_t>& d) {
  std::vector<std::string> v;
  for (int64_t x : d) v.push_back(x < 0 ? "?" : std::to_string(x));
  return fmt::format("[{}]", fmt::join(v, ", "));
}

// Conv, ConvInteger, QLinearConv, ConvTranspose and the pools: data input x_i, weight w_i
// (-1: none, the kernel is kernel_shape).
void conv_geometry(const Node& n, const Shapes& s, const Ctx& ctx, int x_i, int w_i, bool transposed) {
  auto fail = [&](const std::string& what) { ctx.fail(node_label(n), n.op_type() + " " + what); };
  const auto* x = input_shape(n, x_i, s);
  if (!x) return;
  if (x->size() < 3)
    fail(fmt::format("needs an input of rank 3 or more ([N, C, spatial...]); '{}' is {}", n.input(x_i), shape_str(*x)));
  size_t sp = x->size() - 2;
  for (auto [name, per] : {std::pair{"kernel_shape", 1}, {"strides", 1}, {"dilations", 1}, {"pads", 2},
                           {"output_padding", 1}, {"output_shape", 1}})
    if (const auto* a = attr(n, name); a && size_t(a->ints_size()) != sp * size_t(per))
      fail(fmt::format("attribute '{}' has {} values; a {}-D input ({} spatial axes) needs {}", name, a->ints_size(),
                       x->size(), sp, sp * size_t(per)));
  for (size_t i = 0; i < sp; ++i)
    if ((*x)[2 + i] == 0) fail(fmt::format("of an empty input ('{}' is {}) is not supported", n.input(x_i), shape_str(*x)));
  std::vector<int64_t> kernel = attr_ints(n, "kernel_shape");
  if (const auto* w = w_i >= 0 ? input_shape(n, w_i, s) : nullptr) {
    if (w->size() != x->size())
      fail(fmt::format("weight '{}' is {}; for a {}-D input it must be {}-D", n.input(w_i), shape_str(*w), x->size(), x->size()));
    std::vector<int64_t> wk(w->begin() + 2, w->end());
    if (!kernel.empty())
      for (size_t i = 0; i < sp; ++i)
        if (wk[i] >= 0 && kernel[i] != wk[i])
          fail(fmt::format("attribute kernel_shape [{}] contradicts the weight '{}' of shape {}", fmt::join(kernel, ", "),
                           n.input(w_i), shape_str(*w)));
    if (kernel.empty()) kernel = wk;
    int64_t group = attr_i(n, "group", 1), c = (*x)[1];
    if (!transposed && (*w)[1] >= 0 && c >= 0 && (*w)[1] * group != c)
      fail(fmt::format("weight '{}' of shape {} with group {} takes {} input channels; the input has {}", n.input(w_i),
                       shape_str(*w), group, (*w)[1] * group, c));
    if (transposed && (*w)[0] >= 0 && c >= 0 && (*w)[0] != c)
      fail(fmt::format("weight '{}' of shape {} takes {} input channels; the input has {}", n.input(w_i), shape_str(*w),
                       (*w)[0], c));
    if (!transposed && (*w)[0] >= 0 && (*w)[0] % group)
      fail(fmt::format("has {} output channels, not a multiple of group {}", (*w)[0], group));
    if (transposed && c >= 0 && c % group) fail(fmt::format("has {} input channels, not a multiple of group {}", c, group));
  }
  std::string auto_pad = attr(n, "auto_pad") ? attr(n, "auto_pad")->s() : "NOTSET";
  if (kernel.size() != sp) return;
  if (transposed) {
    // SAME_* makes the output input x stride, which needs padding >= 0: a kernel spanning
    // less than a stride would need a negative pad, and ONNX's shape inference and
    // onnxruntime then give another size than the operator's text.
    if (auto_pad.rfind("SAME", 0) != 0 || attr(n, "output_shape")) return;
    std::vector<int64_t> st = attr_ints(n, "strides"), dil = attr_ints(n, "dilations"), op = attr_ints(n, "output_padding");
    for (size_t i = 0; i < sp; ++i) {
      int64_t in = (*x)[2 + i];
      if (in < 0) continue;
      __int128 stride = st.empty() ? 1 : st[i], span = __int128(kernel[i] - 1) * (dil.empty() ? 1 : dil[i]) + 1;
      if ((__int128(in) - 1) * stride + (op.empty() ? 0 : op[i]) + span < __int128(in) * stride)
        fail(fmt::format("with auto_pad {} along spatial axis {}: the kernel spans {} positions, less than the stride {}, "
                         "so the output would need negative padding; give pads or output_shape instead",
                         auto_pad, i, int64_t(span), int64_t(stride)));
    }
    return;
  }
  if (auto_pad != "NOTSET" && auto_pad != "VALID") return;  // SAME_*: the pads follow the kernel
  std::vector<int64_t> pads = attr_ints(n, "pads"), dil = attr_ints(n, "dilations");
  if (auto_pad == "VALID") pads.clear();
  for (size_t i = 0; i < sp; ++i) {
    int64_t in = (*x)[2 + i];
    if (in < 0 || kernel[i] < 1) continue;
    __int128 padded = __int128(in) + (pads.empty() ? 0 : pads[i] + pads[i + sp]);
    __int128 span = __int128(kernel[i] - 1) * (dil.empty() ? 1 : dil[i]) + 1;
    if (span > padded)
      fail(fmt::format("kernel spans {} positions along spatial axis {} (kernel {}{}), more than the {} of the padded "
                       "input {}: no output position fits",
                       int64_t(std::min<__int128>(span, INT64_MAX)), i, kernel[i],
                       dil.empty() ? std::string() : fmt::format(", dilation {}", dil[i]), int64_t(padded), shape_str(*x)));
  }
}

// BatchNormalization: scale, bias, mean and variance hold one value per channel.
void batchnorm(const Node& n, const Shapes& s, const Ctx& ctx) {
  const auto* x = input_shape(n, 0, s);
  if (!x || x->size() < 2 || (*x)[1] < 0) return;
  for (int i = 1; i <= 4; ++i)
    if (const auto* p = input_shape(n, i, s); p && (p->size() != 1 || ((*p)[0] >= 0 && (*p)[0] != (*x)[1])))
      ctx.fail(node_label(n), fmt::format("BatchNormalization input {} ('{}') is {}; it needs one value per channel, [{}]", i,
                                          n.input(i), shape_str(*p), (*x)[1]));
}

// LSTM (4 gates) and GRU (3): W [dirs, gates*H, I], R [dirs, gates*H, H], B [dirs, 2*gates*H],
// initial states [dirs, batch, H], as onnxruntime checks them.
void recurrent(const Node& n, const Shapes& s, const Ctx& ctx, int64_t gates) {
  const auto* x = input_shape(n, 0, s);
  const auto* r = input_shape(n, 2, s);
  if (!x || x->size() != 3) return;
  std::string dir = attr(n, "direction") ? attr(n, "direction")->s() : "forward";
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  int64_t h = attr_i(n, "hidden_size", r && r->size() == 3 ? (*r)[2] : -1);
  bool batch_first = attr_i(n, "layout", 0) == 1;
  int64_t batch = (*x)[batch_first ? 0 : 1], in = (*x)[2];
  auto expect = [&](int i, std::vector<int64_t> want, const char* what) {
    const auto* p = input_shape(n, i, s);
    if (!p) return;
    bool ok = p->size() == want.size();
    for (size_t k = 0; ok && k < want.size(); ++k) ok = want[k] < 0 || (*p)[k] < 0 || (*p)[k] == want[k];
    if (!ok)
      ctx.fail(node_label(n), fmt::format("{} {} '{}' is {}; with hidden_size {} and direction {} it must be {}", n.op_type(),
                                          what, n.input(i), shape_str(*p), h, dir, shape_str(want)));
  };
  expect(1, {dirs, gates * h, in}, "W");
  expect(2, {dirs, gates * h, h}, "R");
  expect(3, {dirs, 2 * gates * h}, "B");
  expect(5, batch_first ? std::vector<int64_t>{batch, dirs, h} : std::vector<int64_t>{dirs, batch, h}, "initial_h");
  if (gates == 4) {
    expect(6, batch_first ? std::vector<int64_t>{batch, dirs, h} : std::vector<int64_t>{dirs, batch, h}, "initial_c");
    expect(7, {dirs, 3 * h}, "P");
  }
}

// Gather with constant indices: each inside [-n, n) of the data's axis.
void gather(const Node& n, const Shapes& s, const Ctx& ctx) {
  const auto* data = input_shape(n, 0, s);
  auto idx = n.input_size() > 1 ? s.values(n.input(1)) : std::nullopt;
  if (!data || !idx) return;
  int64_t axis = attr_i(n, "axis", 0), r = int64_t(data->size());
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r || (*data)[size_t(axis)] < 0) return;
  int64_t len = (*data)[size_t(axis)];
  for (double v : *idx)
    if (!(v >= double(-len) && v < double(len)))
      ctx.fail(node_label(n), fmt::format("Gather index {} is outside [-{}, {}) of axis {} of '{}' {}", v, len, len, axis,
                                          n.input(0), shape_str(*data)));
}

// Resize and Upsample: constant scales finite and > 0.
void scales(const Node& n, const Shapes& s, const Ctx& ctx) {
  int i = n.op_type() == "Upsample" ? 1 : 2;
  std::optional<std::vector<double>> v;
  if (const auto* a = attr(n, "scales")) v = std::vector<double>(a->floats().begin(), a->floats().end());
  else if (n.input_size() > i && !n.input(i).empty()) v = s.values(n.input(i));
  if (!v) return;
  for (double x : *v)
    if (!(x > 0) || !std::isfinite(x))
      ctx.fail(node_label(n), fmt::format("{} scale {} is not a finite number > 0", n.op_type(), x));
}

// Tile: constant repeats >= 0.
void tile(const Node& n, const Shapes& s, const Ctx& ctx) {
  auto v = n.input_size() > 1 ? s.values(n.input(1)) : std::nullopt;
  if (!v) return;
  for (double x : *v)
    if (x < 0) ctx.fail(node_label(n), fmt::format("Tile repeats {} is negative", x));
}

// An axis attribute (or constant input) of a node, in range for a rank-r tensor: ONNX
// allows [-r, r-1] ([-r, r] for Flatten's split point); a list of axes must not repeat one.
void axis_range(const Node& n, const Ctx& ctx, const std::string& what, const std::vector<int64_t>& axes, int64_t r, bool upto_r) {
  std::vector<int64_t> seen;
  for (int64_t a : axes) {
    int64_t hi = upto_r ? r : r - 1;
    if (a < -r || a > hi)
      ctx.fail(node_label(n), fmt::format("{} {} {} is out of range for a rank-{} tensor ([{}, {}])", n.op_type(), what, a, r,
                                          -r, hi));
    int64_t norm = a < 0 ? a + r : a;
    if (std::find(seen.begin(), seen.end(), norm) != seen.end())
      ctx.fail(node_label(n), fmt::format("{} {} names axis {} twice", n.op_type(), what, norm));
    seen.push_back(norm);
  }
}

// `axis` of the input's rank (Softmax, Concat, Gather, ...), or of its rank + 1 at most
// (Flatten's split point).
void axis_attr(const Node& n, const Shapes& s, const Ctx& ctx, bool upto_r) {
  const auto* a = attr(n, "axis");
  const auto* x = input_shape(n, 0, s);
  if (a && x) axis_range(n, ctx, "axis", {a->i()}, int64_t(x->size()), upto_r);
}

// `axes` as an attribute (older opsets) or constant input `input` (newer): reductions,
// Squeeze and Slice use the input's rank; Unsqueeze the output's (input rank + axes).
void axes_list(const Node& n, const Shapes& s, const Ctx& ctx, int input, bool unsqueeze) {
  const auto* x = input_shape(n, 0, s);
  if (!x) return;
  std::vector<int64_t> axes = attr_ints(n, "axes");
  if (!attr(n, "axes") && input < n.input_size() && !n.input(input).empty()) {
    if (const auto* shape = s.of(n.input(input)); shape && shape->size() != 1)
      ctx.fail(node_label(n), fmt::format("{} axes '{}' is {}; it must be a 1-D list of axes", n.op_type(), n.input(input),
                                          shape_str(*shape)));
    auto v = s.values(n.input(input));
    if (!v) return;
    axes.assign(v->begin(), v->end());
  }
  axis_range(n, ctx, "axes", axes, int64_t(x->size()) + (unsqueeze ? int64_t(axes.size()) : 0), false);
}

// Inputs that ONNX defines as 1-D lists (a shape, pads, repeats, Slice's bounds, scales).
void one_d(const Node& n, const Shapes& s, const Ctx& ctx, std::initializer_list<int> inputs) {
  for (int i : inputs)
    if (const auto* p = input_shape(n, i, s); p && p->size() != 1)
      ctx.fail(node_label(n), fmt::format("{} input {} ('{}') is {}; it must be a 1-D list", n.op_type(), i, n.input(i),
                                          shape_str(*p)));
}

using Rule = std::function<void(const Node&, const Shapes&, const Ctx&)>;
const std::map<std::string, Rule>& table() {
  static const std::map<std::string, Rule> k = [] {
    std::map<std::string, Rule> m = {
        {"Conv", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, 1, false); }},
        {"ConvInteger", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, 1, false); }},
        {"QLinearConv", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, 3, false); }},
        {"ConvTranspose", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, 1, true); }},
        {"MaxPool", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, -1, false); }},
        {"AveragePool", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, -1, false); }},
        {"LpPool", [](auto& n, auto& s, auto& c) { conv_geometry(n, s, c, 0, -1, false); }},
        {"BatchNormalization", batchnorm},
        {"LSTM", [](auto& n, auto& s, auto& c) { recurrent(n, s, c, 4); }},
        {"GRU", [](auto& n, auto& s, auto& c) { recurrent(n, s, c, 3); }},
        {"Resize", scales},
        {"Upsample", scales},
        {"Tile", [](auto& n, auto& s, auto& c) { tile(n, s, c), one_d(n, s, c, {1}); }},
        {"Flatten", [](auto& n, auto& s, auto& c) { axis_attr(n, s, c, true); }},
        {"Reshape", [](auto& n, auto& s, auto& c) { one_d(n, s, c, {1}); }},
        {"Expand", [](auto& n, auto& s, auto& c) { one_d(n, s, c, {1}); }},
        {"Pad", [](auto& n, auto& s, auto& c) { one_d(n, s, c, {1}); }},
        {"ConstantOfShape", [](auto& n, auto& s, auto& c) { one_d(n, s, c, {0}); }},
        {"Slice", [](auto& n, auto& s, auto& c) { one_d(n, s, c, {1, 2, 4}), axes_list(n, s, c, 3, false); }},
        {"Squeeze", [](auto& n, auto& s, auto& c) { axes_list(n, s, c, 1, false); }},
        {"Unsqueeze", [](auto& n, auto& s, auto& c) { axes_list(n, s, c, 1, true); }},
        {"Gather", [](auto& n, auto& s, auto& c) { axis_attr(n, s, c, false), gather(n, s, c); }},
    };
    // An `axis` of the input's rank.
    for (const char* op : {"Softmax", "LogSoftmax", "Hardmax", "Concat", "GatherElements", "Split", "ArgMax", "ArgMin",
                           "LayerNormalization", "QuantizeLinear", "DequantizeLinear"})
      m[op] = [](auto& n, auto& s, auto& c) { axis_attr(n, s, c, false); };
    // `axes` of the input's rank (an attribute, or input 1 from opsets 13/18 on).
    for (const char* op : {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
      m[op] = [](auto& n, auto& s, auto& c) { axes_list(n, s, c, 1, false); };
    return m;
  }();
  return k;
}

}  // namespace

void check_shape_rules(const onnx::NodeProto& n, const Shapes& shapes, const Ctx& ctx) {
  if (auto it = table().find(n.op_type()); it != table().end()) it->second(n, shapes, ctx);
}

}  // namespace vtpu::compiler::validate
