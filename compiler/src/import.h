#pragma once
// Internal: the pieces of the pipeline (docs/compiler.md).
#include <filesystem>

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// ONNX -> TOSA (func @main); 4-D activations NHWC. Throws CompileError naming the node.
mlir::OwningOpRef<mlir::ModuleOp> import_onnx(mlir::MLIRContext& ctx, const std::filesystem::path& model,
                                              const CompileOptions& options);

// tpu dialect -> program for the config.
CompileResult generate_program(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options);

// Registers the dialects the compiler uses in a context.
void load_dialects(mlir::MLIRContext& ctx);

}  // namespace vtpu::compiler
