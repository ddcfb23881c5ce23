// One ONNX node: the handler its operator has (a table), the forms every node may take
// before that (1-D windowed operators as 2-D ones, constants folded, empty tensors), nodes
// built to express other ones, and node attributes.
#include <fmt/format.h>

#include <limits>
#include <map>
#include <set>

#include "import/importer.h"

namespace vtpu::compiler::onnx_import {

void Importer::import_node(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    fail(fmt::format("operator domain '{}' is not supported", n.domain()), node_name(n));
  if (op == "If") return if_node(n);  // control.cpp
  if (lift_1d(n)) return;
  if (fold_constant(n)) return;
  if (empty_input(n)) return;
  static const std::set<std::string> kBoolean = {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And",
                                                 "Or", "Xor"};
  if (kBoolean.count(op)) return boolean_op(n, mlir::NameLoc::get(b_.getStringAttr(node_name(n))));  // logical.cpp
  using Handler = void (Importer::*)(const onnx::NodeProto&, mlir::Location);
  // By family: matmul.cpp, conv.cpp, pool.cpp, elementwise.cpp, shape.cpp, normalization.cpp,
  // reduce.cpp, recurrent.cpp, resize.cpp, quantization.cpp.
  static const std::map<std::string, Handler> kHandlers = {
      {"Gemm", &Importer::gemm},
      {"MatMul", &Importer::matmul},
      {"MatMulInteger", &Importer::integer_op},
      {"ConvInteger", &Importer::integer_op},
      {"Conv", &Importer::conv},
      {"ConvTranspose", &Importer::conv_transpose},
      {"MaxPool", &Importer::pool},
      {"AveragePool", &Importer::pool},
      {"GlobalAveragePool", &Importer::global_pool},
      {"GlobalMaxPool", &Importer::global_pool},
      {"Relu", &Importer::relu},
      {"Clip", &Importer::clip},
      {"Add", &Importer::binary},
      {"Sub", &Importer::binary},
      {"Mul", &Importer::binary},
      {"Div", &Importer::binary},
      {"Max", &Importer::variadic},
      {"Min", &Importer::variadic},
      {"Sum", &Importer::variadic},
      {"Mean", &Importer::variadic},
      {"Sigmoid", &Importer::unary_table},
      {"Tanh", &Importer::unary_table},
      {"Erf", &Importer::unary_table},
      {"Exp", &Importer::unary_table},
      {"Reciprocal", &Importer::unary_table},
      {"Sqrt", &Importer::unary_table},
      {"Log", &Importer::unary_table},
      {"Softplus", &Importer::elementwise_extra},
      {"LogSoftmax", &Importer::softmax},
      {"Pow", &Importer::pow},
      {"LeakyRelu", &Importer::leaky_relu},
      {"PRelu", &Importer::prelu},
      {"HardSwish", &Importer::hard_swish},
      {"HardSigmoid", &Importer::scale_shift},
      {"Neg", &Importer::scale_shift},
      {"Abs", &Importer::elementwise_extra},
      {"Softsign", &Importer::elementwise_extra},
      {"Elu", &Importer::elementwise_extra},
      {"Selu", &Importer::elementwise_extra},
      {"Celu", &Importer::elementwise_extra},
      {"Cast", &Importer::cast},
      {"Where", &Importer::where},
      {"Identity", &Importer::identity},
      {"Dropout", &Importer::identity},
      {"Flatten", &Importer::flatten},
      {"Reshape", &Importer::reshape_op},
      {"Squeeze", &Importer::squeeze},
      {"Unsqueeze", &Importer::squeeze},
      {"Transpose", &Importer::transpose_op},
      {"Concat", &Importer::concat},
      {"Slice", &Importer::slice},
      {"Split", &Importer::split},
      {"Tile", &Importer::tile},
      {"Expand", &Importer::expand},
      {"Gather", &Importer::gather},
      {"Pad", &Importer::pad},
      {"BatchNormalization", &Importer::batchnorm},
      {"InstanceNormalization", &Importer::instance_norm},
      {"LayerNormalization", &Importer::layernorm},
      {"Softmax", &Importer::softmax},
      {"ReduceMean", &Importer::reduce},
      {"ReduceSum", &Importer::reduce},
      {"ArgMax", &Importer::argmax},
      {"ArgMin", &Importer::argmax},
      {"LSTM", &Importer::lstm},
      {"GRU", &Importer::gru},
      {"Resize", &Importer::resize},
      {"Upsample", &Importer::resize},
      {"QuantizeLinear", &Importer::quantize_linear},
      {"DequantizeLinear", &Importer::dequantize_linear},
      {"QLinearMatMul", &Importer::qlinear},
      {"QLinearConv", &Importer::qlinear},
  };
  auto h = kHandlers.find(op);
  if (h == kHandlers.end())
    fail(fmt::format("operator {} is not supported yet (docs/compiler.md lists the supported operators)", op), node_name(n));
  (this->*h->second)(n, mlir::NameLoc::get(b_.getStringAttr(node_name(n))));
}

const onnx::AttributeProto* attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t attr_i(const onnx::NodeProto& n, const std::string& name, int64_t dflt) {
  auto* a = attr(n, name);
  return a ? a->i() : dflt;
}

float attr_f(const onnx::NodeProto& n, const std::string& name, float dflt) {
  auto* a = attr(n, name);
  return a ? a->f() : dflt;
}

std::vector<int64_t> attr_ints(const onnx::NodeProto& n, const std::string& name, std::vector<int64_t> dflt) {
  auto* a = attr(n, name);
  if (!a) return dflt;
  return {a->ints().begin(), a->ints().end()};
}

// An attribute with one value per spatial axis (`rank` of them), `dflt` on each when absent.
std::vector<int64_t> Importer::per_axis(const onnx::NodeProto& n, const std::string& name, int64_t dflt, size_t rank) {
  auto v = attr_ints(n, name, std::vector<int64_t>(rank, dflt));
  if (v.size() != rank) fail(fmt::format("{} {} must have {} values for a {}-D input", n.op_type(), name, rank, rank), node_name(n));
  return v;
}

std::string attr_s(const onnx::NodeProto& n, const std::string& name, std::string dflt) {
  auto* a = attr(n, name);
  return a ? a->s() : dflt;
}

void Importer::only_attrs(const onnx::NodeProto& n, std::initializer_list<const char*> allowed) {
  for (const auto& a : n.attribute()) {
    bool ok = false;
    for (const char* x : allowed) ok |= a.name() == x;
    if (!ok) fail(fmt::format("{} attribute '{}' is not supported", n.op_type(), a.name()), node_name(n));
  }
}

std::string Importer::node_name(const onnx::NodeProto& n) const {
  return n.name().empty() ? n.op_type() + "_" + (n.output_size() ? n.output(0) : std::string()) : n.name();
}

// A 1-D Conv, ConvTranspose, MaxPool or AveragePool ([N, C, L] input) is the 2-D operator
// over a height-1 image: the node is rewritten with a leading 1 in its spatial attributes
// (pads [b, e] -> [0, b, 0, e]), a [N, C, 1, L] input and a [.., 1, K] kernel, imported,
// and its [N, C', 1, L'] output reshaped back.
bool Importer::lift_1d(const onnx::NodeProto& n) {
  const std::string& op = n.op_type();
  if (op != "Conv" && op != "ConvTranspose" && op != "MaxPool" && op != "AveragePool") return false;
  if (n.input_size() < 1 || !values_.count(n.input(0)) || values_.at(n.input(0)).shape.size() != 3) return false;
  if (n.output_size() > 1 && !n.output(1).empty()) return false;  // MaxPool's Indices: refused as usual
  mlir::Location loc = mlir::NameLoc::get(b_.getStringAttr(node_name(n)));
  const std::string tag = "#as_2d";
  onnx::NodeProto m = n;
  if (m.name().empty()) m.set_name(node_name(n));
  Tensor x = values_.at(n.input(0));
  std::vector<int64_t> x4{x.shape[0], x.shape[1], 1, x.shape[2]};
  values_[n.input(0) + tag] = {reshape(x.value, x4, loc), x4, false};
  m.set_input(0, n.input(0) + tag);
  if (op == "Conv" || op == "ConvTranspose") {
    const Constant& w = const_input(n, 1, op == "Conv" ? "Conv weight" : "ConvTranspose weight");
    if (w.shape.size() != 3) fail(fmt::format("the 1-D {} weight must be 3-D, not {}-D", op, w.shape.size()), node_name(n));
    constants_[n.input(1) + tag] = {{w.shape[0], w.shape[1], 1, w.shape[2]}, w.data};
    m.set_input(1, n.input(1) + tag);
  }
  for (auto& a : *m.mutable_attribute()) {
    auto* v = a.mutable_ints();
    if (a.name() == "kernel_shape" || a.name() == "strides" || a.name() == "dilations" || a.name() == "output_shape")
      v->Add(1), std::rotate(v->begin(), v->end() - 1, v->end());
    else if (a.name() == "output_padding")
      v->Add(0), std::rotate(v->begin(), v->end() - 1, v->end());
    else if (a.name() == "pads" && v->size() == 2) {
      int64_t begin = v->Get(0), end = v->Get(1);
      v->Clear();
      for (int64_t p : {int64_t(0), begin, int64_t(0), end}) v->Add(p);
    }
  }
  m.set_output(0, n.output(0) + tag);
  while (m.output_size() > 1) m.mutable_output()->RemoveLast();
  import_node(m);
  const Tensor& y = values_.at(m.output(0));
  std::vector<int64_t> y3{y.shape[0], y.shape[1], y.shape[3]};
  define(n, {reshape(y.nhwc ? to_nchw_value(y, loc) : y.value, y3, loc), y3, false});
  return true;
}

// A node reading an empty tensor: shape-only operators and elementwise ones give empty
// outputs (nothing to compute); Concat drops its empty inputs. Anything else is refused.
bool Importer::empty_input(const onnx::NodeProto& n) {
  bool any = false;
  for (int i = 0; i < n.input_size(); ++i)
    if (auto it = values_.find(n.input(i)); it != values_.end() && it->second.empty()) any = true;
  const std::string& op = n.op_type();
  // These work out their output shapes themselves and make empty outputs of empty inputs.
  static const std::set<std::string> kShapeOps = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose", "Slice", "Split"};
  if (!any || kShapeOps.count(op)) return false;
  const Tensor& x = values_.at(n.input(0));
  if (op == "Concat") {
    onnx::NodeProto m = n;
    m.clear_input();
    std::vector<int64_t> shape;
    for (int i = 0; i < n.input_size(); ++i) {
      const Tensor& t = input(n, i);
      if (!t.empty()) m.add_input(n.input(i));
      else if (shape.empty()) shape = t.shape;
    }
    if (m.input_size() == 1) values_[n.output(0)] = input(m, 0);
    if (m.input_size() > 1) import_node(m);
    if (m.input_size() > 0) return true;
    int64_t axis = attr_i(n, "axis", 1);
    if (axis < 0) axis += int64_t(shape.size());
    shape[size_t(axis)] = 0;
    for (int i = 0; i < n.input_size(); ++i) shape[size_t(axis)] += input(n, i).shape[size_t(axis)];
    define(n, {Value(), shape, false});
    return true;
  }
  static const std::set<std::string> kSame = {"Identity", "Dropout", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Reciprocal",
                                              "Sqrt", "Log", "Softplus", "Neg", "Clip", "LeakyRelu", "HardSigmoid", "Cast"};
  if (!kSame.count(op)) {
    std::string which;
    for (int i = 0; i < n.input_size(); ++i)
      if (auto it = values_.find(n.input(i)); it != values_.end() && it->second.empty())
        which = fmt::format("input '{}' of shape [{}]", n.input(i), fmt::join(it->second.shape, ", "));
    fail(fmt::format("{} of an empty tensor ({}) is not supported; Reshape, Concat and elementwise operators "
                     "take empty inputs",
                     op, which),
         node_name(n));
  }
  for (int i = 0; i < n.output_size(); ++i)
    if (!n.output(i).empty()) values_[n.output(i)] = {Value(), x.shape, false};
  return true;
}

// Imports `m`, a node built to express another one (its names carry a '#' tag), and
// returns its first output.
const Tensor& Importer::sub_node(const onnx::NodeProto& m) {
  import_node(m);
  return values_.at(m.output(0));
}

void Importer::set_ints(onnx::NodeProto& m, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = m.add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

// A node like n, named after it with `tag`, with n's attributes except those in `drop`.
onnx::NodeProto Importer::derived_node(const onnx::NodeProto& n, const std::string& tag, std::initializer_list<const char*> drop) {
  onnx::NodeProto m;
  m.set_op_type(n.op_type());
  m.set_name(node_name(n) + tag);
  for (const auto& a : n.attribute())
    if (std::none_of(drop.begin(), drop.end(), [&](const char* d) { return a.name() == d; })) *m.add_attribute() = a;
  m.add_output(n.output(0) + tag);
  return m;
}

}  // namespace vtpu::compiler::onnx_import
