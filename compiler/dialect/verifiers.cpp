// The tpu ops' verifiers (hasVerifier in TpuOps.td): what an op's operands, results and
// attributes must satisfy for code generation and the reference interpreter to take it
// without further checks. A failure names the op and the rule (lit: compiler/tests/lit/verify_*.mlir).
#include <algorithm>

#include "dialect/tpu_dialect.h"

namespace vtpu::tpu {

// fn names a vec.<fn> instruction, so codegen can emit it without another check; "sqrt" is
// vec.rsqrt then vec.recip on the same rows.
mlir::LogicalResult UnaryOp::verify() {
  static const char* const kTableFunctions[] = {"sigmoid", "tanh", "erf", "exp", "recip", "rsqrt", "gelu", "log", "sqrt"};
  for (const char* f : kTableFunctions)
    if (getFn() == f) return mlir::success();
  return emitOpError("fn '") << getFn() << "' is not a vector-unit table function (sigmoid, tanh, erf, exp, recip, rsqrt, gelu, log, sqrt)";
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


namespace {
int64_t numel(llvm::ArrayRef<int64_t> s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
llvm::ArrayRef<int64_t> dims(mlir::Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()).getShape(); }
}  // namespace

mlir::LogicalResult MatmulOp::verify() {
  auto x = dims(getInput()), w = dims(getWeight()), y = dims(getOutput());
  if (w.size() != 2) return emitOpError("weight must be 2-D [K, N]");
  if (x.empty() || y.empty() || x.back() != w[0] || y.back() != w[1])
    return emitOpError("input rows of ") << (x.empty() ? 0 : x.back()) << " features and output rows of "
                                         << (y.empty() ? 0 : y.back()) << " do not match the weight [" << w[0] << ", " << w[1] << "]";
  if (numel(x) / w[0] != numel(y) / std::max<int64_t>(1, w[1])) return emitOpError("output rows differ from the input's");
  if (numel(dims(getBias())) != w[1]) return emitOpError("bias needs ") << w[1] << " values";
  return mlir::success();
}

mlir::LogicalResult PoolOp::verify() {
  auto x = dims(getInput()), y = dims(getOutput());
  if (getKind() != "max" && getKind() != "avg") return emitOpError("kind '") << getKind() << "' is not max or avg";
  if (x.size() != 4 || y.size() != 4) return emitOpError("input and output must be 4-D NHWC");
  if (getKernel().size() != 2 || getStride().size() != 2 || getPad().size() != 4 || (getDilation() && getDilation()->size() != 2))
    return emitOpError("kernel, stride and dilation need 2 values, pad 4 (top, bottom, left, right)");
  for (int d = 0; d < 2; ++d) {
    int64_t dil = getDilation() ? (*getDilation())[size_t(d)] : 1, s = getStride()[size_t(d)];
    if (dil < 1 || s < 1) return emitOpError("stride and dilation must be positive");
    int64_t span = dil * (getKernel()[size_t(d)] - 1) + 1;
    int64_t want = (x[size_t(1 + d)] + getPad()[size_t(2 * d)] + getPad()[size_t(2 * d + 1)] - span) / s + 1;
    if (y[size_t(1 + d)] != want) return emitOpError("output ") << (d ? "width " : "height ") << y[size_t(1 + d)] << " should be " << want;
  }
  if (y[0] != x[0] || y[3] != x[3]) return emitOpError("output batch and channels must match the input's");
  return mlir::success();
}

mlir::LogicalResult ConcatOp::verify() {
  auto y = dims(getOutput());
  int64_t axis = getAxis(), r = int64_t(y.size()), sum = 0;
  if (axis < 0 || axis >= r) return emitOpError("axis ") << axis << " is out of range for rank " << r;
  if (getInputs().empty()) return emitOpError("needs at least one input");
  for (mlir::Value v : getInputs()) {
    auto x = dims(v);
    if (int64_t(x.size()) != r) return emitOpError("inputs must have the output's rank");
    for (int64_t d = 0; d < r; ++d)
      if (d != axis && x[size_t(d)] != y[size_t(d)]) return emitOpError("inputs must match the output but along axis ") << axis;
    sum += x[size_t(axis)];
  }
  if (sum != y[size_t(axis)]) return emitOpError("inputs add up to ") << sum << " along axis " << axis << ", the output has " << y[size_t(axis)];
  return mlir::success();
}

mlir::LogicalResult SliceOp::verify() {
  auto x = dims(getInput()), y = dims(getOutput());
  auto start = getStart();
  if (x.size() != y.size() || start.size() != x.size()) return emitOpError("start, input and output must have one rank");
  for (size_t d = 0; d < x.size(); ++d)
    if (start[d] < 0 || start[d] + y[d] > x[d])
      return emitOpError("window [") << start[d] << ", " << start[d] + y[d] << ") of dimension " << d << " is outside [0, " << x[d] << ")";
  return mlir::success();
}

mlir::LogicalResult ReshapeOp::verify() {
  if (numel(dims(getInput())) != numel(dims(getOutput()))) return emitOpError("changes the number of elements");
  return mlir::success();
}

mlir::LogicalResult AffineOp::verify() {
  auto x = dims(getInput());
  if (x.empty() || dims(getOutput()) != x) return emitOpError("output must have the input's shape");
  if (numel(dims(getScale())) != x.back() || numel(dims(getBias())) != x.back())
    return emitOpError("scale and bias need one value per channel (") << x.back() << ")";
  return mlir::success();
}

mlir::LogicalResult CastOp::verify() {
  auto in = mlir::cast<mlir::RankedTensorType>(getInput().getType()), out = mlir::cast<mlir::RankedTensorType>(getOutput().getType());
  if (in.getShape() != out.getShape()) return emitOpError("input and output must have one shape");
  if (in.getElementType().isInteger(32) == out.getElementType().isInteger(32))
    return emitOpError("casts between i32 and the activation type, one way or the other");
  return mlir::success();
}

mlir::LogicalResult EmbeddingOp::verify() {
  auto ids = mlir::cast<mlir::RankedTensorType>(getIds().getType());
  auto table = dims(getTable()), y = dims(getOutput());
  if (!ids.getElementType().isInteger(32)) return emitOpError("ids must be i32");
  if (table.size() != 2 || y.size() != 2 || y[0] != ids.getNumElements() || y[1] != table[1])
    return emitOpError("the output must be [ids, D] = [") << ids.getNumElements() << ", " << (table.size() == 2 ? table[1] : 0)
                                                          << "] for a [V, D] table";
  return mlir::success();
}


namespace {

// A band of `whole` along `axis` (every dimension before it 1, every other equal but the
// channels, the last) that starts at `start` and channel `channel_start`; the error otherwise.
std::string band_error(llvm::ArrayRef<int64_t> whole, llvm::ArrayRef<int64_t> band, int64_t axis, int64_t start,
                       int64_t channel_start, int64_t row_step, int64_t col_start) {
  if (whole.size() != band.size()) return "band and tensor must have one rank";
  if (axis < 0 || axis >= int64_t(whole.size())) return "axis is outside the rank";
  const int64_t last = int64_t(whole.size()) - 1;
  // A tile: a band of rows of an image with some of its columns (dimension 2).
  const bool tile = axis == 1 && whole.size() == 4 && band[2] < whole[2];
  for (int64_t d = 0; d < int64_t(whole.size()); ++d) {
    if (d < axis && whole[size_t(d)] != 1) return "every dimension before the axis must be 1";
    if (d != axis && d != last && whole[size_t(d)] != band[size_t(d)] && !(tile && d == 2)) return "band and tensor differ outside the axis";
  }
  if (col_start != 0 && !tile) return "a column start needs a band of some columns of an image's rows";
  if (tile && (col_start < 0 || col_start + band[2] > whole[2])) return "the band's columns are outside the tensor";
  if (row_step < 1) return "the row step must be at least 1";
  if (row_step > 1 && axis == last) return "a row step needs rows of a dimension before the last";
  if (start < 0 || start + (band[size_t(axis)] - 1) * row_step + 1 > whole[size_t(axis)]) return "the band's rows are outside the tensor";
  if (axis != last) {
    if (channel_start < 0 || channel_start + band[size_t(last)] > whole[size_t(last)]) return "the band's channels are outside the tensor";
  } else if (channel_start != 0) {
    return "a band along the last dimension has no channel start";
  }
  return "";
}

}  // namespace

mlir::LogicalResult StoreRowsOp::verify() {
  if (dims(getDest()) != dims(getOutput())) return emitOpError("output must have the destination's shape");
  std::string e = band_error(dims(getDest()), dims(getBand()), getAxis(), getStart(), getChannelStart(), getRowStep(), getColStart());
  return e.empty() ? mlir::success() : emitOpError(e);
}

mlir::LogicalResult LoadRowsOp::verify() {
  std::string e = band_error(dims(getInput()), dims(getOutput()), getAxis(), getStart(), getChannelStart(), 1, getColStart());
  return e.empty() ? mlir::success() : emitOpError(e);
}

}  // namespace vtpu::tpu
