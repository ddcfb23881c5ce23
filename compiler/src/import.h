#pragma once
// Internal: the pieces of the pipeline (docs/compiler.md).
#include <filesystem>

#include <map>
#include <vector>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// ONNX -> TOSA (func @main); 4-D activations NHWC. Throws CompileError naming the node.
mlir::OwningOpRef<mlir::ModuleOp> import_onnx(mlir::MLIRContext& ctx, const std::filesystem::path& model,
                                              const CompileOptions& options);

// tpu dialect -> program for the config. INT8 needs `scales`: for every activation value
// (by Value::getAsOpaquePointer) its symmetric per-tensor scale from calibration.
CompileResult generate_program(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options,
                               const std::map<const void*, float>& scales = {});

// Throws the unified-buffer error generate_program would give when the model's inputs
// alone do not fit (checked before INT8 calibration, which is slow for big models).
void check_inputs_fit(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options);

// fp32 interpreter of func @main at the tpu level (reference.cpp). Images are NHWC.
struct RefTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};
std::vector<RefTensor> evaluate_reference(mlir::func::FuncOp fn, const std::vector<RefTensor>& inputs,
                                          std::map<const void*, RefTensor>* all_values = nullptr);

// Registers the dialects the compiler uses in a context.
void load_dialects(mlir::MLIRContext& ctx);

}  // namespace vtpu::compiler
