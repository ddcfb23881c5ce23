// Types and shapes by ONNX's own shape inference (libonnx, strict mode, with data
// propagation for shape computations), as onnxruntime infers them when it loads a model:
// an input of a type the operator does not take, an attribute that contradicts the input
// shapes or a declared output type that differs from the computed one are errors. Then every
// tensor's size, without overflow, against what the compiler can hold, and the rules that
// need shapes (shape_rules.cpp).
#include <fmt/format.h>
#include <onnx/defs/schema.h>
#include <onnx/defs/tensor_proto_util.h>
#include <onnx/shape_inference/implementation.h>

#include <set>

#include "checks.h"

namespace vtpu::compiler::validate {
namespace {

// Initializers up to this many elements go to shape inference with their values (shape
// tensors, Slice bounds, Resize scales); larger ones (weights) as typed inputs only, so a
// model of hundreds of MB is not copied. A small one stored externally goes as it is: like
// onnxruntime, shape inference then refuses an operator that needs its values.
constexpr int64_t kSmallConstant = 4096;

void add_typed_input(onnx::GraphProto* g, const std::string& name, int elem, const google::protobuf::RepeatedField<int64_t>& dims) {
  auto* v = g->add_input();
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// The model as shape inference sees it: its nodes (a Constant holding a tensor as an
// initializer, as onnxruntime loads it), its inputs with the batch the importer
// applies, its small constants with their values, and its outputs with their declared
// element types only (onnxruntime warns about a declared output shape that differs from the
// computed one and uses the computed one; it refuses a differing type).
onnx::ModelProto light_copy(const onnx::ModelProto& m, const Ctx& ctx) {
  onnx::ModelProto light;
  light.set_ir_version(std::max<int64_t>(m.ir_version(), 4));  // initializers need not be inputs
  *light.mutable_opset_import() = m.opset_import();
  auto* g = light.mutable_graph();
  g->set_name("validate");
  std::set<std::string> inits;
  auto add_constant = [&](const onnx::TensorProto& t, const std::string& name) {
    inits.insert(name);
    auto n = element_count(t.dims());
    if (n && *n <= kSmallConstant) {
      auto* c = g->add_initializer();
      *c = t;
      c->set_name(name);
    } else {
      add_typed_input(g, name, t.data_type(), t.dims());
    }
  };
  for (const auto& n : m.graph().node()) {
    if (is_value_constant(n)) add_constant(n.attribute(0).t(), n.output(0));  // as onnxruntime loads it (checks.h)
    else *g->add_node() = n;
  }
  for (const auto& t : m.graph().initializer()) add_constant(t, t.name());
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    auto* v = g->add_input();
    *v = in;
    auto* shape = v->mutable_type()->mutable_tensor_type()->mutable_shape();
    std::vector<int64_t> dims = input_dims(in, ctx.batch, *ctx.shapes);  // as the importer builds it
    for (int i = 0; i < shape->dim_size(); ++i)
      if (dims[size_t(i)] > 0) shape->mutable_dim(i)->set_dim_value(dims[size_t(i)]);
  }
  for (const auto& out : m.graph().output()) {
    auto* o = g->add_output();
    o->set_name(out.name());
    if (out.type().has_tensor_type() && out.type().tensor_type().elem_type())
      o->mutable_type()->mutable_tensor_type()->set_elem_type(out.type().tensor_type().elem_type());
  }
  return light;
}

// -1 for an unknown dim (a negative known one is reported before anything reads this).
std::vector<int64_t> dims_of(const onnx::TypeProto& t) {
  std::vector<int64_t> d;
  for (const auto& x : t.tensor_type().shape().dim()) d.push_back(x.has_dim_value() && x.dim_value() >= 0 ? x.dim_value() : -1);
  return d;
}

std::string clean(std::string msg) {
  if (auto p = msg.find("\n\n==> Context"); p != std::string::npos) msg.resize(p);
  return msg;
}

}  // namespace

bool is_value_constant(const onnx::NodeProto& n) {
  return n.op_type() == "Constant" && (n.domain().empty() || n.domain() == "ai.onnx") && n.output_size() == 1 &&
         n.attribute_size() == 1 && n.attribute(0).name() == "value" && n.attribute(0).has_t();
}

std::optional<std::vector<double>> Shapes::values(const std::string& name) const {
  auto it = initializers.find(name);
  if (it == initializers.end()) return std::nullopt;
  const onnx::TensorProto& t = *it->second;
  auto n = element_count(t.dims());
  if (!n || *n > kSmallConstant || t.data_location() == onnx::TensorProto::EXTERNAL) return std::nullopt;
  std::vector<double> v;
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      for (int64_t x : onnx::ParseData<int64_t>(&t)) v.push_back(double(x));
      break;
    case onnx::TensorProto::INT32:
      for (int32_t x : onnx::ParseData<int32_t>(&t)) v.push_back(double(x));
      break;
    case onnx::TensorProto::FLOAT:
      for (float x : onnx::ParseData<float>(&t)) v.push_back(double(x));
      break;
    case onnx::TensorProto::DOUBLE:
      for (double x : onnx::ParseData<double>(&t)) v.push_back(x);
      break;
    default: return std::nullopt;
  }
  return v;
}

void check_shapes(const onnx::ModelProto& m, const Ctx& ctx, std::map<std::string, int>* elem_out) {
  onnx::ModelProto light = light_copy(m, ctx);
  try {
    onnx::ShapeInferenceOptions opt(/*check_type=*/true, /*strict_mode=*/1, /*data_prop=*/true);
    onnx::shape_inference::InferShapes(light, guarded_schemas(), opt);
  } catch (const std::exception& e) {
    ctx.fail("", fmt::format("ONNX shape inference rejects the model: {}", clean(e.what())));
  }
  Shapes s;
  std::map<std::string, std::string> negative;  // values inference gave a negative size, as printed
  const auto& g = light.graph();
  for (const auto& t : g.initializer()) s.dims[t.name()] = {t.dims().begin(), t.dims().end()};
  // The values of the graph and of its If branches (inference types those too).
  std::vector<const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>*> lists{&g.input(), &g.value_info(), &g.output()};
  for_each_node(g, [&](const onnx::NodeProto& n) {
    for (const auto& a : n.attribute())
      if (a.has_g()) {
        lists.push_back(&a.g().value_info());
        lists.push_back(&a.g().output());
        for (const auto& t : a.g().initializer()) s.dims[t.name()] = {t.dims().begin(), t.dims().end()};
      }
  });
  for (const auto* list : lists)
    for (const auto& v : *list) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) continue;
      s.dims[v.name()] = dims_of(v.type());
      std::vector<std::string> shown;
      bool neg = false;
      for (const auto& x : v.type().tensor_type().shape().dim()) {
        neg |= x.has_dim_value() && x.dim_value() < 0;
        shown.push_back(x.has_dim_value() ? std::to_string(x.dim_value()) : "?");
      }
      if (neg) negative[v.name()] = fmt::format("{}", fmt::join(shown, ", "));
    }
  for (const auto& t : m.graph().initializer()) s.initializers[t.name()] = &t;
  std::map<std::string, int> elem;
  for (const auto& t : g.initializer()) elem[t.name()] = t.data_type();
  for (const auto* list : lists)
    for (const auto& v : *list)
      if (v.type().has_tensor_type()) elem[v.name()] = v.type().tensor_type().elem_type();
  check_types(m, elem, ctx);
  if (elem_out) *elem_out = elem;

  // Every value the nodes make, as the importer will build it.
  for_each_node(m.graph(), [&](const onnx::NodeProto& n) {
    for (const auto& out : n.output()) {
      if (auto neg = negative.find(out); neg != negative.end())
        ctx.fail(node_label(n), fmt::format("{} would make '{}' of shape [{}]: a negative size (is a kernel, a pad or a "
                                            "slice larger than its input?)",
                                            n.op_type(), out, neg->second));
      const auto* d = s.of(out);
      if (!d) continue;
      google::protobuf::RepeatedField<int64_t> known;
      for (int64_t x : *d) known.Add(x < 0 ? 1 : x);
      if (!element_count(known))
        ctx.fail(node_label(n), fmt::format("{} would make '{}' of shape [{}], more than 2^31 elements (more than any "
                                            "config's memory holds)",
                                            n.op_type(), out, fmt::join(*d, ", ")));
    }
    check_shape_rules(n, s, ctx);
  });
}

}  // namespace vtpu::compiler::validate
