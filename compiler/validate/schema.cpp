// Every node against its operator's ONNX definition at the model's opset, by libonnx's own
// checker (onnx::checker::check_node, which onnxruntime also runs on each node): the
// number of inputs and outputs, every attribute known, of its declared type, given once,
// and the required ones present.
#include <fmt/format.h>
#include <onnx/checker.h>

#include <unordered_map>

#include "checks.h"

namespace vtpu::compiler::validate {

void check_node_schemas(const onnx::ModelProto& m, const Ctx& ctx) {
  onnx::checker::CheckerContext cc;
  cc.set_ir_version(int(m.ir_version()));
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : m.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = int(o.version());
  cc.set_opset_imports(opsets);
  cc.set_model_dir(std::filesystem::absolute(ctx.path).parent_path().string());
  // The names in scope: libonnx checks that what an If's branch reads from outside it is.
  onnx::checker::LexicalScopeContext lex;
  for (const auto& t : m.graph().initializer()) lex.add(t.name());
  for (const auto& v : m.graph().input()) lex.add(v.name());
  for (const auto& n : m.graph().node()) {
    if (onnx::checker::check_is_experimental_op(n.op_type()))
      ctx.fail(node_label(n), fmt::format("{} is an experimental operator ONNX no longer defines; it is not supported",
                                          n.op_type()));
    try {
      onnx::checker::check_node(n, cc, lex);
    } catch (const onnx::checker::ValidationError& e) {
      std::string msg = e.what();
      if (auto p = msg.find("\n\n==> Context"); p != std::string::npos) msg.resize(p);
      ctx.fail(node_label(n), fmt::format("{} (ONNX's definition of {} at opset {})", msg, n.op_type(), ctx.opset));
    } catch (const std::exception& e) {
      ctx.fail(node_label(n), fmt::format("{} (ONNX's definition of {} at opset {})", e.what(), n.op_type(), ctx.opset));
    }
    for (const auto& out : n.output()) lex.add(out);
  }
}

}  // namespace vtpu::compiler::validate
