// The tpu dialect's generated code and registration.
#include "dialect/tpu_dialect.h"

#include <cstring>

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

std::vector<float> float_values(mlir::DenseElementsAttr a) {
  size_t n = size_t(a.getNumElements());
  if (!a.getElementType().isF32()) return {a.getValues<float>().begin(), a.getValues<float>().end()};
  if (a.isSplat()) return std::vector<float>(n, a.getSplatValue<float>());
  std::vector<float> out(n);
  llvm::ArrayRef<char> raw = a.getRawData();  // n little-endian fp32 values
  std::memcpy(out.data(), raw.data(), n * sizeof(float));
  return out;
}

}  // namespace vtpu::tpu
