// Pools: tosa.max_pool2d and tosa.avg_pool2d become tpu.pool; a zero tosa.pad of H and W in
// front of an average pool is ONNX's count_include_pad and folds into it.
#include "transforms/lower_tosa/lowering.h"

namespace vtpu::tpu::lowering {
namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

struct MaxPool : Lowering<tosa::MaxPool2dOp> {
  using Lowering::Lowering;
  void lower(tosa::MaxPool2dOp mp, mlir::PatternRewriter& b) const override {
    Value y = b.create<PoolOp>(mp.getLoc(), mp.getType(), mp.getInput(), b.getStringAttr("max"), mp.getKernelAttr(), mp.getStrideAttr(),
                               mp.getPadAttr(), b.getStringAttr(layer_name(mp)), nullptr, nullptr);
    replace(state, b, mp, y);
  }
};

struct AvgPool : Lowering<tosa::AvgPool2dOp> {
  using Lowering::Lowering;
  void lower(tosa::AvgPool2dOp ap, mlir::PatternRewriter& b) const override {
    Value x = ap.getInput();
    auto pad = ap.getPadAttr();
    bool count_pad = false;
    std::vector<mlir::Operation*> absorbed;
    if (auto pd = zero_spatial_pad(x)) {
      auto kp = ap.getPad();
      if (std::all_of(kp.begin(), kp.end(), [](int64_t v) { return v == 0; })) {
        count_pad = true;
        pad = b.getDenseI64ArrayAttr(*pd);
        absorbed.push_back(x.getDefiningOp());
        x = x.getDefiningOp()->getOperand(0);
      }
    }
    Value y = b.create<PoolOp>(ap.getLoc(), ap.getType(), x, b.getStringAttr("avg"), ap.getKernelAttr(), ap.getStrideAttr(), pad,
                               b.getStringAttr(layer_name(ap)), count_pad ? b.getUnitAttr() : nullptr, nullptr);
    replace_absorbing(state, b, ap, y, absorbed);
  }
};

// A zero pad that only an average pool reads waits for the pool to fold it.
struct Pad : Lowering<tosa::PadOp> {
  using Lowering::Lowering;
  void lower(tosa::PadOp pd, mlir::PatternRewriter&) const override {
    if (zero_spatial_pad(pd.getResult())) {
      mlir::Operation* u = single_user(pd.getResult());
      if (u && mlir::isa<tosa::AvgPool2dOp>(u)) return;  // folded into the pool
    }
    unsupported(pd);
  }
};

}  // namespace

void add_pool_patterns(mlir::RewritePatternSet& p, State& s) { p.add<MaxPool, AvgPool, Pad>(p.getContext(), s); }

}  // namespace vtpu::tpu::lowering
