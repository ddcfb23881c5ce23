#pragma once
// Validation of an ONNX model before the importer reads it, the way onnxruntime validates a
// model before it runs one: the model's structure (IR version, opsets, SSA names in
// topological order), every node against its operator's ONNX definition for the model's
// opset (arity, attribute names, types and required ones; libonnx's schemas), the ranges the
// definitions state in words (strides and dilations >= 1, kernel_shape matching the weights,
// one value per spatial axis, ...), initializers and external data (sizes checked without
// overflow before anything is allocated; external files confined to the model's directory),
// types and shapes by ONNX's own shape inference in strict mode, sizes the compiler can
// hold, and graph output names that are file names. docs/compiler.md lists the rules.
//
// The importer calls this first; a model that passes cannot make it divide by zero, read
// past an array, allocate from a wrapped size or read a file outside the model's directory.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onnx {
class ModelProto;
class TensorProto;
class ValueInfoProto;
}

namespace vtpu::compiler {

using InputShapes = std::map<std::string, std::vector<int64_t>>;  // CompileOptions::shapes

// A graph input's dimensions as the compiler builds it (docs/compiler.md, "Input shapes"):
// the user's (`shapes`, by name) when given, else the model's; the first dimension is the
// batch when `batch` is given (else the user's, the model's, or 1 when symbolic); a dimension
// still symbolic is -1. Throws UserError when the user's disagree with the model's.
std::vector<int64_t> input_dims(const onnx::ValueInfoProto& in, int64_t batch, const InputShapes& shapes);
// The model's dimensions of a graph input as text, its symbolic ones by name: "[N, 3, 640, w]".
std::string model_dims(const onnx::ValueInfoProto& in);

// Throws CompileError ("FILE: node 'NAME': what is wrong and how to fix it") for the
// first problem found. `batch` and `shapes` are CompileOptions::batch (0: the model's own)
// and ::shapes: the sizes are checked as the importer will build them. `outside`: the raw_data bytes of tensors whose
// field in the proto was left empty by the reader (the importer's ModelFile keeps large
// initializers in the mapped file); they are checked in its place.
using OutsideRawData = std::unordered_map<const onnx::TensorProto*, std::string_view>;
// t's raw_data bytes: from `outside` if it holds them, else the proto's own.
std::string_view raw_data_of(const onnx::TensorProto& t, const OutsideRawData* outside);
// `elem_types`, when given, receives every value's ONNX element type as inference found it
// (the importer tells integer and bool values from float ones by it).
using ElemTypes = std::map<std::string, int>;
void validate_onnx(const onnx::ModelProto& model, const std::filesystem::path& path, int64_t batch,
                   const InputShapes& shapes = {}, const OutsideRawData* outside = nullptr,
                   ElemTypes* elem_types = nullptr);

}  // namespace vtpu::compiler
