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

// A program generated with CompileOptions::defer_assembly assembled from its text, with the
// errors generate_program gives (`bands`: the program runs in row bands).
void assemble_program(CompileResult& r, const config::Config& cfg, bool bands);

// Where lane blocks start in the unified buffer: 64 bytes, or with
// `options.compact_ub_blocks` the buffer's row (at least its alignment).
uint64_t ub_block_alignment(const config::Config& cfg, const CompileOptions& options);

// The unified-buffer bytes of @main's values (each once, in the options' lane-block layout;
// one sample's rows of a value whose rows are a multiple of `batch`, as batch chunks of one
// hold them): compared across layouts, what compact lane blocks would save.
uint64_t values_bytes(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options, int64_t batch);

// Throws the unified-buffer error generate_program would give when the model's inputs
// alone do not fit (checked before INT8 calibration, which is slow for big models).
// `chunk_batch`: the batch when the model may run in chunks of it (why_samples_mix, empty):
// then an input whose first dimension is that batch needs one sample's rows only. Inputs are
// measured in compact lane blocks (the last attempt's); the error is the usual layout's.
void check_inputs_fit(mlir::ModuleOp module, const config::Config& cfg, const CompileOptions& options, int64_t chunk_batch = 0);

}  // namespace vtpu::compiler
