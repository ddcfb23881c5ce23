// The tpu dialect's generated code and registration.
#include "dialect/tpu_dialect.h"

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

}  // namespace vtpu::tpu
