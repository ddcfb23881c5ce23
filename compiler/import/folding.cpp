// Constant nodes and arithmetic on constants (shape computations of exported graphs) become
// constants at import, so their users see initializers.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <map>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

// Constant nodes, and shape-only operators on constants (a transposed or reshaped weight,
// as exporters write them), become constants at import: their users then see initializers.
bool Importer::fold_constant(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Constant") {
    Constant c;
    if (const auto* a = attr(n, "value")) {
      c = read_tensor(a->t());
      if (is_integer_type(a->t().data_type())) int_consts_.insert(n.output(0));
    }
    else if ((a = attr(n, "value_float"))) c = {{}, {a->f()}};
    else if ((a = attr(n, "value_floats"))) c = {{a->floats_size()}, {a->floats().begin(), a->floats().end()}};
    else if ((a = attr(n, "value_int"))) c = {{}, {float(a->i())}}, int_consts_.insert(n.output(0));
    else if ((a = attr(n, "value_ints"))) {
      int_consts_.insert(n.output(0));
      c.shape = {a->ints_size()};
      for (int64_t v : a->ints()) c.data.push_back(float(v));
    } else {
      fail("Constant needs a value, value_float(s) or value_int(s) attribute (sparse and string values are not supported)",
           node_name(n));
    }
    constants_[n.output(0)] = c;
    return true;
  }
  if (op == "Shape" || op == "Size") {  // shapes are static: a constant
    auto it = values_.find(n.input(0));
    const std::vector<int64_t>* shape = it != values_.end() ? &it->second.shape : nullptr;
    if (!shape)
      if (auto c = constants_.find(n.input(0)); c != constants_.end()) shape = &c->second.shape;
    if (!shape) return false;
    int64_t r = int64_t(shape->size()), start = attr_i(n, "start", 0), end = attr_i(n, "end", r);
    start = std::clamp<int64_t>(start < 0 ? start + r : start, 0, r), end = std::clamp<int64_t>(end < 0 ? end + r : end, 0, r);
    Constant c;
    int_consts_.insert(n.output(0));
    if (op == "Size") {
      c = {{}, {float(numel(*shape))}};
    } else {
      for (int64_t k = start; k < end; ++k) c.data.push_back(float((*shape)[size_t(k)]));
      c.shape = {int64_t(c.data.size())};
    }
    constants_[n.output(0)] = c;
    return true;
  }
  bool all_const = n.input_size() > 0;
  for (int i = 0; i < n.input_size(); ++i) all_const &= n.input(i).empty() || (constants_.count(n.input(i)) && !values_.count(n.input(i)));
  if (all_const && fold_arithmetic(n)) return true;
  static const std::set<std::string> kShapeOps = {"Identity", "Dropout", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  if (!kShapeOps.count(op) || n.input_size() < 1 || !constants_.count(n.input(0)) || values_.count(n.input(0))) return false;
  Constant c = constants_.at(n.input(0));
  int64_t r = int64_t(c.shape.size());
  if (op == "Transpose") {
    std::vector<int64_t> perm = attr_ints(n, "perm", {});
    if (perm.empty())
      for (int64_t k = r; k-- > 0;) perm.push_back(k);
    if (int64_t(perm.size()) != r) fail("perm does not match the constant's rank", node_name(n));
    std::vector<int64_t> shape, in_stride(size_t(r), 1);
    for (int64_t k = r - 2; k >= 0; --k) in_stride[size_t(k)] = in_stride[size_t(k + 1)] * c.shape[size_t(k + 1)];
    for (int64_t p : perm) {
      if (p < 0 || p >= r) fail(fmt::format("perm entry {} is out of range for a {}-D constant", p, r), node_name(n));
      shape.push_back(c.shape[size_t(p)]);
    }
    std::vector<float> out(c.data.size());
    std::vector<int64_t> idx(size_t(r), 0);
    for (size_t i = 0; i < out.size(); ++i) {
      int64_t src = 0;
      for (int64_t k = 0; k < r; ++k) src += idx[size_t(k)] * in_stride[size_t(perm[size_t(k)])];
      out[i] = c.data[size_t(src)];
      for (int64_t k = r - 1; k >= 0 && ++idx[size_t(k)] == shape[size_t(k)]; --k) idx[size_t(k)] = 0;
    }
    c = {shape, out};
  } else if (op != "Identity" && op != "Dropout") {
    c.shape = reshaped_shape(n, c.shape);
  }
  constants_[n.output(0)] = c;
  if (int_consts_.count(n.input(0))) int_consts_.insert(n.output(0));
  return true;
}

// Arithmetic on constants, as shape computations in exported graphs have it (Shape ->
// Gather -> Mul -> Concat -> Reshape): elementwise ops with NumPy broadcasting, Concat,
// ConstantOfShape, Range, Slice, Expand. False: not one of them.
bool Importer::fold_arithmetic(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  static const std::map<std::string, std::function<float(float, float)>> kBinary = {
      {"Add", [](float a, float b) { return a + b; }},
      {"Sub", [](float a, float b) { return a - b; }},
      {"Mul", [](float a, float b) { return a * b; }},
      {"Div", [](float a, float b) { return a / b; }},
      {"Pow", [](float a, float b) { return std::pow(a, b); }},
      {"Max", [](float a, float b) { return std::max(a, b); }},
      {"Min", [](float a, float b) { return std::min(a, b); }},
      {"Equal", [](float a, float b) { return float(a == b); }},
      {"Less", [](float a, float b) { return float(a < b); }},
      {"Greater", [](float a, float b) { return float(a > b); }},
      {"And", [](float a, float b) { return float(a != 0 && b != 0); }},
      {"Or", [](float a, float b) { return float(a != 0 || b != 0); }}};
  static const std::map<std::string, std::function<float(float)>> kUnary = {
      {"Neg", [](float a) { return -a; }},      {"Abs", [](float a) { return std::fabs(a); }},
      {"Sqrt", [](float a) { return std::sqrt(a); }}, {"Floor", [](float a) { return std::floor(a); }},
      {"Ceil", [](float a) { return std::ceil(a); }}, {"Not", [](float a) { return float(a == 0); }},
      {"Reciprocal", [](float a) { return 1.0f / a; }}};
  auto in = [&](int i) -> const Constant& { return constants_.at(n.input(i)); };
  // NumPy broadcasting of several constants: the result's shape and each input's flat index.
  auto broadcast = [&](const std::vector<const Constant*>& cs, std::vector<int64_t>& shape) {
    size_t r = 0;
    for (auto* c : cs) r = std::max(r, c->shape.size());
    shape.assign(r, 1);
    for (auto* c : cs)
      for (size_t k = 0; k < c->shape.size(); ++k) {
        int64_t& d = shape[r - c->shape.size() + k];
        int64_t e = c->shape[k];
        if (d != e && d != 1 && e != 1) fail(fmt::format("{} of constants whose shapes do not broadcast", op), node_name(n));
        d = d == 1 ? e : d;
      }
    return [=](const Constant& c, int64_t flat) {
      int64_t at = 0, stride = 1;
      for (size_t k = r; k-- > 0;) {
        int64_t i = flat % shape[k];
        flat /= shape[k];
        size_t ck = k + c.shape.size();
        if (ck < r) continue;
        ck -= r;
        if (c.shape[ck] != 1) at += i * stride;
        stride *= c.shape[ck];
      }
      return at;
    };
  };
  Constant out;
  bool ints = true;  // integer constants stay integers (Div truncates, as ONNX's does)
  for (int i = 0; i < n.input_size(); ++i) ints &= n.input(i).empty() || int_consts_.count(n.input(i)) > 0;
  if (auto b = kBinary.find(op); b != kBinary.end() && n.input_size() == 2) {
    auto idx = broadcast({&in(0), &in(1)}, out.shape);
    for (int64_t i = 0; i < numel(out.shape); ++i) {
      float v = b->second(in(0).data[size_t(idx(in(0), i))], in(1).data[size_t(idx(in(1), i))]);
      out.data.push_back(ints && op == "Div" ? std::trunc(v) : v);
    }
  } else if (auto u = kUnary.find(op); u != kUnary.end()) {
    out = in(0);
    for (float& v : out.data) v = u->second(v);
  } else if (op == "Where") {
    auto idx = broadcast({&in(0), &in(1), &in(2)}, out.shape);
    for (int64_t i = 0; i < numel(out.shape); ++i)
      out.data.push_back(in(0).data[size_t(idx(in(0), i))] != 0 ? in(1).data[size_t(idx(in(1), i))] : in(2).data[size_t(idx(in(2), i))]);
  } else if (op == "Expand") {
    std::vector<int64_t> want;
    for (float f : in(1).data) want.push_back(int64_t(f));
    Constant target{want, std::vector<float>(size_t(numel(want)), 0.0f)};  // only its shape counts
    auto idx = broadcast({&in(0), &target}, out.shape);
    for (int64_t i = 0; i < numel(out.shape); ++i) out.data.push_back(in(0).data[size_t(idx(in(0), i))]);
  } else if (op == "Concat") {
    int64_t r = int64_t(in(0).shape.size()), axis = attr_i(n, "axis", 0);
    if (axis < 0) axis += r;
    out.shape = in(0).shape;
    out.shape[size_t(axis)] = 0;
    for (int i = 0; i < n.input_size(); ++i) out.shape[size_t(axis)] += in(i).shape[size_t(axis)];
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= out.shape[size_t(k)];
    for (int64_t o = 0; o < outer; ++o)
      for (int i = 0; i < n.input_size(); ++i) {
        int64_t chunk = numel(in(i).shape) / std::max<int64_t>(outer, 1);
        out.data.insert(out.data.end(), in(i).data.begin() + o * chunk, in(i).data.begin() + (o + 1) * chunk);
      }
  } else if (op == "ConstantOfShape") {
    for (float f : in(0).data) out.shape.push_back(int64_t(f));
    float v = 0.0f;
    if (const auto* a = attr(n, "value")) v = read_tensor(a->t()).data.at(0);
    out.data.assign(size_t(numel(out.shape)), v);
  } else if (op == "Range") {
    float start = in(0).data.at(0), limit = in(1).data.at(0), delta = in(2).data.at(0);
    if (delta == 0) fail("Range with delta 0", node_name(n));
    for (float v = start; delta > 0 ? v < limit : v > limit; v += delta) out.data.push_back(v);
    out.shape = {int64_t(out.data.size())};
  } else if (op == "Slice" && n.input_size() >= 3) {
    const Constant& x = in(0);
    if (x.shape.size() != 1) return false;  // shape vectors; larger constants go through the usual Slice
    int64_t dim = x.shape[0], st = int64_t(in(1).data.at(0)), en = int64_t(std::clamp<double>(in(2).data.at(0), -1e18, 1e18));
    int64_t step = n.input_size() > 4 && !n.input(4).empty() ? int64_t(in(4).data.at(0)) : 1;
    if (step == 0) fail("Slice step 0 is not allowed", node_name(n));
    for (int64_t k : slice_indices(dim, st, en, step)) out.data.push_back(x.data[size_t(k)]);
    out.shape = {int64_t(out.data.size())};
  } else {
    return false;
  }
  constants_[n.output(0)] = out;
  if (ints || op == "Equal" || op == "Less" || op == "Greater" || op == "And" || op == "Or" || op == "Not") int_consts_.insert(n.output(0));
  return true;
}

}  // namespace vtpu::compiler::onnx_import
