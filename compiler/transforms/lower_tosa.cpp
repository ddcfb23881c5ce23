// --tpu-lower-tosa (Passes.td): TOSA -> tpu dialect, one tpu op per layer.
//
// 1. Preparation on TOSA: GELU's exported form becomes one tpu.unary "gelu" (before the
//    patterns, which would turn its scalar multiplies into affine steps), and a constant
//    operand of an elementwise op that is neither per-channel nor a scalar becomes a
//    tpu.constant activation.
// 2. One pattern per TOSA op (lower_tosa/*.cpp, lower_tosa/lowering.h), applied once to each
//    op in program order (mlir::PatternApplicator on a walk, as MLIR 20's walkAndApplyPatterns
//    does), against a ConversionTarget: the tpu and func dialects and tosa.const are legal,
//    every other TOSA op illegal. Not applyPartialConversion: its driver folds each illegal
//    op before trying patterns (tosa.reshape of a reshape, transpose pairs, adds of zero),
//    and MLIR 19 cannot turn that off; nor the greedy driver, which also folds and moves and
//    merges constants. Either would change the programs. Patterns see the IR as lowered so
//    far: a replacement takes effect at once.
// 3. Cleanup: retired ops go once unused, then constants, transposes and reshapes nothing
//    uses; an illegal op left over is an error; an integer output made by a matmul or
//    convolution takes its accumulators' int32 directly.
#include <fmt/format.h>

#include <cmath>

#include "mlir/Rewrite/PatternApplicator.h"
#include "mlir/Transforms/DialectConversion.h"
#include "transforms/lower_tosa/lowering.h"
#include "transforms/passes.h"

namespace vtpu::tpu {

#define GEN_PASS_DEF_LOWERTOSATOTPUPASS
#include "vtpu/compiler/Passes.h.inc"

namespace {

using mlir::Value;
namespace tosa = mlir::tosa;
using lowering::softmax_mask;

// An elementwise op with a constant operand that is neither per-channel nor a scalar (and
// not an attention mask) gets that operand as a tpu.constant of the result's shape, so it
// lowers like an op of two activations. A unary one of a constant (a Clip or Sigmoid of an
// initializer, which the importer does not evaluate) gets it as a tpu.constant too.
void materialize_constants(mlir::func::FuncOp fn, mlir::OpBuilder& b) {
  std::vector<mlir::Operation*> ops, unary;
  fn.walk([&](mlir::Operation* op) {
    if (mlir::isa<tosa::AddOp, tosa::SubOp, tosa::MulOp, tosa::MaximumOp, tosa::MinimumOp>(op)) ops.push_back(op);
    if (mlir::isa<tosa::ClampOp, tosa::SigmoidOp, tosa::TanhOp, tosa::ExpOp, tosa::ErfOp, tosa::ReciprocalOp,
                  tosa::RsqrtOp>(op) &&
        const_data(op->getOperand(0)))
      unary.push_back(op);
  });
  for (mlir::Operation* op : unary) {
    b.setInsertionPoint(op);
    auto type = mlir::RankedTensorType::get(shape_of(op->getOperand(0)), b.getF32Type());
    auto data = *const_data(op->getOperand(0));
    Value c = b.create<ConstantOp>(op->getLoc(), type, tpu::f32_elements(type, std::move(data)),
                                   b.getStringAttr(layer_name(op) + ".const"));
    op->setOperand(0, c);
  }
  for (mlir::Operation* op : ops) {
    bool k0 = bool(const_data(op->getOperand(0))), k1 = bool(const_data(op->getOperand(1)));
    if (k0 == k1 || softmax_mask(op)) continue;
    Value x = op->getOperand(k0 ? 1 : 0), k = op->getOperand(k0 ? 0 : 1);
    bool affine_ok = mlir::isa<tosa::AddOp, tosa::SubOp, tosa::MulOp>(op) && shape_of(op->getResult(0)) == shape_of(x);
    if (affine_ok && per_channel_const(op, x, shape_of(x).back())) continue;
    auto ys = shape_of(op->getResult(0)), ks = shape_of(k);
    auto data = *const_data(k);
    if (ks.size() != ys.size()) fail(op, "a constant operand of another rank than the result");
    // Expand the size-1 dimensions to the result's shape.
    size_t total = 1;
    for (int64_t d : ys) total *= size_t(d);
    std::vector<float> full(total);
    for (size_t i = 0; i < total; ++i) {
      size_t rem = i, src = 0, stride = 1;
      for (size_t d = ys.size(); d-- > 0;) {
        size_t idx = rem % size_t(ys[d]);
        rem /= size_t(ys[d]);
        src += (ks[d] == 1 ? 0 : idx) * stride;
        stride *= size_t(ks[d]);
      }
      full[i] = data[src];
    }
    b.setInsertionPoint(op);
    auto type = mlir::RankedTensorType::get(ys, b.getF32Type());
    Value c = b.create<ConstantOp>(op->getLoc(), type, tpu::f32_elements(type, std::move(full)),
                                   b.getStringAttr(layer_name(op) + ".const"));
    op->setOperand(k0 ? 0 : 1, c);
  }
}

// GELU as exported: x * (1 + erf(x * (1/sqrt 2))) * 0.5, or (x * 0.5) * (1 + erf(..)),
// becomes the vector unit's vec.gelu (x * Phi(x)) in one step. Runs before the other

// sqrt(x), which the importer writes as reciprocal(rsqrt(x)), becomes one tpu.unary "sqrt":
// its two table steps then run back to back on the same rows, and INT8 does not round the
// intermediate 1/sqrt(x) (huge near 0) to a scale of its own.
void fuse_sqrt(mlir::func::FuncOp fn, mlir::OpBuilder& b) {
  std::vector<tosa::ReciprocalOp> recips;
  fn.walk([&](tosa::ReciprocalOp r) { recips.push_back(r); });
  for (tosa::ReciprocalOp r : recips) {
    auto rs = r.getInput1().getDefiningOp<tosa::RsqrtOp>();
    if (!rs || !rs->getResult(0).hasOneUse()) continue;
    b.setInsertionPoint(r);
    Value y = b.create<UnaryOp>(r->getLoc(), r.getType(), rs.getInput1(), b.getStringAttr("sqrt"), b.getStringAttr(layer_name(r)));
    r->getResult(0).replaceAllUsesWith(y);
    r->erase();
    rs->erase();
  }
}

// GELU as exported: x * (1 + erf(x * (1/sqrt 2))) * 0.5, or (x * 0.5) * (1 + erf(..)),
// becomes the vector unit's vec.gelu (x * Phi(x)) in one step. Runs before the other
// rewrites, which would turn the scalar multiplies into affine steps first.
void fuse_gelu(mlir::func::FuncOp fn, mlir::OpBuilder& b) {
  std::vector<tosa::ErfOp> erfs;
  fn.walk([&](tosa::ErfOp e) { erfs.push_back(e); });
  auto scalar_of = [&](mlir::Operation* m, Value from) -> std::optional<float> {
    if (!m || !mlir::isa<tosa::MulOp, tosa::AddOp>(m) || m->getNumOperands() != 2) return std::nullopt;
    auto k = const_data(m->getOperand(0) == from ? m->getOperand(1) : m->getOperand(0));
    if (!k || k->size() != 1) return std::nullopt;
    return (*k)[0];
  };
  auto near = [](std::optional<float> v, double want) { return v && std::fabs(double(*v) - want) < 1e-6 * std::fabs(want); };
  for (tosa::ErfOp erf : erfs) {
    mlir::Operation* scale_in = erf.getInput().getDefiningOp();
    if (!scale_in || !mlir::isa<tosa::MulOp>(scale_in) || !erf.getInput().hasOneUse()) continue;
    Value x = const_data(scale_in->getOperand(1)) ? scale_in->getOperand(0) : scale_in->getOperand(1);
    mlir::Operation* plus1 = single_user(erf.getResult());
    mlir::Operation* prod = plus1 ? single_user(plus1->getResult(0)) : nullptr;
    if (!near(scalar_of(scale_in, x), M_SQRT1_2) || !mlir::isa_and_nonnull<tosa::AddOp>(plus1) ||
        !near(scalar_of(plus1, erf.getResult()), 1.0) || !mlir::isa_and_nonnull<tosa::MulOp>(prod))
      continue;
    Value other = prod->getOperand(0) == plus1->getResult(0) ? prod->getOperand(1) : prod->getOperand(0);
    mlir::Operation* half = single_user(prod->getResult(0));
    mlir::Operation* last = nullptr;
    mlir::Operation* x_half = nullptr;
    if (other == x && mlir::isa_and_nonnull<tosa::MulOp>(half) && near(scalar_of(half, prod->getResult(0)), 0.5)) {
      last = half;  // (x * (1 + erf)) * 0.5
    } else if (auto* xh = other.getDefiningOp(); xh && mlir::isa<tosa::MulOp>(xh) && other.hasOneUse() &&
                                                (xh->getOperand(0) == x || xh->getOperand(1) == x) && near(scalar_of(xh, x), 0.5)) {
      last = prod, x_half = xh;  // (x * 0.5) * (1 + erf)
    }
    if (!last || shape_of(last->getResult(0)) != shape_of(x)) continue;
    b.setInsertionPointAfter(last);
    Value y = b.create<UnaryOp>(last->getLoc(), last->getResult(0).getType(), x, b.getStringAttr("gelu"),
                                b.getStringAttr(layer_name(erf)));
    last->getResult(0).replaceAllUsesWith(y);
    std::vector<mlir::Operation*> chain{last, prod, plus1, erf.getOperation(), scale_in};
    if (x_half && last != half) chain.insert(chain.begin() + 2, x_half);
    for (mlir::Operation* d : chain)
      if (d->use_empty()) d->erase();
  }
}

// The ops the patterns retired go, users first; then constants, transposes and reshapes
// nobody uses (weights folded into their layers). Any other TOSA op left is an error.
void clean_up(mlir::func::FuncOp fn, lowering::State& state, const mlir::ConversionTarget& target) {
  ConstantEraser eraser;  // frees the blobs of the weights the layers replaced (dialect/constants.h)
  for (bool progress = true; progress;) {
    progress = false;
    for (auto& d : state.dead)
      if (d && d->use_empty()) eraser.erase(d), d = nullptr, progress = true;
  }
  bool again = true;
  while (again) {
    again = false;
    fn.walk([&](mlir::Operation* op) {
      if (mlir::isa<tosa::ConstOp, tosa::TransposeOp, tosa::ReshapeOp>(op) && op->use_empty()) {
        eraser.erase(op);
        again = true;
      }
    });
  }
  eraser.release(fn);
  fn.walk([&](mlir::Operation* op) {
    if (target.isIllegal(op))
      fail(op, fmt::format("{} is left after lowering", op->getName().getStringRef().str()));
  });
}

// An integer model output made by a matmul or convolution (MatMulInteger, ConvInteger)
// leaves the accumulators as int32 directly: the layer takes the cast's i32 type, so its
// exact fp32 (or int32) sums are never rounded to the activation dtype on the way.
void fold_integer_outputs(mlir::func::FuncOp fn) {
  std::vector<CastOp> casts;
  fn.walk([&](CastOp c) { casts.push_back(c); });
  for (CastOp c : casts) {
    auto to = mlir::cast<mlir::RankedTensorType>(c.getOutput().getType());
    mlir::Operation* src = c.getInput().getDefiningOp();
    if (!to.getElementType().isInteger(32) || !src || !mlir::isa<MatmulOp, Conv2DOp>(src) || !c.getInput().hasOneUse())
      continue;
    src->getResult(0).setType(to);
    c.getOutput().replaceAllUsesWith(src->getResult(0));
    c.erase();
  }
}

struct LowerTosaToTpu : impl::LowerTosaToTpuPassBase<LowerTosaToTpu> {
  void runOnOperation() override { guarded(getOperation(), [&] { lower(); }, [&] { signalPassFailure(); }); }

  void lower() {
    mlir::func::FuncOp fn = getOperation();
    mlir::OpBuilder b(&getContext());
    fuse_gelu(fn, b);
    fuse_sqrt(fn, b);
    materialize_constants(fn, b);

    // What lowering leaves: tpu ops, the function, and constants (weights).
    mlir::ConversionTarget target(getContext());
    target.addLegalDialect<TpuDialect, mlir::func::FuncDialect>();
    target.addLegalOp<tosa::ConstOp>();
    target.addIllegalDialect<tosa::TosaDialect>();

    lowering::State state;
    mlir::RewritePatternSet patterns(&getContext());
    lowering::add_matmul_patterns(patterns, state);
    lowering::add_conv_patterns(patterns, state);
    lowering::add_pool_patterns(patterns, state);
    lowering::add_elementwise_patterns(patterns, state);
    lowering::add_shape_patterns(patterns, state);
    lowering::add_normalization_patterns(patterns, state);
    mlir::FrozenRewritePatternSet frozen(std::move(patterns));
    mlir::PatternApplicator applicator(frozen);
    applicator.applyDefaultCostModel();

    // One visit per op, in program order, of the ops there are now (not those patterns make).
    std::vector<mlir::Operation*> ops;
    fn.walk([&](mlir::Operation* op) {
      if (op != fn.getOperation()) ops.push_back(op);
    });
    mlir::PatternRewriter rewriter(&getContext());
    for (mlir::Operation* op : ops) {
      if (state.gone.contains(op) || !target.isIllegal(op)) continue;
      if (mlir::failed(applicator.matchAndRewrite(op, rewriter))) {
        if (state.error.empty()) lowering::unsupported(op);
        throw compiler::CompileError(state.error);
      }
    }
    clean_up(fn, state, target);
    fold_integer_outputs(fn);
  }
};

}  // namespace
}  // namespace vtpu::tpu
