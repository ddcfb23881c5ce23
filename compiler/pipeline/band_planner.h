#pragma once
// Internal to compiler/pipeline: the band planner (bands.cpp, band_views.cpp; docs/compiler.md,
// "Activations larger than the unified buffer") and the helpers its files share.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/ir.h"
#include "dialect/tpu_dialect.h"
#include "mlir/IR/Builders.h"
#include "pipeline/pipeline.h"

namespace vtpu::compiler::bands {

using mlir::Value;

std::vector<int64_t> band_dims(Value v);

// An NHWC image of one sample in a float type: what runs in bands of rows (dimension 1).
bool one_image(Value v);

// What sets the rows of a band's input: a convolution's or pool's window along H.
struct Window {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_top = 0;
};

// The ops that run in bands: a convolution or pool (rows through its window), a nearest
// resize (rows through its table), the elementwise ops and a concat of channels (rows one to one).
bool elementwise(mlir::Operation* op);

// The window of an op that runs in bands (none: it does not).
std::optional<Window> window_of(mlir::Operation* op);

// A constant operand of a channel-wise op that holds one value per channel (its last
// dimension; a depthwise convolution's weights [KH, KW, 1, C] too): cut to a band's channels.
// A single value serves every band as it is.
bool per_channel(mlir::Operation* op, Value v, int64_t C);

// A convolution over all input channels (groups 1): a band of its output channels reads
// every channel of its input.
bool reads_all_channels(mlir::Operation* op, Value v);

// An op that runs in bands: a windowed or elementwise op of one image, its other operands
// images or constants (a convolution's weights and bias constants).
bool bandable(mlir::Operation* op);

// A band of output rows [o0, o1) of an op: the input rows [i0, i1) it reads and the padding
// above and below them (the image's own edges only).
struct Rows {
  int64_t o0 = 0, o1 = 0, i0 = 0, i1 = 0, pad_top = 0, pad_bottom = 0;
};

Rows band_input(mlir::Operation* op, int64_t in_rows, int64_t o0, int64_t o1);

// Positions [o0, o1) of an output axis through a window over an input axis of `in` positions:
// the input positions they read and the padding beyond the input's edges.
Rows through(const Window& w, int64_t in, int64_t o0, int64_t o1);

// A band's output rows, channels and columns (0: all).
struct BandShape {
  int64_t rows = 0, channels = 0, cols = 0;
};

// Whether v is the result of one of the group's ops.
bool in_group(const std::vector<mlir::Operation*>& group, Value v);

// A pool over the whole image (GlobalAveragePool, GlobalMaxPool): one output row from all
// input rows, no padding.
bool global_pool(mlir::Operation* op);

// Whether the op reads its first operand through a window (the rows of a band's input differ
// from its output's).
bool windowed(mlir::Operation* op);

class BandPlanner {
 public:
  // `phases_only`: only transposed convolutions whose kernel is their stride, in phases with
  // their outputs in HBM however small (phases_through_hbm); nothing else goes to HBM.
  BandPlanner(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget, std::map<const void*, float>& scales,
              bool channels, bool phases_only = false)
      : fn_(fn), b_(fn.getContext()), cfg_(cfg), lanes_(cfg.core.mxu.rows), esz_(int8 ? 1 : 2), budget_(budget), scales_(scales),
        channels_(channels), phases_only_(phases_only) {}

  size_t run();

 private:
  bool channel_wise(const std::vector<mlir::Operation*>& group) const;
  Value channels_of(Value c, int64_t C, int64_t c0, int64_t n);
  BandShape band_shape(const std::vector<mlir::Operation*>& group);
  // Bands of some columns too (band_tiles.cpp): when even `shape` does not fit.
  BandShape tiles(const std::vector<mlir::Operation*>& group, BandShape shape) const;
  bool tileable(const std::vector<mlir::Operation*>& group) const;
  Window tile_window(mlir::Operation* op) const;
  int64_t tile_input_cols(mlir::Operation* op, int64_t cols) const;
  Value clone_band(const std::vector<mlir::Operation*>& group, const Rows& r, const Rows& cl, bool tile, int64_t c0, int64_t n);
  // A layer's unified-buffer bytes for `rows` rows of an image of dims d (codegen's Act).
  uint64_t ub_bytes(const std::vector<int64_t>& d, int64_t rows) const {
    uint64_t blocks = (uint64_t(d[3]) + lanes_ - 1) / lanes_;
    return blocks * ((uint64_t(rows * d[2]) * lanes_ * esz_ + 63) / 64 * 64);
  }
  bool big(Value v) const { return in_hbm_.count(v.getAsOpaquePointer()) > 0; }
  std::vector<mlir::Operation*> chain_from(mlir::Operation* op, const std::set<mlir::Operation*>& grouped);
  uint64_t need(const std::vector<mlir::Operation*>& group, int64_t rows, int64_t channels, int64_t cols = 0) const;
  int64_t band_rows(const std::vector<mlir::Operation*>& group, int64_t channels, int64_t cols = 0) const;
  void rewrite_global_pool(tpu::PoolOp pool);
  void rewrite_concat(tpu::ConcatOp cat);
  Value scaled_band(Value x, float scale, mlir::Location loc, const std::string& layer, Value like);
  std::vector<std::pair<int64_t, int64_t>> bands(const std::vector<mlir::Operation*>& group, int64_t rows);
  // Any other reader of an image in HBM loads it whole, just before it.
  void load_whole(mlir::Operation* op) {
    b_.setInsertionPoint(op);
    for (mlir::OpOperand& use : op->getOpOperands())
      if (big(use.get())) use.set(band_of(use.get(), 0, band_dims(use.get())[1], layer_of(op)));
  }
  bool bands_read_rows(const std::vector<mlir::Operation*>& group, int64_t rows);
  // `into`: an image in HBM the bands store into (updated to the last store), their rows at
  // offset + row * step of it (a transposed convolution's phase); else the group's own.
  void rewrite(const std::vector<mlir::Operation*>& group, const BandShape& shape, Value* into = nullptr, int64_t offset = 0,
               int64_t step = 1);
  // The group's result read as `by` from now on; its ops erased, last first, with their INT8
  // scales, and the result no longer an image in HBM.
  void retire(const std::vector<mlir::Operation*>& group, Value by);
  // Transposed convolutions in phases (band_subpixel.cpp).
  bool subpixel(tpu::Conv2DOp conv) const;
  void cut_subpixel_group(std::vector<mlir::Operation*>& group) const;
  void rewrite_subpixel(const std::vector<mlir::Operation*>& group);
  void spread_band_macs(tpu::Conv2DOp conv, tpu::Conv2DOp band, const Rows& r, const Rows& cl, int64_t n);
  int64_t subpixel_pixels(tpu::Conv2DOp conv) const;
  bool too_big(Value v) const { return ub_bytes(band_dims(v), band_dims(v)[1]) > budget_ / 2; }
  bool flat(const std::vector<mlir::Operation*>& group, Value also_big = {}) const;
  void rewrite_flat(const std::vector<mlir::Operation*>& group);
  void split_narrow_tails(std::vector<std::vector<mlir::Operation*>>& groups);
  Value band_of(Value v, int64_t start, int64_t rows, const std::string& layer, int64_t c0 = 0, int64_t channels = -1, int64_t col0 = 0,
                int64_t cols = -1);
  void inherit(Value to, Value from) {
    if (auto s = scales_.find(from.getAsOpaquePointer()); s != scales_.end()) scales_[to.getAsOpaquePointer()] = s->second;
  }
  mlir::StringAttr text(const std::string& s) { return b_.getStringAttr(s); }

  uint64_t packed_bytes(tpu::Conv2DOp conv, int64_t in_rows, int64_t out_rows) const;

  mlir::func::FuncOp fn_;
  mlir::OpBuilder b_;
  const config::Config& cfg_;
  uint64_t lanes_, esz_, budget_;
  std::map<const void*, float>& scales_;
  bool channels_;  // bands of channels and concats into HBM allowed
  bool phases_only_;
  std::set<const void*> in_hbm_;
  std::map<std::pair<const void*, int64_t>, Value> cut_consts_;  // a constant's channels from c0, made once for all row bands
  std::map<mlir::Operation*, std::vector<int64_t>> shown_dims_;  // a flat op's layer shape, as the model has it (rewrite_flat)
  // Channel slices of images in HBM read in place: the image and the first channel (channel_view).
  std::map<const void*, std::pair<Value, int64_t>> views_;
  bool channel_view(tpu::SliceOp slice);
  // Transposed convolutions' spreads kept in HBM, by the image that holds them: where their
  // pixels are (spread_band_macs).
  std::map<const void*, std::pair<codegen::PixelAxis, codegen::PixelAxis>> spreads_;
};

}  // namespace vtpu::compiler::bands
