#pragma once
// compiler/codegen: tpu dialect -> vtpu program (docs/compiler.md, "Code generation").
// The pipeline (compiler/src/import.h) includes it.
#include <map>

#include "mlir/IR/BuiltinOps.h"
#include "vtpu/compiler/compiler.h"

namespace vtpu::compiler {

// tpu dialect -> program for the config. INT8 needs `scales`: for every activation value
// (by Value::getAsOpaquePointer) its symmetric per-tensor scale from calibration.
CompileResult generate_program(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options,
                               const std::map<const void*, float>& scales = {});
// The same with `tail`, the model's last layers at the whole batch, run once after the chunk
// loop of `module` (compiler/pipeline/batch_chunks.cpp); `scales` holds both modules' values.
CompileResult generate_program(mlir::ModuleOp module, mlir::ModuleOp tail, const config::Config& cfg,
                               const CompileOptions& options, const std::map<const void*, float>& scales);

// Throws the unified-buffer error generate_program would give when the model's inputs
// alone do not fit (checked before INT8 calibration, which is slow for big models).
// `chunk_batch`: the batch when the model may run in chunks of it (why_samples_mix, empty):
// then an input whose first dimension is that batch needs one sample's rows only.
void check_inputs_fit(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options, int64_t chunk_batch = 0);

}  // namespace vtpu::compiler
