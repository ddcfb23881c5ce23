// Opset 18 models as opset 17 ones. The ONNX that Debian 12 ships (libonnx 1.12) defines
// operators up to opset 17, so its checker and shape inference cannot read an opset 18 model;
// opset 18 (what torch's dynamo exporter writes) changed few operators, and each change the
// compiler supports is rewritten into its opset 17 form before validation: the reductions'
// axes input (a constant) back into an attribute, Split's num_outputs dropped when it is the
// number of outputs (an equal split), Resize's new attributes dropped at their defaults. What
// has no opset 17 form is refused by name (docs/compiler.md, "Opsets").
#include <fmt/format.h>

#include <set>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {
namespace {

struct Rewrite {
  const std::filesystem::path& path;
  std::map<std::string, const onnx::TensorProto*> constants;  // initializers and Constant nodes' tensors, by name

  [[noreturn]] void fail(const onnx::NodeProto& n, const std::string& what) const {
    std::string name = n.name().empty() ? n.op_type() + "_" + (n.output_size() ? n.output(0) : std::string()) : n.name();
    throw CompileError(fmt::format("{}: node '{}': {} (opset 18; the compiler reads opset 18 models as opset 17, where "
                                   "this has no form)",
                                   path.string(), name, what));
  }

  void collect(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) constants[t.name()] = &t;
    for (const auto& n : g.node()) {
      if (n.op_type() == "Constant" && n.output_size() == 1)
        for (const auto& a : n.attribute())
          if (a.name() == "value" && a.has_t()) constants[n.output(0)] = &a.t();
      for (const auto& a : n.attribute())
        if (a.has_g()) collect(a.g());
    }
  }

  // The values of a constant integer tensor, or nullopt.
  std::optional<std::vector<int64_t>> ints(const std::string& name) const {
    auto it = constants.find(name);
    if (it == constants.end()) return std::nullopt;
    try {
      Constant c = read_tensor(*it->second, path.parent_path());
      if (!c.integer) return std::nullopt;
      return c.int_values();
    } catch (const ConstantError&) {
      return std::nullopt;
    }
  }

  static onnx::AttributeProto* find(onnx::NodeProto& n, const std::string& name) {
    for (auto& a : *n.mutable_attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  static void drop(onnx::NodeProto& n, const std::string& name) {
    auto* as = n.mutable_attribute();
    for (int i = 0; i < as->size(); ++i)
      if (as->Get(i).name() == name) {
        as->DeleteSubrange(i, 1);
        return;
      }
  }

  // ReduceMean, ReduceMax, ... (all but ReduceSum, which took axes as an input from opset 13):
  // the axes input becomes the attribute; an absent one with noop_with_empty_axes = 1 leaves
  // the input as it is (an Identity).
  void reduction(onnx::NodeProto& n) {
    std::vector<int64_t> axes;
    bool given = n.input_size() > 1 && !n.input(1).empty();
    if (given) {
      auto v = ints(n.input(1));
      if (!v) fail(n, fmt::format("{}'s axes input '{}' must be a constant (an initializer or a Constant node)", n.op_type(),
                                  n.input(1)));
      axes = *v;
    }
    auto* noop = find(n, "noop_with_empty_axes");
    bool identity = noop && noop->i() != 0 && axes.empty();
    drop(n, "noop_with_empty_axes");
    while (n.input_size() > 1) n.mutable_input()->RemoveLast();
    if (identity) {
      n.set_op_type("Identity");
      n.clear_attribute();
      return;
    }
    if (!axes.empty()) {
      auto* a = n.add_attribute();
      a->set_name("axes");
      a->set_type(onnx::AttributeProto::INTS);
      for (int64_t x : axes) a->add_ints(x);
    }
  }

  void node(onnx::NodeProto& n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return;
    static const std::set<std::string> kReductions = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                                      "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                                      "ReduceSumSquare"};
    static const std::set<std::string> kNew = {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot", "CenterCropPad",
                                               "Col2Im", "GroupNormalization", "Mish"};
    const std::string& op = n.op_type();
    if (kNew.count(op)) fail(n, fmt::format("operator {} (new in opset 18) is not supported", op));
    if (kReductions.count(op)) return reduction(n);
    if (op == "Split") {
      if (auto* k = find(n, "num_outputs")) {
        if (k->i() != n.output_size())
          fail(n, fmt::format("Split's num_outputs is {} and the node has {} outputs", k->i(), n.output_size()));
        drop(n, "num_outputs");  // opset 17 splits into as many equal parts as there are outputs
      }
    } else if (op == "Pad") {
      if (n.input_size() > 3 && !n.input(3).empty()) fail(n, "Pad's axes input is not supported (give pads for every axis)");
    } else if (op == "Resize") {
      if (auto* a = find(n, "antialias")) {
        if (a->i() != 0) fail(n, "Resize with antialias = 1 is not supported");
        drop(n, "antialias");
      }
      if (auto* a = find(n, "keep_aspect_ratio_policy")) {
        if (a->s() != "stretch") fail(n, fmt::format("Resize's keep_aspect_ratio_policy '{}' is not supported", a->s()));
        drop(n, "keep_aspect_ratio_policy");
      }
      if (find(n, "axes")) fail(n, "Resize's axes attribute is not supported (give scales or sizes for every axis)");
    } else if (op == "ScatterElements" || op == "ScatterND") {
      if (auto* a = find(n, "reduction"); a && (a->s() == "max" || a->s() == "min"))
        fail(n, fmt::format("{} with reduction '{}' is not supported", op, a->s()));
    }
  }

  void graph(onnx::GraphProto& g) {
    for (auto& n : *g.mutable_node()) {
      node(n);
      for (auto& a : *n.mutable_attribute())
        if (a.has_g()) graph(*a.mutable_g());
    }
  }
};

}  // namespace

void opset_18_as_17(onnx::ModelProto& model, const std::filesystem::path& path) {
  for (auto& o : *model.mutable_opset_import())
    if ((o.domain().empty() || o.domain() == "ai.onnx") && o.version() == 18) {
      Rewrite r{path, {}};
      r.collect(model.graph());
      r.graph(*model.mutable_graph());
      o.set_version(17);
    }
}

}  // namespace vtpu::compiler::onnx_import
