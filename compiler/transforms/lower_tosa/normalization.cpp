// Row reductions: the importer's TOSA forms of layer normalization (tosa.reduce_sum and what
// follows) and softmax (tosa.reduce_max and what follows) become tpu.layernorm and
// tpu.softmax (with an attention mask added right before it; log-softmax too); any other sum over the last
// axis is a matmul of the rows with a column of ones.
#include <cmath>

#include "transforms/lower_tosa/lowering.h"

namespace vtpu::tpu::lowering {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

struct ReduceSum : Lowering<tosa::ReduceSumOp> {
  using Lowering::Lowering;
  void lower(tosa::ReduceSumOp rs, mlir::PatternRewriter& b) const override {
    mlir::Operation* op = rs;
    std::string name = layer_name(op);
    mlir::Location loc = op->getLoc();
    // layer norm: c = x - sum(x) * (1/D); norm = c * rsqrt(sum(c * c) * (1/D) + eps)
    Value x = rs.getInput();
    int64_t D = shape_of(x).back();
    auto is_inv_d = [&](mlir::Operation* m, Value from) -> bool {
      auto mul = mlir::dyn_cast_or_null<tosa::MulOp>(m);
      if (!mul) return false;
      auto k = const_data(mul.getInput1() == from ? mul.getInput2() : mul.getInput1());
      return k && k->size() == 1 && std::fabs((*k)[0] * float(D) - 1.0f) < 1e-6f;
    };
    mlir::Operation* mean = single_user(rs.getResult());
    auto sub = mean && is_inv_d(mean, rs.getResult()) ? mlir::dyn_cast_or_null<tosa::SubOp>(single_user(mean->getResult(0))) : nullptr;
    tosa::MulOp sq, norm;
    if (sub && sub.getInput1() == x)
      for (mlir::Operation* u : sub.getResult().getUsers())
        if (auto m = mlir::dyn_cast<tosa::MulOp>(u)) (m.getInput1() == m.getInput2() ? sq : norm) = m;
    auto rs2 = sq ? mlir::dyn_cast_or_null<tosa::ReduceSumOp>(single_user(sq.getResult())) : nullptr;
    mlir::Operation* var = rs2 ? single_user(rs2.getResult()) : nullptr;
    auto add = var && is_inv_d(var, rs2.getResult()) ? mlir::dyn_cast_or_null<tosa::AddOp>(single_user(var->getResult(0))) : nullptr;
    auto eps = add ? const_data(add.getInput2()) : std::nullopt;
    auto rsq = add ? mlir::dyn_cast_or_null<tosa::RsqrtOp>(single_user(add.getResult())) : nullptr;
    if (!sub || !sq || !norm || !rs2 || !add || !eps || eps->size() != 1 || !rsq || single_user(rsq.getResult()) != norm) {
      // Any other sum over the last axis: a matmul of the rows with a column of ones
      // (fp32 accumulation on the MXU).
      auto xs = shape_of(x);
      int64_t rows = 1;
      for (size_t i = 0; i + 1 < xs.size(); ++i) rows *= xs[i];
      auto f32 = [&](std::vector<int64_t> s) { return mlir::RankedTensorType::get(s, b.getF32Type()); };
      b.setInsertionPoint(op);
      Value x2 = xs.size() == 2 ? x : b.create<ReshapeOp>(loc, f32({rows, D}), x, b.getStringAttr(name)).getResult();
      Value y = b.create<MatmulOp>(loc, f32({rows, 1}), x2, make_const(b, loc, {D, 1}, std::vector<float>(size_t(D), 1.0f)),
                                   make_const(b, loc, {1}, {0.0f}), b.getF64FloatAttr(-kInf), b.getF64FloatAttr(kInf),
                                   b.getStringAttr(name));
      if (shape_of(rs.getResult()) != std::vector<int64_t>{rows, 1}) y = b.create<ReshapeOp>(loc, rs.getType(), y, b.getStringAttr(name));
      return replace(state, b, op, y);
    }
    b.setInsertionPointAfter(norm);
    Value y = b.create<LayerNormOp>(loc, norm.getType(), x, b.getF64FloatAttr((*eps)[0]), b.getStringAttr(name));
    replace_absorbing(state, b, norm, y, {op, mean, sub, sq, rs2, var, add, rsq});
  }
};

// softmax: mul(exp(x - max(x)), reciprocal(sum(exp(x - max(x)))));
// log-softmax: (x - max(x)) - log(sum(exp(x - max(x)))).
struct ReduceMax : Lowering<tosa::ReduceMaxOp> {
  using Lowering::Lowering;
  void lower(tosa::ReduceMaxOp rm, mlir::PatternRewriter& b) const override {
    mlir::Operation* op = rm;
    Value x = rm.getInput();
    auto sub = mlir::dyn_cast_or_null<tosa::SubOp>(single_user(rm.getResult()));
    tosa::ExpOp ex;
    tosa::SubOp log_out;  // log-softmax's (x - max) - log(sum)
    size_t sub_users = 0;
    if (sub)
      for (mlir::Operation* u : sub.getResult().getUsers()) {
        ++sub_users;
        if (auto e = mlir::dyn_cast<tosa::ExpOp>(u)) ex = e;
        if (auto s = mlir::dyn_cast<tosa::SubOp>(u); s && s.getInput1() == sub.getResult()) log_out = s;
      }
    tosa::ReduceSumOp sum;
    tosa::MulOp mul;
    if (ex)
      for (mlir::Operation* u : ex.getResult().getUsers()) {
        if (auto s = mlir::dyn_cast<tosa::ReduceSumOp>(u)) sum = s;
        if (auto m = mlir::dyn_cast<tosa::MulOp>(u)) mul = m;
      }
    auto rcp = sum ? mlir::dyn_cast_or_null<tosa::ReciprocalOp>(single_user(sum.getResult())) : nullptr;
    auto lg = sum ? mlir::dyn_cast_or_null<tosa::LogOp>(single_user(sum.getResult())) : nullptr;
    const bool log = lg && log_out && sub_users == 2 && single_user(lg.getResult()) == log_out.getOperation() &&
                     log_out.getInput2() == lg.getResult() && ex.getResult().hasOneUse();
    if (!sub || sub.getInput1() != x || !ex || !sum || !(log || (mul && rcp && sub_users == 1)))
      fail(op, "a reduce_max that is not part of a softmax or log-softmax is not supported");
    mlir::Operation* last = log ? log_out.getOperation() : mul.getOperation();
    b.setInsertionPointAfter(last);
    mlir::Location loc = op->getLoc();
    Value mask;
    std::vector<mlir::Operation*> absorbed{op, sub, ex, sum, log ? lg.getOperation() : rcp.getOperation()};
    if (mlir::Operation* add = x.getDefiningOp(); add && softmax_mask(add)) {
      bool k_first = bool(const_data(add->getOperand(0)));
      auto k = *const_data(add->getOperand(k_first ? 0 : 1));
      auto ks = shape_of(add->getOperand(k_first ? 0 : 1)), xs = shape_of(x);
      int64_t M = xs.size() > 1 ? xs[xs.size() - 2] : 1, N = xs.back();
      int64_t kM = ks.size() > 1 ? ks[ks.size() - 2] : 1, kN = ks.back();
      std::vector<float> full(size_t(M * N));
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) full[size_t(i * N + j)] = k[size_t((i % kM) * kN + j % kN)];
      mask = make_const(b, loc, {M, N}, full);
      x = add->getOperand(k_first ? 1 : 0);
      absorbed.push_back(add);
    }
    Value y = b.create<SoftmaxOp>(loc, last->getResult(0).getType(), x, mask, b.getStringAttr(layer_name(op)),
                                  log ? b.getUnitAttr() : mlir::UnitAttr());
    replace_absorbing(state, b, last, y, absorbed);
  }
};

}  // namespace

void add_normalization_patterns(mlir::RewritePatternSet& p, State& s) { p.add<ReduceSum, ReduceMax>(p.getContext(), s); }

}  // namespace vtpu::tpu::lowering
