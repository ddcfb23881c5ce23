// A matmul whose result is larger than the unified buffer (docs/compiler.md, "Activations
// larger than the unified buffer"): a text recognizer's classifier over 6,625 characters for
// each of 40 time steps. With the row-wise ops after it that only it feeds (a softmax, an
// activation, a per-feature affine), it runs in bands of rows: each band's rows of the input,
// the band's matmul and ops, its rows stored into the result in HBM (tpu.store_rows; a model
// output is written straight into the output's bytes). The weights are loaded once per band.
// Tried with the other second-pass bands (split_into_bands), after bands.cpp has rewritten
// the images, so every operand left in the function is in the unified buffer.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "dialect/attr_names.h"
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/pipeline.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;

// The axis of v's rows when v is [1, ..., 1, rows, features] (rank 2 or more), else -1.
int64_t rows_axis(Value v) {
  auto d = tpu::shape_of(v);
  if (d.size() < 2) return -1;
  for (size_t i = 0; i + 2 < d.size(); ++i)
    if (d[i] != 1) return -1;
  return int64_t(d.size()) - 2;
}

// A constant of one value, or one per feature (its last dimension, every other 1).
bool per_feature(Value v, int64_t features) {
  if (!v.getDefiningOp<mlir::tosa::ConstOp>()) return false;
  int64_t n = 1;
  for (int64_t d : tpu::shape_of(v)) n *= d;
  return n == 1 || (n == features && tpu::shape_of(v).back() == features);
}

// An op that computes each row of its result from the same row of `from` (and constants).
bool row_wise(mlir::Operation* op, Value from, int64_t features) {
  if (auto s = mlir::dyn_cast<tpu::SoftmaxOp>(op)) return !s.getMask();
  if (!mlir::isa<tpu::ClampOp, tpu::UnaryOp, tpu::AffineOp, tpu::AddOp, tpu::BinaryOp>(op)) return false;
  for (Value v : op->getOperands())
    if (v != from && !per_feature(v, features)) return false;
  return true;
}

class MatmulRows {
 public:
  MatmulRows(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget, std::map<const void*, float>& scales)
      : fn_(fn), b_(fn.getContext()), lanes_(uint64_t(cfg.core.mxu.rows)), esz_(int8 ? 1 : 2), budget_(budget), scales_(scales) {}

  size_t run() {
    std::vector<tpu::MatmulOp> matmuls;
    fn_.walk([&](tpu::MatmulOp m) { matmuls.push_back(m); });
    size_t split = 0;
    for (tpu::MatmulOp m : matmuls) split += rewrite(m);
    return split;
  }

 private:
  // Unified-buffer bytes of `rows` rows of `features` (the blocked layout of codegen's Act).
  uint64_t bytes(int64_t rows, int64_t features) const {
    return (uint64_t(features) + lanes_ - 1) / lanes_ * ((uint64_t(rows) * lanes_ * esz_ + 63) / 64 * 64);
  }
  void inherit(Value to, Value from) {
    if (auto s = scales_.find(from.getAsOpaquePointer()); s != scales_.end()) scales_[to.getAsOpaquePointer()] = s->second;
  }
  bool rewrite(tpu::MatmulOp m);

  mlir::func::FuncOp fn_;
  mlir::OpBuilder b_;
  uint64_t lanes_, esz_, budget_;
  std::map<const void*, float>& scales_;
};

bool MatmulRows::rewrite(tpu::MatmulOp m) {
  Value x = m.getInput(), y = m.getOutput();
  const int64_t xa = rows_axis(x), ya = rows_axis(y);
  if (xa < 0 || ya < 0 || !m.getWeight().getDefiningOp<mlir::tosa::ConstOp>() || !m.getBias().getDefiningOp<mlir::tosa::ConstOp>())
    return false;
  auto xd = tpu::shape_of(x), yd = tpu::shape_of(y);
  const int64_t M = yd[size_t(ya)], K = xd.back(), N = yd.back();
  if (xd[size_t(xa)] != M || bytes(M, N) <= budget_ / 2) return false;
  std::vector<mlir::Operation*> chain{m};
  while (chain.back()->getResult(0).hasOneUse()) {
    mlir::Operation* u = *chain.back()->getResult(0).getUsers().begin();
    if (u->getNumResults() != 1 || tpu::shape_of(u->getResult(0)) != yd || !row_wise(u, chain.back()->getResult(0), N)) break;
    chain.push_back(u);
  }
  Value whole = chain.back()->getResult(0);
  for (mlir::Operation* u : whole.getUsers())  // a result in HBM is the model's output, read by nothing else
    if (!mlir::isa<mlir::func::ReturnOp>(u)) return false;
  // Rows per band: the most whose input rows, matmul result and one more result of the chain
  // fit the budget; at least the rows of one 64-byte unified-buffer word per lane block
  // (fewer take as many bytes, and more bands repeat the weights' code).
  auto need = [&](int64_t n) { return bytes(n, K) + 2 * bytes(n, N); };
  int64_t rows = std::min<int64_t>(M, std::max<int64_t>(1, int64_t(64 / (lanes_ * esz_))));
  for (int64_t lo = rows + 1, hi = M; lo <= hi;) {
    int64_t mid = (lo + hi) / 2;
    if (need(mid) <= budget_) rows = mid, lo = mid + 1;
    else hi = mid - 1;
  }
  if (rows == M) return false;
  const std::string layer = layer_of(chain.back());
  auto text = [&](const std::string& s) { return b_.getStringAttr(s); };
  auto element = [](Value v) { return mlir::cast<mlir::RankedTensorType>(v.getType()).getElementType(); };
  b_.setInsertionPoint(chain.back());
  Value dest = b_.create<tpu::HbmTensorOp>(whole.getLoc(), whole.getType(), text(layer));
  inherit(dest, whole);
  for (int64_t o0 = 0; o0 < M; o0 += rows) {
    const int64_t n = std::min(rows, M - o0);
    auto bd = xd;
    bd[size_t(xa)] = n;
    std::vector<int64_t> start(xd.size(), 0);
    start[size_t(xa)] = o0;
    Value xb = b_.create<tpu::SliceOp>(x.getLoc(), mlir::RankedTensorType::get(bd, element(x)), x, b_.getDenseI64ArrayAttr(start),
                                       text(layer_of(m)));
    xb.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
    inherit(xb, x);
    mlir::IRMapping map;
    map.map(x, xb);
    Value prev;
    for (mlir::Operation* op : chain) {
      mlir::Operation* c = b_.clone(*op, map);
      auto d = yd;
      d[size_t(ya)] = n;
      c->getResult(0).setType(mlir::RankedTensorType::get(d, element(op->getResult(0))));
      c->setAttr(tpu::kBandAttr, b_.getDenseI64ArrayAttr(yd));  // the whole layer's shape
      inherit(c->getResult(0), op->getResult(0));
      map.map(op->getResult(0), c->getResult(0));
      prev = c->getResult(0);
    }
    dest = b_.create<tpu::StoreRowsOp>(whole.getLoc(), whole.getType(), prev, dest, b_.getI64IntegerAttr(ya), b_.getI64IntegerAttr(o0),
                                       text(layer), b_.getI64IntegerAttr(0));
    dest.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
    inherit(dest, whole);
  }
  whole.replaceAllUsesWith(dest);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    scales_.erase((*it)->getResult(0).getAsOpaquePointer());
    (*it)->erase();
  }
  return true;
}

}  // namespace

size_t split_matmul_rows(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget,
                         std::map<const void*, float>& scales) {
  return MatmulRows(fn, cfg, int8, budget, scales).run();
}

}  // namespace vtpu::compiler
