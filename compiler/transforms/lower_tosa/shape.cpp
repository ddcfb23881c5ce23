// Layout ops: tosa.reshape, tosa.transpose, tosa.slice and tosa.concat of activations become
// their tpu ops. Those of constants (weights in the making) stay for their users and the
// pass's cleanup; an image's NCHW transpose and reshape right before a matmul (a Flatten)
// stay for the matmul, which folds their order into its weights (matmul.cpp).
#include "transforms/lower_tosa/lowering.h"

namespace vtpu::tpu::lowering {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

struct Reshape : Lowering<tosa::ReshapeOp> {
  using Lowering::Lowering;
  void lower(tosa::ReshapeOp rs, mlir::PatternRewriter& b) const override {
    if (rs.getResult().use_empty() || const_data(rs.getResult())) return retire(state, rs);  // constants: erased if unused
    if (rs.getInput1().getDefiningOp<tosa::TransposeOp>()) {
      // Flatten of an NHWC image: the matmul that consumes it folds the order into its
      // weights and makes its own tpu.reshape.
      mlir::Operation* u = single_user(rs.getResult());
      if (u && mlir::isa<tosa::FullyConnectedOp>(u)) return;
      fail(rs, "reshaping an image in NCHW order is only supported right before a matmul (Flatten + Gemm)");
    }
    Value y = b.create<ReshapeOp>(rs.getLoc(), rs.getType(), rs.getInput1(), b.getStringAttr(layer_name(rs)));
    replace(state, b, rs, y);
  }
};

struct Transpose : Lowering<tosa::TransposeOp> {
  using Lowering::Lowering;
  void lower(tosa::TransposeOp tr, mlir::PatternRewriter& b) const override {
    // Weight layouts are folded by their users, and an image flattened for a matmul folds
    // into its weights; any other transpose of an activation moves data (tpu.transpose).
    if (tr.getResult().use_empty() || is_constant(tr.getResult())) return;  // removed by the cleanup if unused
    std::vector<int32_t> p32 = perm_of(tr);
    if (mlir::Operation* u = single_user(tr.getResult()); u && mlir::isa<tosa::ReshapeOp>(u) && p32 == std::vector<int32_t>{0, 3, 1, 2})
      if (mlir::Operation* u2 = single_user(u->getResult(0)); u2 && mlir::isa<tosa::FullyConnectedOp>(u2)) return;
    if (p32.empty()) fail(tr, "a transpose needs constant perms");
    std::vector<int64_t> perm(p32.begin(), p32.end());
    Value y = b.create<TransposeOp>(tr.getLoc(), tr.getType(), tr.getInput1(), b.getDenseI64ArrayAttr(perm), b.getStringAttr(layer_name(tr)));
    replace(state, b, tr, y);
  }
};

struct Slice : Lowering<tosa::SliceOp> {
  using Lowering::Lowering;
  void lower(tosa::SliceOp sl, mlir::PatternRewriter& b) const override {
    if (is_constant(sl.getInput())) fail(sl, "a Slice of a constant is not supported yet");
    Value y = b.create<SliceOp>(sl.getLoc(), sl.getType(), sl.getInput(), sl.getStartAttr(), b.getStringAttr(layer_name(sl)));
    replace(state, b, sl, y);
  }
};

struct Concat : Lowering<tosa::ConcatOp> {
  using Lowering::Lowering;
  void lower(tosa::ConcatOp cc, mlir::PatternRewriter& b) const override {
    for (Value v : cc.getInput1())
      if (is_constant(v)) fail(cc, "a Concat with a constant input is not supported yet");
    Value y = b.create<ConcatOp>(cc.getLoc(), cc.getType(), cc.getInput1(), b.getI64IntegerAttr(cc.getAxis()),
                                 b.getStringAttr(layer_name(cc)));
    replace(state, b, cc, y);
  }
};

}  // namespace

void add_shape_patterns(mlir::RewritePatternSet& p, State& s) { p.add<Reshape, Transpose, Slice, Concat>(p.getContext(), s); }

}  // namespace vtpu::tpu::lowering
