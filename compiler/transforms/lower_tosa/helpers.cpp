// What the lowering's patterns share (lower_tosa/lowering.h).
#include <fmt/format.h>

#include "transforms/lower_tosa/lowering.h"

namespace vtpu::tpu::lowering {

using mlir::Value;
namespace tosa = mlir::tosa;

void retire(State& s, mlir::Operation* op) {
  if (s.gone.insert(op).second) s.dead.push_back(op);
}

void replace(State& s, mlir::RewriterBase& r, mlir::Operation* op, Value y) {
  r.replaceAllUsesWith(op->getResult(0), y);
  retire(s, op);
}

void replace_absorbing(State& s, mlir::RewriterBase& r, mlir::Operation* last, Value y, const std::vector<mlir::Operation*>& absorbed) {
  for (mlir::Operation* op : absorbed) retire(s, op);
  replace(s, r, last, y);
}

void unsupported(mlir::Operation* op) {
  fail(op, fmt::format("{} cannot be lowered to the tpu dialect", op->getName().getStringRef().str()));
}

Value absorb_epilogue(Value v, std::vector<float>& bias, double& lo, double& hi, std::vector<mlir::Operation*>& absorbed) {
  int64_t C = shape_of(v).back();
  // A matmul of a 3-D activation is a reshape to 2-D, the matmul, and a reshape back that
  // keeps the last dimension: the layer then produces the reshaped type itself.
  if (auto rs = mlir::dyn_cast_or_null<tosa::ReshapeOp>(single_user(v)); rs && shape_of(rs.getResult()).back() == C) {
    mlir::Operation* u = single_user(rs.getResult());
    if (u && mlir::isa<tosa::AddOp, tosa::ClampOp>(u)) {
      absorbed.push_back(rs);
      v = rs.getResult();
    }
  }
  if (mlir::Operation* u = single_user(v); u && mlir::isa<tosa::AddOp>(u)) {
    if (auto k = per_channel_const(u, v, C)) {
      for (size_t c = 0; c < size_t(C); ++c) bias[c] += (*k)[c];
      absorbed.push_back(u);
      v = u->getResult(0);
    }
  }
  if (mlir::Operation* u = single_user(v); u && mlir::isa<tosa::ClampOp>(u)) {
    std::tie(lo, hi) = clamp_bounds(mlir::cast<tosa::ClampOp>(u));
    absorbed.push_back(u);
    v = u->getResult(0);
  }
  return v;
}

Value broadcast_to(mlir::OpBuilder& b, mlir::Operation* op, Value v, mlir::Type type, const std::string& name) {
  auto want = mlir::cast<mlir::RankedTensorType>(type);
  auto have = shape_of(v);
  if (have == std::vector<int64_t>(want.getShape().begin(), want.getShape().end())) return v;
  if (have.size() != size_t(want.getRank())) fail(op, "broadcast operands must have the result's rank");
  int64_t N = want.getShape().back();
  if (have.back() != N) {
    if (have.back() != 1) fail(op, fmt::format("dimension of {} cannot broadcast to {}", have.back(), N));
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < have.size(); ++i) rows *= have[i];
    auto f32 = [&](std::vector<int64_t> s) { return mlir::RankedTensorType::get(s, b.getF32Type()); };
    auto loc = op->getLoc();
    auto layer = b.getStringAttr(name + ".lanes");
    Value col = have.size() == 2 ? v : b.create<ReshapeOp>(loc, f32({rows, 1}), v, layer).getResult();
    Value wide = b.create<MatmulOp>(loc, f32({rows, N}), col, make_const(b, loc, {1, N}, std::vector<float>(size_t(N), 1.0f)),
                                    make_const(b, loc, {N}, std::vector<float>(size_t(N), 0.0f)),
                                    b.getF64FloatAttr(-std::numeric_limits<double>::infinity()),
                                    b.getF64FloatAttr(std::numeric_limits<double>::infinity()), layer);
    have.back() = N;
    v = have.size() == 2 ? wide : b.create<ReshapeOp>(loc, f32(have), wide, layer).getResult();
    if (have == std::vector<int64_t>(want.getShape().begin(), want.getShape().end())) return v;
  }
  return b.create<BroadcastOp>(op->getLoc(), type, v, b.getStringAttr(name + ".broadcast"));
}

bool softmax_mask(mlir::Operation* op) {
  if (!mlir::isa<tosa::AddOp>(op) || bool(const_data(op->getOperand(0))) == bool(const_data(op->getOperand(1)))) return false;
  Value k = const_data(op->getOperand(0)) ? op->getOperand(0) : op->getOperand(1);
  auto ks = shape_of(k), ys = shape_of(op->getResult(0));
  if (ks.size() != ys.size() || ks.size() < 2) return false;
  for (size_t i = 0; i + 2 < ks.size(); ++i)
    if (ks[i] != 1) return false;
  for (size_t i = ks.size() - 2; i < ks.size(); ++i)
    if (ks[i] != 1 && ks[i] != ys[i]) return false;
  mlir::Operation* rm = nullptr;
  for (mlir::Operation* u : op->getResult(0).getUsers()) {
    if (mlir::isa<tosa::ReduceMaxOp>(u)) rm = u;
    else if (!mlir::isa<tosa::SubOp>(u)) return false;
  }
  return rm != nullptr;
}

}  // namespace vtpu::tpu::lowering
