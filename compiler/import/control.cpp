// Control flow: an If whose condition is known when compiling (a constant, a shape, an input
// the user fixes with --fix) is the branch it takes, imported in its place; the other branch
// is never read. An If whose condition depends on data the program takes at run time is
// refused, naming the inputs that decide it (docs/compiler.md, "Control flow").
#include <fmt/format.h>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {
namespace {

// The names a subgraph reads from the scopes around it: inputs of its nodes (and of their own
// subgraphs) and outputs that it does not define itself.
void outer_reads(const onnx::GraphProto& g, std::vector<std::string>& reads) {
  std::set<std::string> own;
  for (const auto& t : g.initializer()) own.insert(t.name());
  for (const auto& v : g.input()) own.insert(v.name());
  auto read = [&](const std::string& name) {
    if (!name.empty() && !own.count(name)) reads.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) read(in);
    for (const auto& a : n.attribute()) {
      std::vector<std::string> inner;
      if (a.has_g()) outer_reads(a.g(), inner);
      for (const auto& sub : a.graphs()) outer_reads(sub, inner);
      for (const auto& x : inner) read(x);
    }
    for (const auto& out : n.output()) own.insert(out);
  }
  for (const auto& out : g.output()) read(out.name());
}

// Every node of g and of its subgraphs by the names it defines.
void producers(const onnx::GraphProto& g, std::map<std::string, const onnx::NodeProto*>& by_output) {
  for (const auto& n : g.node()) {
    for (const auto& out : n.output()) by_output[out] = &n;
    for (const auto& a : n.attribute()) {
      if (a.has_g()) producers(a.g(), by_output);
      for (const auto& sub : a.graphs()) producers(sub, by_output);
    }
  }
}

}  // namespace

std::vector<std::string> names_read(const onnx::NodeProto& n) {
  std::vector<std::string> reads(n.input().begin(), n.input().end());
  for (const auto& a : n.attribute()) {
    if (a.has_g()) outer_reads(a.g(), reads);
    for (const auto& sub : a.graphs()) outer_reads(sub, reads);
  }
  return reads;
}

// The graph inputs (not fixed, not initializers) that `name` is computed from.
std::vector<std::string> Importer::inputs_behind(const std::string& name) {
  std::map<std::string, const onnx::NodeProto*> by_output;
  producers(file_.proto().graph(), by_output);
  std::set<std::string> graph_inputs, seen, found;
  for (const auto& in : file_.proto().graph().input()) graph_inputs.insert(in.name());
  for (const auto& t : file_.proto().graph().initializer()) graph_inputs.erase(t.name());
  std::vector<std::string> todo{name};
  while (!todo.empty()) {
    std::string x = todo.back();
    todo.pop_back();
    if (x.empty() || !seen.insert(x).second) continue;
    if (graph_inputs.count(x)) found.insert(x);
    if (auto p = by_output.find(x); p != by_output.end())
      for (const auto& in : names_read(*p->second)) todo.push_back(in);
  }
  return {found.begin(), found.end()};
}

// " from input(s) a, b" and ": give ... (--fix a=VALUE --fix b=VALUE)" for what `names` are
// computed from, or "" when no graph input is behind them.
std::pair<std::string, std::string> Importer::fix_advice(const std::vector<std::string>& names) {
  std::set<std::string> from;
  for (const auto& name : names)
    for (const auto& x : inputs_behind(name)) from.insert(x);
  if (from.empty()) return {"", ""};
  std::vector<std::string> fixes;
  for (const auto& x : from) {
    auto et = elem_types_.find(x);
    bool flag = et != elem_types_.end() && et->second == onnx::TensorProto::BOOL;
    fixes.push_back(flag ? fmt::format("--fix {}=true or --fix {}=false", x, x) : "--fix " + x + "=VALUE");
  }
  return {fmt::format(" from input(s) {}", fmt::join(from, ", ")),
          fmt::format(": give the value the program will always run with ({})", fmt::join(fixes, " "))};
}

void Importer::if_node(const onnx::NodeProto& n) {
  const std::string& cond = n.input(0);
  auto c = constants_.find(cond);
  if (c == constants_.end()) {
    auto [from, fix] = fix_advice({cond});
    fail(fmt::format("the condition '{}' of If is computed at run time{}; vtpu compiles the branch an If takes, so the "
                     "condition must be known when compiling{}",
                     cond, from, fix),
         node_name(n));
  }
  if (numel(c->second.shape) != 1)
    fail(fmt::format("the condition '{}' of If holds {} elements; ONNX's If takes one", cond, numel(c->second.shape)),
         node_name(n));
  bool then = c->second.integer ? c->second.ints[0] != 0 : c->second.data[0] != 0;
  const char* which = then ? "then_branch" : "else_branch";
  const onnx::AttributeProto* a = attr(n, which);
  if (!a || !a->has_g()) fail(fmt::format("If has no {} graph", which), node_name(n));
  const onnx::GraphProto& g = a->g();
  if (g.output_size() != n.output_size())
    fail(fmt::format("If's {} has {} outputs and the node {}; they must agree", which, g.output_size(), n.output_size()),
         node_name(n));
  for (const auto& init : g.initializer()) constants_[init.name()] = read_tensor(init);
  ++subgraph_depth_;  // a branch's nodes may read an outer constant more than once
  for (const auto& node : g.node()) import_node(node);
  --subgraph_depth_;
  // The If's outputs are the branch's.
  for (int i = 0; i < n.output_size(); ++i) {
    const std::string &from = g.output(i).name(), &to = n.output(i);
    if (to.empty()) continue;
    bool any = false;
    if (auto v = values_.find(from); v != values_.end()) values_[to] = v->second, any = true;
    if (auto k = constants_.find(from); k != constants_.end()) constants_[to] = k->second, any = true;
    if (auto ia = int_args_.find(from); ia != int_args_.end()) int_args_[to] = ia->second, any = true;
    if (integer_valued_.count(from)) integer_valued_.insert(to);
    if (!any) fail(fmt::format("If's {} never defines its output '{}'", which, from), node_name(n));
  }
}

}  // namespace vtpu::compiler::onnx_import
