// Tiles: bands of some columns too (docs/compiler.md, "Tiles"). In the planner's second pass,
// when not even one row of a layer's band fits (a 3x3 convolution of a wide image of many
// channels reads three whole rows of all of them and a padded copy; a 1x1 convolution of a
// 480-channel row), its bands hold some of the image's columns as well as rows: a tile of
// output columns [x0, x1) reads input columns through the window along the width, with the
// image's own padding only where it meets the image's left or right edge, as a band of rows
// does along the height. Loads and stores move the tile's columns of each row
// (tpu.load_rows/store_rows col_start: a descriptor with a second dimension).
#include <algorithm>

#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "pipeline/band_planner.h"

namespace vtpu::compiler::bands {

// The window of a tile's first op along the width: a convolution's or pool's, else one
// column to one.
Window BandPlanner::tile_window(mlir::Operation* op) const {
  if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op))
    return Window{band_dims(c.getWeight())[1], c.getStride()[1], c.getDilation()[1], c.getPad()[2]};
  if (auto p = mlir::dyn_cast<tpu::PoolOp>(op))
    return Window{p.getKernel()[1], p.getStride()[1], p.getDilation() ? (*p.getDilation())[1] : 1, p.getPad()[2]};
  return Window{};
}

// The input columns `cols` output columns of the op read (halo included, padding too).
int64_t BandPlanner::tile_input_cols(mlir::Operation* op, int64_t cols) const {
  Window w = tile_window(op);
  return (cols - 1) * w.stride + (w.kernel - 1) * w.dilation + 1;
}

// Whether a group may run in tiles: a convolution (not a packed one reading a model input,
// which reads whole rows from HBM, nor one of a transposed convolution's spread) or a pool
// over a window, then elementwise ops, every image of the group's width.
bool BandPlanner::tileable(const std::vector<mlir::Operation*>& group) const {
  mlir::Operation* first = group.front();
  const int64_t W = band_dims(group.back()->getResult(0))[2];
  if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(first)) {
    Value in = c.getInput();
    if (in.getDefiningOp<tpu::ZeroInsertOp>() || spreads_.count(in.getAsOpaquePointer())) return false;
    if (mlir::isa<mlir::BlockArgument>(in) && codegen::packable(c, lanes_, esz_, codegen::acc_region(cfg_))) return false;
  } else if (auto p = mlir::dyn_cast<tpu::PoolOp>(first)) {
    if (global_pool(first) || p.getKernel().size() != 2 || p.getPad().size() != 4) return false;
  } else if (!elementwise(first)) {
    return false;
  }
  for (mlir::Operation* op : group) {
    if (op != first && !elementwise(op)) return false;
    if (band_dims(op->getResult(0))[2] != W) return false;
    for (Value v : op->getOperands()) {
      if (in_group(group, v) || v.getDefiningOp<mlir::tosa::ConstOp>() || (op == first && windowed(op))) continue;
      if (band_dims(v).size() != 4 || band_dims(v)[2] != W) return false;
    }
  }
  return true;
}

// The widest tile whose one row fits the budget (at least one column), then as many rows of
// it as fit; `shape` as it is when the group cannot run in tiles or its whole rows fit.
BandShape BandPlanner::tiles(const std::vector<mlir::Operation*>& group, BandShape shape) const {
  const int64_t W = band_dims(group.back()->getResult(0))[2];
  if (W < 2 || need(group, shape.rows, shape.channels) <= budget_ || !tileable(group)) return shape;
  int64_t lo = 1, hi = W - 1;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (need(group, 1, shape.channels, mid) <= budget_) lo = mid;
    else hi = mid - 1;
  }
  return {band_rows(group, shape.channels, lo), shape.channels, lo};
}

}  // namespace vtpu::compiler::bands
