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

namespace onnx {
class ModelProto;
}

namespace vtpu::compiler {

// Throws CompileError ("FILE: node 'NAME': what is wrong and how to fix it") for the
// first problem found. `batch` is CompileOptions::batch (0: the model's own): the sizes are
// checked as the importer will build them.
void validate_onnx(const onnx::ModelProto& model, const std::filesystem::path& path, int64_t batch);

}  // namespace vtpu::compiler
