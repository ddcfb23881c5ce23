// The attribute ranges ONNX's operator definitions state in words and libonnx's schemas do
// not check (strides and dilations are >= 1, pads >= 0, a flag is 0 or 1, an enum string is
// one of its values), as one table: a row per operator family, a rule per attribute. The
// schema check (schema.cpp) has already made sure each attribute has its declared type.
// Rules that need the input shapes are in shapes.cpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "checks.h"

namespace vtpu::compiler::validate {
namespace {

enum class Kind {
  AtLeast1,    // every int >= 1 (strides, dilations, kernel_shape, group, hidden_size)
  AtLeast0,    // every int >= 0 (pads, output_padding)
  Flag,        // 0 or 1
  OneOf,       // a string among `values`
  Positive,    // a float > 0 (LSTM clip)
  DataType,    // a TensorProto element type (Cast's `to`)
};

struct AttrRule {
  const char* name;
  Kind kind;
  std::vector<const char*> values = {};
  bool required = false;  // optional in the schema, but onnxruntime's kernel needs it
};

struct OpRule {
  std::vector<const char*> ops;
  std::vector<AttrRule> attrs;
  bool spatial = false;  // kernel_shape, strides, dilations, pads, ... describe the same axes
};

const std::vector<const char*> kAutoPad = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
const std::vector<AttrRule> kConvAttrs = {{"kernel_shape", Kind::AtLeast1}, {"strides", Kind::AtLeast1},
                                          {"dilations", Kind::AtLeast1},    {"pads", Kind::AtLeast0},
                                          {"group", Kind::AtLeast1},        {"auto_pad", Kind::OneOf, kAutoPad}};

std::vector<AttrRule> with(std::vector<AttrRule> base, std::vector<AttrRule> more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

const std::vector<OpRule>& table() {
  static const std::vector<OpRule> k = {
      {{"Conv", "ConvInteger", "QLinearConv"}, kConvAttrs, true},
      {{"ConvTranspose"}, with(kConvAttrs, {{"output_padding", Kind::AtLeast0}, {"output_shape", Kind::AtLeast1}}), true},
      {{"MaxPool"}, with(kConvAttrs, {{"ceil_mode", Kind::Flag}, {"storage_order", Kind::Flag}}), true},
      {{"AveragePool"}, with(kConvAttrs, {{"ceil_mode", Kind::Flag}, {"count_include_pad", Kind::Flag}}), true},
      {{"LpPool"}, with(kConvAttrs, {{"p", Kind::AtLeast1}}), true},
      {{"ArgMax", "ArgMin"}, {{"keepdims", Kind::Flag}, {"select_last_index", Kind::Flag}}},
      {{"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum",
        "ReduceLogSumExp", "ReduceSumSquare"},
       {{"keepdims", Kind::Flag}, {"noop_with_empty_axes", Kind::Flag}}},
      {{"Gemm"}, {{"transA", Kind::Flag}, {"transB", Kind::Flag}}},
      {{"LSTM"},
       {{"hidden_size", Kind::AtLeast1, {}, true}, {"direction", Kind::OneOf, {"forward", "reverse", "bidirectional"}},
        {"layout", Kind::Flag}, {"input_forget", Kind::Flag}, {"clip", Kind::Positive}}},
      {{"GRU"},
       {{"hidden_size", Kind::AtLeast1, {}, true}, {"direction", Kind::OneOf, {"forward", "reverse", "bidirectional"}},
        {"layout", Kind::Flag}, {"linear_before_reset", Kind::Flag}, {"clip", Kind::Positive}}},
      {{"Pad"}, {{"mode", Kind::OneOf, {"constant", "reflect", "edge", "wrap"}}}},
      {{"Resize", "Upsample"},
       {{"mode", Kind::OneOf, {"nearest", "linear", "cubic", "bilinear"}},
        {"nearest_mode", Kind::OneOf, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}},
        {"coordinate_transformation_mode", Kind::OneOf,
         {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
          "tf_half_pixel_for_nn", "tf_crop_and_resize"}},
        {"exclude_outside", Kind::Flag}}},
      {{"Cast"}, {{"to", Kind::DataType}}},
      {{"DepthToSpace", "SpaceToDepth"}, {{"blocksize", Kind::AtLeast1}}},
      {{"LayerNormalization", "BatchNormalization", "InstanceNormalization"}, {{"training_mode", Kind::Flag}}},
  };
  return k;
}

const OpRule* rule_of(const std::string& op) {
  for (const OpRule& r : table())
    if (std::find_if(r.ops.begin(), r.ops.end(), [&](const char* o) { return op == o; }) != r.ops.end()) return &r;
  return nullptr;
}

const onnx::AttributeProto* find(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void check_one(const onnx::NodeProto& n, const onnx::AttributeProto& a, const AttrRule& r, const Ctx& ctx) {
  auto bad = [&](const std::string& why) {
    ctx.fail(node_label(n), fmt::format("{} attribute '{}' {}", n.op_type(), a.name(), why));
  };
  std::vector<int64_t> ints(a.ints().begin(), a.ints().end());
  if (a.type() == onnx::AttributeProto::INT) ints = {a.i()};
  switch (r.kind) {
    case Kind::AtLeast1:
    case Kind::AtLeast0:
      for (int64_t v : ints)
        if (v < (r.kind == Kind::AtLeast1 ? 1 : 0))
          bad(fmt::format("is [{}]; each value must be {} (ONNX's definition)", fmt::join(ints, ", "),
                          r.kind == Kind::AtLeast1 ? ">= 1" : ">= 0"));
      break;
    case Kind::Flag:
      if (a.i() != 0 && a.i() != 1) bad(fmt::format("is {}; it is a flag, 0 or 1", a.i()));
      break;
    case Kind::OneOf:
      if (std::none_of(r.values.begin(), r.values.end(), [&](const char* v) { return a.s() == v; }))
        bad(fmt::format("is '{}'; ONNX allows {}", a.s(), fmt::join(r.values, ", ")));
      break;
    case Kind::Positive:
      if (!(a.f() > 0) || !std::isfinite(a.f())) bad(fmt::format("is {}; it must be a finite number > 0", a.f()));
      break;
    case Kind::DataType:
      if (!onnx::TensorProto::DataType_IsValid(int(a.i())) || a.i() == onnx::TensorProto::UNDEFINED)
        bad(fmt::format("is {}, which is not an ONNX element type", a.i()));
      break;
  }
}

// kernel_shape, strides, dilations (one value per spatial axis), pads (two per axis) and
// ConvTranspose's output_padding and output_shape describe the same axes.
void check_spatial_lengths(const onnx::NodeProto& n, const Ctx& ctx) {
  struct Len {
    const char* name;
    int per_axis;
  };
  static const Len kLens[] = {{"kernel_shape", 1}, {"strides", 1},        {"dilations", 1},
                              {"pads", 2},         {"output_padding", 1}, {"output_shape", 1}};
  const char* first = nullptr;
  int64_t axes = -1;
  for (const Len& l : kLens) {
    const auto* a = find(n, l.name);
    if (!a) continue;
    if (a->ints_size() % l.per_axis)
      ctx.fail(node_label(n), fmt::format("{} attribute '{}' has {} values; it needs two per spatial axis (begins, then "
                                          "ends)",
                                          n.op_type(), l.name, a->ints_size()));
    int64_t k = a->ints_size() / l.per_axis;
    if (axes < 0) axes = k, first = l.name;
    else if (k != axes)
      ctx.fail(node_label(n), fmt::format("{} attributes '{}' and '{}' disagree: {} and {} spatial axes", n.op_type(), first,
                                          l.name, axes, k));
  }
}

// Float attributes are finite numbers: a NaN or infinite alpha, epsilon or scale gives no
// result onnxruntime and vtpu would agree on. Clip's bounds (before opset 11) may be
// infinite, which is what "no bound" means.
void check_finite(const onnx::NodeProto& n, const Ctx& ctx) {
  for (const auto& a : n.attribute()) {
    bool bound = n.op_type() == "Clip" && (a.name() == "min" || a.name() == "max");
    auto bad = [&](float v) { return std::isnan(v) || (!bound && std::isinf(v)); };
    std::vector<float> vals(a.floats().begin(), a.floats().end());
    if (a.type() == onnx::AttributeProto::FLOAT) vals = {a.f()};
    for (float v : vals)
      if (bad(v))
        ctx.fail(node_label(n), fmt::format("{} attribute '{}' is {}; it must be a finite number", n.op_type(), a.name(), v));
  }
}

}  // namespace

void check_attribute_ranges(const onnx::NodeProto& n, const Ctx& ctx) {
  check_finite(n, ctx);
  const OpRule* r = rule_of(n.op_type());
  if (!r) return;
  for (const AttrRule& ar : r->attrs) {
    const auto* a = find(n, ar.name);
    if (a) check_one(n, *a, ar, ctx);
    else if (ar.required)
      ctx.fail(node_label(n), fmt::format("{} needs attribute '{}' (onnxruntime requires it too)", n.op_type(), ar.name));
  }
  if (r->spatial) check_spatial_lengths(n, ctx);
}

}  // namespace vtpu::compiler::validate
