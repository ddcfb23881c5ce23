// The tpu dialect's generated code and registration.
#include "tpu_dialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

#include "vtpu/compiler/Tpu.dialect-defs.inc"

#define GET_OP_CLASSES
#include "vtpu/compiler/Tpu.op-defs.inc"

namespace vtpu::tpu {

void TpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "vtpu/compiler/Tpu.op-defs.inc"
      >();
}

// fn names a vec.<fn> instruction, so codegen can emit it without another check.
mlir::LogicalResult UnaryOp::verify() {
  static const char* const kTableFunctions[] = {"sigmoid", "tanh", "erf", "exp", "recip", "rsqrt"};
  for (const char* f : kTableFunctions)
    if (getFn() == f) return mlir::success();
  return emitOpError("fn '") << getFn() << "' is not a vector-unit table function (sigmoid, tanh, erf, exp, recip, rsqrt)";
}

mlir::LogicalResult BinaryOp::verify() {
  if (getKind() != "sub" && getKind() != "mul" && getKind() != "max" && getKind() != "min")
    return emitOpError("kind '") << getKind() << "' is not sub, mul, max or min";
  if (getLhs().getType() != getRhs().getType()) return emitOpError("operands must have the same type (no broadcasting)");
  return mlir::success();
}

}  // namespace vtpu::tpu
