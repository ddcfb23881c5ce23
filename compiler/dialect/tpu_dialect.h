#pragma once
// Internal: the tpu dialect (compiler/dialect/TpuOps.td: its ops, whole layers as the chip runs
// them), the names of the attributes on func @main (attr_names.h), and the helpers every stage
// that reads the IR shares.
#include <cstdint>
#include <vector>

#include "dialect/attr_names.h"
#include "dialect/constants.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "vtpu/compiler/Tpu.dialect-decls.inc"

#define GET_OP_CLASSES
#include "vtpu/compiler/Tpu.op-decls.inc"

namespace vtpu::tpu {

// The static shape of a ranked tensor value.
inline std::vector<int64_t> shape_of(mlir::Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

}  // namespace vtpu::tpu
