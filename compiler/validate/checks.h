#pragma once
// Internal to compiler/validate: the context every check reports through, and the checks
// validate_onnx runs in order (validate.h).
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "validate.h"

namespace vtpu::compiler::validate {

// The largest tensor the compiler builds: more elements than any config's memory holds as
// bf16 (2^31 x 2 B = 4 GiB), and few enough that every size sum fits in 64 bits.
inline constexpr int64_t kMaxElements = int64_t(1) << 31;

struct Ctx {
  std::filesystem::path path;  // the model file
  int64_t opset = 0;           // the ai.onnx opset the model imports
  int64_t batch = 0;           // CompileOptions::batch
  const InputShapes* shapes = nullptr;  // CompileOptions::shapes
  const OutsideRawData* outside = nullptr;  // raw_data held outside the proto (validate.h)
  // t's raw_data bytes, wherever they are held.
  std::string_view raw_data(const onnx::TensorProto& t) const;
  [[noreturn]] void fail(const std::string& where, const std::string& what) const;
};

// How the importer names a node in its messages ("node 'conv1'", or op type and first
// output for an unnamed node) and a tensor ("tensor 'w'").
std::string node_label(const onnx::NodeProto& n);

// A Constant node holding one tensor (its `value` attribute). onnxruntime turns these into
// initializers when it loads a model, before it checks any types, so an old exporter's
// int64 Constant at an opset whose Constant schema takes floats only (torch at opset 6-8)
// loads there; the checks treat them the same way.
bool is_value_constant(const onnx::NodeProto& n);

// Product of `dims` without overflow: nullopt when a dim is negative or the product passes
// kMaxElements.
std::optional<int64_t> element_count(const google::protobuf::RepeatedField<int64_t>& dims);

// graph.cpp: f on every node of g, then on the nodes of the If branches among them (the only
// subgraphs check_graph lets through), recursively.
void for_each_node(const onnx::GraphProto& g, const std::function<void(const onnx::NodeProto&)>& f);

// model.cpp: IR version, opset imports, what the model holds beyond one graph.
void check_header(const onnx::ModelProto& m, Ctx& ctx);
// tensors.cpp: an initializer or a tensor attribute: type, dims, data size, external data.
void check_tensor(const onnx::TensorProto& t, const Ctx& ctx, const std::string& where);
// graph.cpp: names (SSA, topological order, outputs that are file names), value infos.
void check_graph(const onnx::GraphProto& g, const Ctx& ctx);
// schema.cpp: every node against its ONNX definition at the model's opset (libonnx).
void check_node_schemas(const onnx::ModelProto& m, const Ctx& ctx);
// attributes.cpp: the attribute ranges the operator definitions state in words.
void check_attribute_ranges(const onnx::NodeProto& n, const Ctx& ctx);
// inference_guards.cpp: libonnx's schemas, with guards in front of the inference functions
// that crash on disagreeing ranks; shape inference runs with these.
const onnx::ISchemaRegistry* guarded_schemas();
// shapes.cpp: ONNX shape inference in strict mode, sizes, and the rules that need shapes.
void check_shapes(const onnx::ModelProto& m, const Ctx& ctx, std::map<std::string, int>* elem_out = nullptr);

// What shape inference found: every value's dims (-1 where unknown) and the model's
// initializers, for the rules that need shapes or constant values.
struct Shapes {
  std::map<std::string, std::vector<int64_t>> dims;
  std::map<std::string, const onnx::TensorProto*> initializers;
  // The dims of `name`, or null when not even its rank is known.
  const std::vector<int64_t>* of(const std::string& name) const {
    auto it = dims.find(name);
    return it == dims.end() ? nullptr : &it->second;
  }
  // The values of a small initializer held in the model (not external), or nullopt.
  std::optional<std::vector<double>> values(const std::string& name) const;
};
// types.cpp: every node's element types against its operator's type constraints; `elem`
// maps each value to its element type (after inference).
void check_types(const onnx::ModelProto& m, const std::map<std::string, int>& elem, const Ctx& ctx);
// shape_rules.cpp: one node's rules that need its inputs' shapes (convolution geometry,
// recurrent weight shapes, constant indices and scales in range).
void check_shape_rules(const onnx::NodeProto& n, const Shapes& shapes, const Ctx& ctx);

}  // namespace vtpu::compiler::validate
