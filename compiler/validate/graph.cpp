// The graph's structure: value infos with valid types and non-negative dims, single
// static assignment in topological order (as onnxruntime resolves a graph), initializers,
// tensor attributes, nodes of the ai.onnx domain (the only subgraphs: If's two branches, held
// to the same rules with the names around them in scope), and graph outputs whose names are
// file names (each becomes NAME.npy in --output-dir).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "checks.h"
#include "vtpu/support/files.h"

namespace vtpu::compiler::validate {
namespace {

using TP = onnx::TensorProto;

void check_value_info(const onnx::ValueInfoProto& v, const Ctx& ctx, const char* kind, bool need_shape) {
  std::string where = fmt::format("{} '{}'", kind, v.name());
  if (v.name().empty()) ctx.fail("", fmt::format("a graph {} has no name", kind));
  if (!v.has_type()) {
    if (need_shape) ctx.fail(where, "has no type; the compiler needs the element type and shape of every graph input");
    return;
  }
  if (!v.type().has_tensor_type())
    ctx.fail(where, "is not a tensor (sequences, maps, optionals and sparse tensors are not supported)");
  const auto& tt = v.type().tensor_type();
  if (!TP::DataType_IsValid(tt.elem_type()) || tt.elem_type() == TP::UNDEFINED)
    ctx.fail(where, fmt::format("element type {} is not an ONNX type", tt.elem_type()));
  if (!tt.has_shape()) {
    if (need_shape)
      ctx.fail(where, "has no shape; the compiler needs static shapes (give the input its dims, a symbolic first "
                      "dimension is the batch)");
    return;
  }
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto& d = tt.shape().dim(i);
    if (d.has_dim_value() && d.dim_value() < 0)
      ctx.fail(where, fmt::format("dimension {} is {}; a dimension is a size >= 0 or a symbolic name", i, d.dim_value()));
  }
  if (need_shape && tt.shape().dim_size() == 0)
    ctx.fail(where, fmt::format("is a scalar (rank 0); the compiler takes inputs of rank 1 or more. If it is a setting "
                                "(a sample rate, a mode), fix its value with --fix {}=VALUE; else give it shape [1]",
                                v.name()));
}

// The element count of a graph input as the importer builds it (input_dims).
void check_input_size(const onnx::ValueInfoProto& v, const Ctx& ctx) {
  google::protobuf::RepeatedField<int64_t> dims;
  for (int64_t x : input_dims(v, ctx.batch, *ctx.shapes)) dims.Add(x < 0 ? 1 : x);  // symbolic: the importer names them
  if (!element_count(dims))
    ctx.fail(fmt::format("input '{}'", v.name()),
             fmt::format("shape [{}] has more than 2^31 elements, more than any config's memory holds; use a smaller "
                         "shape or --batch",
                         fmt::join(dims, ", ")));
}

void check_node_fields(const onnx::NodeProto& n, const Ctx& ctx) {
  std::string where = node_label(n);
  if (n.op_type().empty()) ctx.fail(where, "has no op_type");
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    ctx.fail(where, fmt::format("operator {} of domain '{}' is not supported (only the ai.onnx operators are; "
                                "docs/compiler.md lists them)",
                                n.op_type(), n.domain()));
  std::set<std::string> seen;
  bool branches = n.op_type() == "If" && (n.domain().empty() || n.domain() == "ai.onnx");
  for (const auto& a : n.attribute()) {
    bool graph = a.type() == onnx::AttributeProto::GRAPH || a.type() == onnx::AttributeProto::GRAPHS || a.has_g() ||
                 a.graphs_size();
    if (graph && !(branches && (a.name() == "then_branch" || a.name() == "else_branch") && a.has_g() && !a.graphs_size()))
      ctx.fail(where, fmt::format("{} holds a subgraph (attribute '{}'); of control flow only If is supported, compiled "
                                  "as the branch its condition takes (loops, Loop and Scan, are not)",
                                  n.op_type(), a.name()));
    if (a.type() == onnx::AttributeProto::SPARSE_TENSOR || a.type() == onnx::AttributeProto::SPARSE_TENSORS ||
        a.has_sparse_tensor() || a.sparse_tensors_size())
      ctx.fail(where, fmt::format("attribute '{}' is a sparse tensor, which is not supported", a.name()));
    if (a.has_t()) check_tensor(a.t(), ctx, fmt::format("{}: attribute '{}'", where, a.name()));
    for (const auto& t : a.tensors()) check_tensor(t, ctx, fmt::format("{}: attribute '{}'", where, a.name()));
  }
}

void check_branch(const onnx::NodeProto& n, const onnx::AttributeProto& a, std::set<std::string> defined, const Ctx& ctx);

// Single static assignment in topological order: every input defined before it is read (in
// g or in a graph around it), every output defined once, in g and in the branches of its Ifs.
void check_nodes(const onnx::GraphProto& g, std::set<std::string>& defined, const Ctx& ctx) {
  for (const auto& n : g.node()) {
    check_node_fields(n, ctx);
    if (n.input_size() == 0 && n.output_size() == 0) ctx.fail(node_label(n), "has neither inputs nor outputs");
    for (const auto& in : n.input())
      if (!in.empty() && !defined.count(in))
        ctx.fail(node_label(n), fmt::format("reads '{}', which no graph input, initializer or earlier node defines (nodes "
                                            "must be in topological order)",
                                            in));
    for (const auto& a : n.attribute())
      if (a.has_g()) check_branch(n, a, defined, ctx);
    for (const auto& out : n.output())
      if (!out.empty() && !defined.insert(out).second)
        ctx.fail(node_label(n), fmt::format("defines '{}', which is already defined (a graph is in single static "
                                            "assignment form)",
                                            out));
  }
}

// One of If's branches: no inputs, its own initializers and nodes, outputs as many as the
// node's, each defined; names of the graphs around it readable, none redefined.
void check_branch(const onnx::NodeProto& n, const onnx::AttributeProto& a, std::set<std::string> defined, const Ctx& ctx) {
  const onnx::GraphProto& b = a.g();
  std::string where = fmt::format("{}: {}", node_label(n), a.name());
  if (b.input_size())
    ctx.fail(where, fmt::format("has {} input(s) ('{}'); If's branches take none", b.input_size(), b.input(0).name()));
  for (const auto& t : b.initializer()) {
    if (t.name().empty()) ctx.fail(where, "an initializer has no name");
    if (!defined.insert(t.name()).second) ctx.fail(where, fmt::format("initializer '{}' is already defined", t.name()));
    check_tensor(t, ctx, fmt::format("{}: tensor '{}'", where, t.name()));
  }
  check_nodes(b, defined, ctx);
  if (b.output_size() != n.output_size())
    ctx.fail(where, fmt::format("has {} output(s) and the If {}; they must agree", b.output_size(), n.output_size()));
  for (const auto& out : b.output())
    if (!defined.count(out.name())) ctx.fail(where, fmt::format("output '{}' is defined by no node", out.name()));
}

}  // namespace

void for_each_node(const onnx::GraphProto& g, const std::function<void(const onnx::NodeProto&)>& f) {
  for (const auto& n : g.node()) f(n);
  for (const auto& n : g.node())
    for (const auto& a : n.attribute())
      if (a.has_g()) for_each_node(a.g(), f);
}

void check_graph(const onnx::GraphProto& g, const Ctx& ctx) {
  std::set<std::string> defined;
  for (const auto& t : g.initializer()) {
    if (t.name().empty()) ctx.fail("", "an initializer has no name");
    if (!defined.insert(t.name()).second) ctx.fail(fmt::format("tensor '{}'", t.name()), "two initializers have this name");
    check_tensor(t, ctx, fmt::format("tensor '{}'", t.name()));
  }
  std::set<std::string> inputs;
  for (const auto& in : g.input()) {
    if (!inputs.insert(in.name()).second) ctx.fail(fmt::format("input '{}'", in.name()), "two graph inputs have this name");
    bool is_init = defined.count(in.name()) > 0;  // IR version 3 lists initializers as inputs too
    check_value_info(in, ctx, "input", !is_init);
    if (!is_init) check_input_size(in, ctx);
    defined.insert(in.name());
  }
  // Every --shape names an input the user gives (not an initializer).
  for (const auto& [name, dims] : *ctx.shapes) {
    bool found = false;
    std::string names;
    for (const auto& in : g.input())
      if (!std::any_of(g.initializer().begin(), g.initializer().end(), [&](const auto& t) { return t.name() == in.name(); }))
        found |= in.name() == name, names += " " + in.name();
    if (!found)
      throw UserError(fmt::format("--shape {}=...: the model has no input '{}'; its inputs are:{}", name, name, names));
  }
  for (const auto& v : g.value_info()) check_value_info(v, ctx, "value", false);
  check_nodes(g, defined, ctx);
  if (g.output_size() == 0) ctx.fail("", "the graph has no outputs");
  std::set<std::string> outputs;
  for (const auto& out : g.output()) {
    check_value_info(out, ctx, "output", false);
    if (!outputs.insert(out.name()).second) ctx.fail(fmt::format("output '{}'", out.name()), "two graph outputs have this name");
    if (!is_plain_file_name(out.name() + ".npy"))
      ctx.fail(fmt::format("output '{}'", out.name()),
               "the name is not a file name (it is '.', '..', longer than 251 bytes or holds '/' or NUL) and outputs are "
               "written as NAME.npy; rename the output");
    if (!defined.count(out.name()))
      ctx.fail(fmt::format("output '{}'", out.name()), "no node, input or initializer defines this graph output");
  }
}

}  // namespace vtpu::compiler::validate
