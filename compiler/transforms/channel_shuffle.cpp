// --tpu-channel-shuffle: a channel shuffle (ShuffleNet's, as torch exports it) becomes a 1x1
// convolution by a permutation matrix on the NHWC image (Passes.td).
//
// torch writes x.view(N, g, C/g, H, W).transpose(1, 2).reshape(N, C, H, W) on an NCHW image;
// the importer, which keeps images NHWC, makes that
//   transpose(x, [0,3,1,2]) -> reshape [N,g,C/g,H,W] -> transpose [0,2,1,3,4] -> reshape [N,C,H,W]
// Output channel k = (C/g)-major index (k / g, k mod g) reads input channel (k mod g) * (C/g)
// + k / g. As moves of an NCHW image those ops need it whole in the unified buffer; as a
// convolution (each output channel one input channel times 1) the shuffle runs wherever a
// convolution does, in row bands too, exactly: one product per output, by 1.
#include "transforms/passes.h"
#include "transforms/tosa_utils.h"

namespace vtpu::tpu {

#define GEN_PASS_DEF_CHANNELSHUFFLEPASS
#include "vtpu/compiler/Passes.h.inc"

namespace {

namespace tosa = mlir::tosa;
using mlir::Value;

// The NHWC image and the groups g of a channel shuffle ending at `r2`, or a null value.
std::pair<Value, int64_t> shuffle_of(tosa::ReshapeOp r2) {
  auto t2 = r2.getInput1().getDefiningOp<tosa::TransposeOp>();
  auto r1 = t2 ? t2.getInput1().getDefiningOp<tosa::ReshapeOp>() : tosa::ReshapeOp();
  auto t1 = r1 ? r1.getInput1().getDefiningOp<tosa::TransposeOp>() : tosa::TransposeOp();
  if (!t1 || perm_of(t1) != std::vector<int32_t>{0, 3, 1, 2} || perm_of(t2) != std::vector<int32_t>{0, 2, 1, 3, 4})
    return {};
  if (!t2->hasOneUse() || !r1->hasOneUse()) return {};
  auto x = shape_of(t1.getInput1()), split = shape_of(r1.getResult()), out = shape_of(r2.getResult());
  if (x.size() != 4 || split.size() != 5 || out != std::vector<int64_t>{x[0], x[3], x[1], x[2]}) return {};
  if (split[0] != x[0] || split[1] * split[2] != x[3] || split[3] != x[1] || split[4] != x[2] || split[1] < 2 || split[2] < 2)
    return {};
  auto type = mlir::cast<mlir::RankedTensorType>(t1.getInput1().getType());
  if (!type.getElementType().isF32()) return {};
  return {t1.getInput1(), split[1]};
}

struct ChannelShuffle : impl::ChannelShufflePassBase<ChannelShuffle> {
  void runOnOperation() override {
    std::vector<tosa::ReshapeOp> found;
    getOperation().walk([&](tosa::ReshapeOp r) {
      if (shuffle_of(r).first) found.push_back(r);
    });
    for (tosa::ReshapeOp r2 : found) {
      auto [x, g] = shuffle_of(r2);
      auto d = shape_of(x);
      const int64_t C = d[3], per = C / g;
      auto shuffle = r2.getInput1().getDefiningOp<tosa::TransposeOp>();
      mlir::Location loc = shuffle.getLoc();  // the node that shuffles: the layer's name
      mlir::OpBuilder b(r2);
      std::vector<float> w(size_t(C * C), 0.0f);  // OHWI [C, 1, 1, C]
      for (int64_t k = 0; k < C; ++k) w[size_t(k * C + (k % g) * per + k / g)] = 1.0f;
      Value weight = make_const(b, loc, {C, 1, 1, C}, std::move(w));
      Value bias = make_const(b, loc, {C}, std::vector<float>(size_t(C), 0.0f));
      Value y = b.create<tosa::Conv2DOp>(loc, x.getType(), x, weight, bias, b.getDenseI64ArrayAttr({0, 0, 0, 0}),
                                         b.getDenseI64ArrayAttr({1, 1}), b.getDenseI64ArrayAttr({1, 1}), nullptr);
      auto ptype = mlir::RankedTensorType::get({4}, b.getI32Type());
      Value perm = b.create<tosa::ConstOp>(loc, ptype, mlir::DenseElementsAttr::get(ptype, llvm::ArrayRef<int32_t>{0, 3, 1, 2}));
      Value nchw = b.create<tosa::TransposeOp>(loc, r2.getResult().getType(), y, perm);
      r2.getResult().replaceAllUsesWith(nchw);
      auto r1 = shuffle.getInput1().getDefiningOp<tosa::ReshapeOp>();
      auto t1 = r1.getInput1().getDefiningOp<tosa::TransposeOp>();
      r2.erase(), shuffle.erase(), r1.erase();
      if (t1.getResult().use_empty()) t1.erase();
    }
  }
};

}  // namespace
}  // namespace vtpu::tpu
