// Which nodes become constants at import, so their users see initializers: Constant nodes,
// Shape and Size (shapes are static), shape-only operators on a constant (a transposed or
// reshaped weight, as exporters write them), and any node whose inputs are all constants and
// whose operator constant_ops.h evaluates (the shape arithmetic of exported graphs).
#include <fmt/format.h>

#include <set>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

bool Importer::fold_constant(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op == "Constant") {
    Constant c;
    if (const auto* a = attr(n, "value")) c = read_tensor(a->t());
    else if ((a = attr(n, "value_float"))) c = {{}, {a->f()}};
    else if ((a = attr(n, "value_floats"))) c = {{a->floats_size()}, {a->floats().begin(), a->floats().end()}};
    else if ((a = attr(n, "value_int"))) c = Constant::of_ints({}, {a->i()});
    else if ((a = attr(n, "value_ints"))) c = Constant::of_ints({a->ints_size()}, {a->ints().begin(), a->ints().end()});
    else
      fail("Constant needs a value, value_float(s) or value_int(s) attribute (sparse and string values are not supported)",
           node_name(n));
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
    if (op == "Size") constants_[n.output(0)] = Constant::of_ints({}, {numel(*shape)});
    else constants_[n.output(0)] = Constant::of_ints({std::max<int64_t>(end - start, 0)}, {shape->begin() + start, shape->begin() + std::max(start, end)});
    return true;
  }
  bool all_const = n.input_size() > 0;
  for (int i = 0; i < n.input_size(); ++i) all_const &= n.input(i).empty() || (constants_.count(n.input(i)) && !values_.count(n.input(i)));
  if (all_const)
    if (auto c = folded(n)) {
      constants_[n.output(0)] = std::move(*c);
      return true;
    }
  static const std::set<std::string> kShapeOps = {"Identity", "Dropout", "Reshape", "Flatten", "Squeeze", "Unsqueeze"};
  if (!kShapeOps.count(op) || n.input_size() < 1 || !constants_.count(n.input(0)) || values_.count(n.input(0))) return false;
  Constant c = constants_.at(n.input(0));
  if (op != "Identity" && op != "Dropout") c.shape = reshaped_shape(n, c.shape);
  constants_[n.output(0)] = c;
  return true;
}

std::optional<Constant> Importer::folded(const onnx::NodeProto& n) {
  std::vector<const Constant*> in;
  for (int i = 0; i < n.input_size(); ++i) in.push_back(n.input(i).empty() ? nullptr : &constants_.at(n.input(i)));
  try {
    return fold_node(n, in, path_.parent_path());
  } catch (const ConstantError& e) {
    fail(e.what(), node_name(n));
  }
}

}  // namespace vtpu::compiler::onnx_import
