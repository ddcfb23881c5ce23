#pragma once
// Internal to --tpu-lower-tosa (transforms/lower_tosa.cpp): the conversion patterns, one per
// TOSA op, in files by operator family (matmul.cpp, conv.cpp, pool.cpp, elementwise.cpp,
// shape.cpp, normalization.cpp), the state they share and the helpers they have in common.
//
// How a pattern works: the pass visits the ops once, in program order, and applies the
// pattern of each op not yet lowered or absorbed. A pattern builds the tpu op after its op
// and replaces the uses of the last op it absorbs (a conv's bias add and clamp: the clamp)
// at once, so later patterns see the IR as lowered so far; the ops it replaced or absorbed
// are retired: skipped by the walk and erased at the end, users first, once nothing reads
// them (one still read is reported as left after lowering). An op a pattern leaves alone (a
// softmax's mask add, waiting for the softmax; a reshape of a constant) stays for a later
// pattern or the pass's cleanup.
#include <limits>
#include <string>
#include <vector>

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "transforms/tosa_utils.h"

namespace vtpu::tpu::lowering {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct State {
  // fully_connected weight -> the [K, N] constant of the tpu.matmuls that share it.
  llvm::DenseMap<mlir::Value, mlir::Value> shared_weights;
  llvm::DenseSet<mlir::Operation*> gone;  // replaced or absorbed: not visited again
  std::vector<mlir::Operation*> dead;     // the same, to erase when nothing reads them
  std::string error;                      // the CompileError a pattern raised
};

// `op` is done with: not visited again, erased at the end once unused.
void retire(State& s, mlir::Operation* op);
// `y` for every use of `op`'s result, and `op` retired.
void replace(State& s, mlir::RewriterBase& r, mlir::Operation* op, mlir::Value y);
// `y` for every use of `last`'s result, and `last` and the ops it absorbed retired.
void replace_absorbing(State& s, mlir::RewriterBase& r, mlir::Operation* last, mlir::Value y,
                       const std::vector<mlir::Operation*>& absorbed);

// The value through an optional reshape back to the activation's rank, per-channel bias add
// and clamp after a conv or matmul result `v`: the value the fused layer replaces. Adds the
// bias to `bias`, sets the clamp bounds, and lists the ops passed through in `absorbed`.
mlir::Value absorb_epilogue(mlir::Value v, std::vector<float>& bias, double& lo, double& hi,
                            std::vector<mlir::Operation*>& absorbed);

// v repeated to `type`'s shape along its size-1 dimensions (tpu.broadcast), or v itself if it
// already has that shape. A size-1 last (lane) dimension is repeated first by a matmul of the
// [rows, 1] column with a row of ones (exact: one product each).
mlir::Value broadcast_to(mlir::OpBuilder& b, mlir::Operation* op, mlir::Value v, mlir::Type type, const std::string& name);

// An Add of a constant that only a softmax reads, the constant repeating over all but the
// last two dimensions (an attention mask): the softmax takes it as its mask.
bool softmax_mask(mlir::Operation* op);

// Throws "node '..': <op> cannot be lowered to the tpu dialect".
[[noreturn]] void unsupported(mlir::Operation* op);

// One TOSA op's lowering: lower() runs with the insertion point right after the op and
// replaces it, or leaves it for a later pattern. A CompileError it throws is recorded for the
// pass to report, and the pattern fails.
template <typename Op>
class Lowering : public mlir::OpRewritePattern<Op> {
 public:
  Lowering(mlir::MLIRContext* ctx, State& s) : mlir::OpRewritePattern<Op>(ctx), state(s) {}

  mlir::LogicalResult matchAndRewrite(Op op, mlir::PatternRewriter& r) const final {
    try {
      r.setInsertionPointAfter(op);
      lower(op, r);
    } catch (const compiler::CompileError& e) {
      state.error = e.what();
      return mlir::failure();
    }
    return mlir::success();
  }

 protected:
  virtual void lower(Op op, mlir::PatternRewriter& r) const = 0;
  State& state;
};

// The patterns of each family.
void add_matmul_patterns(mlir::RewritePatternSet& p, State& s);
void add_conv_patterns(mlir::RewritePatternSet& p, State& s);
void add_pool_patterns(mlir::RewritePatternSet& p, State& s);
void add_elementwise_patterns(mlir::RewritePatternSet& p, State& s);
void add_shape_patterns(mlir::RewritePatternSet& p, State& s);
void add_normalization_patterns(mlir::RewritePatternSet& p, State& s);

}  // namespace vtpu::tpu::lowering
