#pragma once
// Internal: the ONNX importer's entry point (compiler/import/, docs/compiler.md).
#include <filesystem>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// ONNX -> TOSA (func @main); 4-D activations NHWC. Throws CompileError naming the node.
mlir::OwningOpRef<mlir::ModuleOp> import_onnx(mlir::MLIRContext& ctx, const std::filesystem::path& model,
                                              const CompileOptions& options);

}  // namespace vtpu::compiler
