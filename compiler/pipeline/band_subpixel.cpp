// Transposed convolutions in phases (docs/compiler.md, "Transposed convolutions in phases").
// The importer makes a ConvTranspose a stride-1 convolution of its spread input (tpu.zero_insert:
// the input's pixels `stride` apart, zeros between them). When the kernel equals the stride
// (a decoder's or a text detector's 2x2, stride-2 upsampling), each output pixel is one tap of
// one input pixel: output row s*y + dy, pixel s*x + dx is input pixel (y, x) through tap
// (s-1-dy, s-1-dx) of the flipped kernel. So when the output lives in HBM the layer runs as
// `s` phases, each a 1x1 convolution of the input (not of the spread, s*s times larger and
// mostly zeros) to the s*CO values of output row s*y + dy at pixels s*x .. s*x + s-1, stored
// with a row step of s into the output, whose row-major bytes are those of [1, s*H, W, s*CO].
// When the input is in HBM too and the phase is narrow (s*CO lanes of R), P input pixels go in
// one row (the input seen as [1, H, W/P, P*CI], the same bytes) and the phase's weights are P
// copies on the diagonal: full rows of R lanes and long HBM requests, P times fewer rows. The
// arithmetic per output value is the layer's (the same products; INT8 weights quantized with
// the whole layer's scale per output channel, tpu::kWeightAbsmaxAttr).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "codegen/ir.h"
#include "dialect/attr_names.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/band_planner.h"
#include "transforms/tosa_utils.h"

namespace vtpu::compiler::bands {

namespace {

tpu::ZeroInsertOp spread_of(tpu::Conv2DOp conv) { return conv.getInput().getDefiningOp<tpu::ZeroInsertOp>(); }

// A phase's weights hold at most this many rows of R (P input pixels of CI channels each).
constexpr int64_t kMaxPhaseRowTiles = 16;

}  // namespace

// A convolution of a spread input whose kernel is its stride, with no padding beyond the
// spread's own (s - 1 on each side: pads 0 and no output_padding), one group, stride and
// dilation 1, constant weights, and an output the planner keeps in HBM.
bool BandPlanner::subpixel(tpu::Conv2DOp conv) const {
  tpu::ZeroInsertOp z = spread_of(conv);
  if (!z || !z.getOutput().hasOneUse() || conv.getGroups() != 1 || !one_image(z.getInput()) || !one_image(conv.getOutput())) return false;
  if (!conv.getWeight().getDefiningOp<mlir::tosa::ConstOp>() || !conv.getBias().getDefiningOp<mlir::tosa::ConstOp>()) return false;
  auto st = z.getStride(), zp = z.getPad(), cs = conv.getStride(), cp = conv.getPad(), cd = conv.getDilation();
  auto w = band_dims(conv.getWeight());  // [KH, KW, CI, CO]
  if (st.size() != 2 || w.size() != 4 || w[0] != st[0] || w[1] != st[1] || st[0] < 1 || st[1] < 1) return false;
  if (zp[0] != st[0] - 1 || zp[1] != st[0] - 1 || zp[2] != st[1] - 1 || zp[3] != st[1] - 1) return false;
  if (cs[0] != 1 || cs[1] != 1 || cd[0] != 1 || cd[1] != 1 || std::any_of(cp.begin(), cp.end(), [](int64_t p) { return p != 0; }))
    return false;
  auto x = band_dims(z.getInput()), y = band_dims(conv.getOutput());
  if (y[1] != x[1] * st[0] || y[2] != x[2] * st[1] || w[2] != x[3]) return false;
  return phases_only_ || too_big(conv.getOutput());
}

// Input pixels per row of a phase (P): R / (s * CO) when that divides the image's width, the
// input is in HBM, and the weights stay within kMaxPhaseRowTiles rows of R; else the largest
// divisor of the width below it, or 1 (a pixel a row).
int64_t BandPlanner::subpixel_pixels(tpu::Conv2DOp conv) const {
  tpu::ZeroInsertOp z = spread_of(conv);
  auto x = band_dims(z.getInput());
  const int64_t sw = z.getStride()[1], CO = band_dims(conv.getOutput())[3], L = int64_t(lanes_);
  if (!big(z.getInput()) || sw * CO >= L) return 1;
  int64_t P = std::min(L / (sw * CO), std::max<int64_t>(1, kMaxPhaseRowTiles * L / x[3]));
  while (P > 1 && x[2] % P) --P;
  return P;
}

// The group of a transposed convolution in phases: the convolution and the elementwise ops
// after it whose other operands are constants of one value or one per channel (cloned into
// every phase); an op that reads another image ends the group (it runs as a group of its own).
void BandPlanner::cut_subpixel_group(std::vector<mlir::Operation*>& group) const {
  const int64_t C = band_dims(group.front()->getResult(0))[3];
  for (size_t k = 1; k < group.size(); ++k)
    for (Value v : group[k]->getOperands())
      if (!in_group(group, v) && !(v.getDefiningOp<mlir::tosa::ConstOp>() && per_channel(group[k], v, C))) {
        group.resize(k);
        return;
      }
}

void BandPlanner::rewrite_subpixel(const std::vector<mlir::Operation*>& group) {
  auto conv = mlir::cast<tpu::Conv2DOp>(group.front());
  tpu::ZeroInsertOp z = spread_of(conv);
  Value x = z.getInput(), whole = group.back()->getResult(0);
  auto xd = band_dims(x), out = band_dims(whole);
  const int64_t H = xd[1], W = xd[2], CI = xd[3], CO = out[3], sh = z.getStride()[0], sw = z.getStride()[1];
  const int64_t P = subpixel_pixels(conv), cols = P * sw * CO;
  const std::string layer = layer_of(conv);
  auto elem = mlir::cast<mlir::RankedTensorType>(whole.getType()).getElementType();
  auto w = tpu::const_data(conv.getWeight());
  auto bias = tpu::const_data(conv.getBias());
  if (!w || !bias) throw InternalError(fmt::format("node '{}': a transposed convolution's weights are not float constants", layer));

  b_.setInsertionPoint(conv);
  // The output as [1, s*H, W/P, P*s*CO] (the same bytes): phase dy's rows are rows s*y + dy.
  Value dest = b_.create<tpu::HbmTensorOp>(conv.getLoc(), mlir::RankedTensorType::get({1, sh * H, W / P, cols}, elem), text(layer));
  inherit(dest, whole);
  Value xin = x;
  if (P > 1) {  // P pixels a row: a reshape of the input's bytes in HBM
    xin = b_.create<tpu::ReshapeOp>(x.getLoc(), mlir::RankedTensorType::get({1, H, W / P, P * CI}, elem), x, text(layer));
    inherit(xin, x);
    in_hbm_.insert(xin.getAsOpaquePointer());
  }
  // Each output channel's largest |weight| over the whole kernel: the layer's INT8 scale.
  std::vector<double> absmax(static_cast<size_t>(cols), 0.0);
  for (size_t i = 0; i < w->size(); ++i) {
    double& m = absmax[i % size_t(CO)];
    m = std::max(m, double(std::fabs((*w)[i])));
  }
  for (int64_t j = int64_t(CO); j < cols; ++j) absmax[size_t(j)] = absmax[size_t(j % CO)];
  // A constant with one value per channel: repeated over the phase's s*P pixels.
  auto tiled = [&](Value c) {
    std::optional<std::vector<float>> v = tpu::const_data(c);
    if (!v || v->size() != size_t(CO)) return c;
    std::vector<float> r(static_cast<size_t>(cols));
    for (int64_t j = 0; j < cols; ++j) r[size_t(j)] = (*v)[size_t(j % CO)];
    return tpu::make_const(b_, c.getLoc(), {cols}, std::move(r));
  };
  auto phase_type = mlir::RankedTensorType::get({1, H, W / P, cols}, elem);
  for (int64_t dy = 0; dy < sh; ++dy) {
    // Column p*s*CO + dx*CO + co of the phase's [P*CI, P*s*CO] weights, row p*CI + ci: tap
    // (s-1-dy, s-1-dx) of [KH, KW, CI, CO] for (ci, co); zero off the diagonal blocks.
    std::vector<float> pw(size_t(P * CI * cols), 0.0f);
    for (int64_t p = 0; p < P; ++p)
      for (int64_t ci = 0; ci < CI; ++ci)
        for (int64_t dx = 0; dx < sw; ++dx)
          for (int64_t co = 0; co < CO; ++co)
            pw[size_t((p * CI + ci) * cols + (p * sw + dx) * CO + co)] =
                (*w)[size_t((((sh - 1 - dy) * sw + (sw - 1 - dx)) * CI + ci) * CO + co)];
    b_.setInsertionPoint(conv);
    mlir::IRMapping map;
    map.map(conv.getInput(), xin);
    map.map(conv.getWeight(), tpu::make_const(b_, conv.getLoc(), {1, 1, P * CI, cols}, std::move(pw)));
    map.map(conv.getBias(), tiled(conv.getBias()));
    std::vector<mlir::Operation*> clones;
    for (mlir::Operation* op : group) {
      for (Value v : op->getOperands())
        if (!in_group(group, v) && !map.contains(v) && v.getDefiningOp<mlir::tosa::ConstOp>()) map.map(v, tiled(v));
      mlir::Operation* c = b_.clone(*op, map);
      c->getResult(0).setType(phase_type);
      inherit(c->getResult(0), op->getResult(0));
      map.map(op->getResult(0), c->getResult(0));
      shown_dims_[c] = out;  // reported as the whole layer
      clones.push_back(c);
    }
    auto pc = mlir::cast<tpu::Conv2DOp>(clones.front());
    pc.setStrideAttr(b_.getDenseI64ArrayAttr({1, 1}));
    pc->setAttr(tpu::kWeightAbsmaxAttr, b_.getDenseF64ArrayAttr(absmax));
    if (P > 1) pc->setAttr(tpu::kBlockDiagonalAttr, b_.getI64IntegerAttr(P));
    in_hbm_.insert(clones.back()->getResult(0).getAsOpaquePointer());
    rewrite(clones, band_shape(clones), &dest, dy, sh);
    for (mlir::Operation* c : clones) shown_dims_.erase(c);
  }
  // The model's shape of the output: a reshape of the same bytes.
  b_.setInsertionPoint(group.back());
  Value back = b_.create<tpu::ReshapeOp>(whole.getLoc(), whole.getType(), dest, text(layer_of(group.back())));
  inherit(back, whole);
  retire(group, back);
  in_hbm_.insert(dest.getAsOpaquePointer());
  in_hbm_.insert(back.getAsOpaquePointer());
  // The spread stays, unread, so its layer's rows are those of the layer run whole (with no
  // work), as a channel slice read in place.
  z->setAttr(tpu::kInPlaceAttr, b_.getUnitAttr());
}

}  // namespace vtpu::compiler::bands
