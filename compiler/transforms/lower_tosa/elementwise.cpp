// Elementwise ops: tosa.add (tpu.add of two activations, with a following clamp fused; an
// affine step with a per-channel or scalar constant; an attention mask waits for its
// softmax), tosa.sub, tosa.mul, tosa.maximum and tosa.minimum (tpu.binary of two
// activations, broadcast first; affine steps with a constant), tosa.clamp, and the vector
// unit's table functions (tosa.sigmoid, tanh, erf, exp, reciprocal, rsqrt: tpu.unary).
#include <type_traits>

#include "transforms/lower_tosa/lowering.h"

namespace vtpu::tpu::lowering {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

bool one_constant(mlir::Operation* op) {
  return (const_data(op->getOperand(0)) != std::nullopt) != (const_data(op->getOperand(1)) != std::nullopt);
}
bool no_constant(mlir::Operation* op) { return !const_data(op->getOperand(0)) && !const_data(op->getOperand(1)); }

// x + k, x - k or k - x with a per-channel or scalar constant k: one affine step.
void lower_affine_add(State& state, mlir::PatternRewriter& b, mlir::Operation* op) {
  bool k_first = const_data(op->getOperand(0)) != std::nullopt;
  Value x = op->getOperand(k_first ? 1 : 0);
  int64_t C = shape_of(x).back();
  auto k = per_channel_const(op, x, C);
  if (!k || shape_of(op->getResult(0)) != shape_of(x))
    fail(op, "an Add/Sub of a constant that is neither per-channel nor a scalar is not supported yet");
  bool sub = mlir::isa<tosa::SubOp>(op);
  std::vector<float> sc(size_t(C), sub && k_first ? -1.0f : 1.0f);
  if (sub && !k_first)
    for (float& v : *k) v = -v;
  mlir::Location loc = op->getLoc();
  Value y = b.create<AffineOp>(loc, op->getResult(0).getType(), x, make_const(b, loc, {C}, sc), make_const(b, loc, {C}, *k),
                               b.getStringAttr(layer_name(op)));
  replace(state, b, op, y);
}

// tpu.binary `kind` of two activations, each broadcast to the result's shape first.
void lower_binary(State& state, mlir::PatternRewriter& b, mlir::Operation* op, const char* kind) {
  std::string name = layer_name(op);
  Value lhs = broadcast_to(b, op, op->getOperand(0), op->getResult(0).getType(), name);
  Value rhs = broadcast_to(b, op, op->getOperand(1), op->getResult(0).getType(), name);
  Value y = b.create<BinaryOp>(op->getLoc(), op->getResult(0).getType(), lhs, rhs, b.getStringAttr(kind), b.getStringAttr(name));
  replace(state, b, op, y);
}

struct Add : Lowering<tosa::AddOp> {
  using Lowering::Lowering;
  void lower(tosa::AddOp add, mlir::PatternRewriter& b) const override {
    mlir::Operation* op = add;
    if (softmax_mask(op)) return;  // folded into the softmax (normalization.cpp)
    if (one_constant(op)) return lower_affine_add(state, b, op);
    if (const_data(add.getInput1()) || const_data(add.getInput2()))
      fail(op, "an Add of two constants is not supported (fold it before export)");
    double lo = -kInf, hi = kInf;
    std::vector<float> unused(size_t(shape_of(add.getResult()).back()), 0.0f);
    Value last = add.getResult();
    std::vector<mlir::Operation*> absorbed{op};
    if (mlir::Operation* u = single_user(last); u && mlir::isa<tosa::ClampOp>(u)) {
      last = absorb_epilogue(last, unused, lo, hi, absorbed);
      b.setInsertionPointAfter(last.getDefiningOp());
    }
    std::string name = layer_name(op);
    mlir::OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(op);  // the broadcasts go before the add, whatever it absorbed
    Value lhs = broadcast_to(b, op, add.getInput1(), add.getType(), name);
    Value rhs = broadcast_to(b, op, add.getInput2(), add.getType(), name);
    b.setInsertionPointAfter(last.getDefiningOp());
    Value y = b.create<AddOp>(op->getLoc(), last.getType(), lhs, rhs, b.getF64FloatAttr(lo), b.getF64FloatAttr(hi), b.getStringAttr(name));
    replace_absorbing(state, b, last.getDefiningOp(), y, absorbed);
  }
};

struct Sub : Lowering<tosa::SubOp> {
  using Lowering::Lowering;
  void lower(tosa::SubOp sub, mlir::PatternRewriter& b) const override {
    if (one_constant(sub)) return lower_affine_add(state, b, sub);
    if (no_constant(sub)) return lower_binary(state, b, sub, "sub");
    unsupported(sub);
  }
};

struct Mul : Lowering<tosa::MulOp> {
  using Lowering::Lowering;
  void lower(tosa::MulOp mul, mlir::PatternRewriter& b) const override {
    mlir::Operation* op = mul;
    if (no_constant(op)) {
      if (mul.getShift() != 0) fail(op, "a Mul with a shift is not supported");
      return lower_binary(state, b, op, "mul");
    }
    // A per-channel scale (+ shift) of an activation: a batch norm no layer absorbed.
    Value x = const_data(mul.getInput1()) ? mul.getInput2() : mul.getInput1();
    int64_t C = shape_of(x).back();
    auto k = per_channel_const(op, x, C);
    if (!k || mul.getShift() != 0)
      fail(op, "a Mul by a constant that is neither per-channel (last dimension) nor a scalar is not supported yet");
    std::vector<float> bias(size_t(C), 0.0f);
    Value last = mul.getResult();
    std::vector<mlir::Operation*> absorbed{op};
    if (mlir::Operation* u = single_user(last); u && mlir::isa<tosa::AddOp>(u)) {
      if (auto t = per_channel_const(u, last, C)) {
        bias = *t;
        absorbed.push_back(u);
        last = u->getResult(0);
        b.setInsertionPointAfter(u);
      }
    }
    mlir::Location loc = op->getLoc();
    Value y = b.create<AffineOp>(loc, last.getType(), x, make_const(b, loc, {C}, *k), make_const(b, loc, {C}, bias),
                                 b.getStringAttr(layer_name(op)));
    replace_absorbing(state, b, last.getDefiningOp(), y, absorbed);
  }
};

template <typename Op>
struct MinMax : Lowering<Op> {
  using Lowering<Op>::Lowering;
  void lower(Op op, mlir::PatternRewriter& b) const override {
    if (!no_constant(op)) unsupported(op);
    lower_binary(this->state, b, op, std::is_same_v<Op, tosa::MaximumOp> ? "max" : "min");
  }
};

struct Clamp : Lowering<tosa::ClampOp> {
  using Lowering::Lowering;
  void lower(tosa::ClampOp cl, mlir::PatternRewriter& b) const override {
    auto [lo, hi] = clamp_bounds(cl);
    Value y = b.create<ClampOp>(cl.getLoc(), cl.getType(), cl.getInput(), b.getF64FloatAttr(lo), b.getF64FloatAttr(hi),
                                b.getStringAttr(layer_name(cl)));
    replace(state, b, cl, y);
  }
};

// The vector unit's table functions; `fn` names the vec.<fn> instruction.
template <typename Op>
struct Table : Lowering<Op> {
  Table(mlir::MLIRContext* ctx, State& s, const char* fn) : Lowering<Op>(ctx, s), fn(fn) {}
  void lower(Op op, mlir::PatternRewriter& b) const override {
    Value y = b.create<UnaryOp>(op->getLoc(), op->getResult(0).getType(), op->getOperand(0), b.getStringAttr(fn),
                                b.getStringAttr(layer_name(op)));
    replace(this->state, b, op, y);
  }
  const char* fn;
};

}  // namespace

void add_elementwise_patterns(mlir::RewritePatternSet& p, State& s) {
  mlir::MLIRContext* ctx = p.getContext();
  p.add<Add, Sub, Mul, MinMax<tosa::MaximumOp>, MinMax<tosa::MinimumOp>, Clamp>(ctx, s);
  p.add<Table<tosa::SigmoidOp>>(ctx, s, "sigmoid");
  p.add<Table<tosa::TanhOp>>(ctx, s, "tanh");
  p.add<Table<tosa::ErfOp>>(ctx, s, "erf");
  p.add<Table<tosa::ExpOp>>(ctx, s, "exp");
  p.add<Table<tosa::ReciprocalOp>>(ctx, s, "recip");
  p.add<Table<tosa::RsqrtOp>>(ctx, s, "rsqrt");
  p.add<Table<tosa::LogOp>>(ctx, s, "log");
}

}  // namespace vtpu::tpu::lowering
