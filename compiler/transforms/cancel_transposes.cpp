// --tpu-cancel-transposes: removes tosa.transpose pairs that compose to the identity, the
// layout cleanup after import (Passes.td).
#include "transforms/passes.h"
#include "transforms/tosa_utils.h"

namespace vtpu::tpu {

#define GEN_PASS_DEF_CANCELTRANSPOSESPASS
#include "vtpu/compiler/Passes.h.inc"

namespace {

namespace tosa = mlir::tosa;

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
      // Drop transposes nobody uses any more.
      getOperation().walk([&](tosa::TransposeOp t) {
        if (t.getResult().use_empty()) t.erase();
      });
    }
  }
};

}  // namespace
}  // namespace vtpu::tpu
