// --tpu-cancel-transposes: removes tosa.transpose pairs that compose to the identity, also
// across a slice between them, the layout cleanup after import (Passes.td).
#include "transforms/passes.h"
#include "transforms/tosa_utils.h"

namespace vtpu::tpu {

#define GEN_PASS_DEF_CANCELTRANSPOSESPASS
#include "vtpu/compiler/Passes.h.inc"

namespace {

namespace tosa = mlir::tosa;
using mlir::Value;

struct CancelTransposes : impl::CancelTransposesPassBase<CancelTransposes> {
  void runOnOperation() override {
    bool changed = true;
    while (changed) {
      changed = false;
      getOperation().walk([&](tosa::TransposeOp outer) {
        auto inner = outer.getInput1().getDefiningOp<tosa::TransposeOp>();
        if (!inner) return;
        auto p1 = perm_of(inner), p2 = perm_of(outer);
        if (p1.empty() || p1.size() != p2.size()) return;
        for (size_t i = 0; i < p2.size(); ++i)
          if (p1[size_t(p2[i])] != int32_t(i)) return;
        outer.getResult().replaceAllUsesWith(inner.getInput1());
        changed = true;
      });
      // A slice between a transpose and transposes back (a channel split of an image seen
      // NCHW, then each part NHWC again): the slice on the transpose's input instead, the
      // transposes gone.
      std::vector<tosa::SliceOp> slices;
      getOperation().walk([&](tosa::SliceOp slice) { slices.push_back(slice); });
      for (tosa::SliceOp slice : slices) {
        auto t = slice.getInput().getDefiningOp<tosa::TransposeOp>();
        if (!t || slice.getResult().use_empty()) continue;
        auto p = perm_of(t);
        bool back = !p.empty();
        for (mlir::Operation* u : slice.getResult().getUsers()) {
          auto q = mlir::isa<tosa::TransposeOp>(u) ? perm_of(mlir::cast<tosa::TransposeOp>(u)) : std::vector<int32_t>{};
          back &= q.size() == p.size();
          for (size_t i = 0; back && i < q.size(); ++i) back = p[size_t(q[i])] == int32_t(i);
        }
        if (!back) continue;
        auto start = slice.getStart(), size = slice.getSize();
        std::vector<int64_t> s2(p.size()), n2(p.size());
        for (size_t i = 0; i < p.size(); ++i) s2[size_t(p[i])] = start[i], n2[size_t(p[i])] = size[i];
        auto in = mlir::cast<mlir::RankedTensorType>(t.getInput1().getType());
        mlir::OpBuilder b(slice);
        Value part = b.create<tosa::SliceOp>(slice.getLoc(), mlir::RankedTensorType::get(n2, in.getElementType()), t.getInput1(),
                                             b.getDenseI64ArrayAttr(s2), b.getDenseI64ArrayAttr(n2));
        for (mlir::Operation* u : llvm::make_early_inc_range(slice.getResult().getUsers())) {
          u->getResult(0).replaceAllUsesWith(part);
          u->erase();
        }
        slice.erase();
        changed = true;
      }
      // Drop transposes nobody uses any more.
      getOperation().walk([&](tosa::TransposeOp t) {
        if (t.getResult().use_empty()) t.erase();
      });
    }
  }
};

}  // namespace
}  // namespace vtpu::tpu
