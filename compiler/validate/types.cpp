// Every node's input and output element types against its operator's type constraints
// (ONNX's schemas, as onnxruntime checks them when it resolves a graph): an input of a type
// the operator does not take ("Sum of int32") or inputs that share a type variable but
// differ ("Add of float and uint8") are errors. libonnx's shape inference does not check this.
#include <fmt/format.h>
#include <onnx/defs/data_type_utils.h>
#include <onnx/defs/schema.h>

#include "checks.h"

namespace vtpu::compiler::validate {
namespace {

std::string type_name(int elem) {
  return fmt::format("tensor({})", onnx::Utils::DataTypeUtils::ToDataTypeString(elem));
}

}  // namespace

void check_types(const onnx::ModelProto& m, const std::map<std::string, int>& elem, const Ctx& ctx) {
  for_each_node(m.graph(), [&](const onnx::NodeProto& n) {
    if (is_value_constant(n)) return;  // an initializer to onnxruntime (checks.h)
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(n.op_type(), int(ctx.opset), n.domain());
    if (!s) return;  // check_node_schemas has refused it already
    std::map<std::string, int> bound;  // type variable -> element type
    auto check = [&](const std::vector<onnx::OpSchema::FormalParameter>& formals,
                     const google::protobuf::RepeatedPtrField<std::string>& names, const char* kind) {
      for (int i = 0; i < names.size() && !formals.empty(); ++i) {
        if (names[i].empty()) continue;
        auto it = elem.find(names[i]);
        if (it == elem.end() || it->second == onnx::TensorProto::UNDEFINED) continue;
        const auto& f = formals[std::min<size_t>(size_t(i), formals.size() - 1)];
        onnx::TypeProto tp;
        tp.mutable_tensor_type()->set_elem_type(it->second);
        onnx::DataType t = onnx::Utils::DataTypeUtils::ToType(tp);
        if (!f.GetTypes().count(t)) {
          std::vector<std::string> allowed;
          for (onnx::DataType a : f.GetTypes()) allowed.push_back(*a);
          std::sort(allowed.begin(), allowed.end());
          ctx.fail(node_label(n), fmt::format("{} {} {} ('{}') is {}; ONNX's {} at opset {} takes {}", n.op_type(), kind, i,
                                              names[i], type_name(it->second), n.op_type(), ctx.opset,
                                              fmt::join(allowed, ", ")));
        }
        bool variadic_mixed = f.GetOption() == onnx::OpSchema::Variadic && !f.GetIsHomogeneous();
        if (variadic_mixed) continue;
        auto [b, fresh] = bound.emplace(f.GetTypeStr(), it->second);
        if (!fresh && b->second != it->second)
          ctx.fail(node_label(n), fmt::format("{} {} {} ('{}') is {} but another {} of type {} is {}; they must match",
                                              n.op_type(), kind, i, names[i], type_name(it->second), kind, f.GetTypeStr(),
                                              type_name(b->second)));
      }
    };
    check(s->inputs(), n.input(), "input");
    check(s->outputs(), n.output(), "output");
  });
}

}  // namespace vtpu::compiler::validate
