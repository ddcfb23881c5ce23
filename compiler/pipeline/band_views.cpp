// Views of images in HBM that the band planner reads instead of moving them (docs/compiler.md,
// "Narrow images in flat bands", "A channel shuffle and a split of channels"): a narrow image
// seen flat, and a slice of channels read in place.
#include <fmt/format.h>

#include <algorithm>

#include "codegen/ir.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/band_planner.h"
#include "transforms/tosa_utils.h"

namespace vtpu::compiler::bands {

// Flat bands (docs/compiler.md, "Narrow images in flat bands"). An image of C channels takes
// ceil(C / R) lane blocks of R lanes a pixel in the unified buffer, so an elementwise layer on
// a one-channel image runs one useful lane of R per vector row, and moves one element per HBM
// request. In HBM the image is row-major, so elementwise layers whose images are all there
// can see it flat instead, as [1, elements / R, 1, R] (a tpu.reshape of the same bytes): full
// rows of R elements, R times fewer vector rows and long HBM requests. Element e of the flat
// view is channel e mod C, so a constant per channel repeats across the R lanes when C
// divides R; one value serves as it is. `also_big`: an image taken to be in HBM (one the
// planner will put there).
bool BandPlanner::flat(const std::vector<mlir::Operation*>& group, Value also_big) const {
  auto d = band_dims(group.back()->getResult(0));
  const int64_t C = d[3], L = int64_t(lanes_), n = int64_t(codegen::numel(d));
  Value out = group.back()->getResult(0);
  if (C % L == 0 || n % L != 0 || !(big(out) || (also_big && too_big(out)))) return false;
  for (mlir::Operation* op : group) {
    if (!elementwise(op) || band_dims(op->getResult(0)) != d) return false;
    for (Value v : op->getOperands()) {
      if (in_group(group, v)) continue;
      if (v.getDefiningOp<mlir::tosa::ConstOp>()) {
        // An affine step's scale and bias: one value, or one per channel repeated over the lanes.
        if (!mlir::isa<tpu::AffineOp>(op) || (codegen::numel(band_dims(v)) > 1 && L % C != 0)) return false;
        continue;
      }
      // An image's own bytes (not a slice of another's channels, read in place).
      if (band_dims(v) != d || !(big(v) || v == also_big) || views_.count(v.getAsOpaquePointer())) return false;
    }
  }
  return true;
}

// A narrow image's elementwise tail (a probability map's sigmoid after its one-channel
// convolution) runs apart from the convolution when the image goes to HBM, so it can run
// flat: the convolution's bands store its output (as the group's would have), the tail reads
// it back flat. Only tails with a table function (several vector passes a row) are split; a
// clamp or an add goes into the convolution's epilogues instead.
void BandPlanner::split_narrow_tails(std::vector<std::vector<mlir::Operation*>>& groups) {
  for (size_t i = 0; i < groups.size(); ++i) {
    auto& g = groups[i];
    if (g.size() < 2 || elementwise(g[0]) || !too_big(g[0]->getResult(0))) continue;
    std::vector<mlir::Operation*> tail(g.begin() + 1, g.end());
    bool table = std::any_of(tail.begin(), tail.end(), [](mlir::Operation* op) { return mlir::isa<tpu::UnaryOp>(op); });
    if (!table || !flat(tail, g[0]->getResult(0))) continue;
    g.resize(1);
    groups.insert(groups.begin() + int64_t(i) + 1, std::move(tail));
  }
}

// The group on the flat view of its images: reshapes of its inputs, its ops cloned with the
// flat shape (an affine step's constants repeated over the lanes), a reshape of the result
// back to the model's shape; then in bands of flat rows as any group.
void BandPlanner::rewrite_flat(const std::vector<mlir::Operation*>& group) {
  mlir::Operation* last = group.back();
  Value whole = last->getResult(0);
  auto d = band_dims(whole);
  const int64_t C = d[3], L = int64_t(lanes_), n = int64_t(codegen::numel(d));
  auto flat_type = [&](Value like) {
    return mlir::RankedTensorType::get({1, n / L, 1, L}, mlir::cast<mlir::RankedTensorType>(like.getType()).getElementType());
  };
  b_.setInsertionPoint(group.front());
  mlir::IRMapping map;
  std::vector<mlir::Operation*> clones;
  for (mlir::Operation* op : group) {
    for (Value v : op->getOperands()) {
      if (in_group(group, v) || map.contains(v)) continue;
      if (v.getDefiningOp<mlir::tosa::ConstOp>()) {  // an affine step's: over the L lanes
        std::optional<std::vector<float>> c = tpu::const_data(v);
        if (!c || c->empty()) throw InternalError("a flat affine step's constant is not a float constant");
        std::vector<float> lanes(size_t(L), 0.0f);
        for (int64_t l = 0; l < L; ++l) lanes[size_t(l)] = (*c)[size_t(l % C) % c->size()];
        map.map(v, tpu::make_const(b_, v.getLoc(), {L}, std::move(lanes)));
        continue;
      }
      Value r = b_.create<tpu::ReshapeOp>(v.getLoc(), flat_type(v), v, text(layer_of(op)));
      inherit(r, v);
      in_hbm_.insert(r.getAsOpaquePointer());
      map.map(v, r);
    }
    mlir::Operation* c = b_.clone(*op, map);
    c->getResult(0).setType(flat_type(op->getResult(0)));
    inherit(c->getResult(0), op->getResult(0));
    map.map(op->getResult(0), c->getResult(0));
    shown_dims_[c] = band_dims(op->getResult(0));
    clones.push_back(c);
  }
  Value flat_whole = clones.back()->getResult(0);
  Value back = b_.create<tpu::ReshapeOp>(whole.getLoc(), whole.getType(), flat_whole, text(layer_of(last)));
  inherit(back, whole);
  retire(group, back);
  in_hbm_.insert(flat_whole.getAsOpaquePointer());
  in_hbm_.insert(back.getAsOpaquePointer());
  rewrite(clones, band_shape(clones));
  for (mlir::Operation* c : clones) shown_dims_.erase(c);  // erased by rewrite: their addresses may be reused
}

// A slice of some channels of an image in HBM (a split of a ShuffleNet block's channels)
// moves nothing: its readers' bands load those channels of the image's rows (tpu.load_rows
// with channel_start), as bands of channels do. Not for a slice the model returns.
bool BandPlanner::channel_view(tpu::SliceOp slice) {
  Value in = slice.getInput(), out = slice.getOutput();
  if (!big(in) || !one_image(out)) return false;
  auto start = slice.getStart();
  auto x = band_dims(in), y = band_dims(out);
  if (start.size() != 4 || start[0] || start[1] || start[2] || y[1] != x[1] || y[2] != x[2]) return false;
  for (mlir::Operation* u : out.getUsers())
    if (mlir::isa<mlir::func::ReturnOp>(u)) return false;
  Value image = in;
  int64_t c0 = start[3];
  if (auto outer = views_.find(in.getAsOpaquePointer()); outer != views_.end()) image = outer->second.first, c0 += outer->second.second;
  views_[out.getAsOpaquePointer()] = {image, c0};
  in_hbm_.insert(out.getAsOpaquePointer());
  inherit(out, in);
  return true;
}

}  // namespace vtpu::compiler::bands
