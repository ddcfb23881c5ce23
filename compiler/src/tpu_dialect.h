#pragma once
// Internal: the tpu dialect (now compiler/dialect/tpu_dialect.h) and the compiler's passes.
// Kept under this name for code generation, which includes it from compiler/src.
#include <memory>

#include "dialect/tpu_dialect.h"
#include "mlir/Pass/Pass.h"

namespace vtpu::tpu {

// TOSA -> tpu: fuses conv/matmul + bias + clamp, cancels layout transposes, matches
// softmax, and turns what is left into tpu ops. Fails naming the node it cannot lower.
std::unique_ptr<mlir::Pass> createLowerTosaToTpuPass();
// Folds batch normalization (tosa.mul/add by constants) into the preceding conv weights.
std::unique_ptr<mlir::Pass> createFoldBatchNormPass();
// Removes tosa.transpose pairs that compose to the identity (layout cleanup after import).
std::unique_ptr<mlir::Pass> createCancelTransposesPass();
void registerPasses();

}  // namespace vtpu::tpu
