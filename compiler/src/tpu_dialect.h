#pragma once
// Internal: the tpu dialect (compiler/dialect/TpuOps.td) and the compiler's passes.
#include <memory>

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include "vtpu/compiler/Tpu.dialect-decls.inc"

#define GET_OP_CLASSES
#include "vtpu/compiler/Tpu.op-decls.inc"

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
