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
  static const char* const kTableFunctions[] = {"sigmoid", "tanh", "erf", "exp", "recip", "rsqrt", "gelu"};
  for (const char* f : kTableFunctions)
    if (getFn() == f) return mlir::success();
  return emitOpError("fn '") << getFn() << "' is not a vector-unit table function (sigmoid, tanh, erf, exp, recip, rsqrt, gelu)";
}

mlir::LogicalResult BinaryOp::verify() {
  if (getKind() != "sub" && getKind() != "mul" && getKind() != "max" && getKind() != "min" && getKind() != "div")
    return emitOpError("kind '") << getKind() << "' is not sub, mul, max, min or div";
  if (getLhs().getType() != getRhs().getType()) return emitOpError("operands must have the same type (no broadcasting)");
  return mlir::success();
}

mlir::LogicalResult BroadcastOp::verify() {
  auto in = mlir::cast<mlir::RankedTensorType>(getInput().getType()).getShape();
  auto out = mlir::cast<mlir::RankedTensorType>(getOutput().getType()).getShape();
  if (in.size() != out.size() || in.empty()) return emitOpError("input and output must have the same rank");
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != out[i] && (in[i] != 1 || i + 1 == in.size()))
      return emitOpError("dimension ") << i << " of size " << in[i] << " cannot broadcast to " << out[i]
                                       << " (only size-1 dimensions other than the last repeat)";
  return mlir::success();
}

mlir::LogicalResult TransposeOp::verify() {
  auto in = mlir::cast<mlir::RankedTensorType>(getInput().getType()).getShape();
  auto out = mlir::cast<mlir::RankedTensorType>(getOutput().getType()).getShape();
  auto perm = getPerm();
  if (perm.size() != in.size() || out.size() != in.size()) return emitOpError("perm, input and output must have one rank");
  std::vector<bool> seen(in.size(), false);
  for (size_t k = 0; k < perm.size(); ++k) {
    if (perm[k] < 0 || size_t(perm[k]) >= in.size() || seen[size_t(perm[k])])
      return emitOpError("perm is not a permutation of 0..") << in.size() - 1;
    seen[size_t(perm[k])] = true;
    if (out[k] != in[size_t(perm[k])]) return emitOpError("output dimension ") << k << " does not match perm";
  }
  return mlir::success();
}

mlir::LogicalResult Conv2DOp::verify() {
  auto x = mlir::cast<mlir::RankedTensorType>(getInput().getType()).getShape();
  auto w = mlir::cast<mlir::RankedTensorType>(getWeight().getType()).getShape();
  auto y = mlir::cast<mlir::RankedTensorType>(getOutput().getType()).getShape();
  if (x.size() != 4 || w.size() != 4 || y.size() != 4) return emitOpError("input, weight and output must be 4-D");
  int64_t G = getGroups();
  if (G < 1 || x[3] % G || y[3] % G) return emitOpError("groups ") << G << " must divide the input and output channels";
  if (w[2] * G != x[3]) return emitOpError("weight has ") << w[2] << " channels per group, the input " << x[3] << " in " << G << " groups";
  if (w[3] != y[3]) return emitOpError("weight has ") << w[3] << " output channels, the output " << y[3];
  return mlir::success();
}

mlir::LogicalResult ArgMaxOp::verify() {
  auto x = mlir::cast<mlir::RankedTensorType>(getInput().getType());
  auto y = mlir::cast<mlir::RankedTensorType>(getOutput().getType());
  if (!y.getElementType().isInteger(32)) return emitOpError("indices must be i32");
  if (x.getRank() < 1 || x.getNumElements() / x.getShape().back() != y.getNumElements())
    return emitOpError("the output needs one element per input row (") << x.getNumElements() / std::max<int64_t>(1, x.getShape().back())
                                                                        << "), not " << y.getNumElements();
  return mlir::success();
}

mlir::LogicalResult PoolArgmaxOp::verify() {
  auto x = mlir::cast<mlir::RankedTensorType>(getInput().getType()).getShape();
  auto yt = mlir::cast<mlir::RankedTensorType>(getOutput().getType());
  auto y = yt.getShape();
  if (x.size() != 4 || y.size() != 4) return emitOpError("input and output must be 4-D NHWC");
  if (!yt.getElementType().isInteger(32)) return emitOpError("indices must be i32");
  if (getKernel().size() != 2 || getStride().size() != 2 || getPad().size() != 4)
    return emitOpError("kernel and stride need 2 values, pad 4 (top, bottom, left, right)");
  if (getStorageOrder() != 0 && getStorageOrder() != 1) return emitOpError("storage_order must be 0 or 1");
  for (int d = 0; d < 2; ++d) {
    int64_t want = (x[size_t(1 + d)] + getPad()[size_t(2 * d)] + getPad()[size_t(2 * d + 1)] - getKernel()[size_t(d)]) /
                       getStride()[size_t(d)] + 1;
    if (y[size_t(1 + d)] != want) return emitOpError("output ") << (d ? "width " : "height ") << y[size_t(1 + d)] << " should be " << want;
  }
  if (y[0] != x[0] || y[3] != x[3]) return emitOpError("output batch and channels must match the input's");
  return mlir::success();
}

mlir::LogicalResult BatchMatmulOp::verify() {
  auto a = mlir::cast<mlir::RankedTensorType>(getLhs().getType()).getShape();
  auto b = mlir::cast<mlir::RankedTensorType>(getRhs().getType()).getShape();
  auto y = mlir::cast<mlir::RankedTensorType>(getOutput().getType()).getShape();
  if (a.size() != 3 || b.size() != 3 || y.size() != 3) return emitOpError("operands and result must be 3-D [B, M, K], [B, K, N]");
  if (a[0] != b[0] || a[2] != b[1] || y[0] != a[0] || y[1] != a[1] || y[2] != b[2])
    return emitOpError("shapes [") << a[0] << ", " << a[1] << ", " << a[2] << "] x [" << b[0] << ", " << b[1] << ", " << b[2]
                                   << "] do not make the result";
  return mlir::success();
}

}  // namespace vtpu::tpu
