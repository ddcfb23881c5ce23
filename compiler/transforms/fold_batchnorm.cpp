// --tpu-fold-batchnorm: folds per-channel x * s + t after a conv2d, depthwise_conv2d or
// fully_connected into its weights and bias (Passes.td).
#include "transforms/passes.h"
#include "transforms/tosa_utils.h"

namespace vtpu::tpu {

#define GEN_PASS_DEF_FOLDBATCHNORMPASS
#include "vtpu/compiler/Passes.h.inc"

namespace {

using mlir::Value;
namespace tosa = mlir::tosa;

struct FoldBatchNorm : impl::FoldBatchNormPassBase<FoldBatchNorm> {
  void runOnOperation() override { guarded(getOperation(), [&] { fold(); }, [&] { signalPassFailure(); }); }
  void fold() {
    mlir::OpBuilder b(&getContext());
    // Collect first: folding erases the ops that follow each layer.
    std::vector<mlir::Operation*> layers;
    getOperation().walk([&](mlir::Operation* op) {
      if (mlir::isa<tosa::Conv2DOp, tosa::DepthwiseConv2DOp, tosa::FullyConnectedOp>(op)) layers.push_back(op);
    });
    for (mlir::Operation* op : layers) {
      // Output channels lead the weights of conv2d and fully_connected ([C_out, ...]) and
      // trail those of depthwise_conv2d ([KH, KW, C, M], channel c * M + m).
      bool channels_last = mlir::isa<tosa::DepthwiseConv2DOp>(op);
      while (true) {
        Value out = op->getResult(0);
        mlir::Operation* user = single_user(out);
        if (!user || !mlir::isa<tosa::MulOp, tosa::AddOp>(user)) break;
        int64_t C = shape_of(out).back();
        auto k = per_channel_const(user, out, C);
        if (!k) break;
        mlir::ElementsAttr w_attr = const_attr(op->getOperand(1));
        auto bias = const_data(op->getOperand(2));
        if (!w_attr || !bias) break;
        // A mul scales weights and bias; an add changes the bias only, and the weights'
        // constant (94 MB for ResNet-50) is neither read nor rebuilt.
        bool mul = mlir::isa<tosa::MulOp>(user);
        std::vector<float> w;
        if (mul) {
          if (mlir::cast<tosa::MulOp>(user).getShift() != 0) break;
          w = tpu::float_values(w_attr);
          // Channel c's weights are the c-th of C runs, or every C-th value when channels
          // trail (in memory order either way, without a division per weight).
          size_t Cs = size_t(C), per = w.size() / Cs;
          if (channels_last) {
            for (size_t r = 0; r < per; ++r)
              for (size_t c = 0; c < Cs; ++c) w[r * Cs + c] *= (*k)[c];
          } else {
            for (size_t c = 0; c < Cs; ++c)
              for (size_t r = 0; r < per; ++r) w[c * per + r] *= (*k)[c];
          }
          for (size_t c = 0; c < size_t(C); ++c) (*bias)[c] *= (*k)[c];
        } else {
          for (size_t c = 0; c < size_t(C); ++c) (*bias)[c] += (*k)[c];
        }
        b.setInsertionPoint(op);
        for (unsigned i : {1u, 2u}) {
          if (i == 1 && !mul) continue;
          Value old = op->getOperand(i);
          op->setOperand(i, make_const(b, op->getLoc(), shape_of(old), i == 1 ? std::move(w) : *bias));
          if (old.use_empty()) erase_constants(getOperation(), {old.getDefiningOp()});  // frees the old weights' blob
        }
        user->getResult(0).replaceAllUsesWith(out);
        user->erase();
      }
    }
  }
};

}  // namespace
}  // namespace vtpu::tpu
