// validate_onnx: the checks in order, and the model-level ones (IR version, opsets).
#include <fmt/format.h>

#include <set>

#include "checks.h"
#include "validate.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {
namespace validate {

std::string_view Ctx::raw_data(const onnx::TensorProto& t) const { return raw_data_of(t, outside); }

void Ctx::fail(const std::string& where, const std::string& what) const {
  throw CompileError(fmt::format("{}: {}{}{}", path.string(), where, where.empty() ? "" : ": ", what));
}

std::string node_label(const onnx::NodeProto& n) {
  std::string name = n.name().empty() ? n.op_type() + "_" + (n.output_size() ? n.output(0) : std::string()) : n.name();
  return fmt::format("node '{}'", name);
}

std::optional<int64_t> element_count(const google::protobuf::RepeatedField<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    if (d == 0) n = 0;
    else if (n > kMaxElements / d) return std::nullopt;
    else n *= d;
  }
  return n;
}

namespace {
// onnxruntime reads IR versions 3 and later; the ONNX this vtpu links defines up to
// Version::IR_VERSION, and later versions only add what the importer refuses anyway
// (float8 and 4-bit types, function overloads), so two more are read.
constexpr int64_t kMinIr = 3, kMaxIr = int64_t(onnx::Version::IR_VERSION) + 2;
// The importer's operators mean the same from opset 7 to 17 (docs/compiler.md); opset 18 models
// reach the validator rewritten as opset 17 ones (compiler/import/opset.cpp).
constexpr int64_t kMinOpset = 7, kMaxOpset = 17;
}  // namespace

void check_header(const onnx::ModelProto& m, Ctx& ctx) {
  if (!m.has_ir_version())
    ctx.fail("", "the model has no ir_version; an ONNX model must say which IR version it is (re-export it)");
  if (m.ir_version() < kMinIr || m.ir_version() > kMaxIr)
    ctx.fail("", fmt::format("ir_version {} is not supported ({} to {}); re-export the model or convert it with "
                             "onnx.version_converter",
                             m.ir_version(), kMinIr, kMaxIr));
  if (!m.has_graph()) ctx.fail("", "the model has no graph");
  std::set<std::string> domains;
  bool has_onnx = false;
  for (const auto& o : m.opset_import()) {
    std::string d = o.domain() == "ai.onnx" ? "" : o.domain();
    if (!domains.insert(d).second)
      ctx.fail("", fmt::format("opset_import lists domain '{}' twice", d.empty() ? "ai.onnx" : d));
    if (!d.empty()) continue;
    has_onnx = true;
    ctx.opset = o.version();
  }
  if (!has_onnx)
    ctx.fail("", "the model imports no ai.onnx opset (opset_import); an ONNX model must say which opset its operators "
                 "follow");
  if (ctx.opset < kMinOpset || ctx.opset > kMaxOpset)
    ctx.fail("", fmt::format("opset {} is not supported ({} to {}); convert the model with onnx.version_converter",
                             ctx.opset, kMinOpset, kMaxOpset));
  if (m.functions_size())
    ctx.fail("", fmt::format("the model defines {} local function(s) ('{}'); inline them (onnx.inliner) before compiling",
                             m.functions_size(), m.functions(0).name()));
  if (m.training_info_size()) ctx.fail("", "the model carries training information; export it for inference");
  if (m.graph().sparse_initializer_size())
    ctx.fail(fmt::format("tensor '{}'", m.graph().sparse_initializer(0).values().name()),
             "sparse initializers are not supported; store it dense");
}

}  // namespace validate

std::string_view raw_data_of(const onnx::TensorProto& t, const OutsideRawData* outside) {
  if (outside)
    if (auto it = outside->find(&t); it != outside->end()) return it->second;
  return t.raw_data();
}

void validate_onnx(const onnx::ModelProto& model, const std::filesystem::path& path, int64_t batch,
                   const InputShapes& shapes, const OutsideRawData* outside, ElemTypes* elem_types) {
  validate::Ctx ctx{path, 0, batch, &shapes, outside};
  validate::check_header(model, ctx);
  validate::check_graph(model.graph(), ctx);
  validate::check_node_schemas(model, ctx);
  validate::for_each_node(model.graph(), [&](const onnx::NodeProto& n) { validate::check_attribute_ranges(n, ctx); });
  validate::check_shapes(model, ctx, elem_types);
}

}  // namespace vtpu::compiler
