// Matmuls: tosa.fully_connected (activation x constant weights) becomes tpu.matmul with its
// bias add and clamp fused and an image's flatten order folded into the weight rows;
// tosa.matmul (two activations) becomes tpu.batch_matmul.
#include "transforms/lower_tosa/lowering.h"
#include "vtpu/support/layout.h"

namespace vtpu::tpu::lowering {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

struct FullyConnected : Lowering<tosa::FullyConnectedOp> {
  using Lowering::Lowering;
  void lower(tosa::FullyConnectedOp fc, mlir::PatternRewriter& b) const override {
    mlir::Operation* op = fc;
    auto w = const_data(fc.getWeight()), bias = const_data(fc.getBias());
    if (!w || !bias) fail(op, "matmul weights and bias must be constants");
    auto ws = shape_of(fc.getWeight());  // [N, K]
    int64_t N = ws[0], K = ws[1];
    Value x = fc.getInput();
    // A flatten of an NHWC image arrives as transpose(NHWC->NCHW) + reshape; fold the
    // transpose into the weights so the image is flattened in NHWC order.
    std::vector<int64_t> col_of(static_cast<size_t>(K));
    for (int64_t k = 0; k < K; ++k) col_of[size_t(k)] = k;
    if (auto rs = x.getDefiningOp<tosa::ReshapeOp>()) {
      if (auto tr = rs.getInput1().getDefiningOp<tosa::TransposeOp>();
          tr && perm_of(tr) == std::vector<int32_t>{0, 3, 1, 2}) {
        auto img = shape_of(tr.getInput1());  // NHWC
        int64_t H = img[1], W = img[2], C = img[3];
        if (H * W * C == K && img[0] == shape_of(x)[0]) {
          // NHWC flat index (h, w, c) holds NCHW flat index (c, h, w).
          for (int64_t h = 0; h < H; ++h)
            for (int64_t ww = 0; ww < W; ++ww)
              for (int64_t c = 0; c < C; ++c) col_of[size_t((h * W + ww) * C + c)] = (c * H + h) * W + ww;
          Value flat = b.create<ReshapeOp>(rs.getLoc(), rs.getType(), tr.getInput1(), b.getStringAttr(layer_name(rs)));
          x = flat;
        }
      }
    }
    // Matmuls of one weight constant (an unrolled LSTM's recurrent weights) share one
    // [K, N] constant, made at the top of the function, so codegen stores it once.
    bool plain_order = x == fc.getInput();
    Value wkn_const = plain_order ? state.shared_weights.lookup(fc.getWeight()) : Value();
    mlir::Location loc = op->getLoc();
    if (!wkn_const) {
      // In blocks (walking [N, K] down its columns missed the cache on every element).
      std::vector<float> wkn = blocked_matrix(K, N, [&](int64_t k, int64_t n) { return (*w)[size_t(n * K + col_of[size_t(k)])]; });
      mlir::OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&op->getParentOfType<mlir::func::FuncOp>().getBody().front());
      wkn_const = make_const(b, loc, {K, N}, std::move(wkn));
      if (plain_order) state.shared_weights[fc.getWeight()] = wkn_const;
      w.reset();
      release_consumed(op->getParentOfType<mlir::func::FuncOp>(), fc.getWeight(), op);  // read for the last time
    }
    double lo = -kInf, hi = kInf;
    std::vector<mlir::Operation*> absorbed{op};
    Value last = absorb_epilogue(fc.getResult(), *bias, lo, hi, absorbed);
    if (last.getDefiningOp() != op) b.setInsertionPointAfter(last.getDefiningOp());
    Value y = b.create<MatmulOp>(loc, last.getType(), x, wkn_const, make_const(b, loc, {N}, *bias), b.getF64FloatAttr(lo),
                                 b.getF64FloatAttr(hi), b.getStringAttr(layer_name(op)));
    replace_absorbing(state, b, last.getDefiningOp(), y, absorbed);
  }
};

struct BatchMatmul : Lowering<tosa::MatMulOp> {
  using Lowering::Lowering;
  void lower(tosa::MatMulOp mm, mlir::PatternRewriter& b) const override {
    Value y = b.create<BatchMatmulOp>(mm.getLoc(), mm.getType(), mm.getA(), mm.getB(), b.getStringAttr(layer_name(mm)));
    replace(state, b, mm, y);
  }
};

}  // namespace

void add_matmul_patterns(mlir::RewritePatternSet& p, State& s) { p.add<FullyConnected, BatchMatmul>(p.getContext(), s); }

}  // namespace vtpu::tpu::lowering
