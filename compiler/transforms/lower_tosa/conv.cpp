// Convolutions: tosa.conv2d and tosa.depthwise_conv2d become tpu.conv2d (weights
// [KH, KW, CI / groups, CO]) with a following per-channel bias add and clamp fused.
#include <algorithm>

#include "transforms/lower_tosa/lowering.h"
#include "vtpu/support/layout.h"

namespace vtpu::tpu::lowering {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

// The tpu.conv2d of `op` with weights `hwio` ([KH, KW, CI / groups, CO]) and `groups`.
void lower_conv(State& state, mlir::PatternRewriter& b, mlir::Operation* op, Value input, const std::vector<int64_t>& hwio_shape,
                std::vector<float> hwio, std::vector<float> bias, mlir::DenseI64ArrayAttr stride, mlir::DenseI64ArrayAttr pad,
                mlir::DenseI64ArrayAttr dilation, int64_t groups) {
  double lo = -kInf, hi = kInf;
  std::vector<mlir::Operation*> absorbed{op};
  Value last = absorb_epilogue(op->getResult(0), bias, lo, hi, absorbed);
  if (last.getDefiningOp() != op) b.setInsertionPointAfter(last.getDefiningOp());
  mlir::Location loc = op->getLoc();
  int64_t CO = hwio_shape[3];
  Value y = b.create<Conv2DOp>(loc, last.getType(), input, make_const(b, loc, hwio_shape, std::move(hwio)), make_const(b, loc, {CO}, bias), stride,
                               pad, dilation, b.getF64FloatAttr(lo), b.getF64FloatAttr(hi), b.getStringAttr(layer_name(op)),
                               b.getI64IntegerAttr(groups));
  replace_absorbing(state, b, last.getDefiningOp(), y, absorbed);
}

struct Conv : Lowering<tosa::Conv2DOp> {
  using Lowering::Lowering;
  void lower(tosa::Conv2DOp cv, mlir::PatternRewriter& b) const override {
    mlir::ElementsAttr w_attr = const_attr(cv.getWeight());
    auto bias = const_data(cv.getBias());
    if (!w_attr || !bias) fail(cv, "convolution weights and bias must be constants");
    tpu::FloatData weights = tpu::float_data(w_attr);  // read in place
    llvm::ArrayRef<float> w = weights.values;
    auto ws = shape_of(cv.getWeight());  // OHWI
    int64_t CO = ws[0], KH = ws[1], KW = ws[2], CI = ws[3];
    // OHWI is a [CO, KH * KW * CI] matrix and HWIO its transpose: moved in square blocks, so
    // that reads and writes both stay within a few cache lines (ResNet-50 has 100 MB of them),
    // each block written row by row (contiguous stores; 5x faster than contiguous loads).
    const int64_t rows = KH * KW * CI;
    std::vector<float> hwio = blocked_matrix(rows, CO, [&](int64_t r, int64_t o) { return w[size_t(o * rows + r)]; });
    // The OHWI weights are read for the last time: their memory goes to the next layer's.
    release_consumed(cv->getParentOfType<mlir::func::FuncOp>(), cv.getWeight(), cv);
    lower_conv(state, b, cv, cv.getInput(), {KH, KW, CI, CO}, std::move(hwio), *bias, cv.getStrideAttr(), cv.getPadAttr(), cv.getDilationAttr(), 1);
  }
};

struct DepthwiseConv : Lowering<tosa::DepthwiseConv2DOp> {
  using Lowering::Lowering;
  void lower(tosa::DepthwiseConv2DOp dw, mlir::PatternRewriter& b) const override {
    // [KH, KW, C, M] is already tpu's [KH, KW, CI / groups = 1, CO = C x M].
    auto w = const_data(dw.getWeight()), bias = const_data(dw.getBias());
    if (!w || !bias) fail(dw, "depthwise convolution weights and bias must be constants");
    auto ws = shape_of(dw.getWeight());
    int64_t KH = ws[0], KW = ws[1], C = ws[2], CO = ws[2] * ws[3];
    lower_conv(state, b, dw, dw.getInput(), {KH, KW, 1, CO}, std::move(*w), *bias, dw.getStrideAttr(), dw.getPadAttr(), dw.getDilationAttr(), C);
  }
};

}  // namespace

void add_conv_patterns(mlir::RewritePatternSet& p, State& s) { p.add<Conv, DepthwiseConv>(p.getContext(), s); }

}  // namespace vtpu::tpu::lowering
