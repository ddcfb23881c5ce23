#pragma once
// Builds ONNX models in C++ (no Python needed) with seeded weights: the model zoo
// generators and the tests use it.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

namespace vtpu::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13, uint64_t seed = 1) : rng_(seed) {
    model_.set_ir_version(8);
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  void input(const std::string& name, const std::vector<int64_t>& shape) { value_info(model_.mutable_graph()->add_input(), name, shape); }
  void output(const std::string& name, const std::vector<int64_t>& shape) { value_info(model_.mutable_graph()->add_output(), name, shape); }
  // Inputs and outputs of another element type (onnx::TensorProto::INT64 token ids, ...).
  void input(const std::string& name, const std::vector<int64_t>& shape, int elem_type) {
    value_info(model_.mutable_graph()->add_input(), name, shape, elem_type);
  }
  void output(const std::string& name, const std::vector<int64_t>& shape, int elem_type) {
    value_info(model_.mutable_graph()->add_output(), name, shape, elem_type);
  }

  // Dimension `dim` of graph input or output `name` made symbolic, named `param` (as
  // exporters write a dynamic batch or image size).
  void symbolic(const std::string& name, int dim, const std::string& param) {
    auto* g = model_.mutable_graph();
    for (auto* list : {g->mutable_input(), g->mutable_output()})
      for (auto& v : *list)
        if (v.name() == name) v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(dim)->set_dim_param(param);
  }

  // A float initializer with seeded values uniform in [-scale, scale], or given data.
  std::vector<float>& init(const std::string& name, const std::vector<int64_t>& shape, float scale, std::vector<float> data = {}) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    size_t n = 1;
    for (int64_t d : shape) t->add_dims(d), n *= size_t(d);
    if (data.empty()) {
      std::uniform_real_distribution<float> u(-scale, scale);
      for (size_t i = 0; i < n; ++i) data.push_back(u(rng_));
    }
    t->set_raw_data(std::string(reinterpret_cast<const char*>(data.data()), data.size() * sizeof(float)));
    inits_[name] = data;
    return inits_[name];
  }
  // An int8 or uint8 initializer (quantized weights, zero points); `shape` empty: a scalar.
  void init_q(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int>& values, bool is_unsigned) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(is_unsigned ? onnx::TensorProto::UINT8 : onnx::TensorProto::INT8);
    for (int64_t d : shape) t->add_dims(d);
    std::string raw;
    for (int v : values) raw.push_back(char(v));
    t->set_raw_data(raw);
  }
  void init_i64(const std::string& name, const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(int64_t(values.size()));
    for (int64_t v : values) t->add_int64_data(v);
  }

  onnx::NodeProto* node(const std::string& op, const std::string& name, std::vector<std::string> in, std::vector<std::string> out) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& s : in) n->add_input(s);
    for (auto& s : out) n->add_output(s);
    return n;
  }
  static void attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_s(onnx::NodeProto* n, const std::string& name, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(v);
  }
  static void attr_f(onnx::NodeProto* n, const std::string& name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  // The model as built so far, for what the helpers do not make (If's branch graphs).
  onnx::ModelProto& model() { return model_; }

  const std::vector<float>& weights(const std::string& name) { return inits_.at(name); }
  bool has_init(const std::string& name) const {
    for (const auto& t : model_.graph().initializer())
      if (t.name() == name) return true;
    return false;
  }

  std::filesystem::path save(const std::string& file) { return save_to(std::filesystem::temp_directory_path() / file); }
  std::filesystem::path save_to(const std::filesystem::path& p) {
    std::ofstream f(p, std::ios::binary);
    model_.SerializeToOstream(&f);
    if (!f) throw std::runtime_error("cannot write " + p.string());
    return p;
  }

 private:
  static void value_info(onnx::ValueInfoProto* v, const std::string& name, const std::vector<int64_t>& shape,
                         int elem_type = onnx::TensorProto::FLOAT) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    for (int64_t d : shape) t->mutable_shape()->add_dim()->set_dim_value(d);
  }
  onnx::ModelProto model_;
  std::mt19937 rng_;
  std::map<std::string, std::vector<float>> inits_;
};

}  // namespace vtpu::testing
