// Activations larger than the unified buffer (docs/compiler.md, "Activations larger than the
// unified buffer"): when one sample's activations do not fit, the images too large for the
// buffer are kept in HBM (tpu.hbm_tensor, row-major like a model input) and the layers that
// read or write them run in bands of output rows: each band loads the input rows it needs,
// halo included (tpu.load_rows), runs the layer on them with the padding of the image's edges
// only, and writes its rows to HBM (tpu.store_rows) or joins the others (tpu.concat) when the
// result is small. A transposed convolution's spread input (tpu.zero_insert) runs in bands
// too: a band's input rows are those its stride puts in it, the zeros around them its padding.
// A pool over a whole image runs band by band, the bands' results combined; a one-row gate
// broadcast over an image's rows feeds every band. When even one row of a layer's image does
// not fit and its ops keep channels apart (a depthwise convolution, a pool, elementwise ops, a
// gate), its bands hold some of the channels too: the layer's constants per channel are cut
// to each band's. A convolution or pool runs together with
// the elementwise ops after it that
// only it feeds (a residual add, an activation), so the planner's epilogue fusion still finds
// them side by side. This file decides and rewrites; code generation only prints the loads and
// stores (codegen/bands.cpp).
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "codegen/ir.h"
#include "pipeline/band_planner.h"
#include "dialect/attr_names.h"
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/pipeline.h"
#include "transforms/tosa_utils.h"

namespace vtpu::compiler::bands {

std::vector<int64_t> band_dims(Value v) { return tpu::shape_of(v); }

// An NHWC image of one sample in a float type: what runs in bands of rows (dimension 1).
bool one_image(Value v) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  return t && t.getRank() == 4 && t.getShape()[0] == 1 && t.getShape()[1] > 0 && mlir::isa<mlir::FloatType>(t.getElementType());
}

// The ops that run in bands: a convolution or pool (rows through its window), a nearest
// resize (rows through its table), the elementwise ops and a concat of channels (rows one to one).
bool elementwise(mlir::Operation* op) { return mlir::isa<tpu::AddOp, tpu::BinaryOp, tpu::ClampOp, tpu::AffineOp, tpu::UnaryOp>(op); }

std::optional<Window> window_of(mlir::Operation* op) {
  if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op))
    return Window{band_dims(c.getWeight())[0], c.getStride()[0], c.getDilation()[0], c.getPad()[0]};
  if (auto p = mlir::dyn_cast<tpu::PoolOp>(op)) {
    if (p.getKernel().size() != 2 || p.getPad().size() != 4) return std::nullopt;
    return Window{p.getKernel()[0], p.getStride()[0], p.getDilation() ? (*p.getDilation())[0] : 1, p.getPad()[0]};
  }
  // A resize: its rows attribute; a spread (a transposed convolution's input): its stride and
  // padding (band_input).
  if (elementwise(op) || mlir::isa<tpu::ResizeNearestOp, tpu::ZeroInsertOp>(op)) return Window{};
  // A gate of one row repeated over an image's rows (a squeeze-and-excitation block's): every
  // band reads that row (band_input).
  if (auto b = mlir::dyn_cast<tpu::BroadcastOp>(op); b && band_dims(b.getInput()).size() == 4 && band_dims(b.getInput())[1] == 1)
    return Window{};
  if (auto c = mlir::dyn_cast<tpu::ConcatOp>(op); c && c.getAxis() == 3) return Window{};
  return std::nullopt;
}

// A constant operand of a channel-wise op that holds one value per channel (its last
// dimension; a depthwise convolution's weights [KH, KW, 1, C] too): cut to a band's channels.
// A single value serves every band as it is.
bool per_channel(mlir::Operation* op, Value v, int64_t C) {
  auto d = band_dims(v);
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  if (n == 1) return true;
  if (d.empty() || d.back() != C) return false;
  if (mlir::isa<tpu::Conv2DOp>(op)) return true;
  return n == C;
}

// A convolution over all input channels (groups 1): a band of its output channels reads
// every channel of its input.
bool reads_all_channels(mlir::Operation* op, Value v) {
  auto c = mlir::dyn_cast<tpu::Conv2DOp>(op);
  return c && c.getGroups() == 1 && v == c.getInput();
}

bool bandable(mlir::Operation* op) {
  if (op->getNumResults() != 1 || !one_image(op->getResult(0)) || !window_of(op)) return false;
  if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op))  // weights computed at run time are not cut in bands
    if (!c.getWeight().getDefiningOp<mlir::tosa::ConstOp>() || !c.getBias().getDefiningOp<mlir::tosa::ConstOp>()) return false;
  for (Value v : op->getOperands())
    if (!v.getDefiningOp<mlir::tosa::ConstOp>() && !one_image(v)) return false;
  return true;
}

Rows band_input(mlir::Operation* op, int64_t in_rows, int64_t o0, int64_t o1) {
  if (auto rz = mlir::dyn_cast<tpu::ResizeNearestOp>(op)) {  // output row y copies input row rows[y]
    auto src = rz.getRows();
    auto [lo, hi] = std::minmax_element(src.begin() + o0, src.begin() + o1);
    return Rows{o0, o1, *lo, *hi + 1, 0, 0};
  }
  if (mlir::isa<tpu::BroadcastOp>(op)) return Rows{o0, o1, 0, 1, 0, 0};  // the one row, for every band
  if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(op)) {  // output row pad_top + y * stride holds input row y
    int64_t s = z.getStride()[0], pt = z.getPad()[0];
    auto div_up = [](int64_t a, int64_t b) { return a <= 0 ? 0 : (a + b - 1) / b; };
    Rows r{o0, o1, std::min(in_rows, div_up(o0 - pt, s)), o1 - 1 - pt < 0 ? 0 : std::min(in_rows, (o1 - 1 - pt) / s + 1), 0, 0};
    if (r.i1 > r.i0) r.pad_top = pt + r.i0 * s - o0, r.pad_bottom = (o1 - o0) - r.pad_top - ((r.i1 - r.i0 - 1) * s + 1);
    return r;
  }
  return through(*window_of(op), in_rows, o0, o1);
}

Rows through(const Window& w, int64_t in, int64_t o0, int64_t o1) {
  int64_t first = o0 * w.stride - w.pad_top, last = (o1 - 1) * w.stride - w.pad_top + (w.kernel - 1) * w.dilation;
  Rows r{o0, o1, std::max<int64_t>(0, first), std::min(in - 1, last) + 1, 0, 0};
  r.pad_top = r.i0 - first, r.pad_bottom = last + 1 - r.i1;
  return r;
}

// The op and the elementwise ops after it that only it feeds, in order.
std::vector<mlir::Operation*> BandPlanner::chain_from(mlir::Operation* op, const std::set<mlir::Operation*>& grouped) {
  std::vector<mlir::Operation*> group{op};
  while (true) {
    Value r = group.back()->getResult(0);
    if (!r.hasOneUse()) break;
    mlir::Operation* u = *r.getUsers().begin();
    if (!elementwise(u) || !bandable(u) || band_dims(u->getResult(0)) != band_dims(r) || grouped.count(u)) break;
    // A residual add goes with the later of its producers, as the planner fuses it into that
    // one's epilogues (codegen/plan.cpp, residual_add): the same program's arithmetic.
    bool later = true;
    for (Value v : u->getOperands())
      if (mlir::Operation* d = v.getDefiningOp(); d && v != r && d->getBlock() == op->getBlock() && !d->isBeforeInBlock(op))
        later = false;
    if (!later) break;
    group.push_back(u);
  }
  return group;
}

bool in_group(const std::vector<mlir::Operation*>& group, Value v) {
  return v.getDefiningOp() && std::find(group.begin(), group.end(), v.getDefiningOp()) != group.end();
}

// A pool over the whole image (GlobalAveragePool, GlobalMaxPool): one output row from all
// input rows, no padding.
bool global_pool(mlir::Operation* op) {
  auto p = mlir::dyn_cast<tpu::PoolOp>(op);
  if (!p || p.getKernel().size() != 2 || p.getPad().size() != 4 || p.getDilation()) return false;
  auto x = band_dims(p.getInput()), y = band_dims(p.getOutput());
  return y[1] == 1 && p.getKernel()[0] == x[1] && p.getKernel()[1] == x[2] &&
         std::all_of(p.getPad().begin(), p.getPad().end(), [](int64_t v) { return v == 0; });
}

// Whether the op reads its first operand through a window (the rows of a band's input differ
// from its output's).
bool windowed(mlir::Operation* op) {
  return mlir::isa<tpu::Conv2DOp, tpu::PoolOp, tpu::ResizeNearestOp, tpu::ZeroInsertOp, tpu::BroadcastOp>(op);
}

// The unified-buffer bytes a packed convolution (codegen/conv_packed.cpp) takes for a band
// of `out_rows` output rows reading `in_rows` rows of a model input straight from HBM: the
// packed, padded rows, the image as it lies and spread by the placement matmul, and the
// row-stacked copy (each pixel a few words, not R lanes), with a word of slack each.
uint64_t BandPlanner::packed_bytes(tpu::Conv2DOp conv, int64_t in_rows, int64_t out_rows) const {
  codegen::PackedRows p = codegen::packed_rows(conv, cfg_, esz_);
  auto x = band_dims(conv.getInput()), w = band_dims(conv.getWeight());
  const uint64_t W = uint64_t(x[2]), Wp = W + uint64_t(conv.getPad()[2] + conv.getPad()[3]), KH = uint64_t(w[0]);
  const uint64_t pix = p.CIp * esz_, rows = uint64_t(in_rows) + KH;
  const uint64_t stacked = (uint64_t(out_rows) * uint64_t(conv.getStride()[0]) + KH) * Wp * p.S * pix;
  return rows * Wp * pix + rows * W * (uint64_t(x[3]) * esz_ + pix) + stacked + 4 * lanes_ * esz_;
}

// The unified-buffer bytes of a band of `rows` output rows and `channels` channels of a
// group: its loads, outputs and a padded copy of the input.
uint64_t BandPlanner::need(const std::vector<mlir::Operation*>& group, int64_t h, int64_t channels, int64_t cols) const {
  auto out = band_dims(group.back()->getResult(0));
  const bool split = channels < out[3];  // in a channel-wise group, every image but a full convolution's input has out's channels
  const bool tile = cols > 0 && cols < out[2];  // some columns (band_tiles.cpp)
  out[3] = std::min(out[3], channels);
  if (tile) out[2] = cols;
  Window w = *window_of(group.front());
  uint64_t bytes = 2 * ub_bytes(out, h);
  for (mlir::Operation* op : group)
    for (Value v : op->getOperands()) {
      if (v.getDefiningOp<mlir::tosa::ConstOp>() || in_group(group, v)) continue;
      auto d = band_dims(v);
      if (split && !reads_all_channels(op, v)) d[3] = channels;
      bool win = op == group.front() && windowed(op);
      if (tile) d[2] = std::min(d[2], win ? tile_input_cols(op, cols) : cols);
      int64_t in_rows = win ? (h - 1) * w.stride + (w.kernel - 1) * w.dilation + 1 : h;
      if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(op)) in_rows = h / z.getStride()[0] + 1;
      // A model input's rows that a packed convolution reads from HBM (codegen::packed_view).
      auto conv = mlir::dyn_cast<tpu::Conv2DOp>(op);
      if (win && conv && mlir::isa<mlir::BlockArgument>(v) && big(v) && !split &&
          codegen::packable(conv, lanes_, esz_, codegen::acc_region(cfg_))) {
        bytes += packed_bytes(conv, std::min(in_rows, d[1]), h);
        continue;
      }
      bytes += (win && w.kernel > 1 ? 2 : 1) * ub_bytes(d, std::min(in_rows, d[1]));
    }
  return bytes;
}

// Output rows per band of `channels` channels: the most that fit the budget (at least one).
int64_t BandPlanner::band_rows(const std::vector<mlir::Operation*>& group, int64_t channels, int64_t cols) const {
  auto out = band_dims(group.back()->getResult(0));
  int64_t lo = 1, hi = out[1];
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (need(group, mid, channels, cols) <= budget_) lo = mid;
    else hi = mid - 1;
  }
  // A spread's band holds at least one input row: at least `stride` rows.
  if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(group.front())) lo = std::min(out[1], std::max(lo, z.getStride()[0]));
  return lo;
}

// Whether a band of the group may hold some of its output channels: every op keeps channels
// apart (a depthwise convolution, a pool, a resize, a spread, a gate, an elementwise op, all
// with the image's channels and constants of one value or one per channel), but for a
// convolution over all input channels first, whose bands each read all of them.
bool BandPlanner::channel_wise(const std::vector<mlir::Operation*>& group) const {
  const int64_t C = band_dims(group.front()->getResult(0))[3];
  for (mlir::Operation* op : group) {
    if (band_dims(op->getResult(0))[3] != C) return false;
    if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op)) {
      auto w = band_dims(c.getWeight());
      bool depthwise = int64_t(c.getGroups()) == C && w.size() == 4 && w[2] == 1 && w[3] == C;
      if (!depthwise && !(op == group.front() && c.getGroups() == 1)) return false;
    } else if (!mlir::isa<tpu::PoolOp, tpu::ResizeNearestOp, tpu::ZeroInsertOp, tpu::BroadcastOp>(op) && !elementwise(op)) {
      return false;
    }
    for (Value v : op->getOperands())
      if (v.getDefiningOp<mlir::tosa::ConstOp>() ? !per_channel(op, v, C) : !reads_all_channels(op, v) && band_dims(v)[3] != C)
        return false;
  }
  return true;
}

// Rows and channels per band: every channel in bands of rows, as many rows as fit; when not
// even one row of all channels fits and the group keeps channels apart, bands of whole lane
// blocks of channels: all the rows when a block fits so (no halo read twice), else as many
// rows as fit with as many channels as fit in one row.
BandShape BandPlanner::band_shape(const std::vector<mlir::Operation*>& group) {
  const int64_t C = band_dims(group.back()->getResult(0))[3], H = band_dims(group.back()->getResult(0))[1];
  const int64_t lanes = int64_t(lanes_);
  int64_t rows = band_rows(group, C);
  if (!channels_ || need(group, rows, C) <= budget_) return {rows, C};
  if (C <= lanes || !channel_wise(group)) return tiles(group, {rows, C});
  auto most_channels = [&](int64_t h) {
    int64_t best = 0;
    for (int64_t c = lanes; c < C; c += lanes)
      if (need(group, h, c) <= budget_) best = c;
    return best;
  };
  if (int64_t c = most_channels(H)) return {H, c};
  int64_t c = std::max(lanes, most_channels(1));
  return tiles(group, {band_rows(group, c), c});
}

// Channels [c0, c0 + n) of a constant with one value per channel (per_channel); one value as it is.
Value BandPlanner::channels_of(Value c, int64_t C, int64_t c0, int64_t n) {
  auto d = band_dims(c);
  if (d.empty() || d.back() != C || n == C) return c;
  auto key = std::make_pair(c.getAsOpaquePointer(), c0);
  if (auto it = cut_consts_.find(key); it != cut_consts_.end()) return it->second;
  std::optional<std::vector<float>> all = tpu::const_data(c);
  if (!all) throw InternalError("a per-channel constant of a banded layer is not a float constant");
  std::vector<float> cut;
  for (size_t i = 0; i < all->size(); i += size_t(C)) cut.insert(cut.end(), all->begin() + int64_t(i) + c0, all->begin() + int64_t(i) + c0 + n);
  d.back() = n;
  Value r = tpu::make_const(b_, c.getLoc(), d, std::move(cut));
  cut_consts_[key] = r;
  return r;
}

// The bands [o0, o1) of `rows` output rows; a spread's last band, when it falls wholly in the
// padding below the image, joins the one before.
std::vector<std::pair<int64_t, int64_t>> BandPlanner::bands(const std::vector<mlir::Operation*>& group, int64_t rows) {
  int64_t in_rows = band_dims(group.front()->getOperand(0))[1], out = band_dims(group.back()->getResult(0))[1];
  std::vector<std::pair<int64_t, int64_t>> r;
  for (int64_t o0 = 0; o0 < out; o0 += rows) r.push_back({o0, std::min(out, o0 + rows)});
  if (mlir::isa<tpu::ZeroInsertOp>(group.front()) && r.size() > 1) {
    Rows last = band_input(group.front(), in_rows, r.back().first, r.back().second);
    if (last.i1 <= last.i0) r.pop_back(), r.back().second = out;
  }
  return r;
}

// Band `start` (rows of dimension 1; channels [c0, c0 + channels), all by default) of v:
// loaded from HBM, or a slice of it in the unified buffer.
Value BandPlanner::band_of(Value v, int64_t start, int64_t rows, const std::string& layer, int64_t c0, int64_t channels, int64_t col0,
                           int64_t cols) {
  auto d = band_dims(v);
  if (channels < 0) channels = d[3];
  if (cols < 0) cols = d[2];
  if (start == 0 && rows == d[1] && c0 == 0 && channels == d[3] && col0 == 0 && cols == d[2] && !big(v)) return v;
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  d[1] = rows, d[2] = cols, d[3] = channels;
  auto type = mlir::RankedTensorType::get(d, t.getElementType());
  Value r;
  if (big(v)) {
    // A slice of channels read in place (channel_view): those channels of its image's rows.
    Value image = v;
    if (auto view = views_.find(v.getAsOpaquePointer()); view != views_.end()) image = view->second.first, c0 += view->second.second;
    r = b_.create<tpu::LoadRowsOp>(v.getLoc(), type, image, b_.getI64IntegerAttr(1), b_.getI64IntegerAttr(start), text(layer),
                                   b_.getI64IntegerAttr(c0), b_.getI64IntegerAttr(col0));
  } else {
    r = b_.create<tpu::SliceOp>(v.getLoc(), type, v, b_.getDenseI64ArrayAttr({0, start, col0, c0}), text(layer));
  }
  r.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
  inherit(r, v);
  return r;
}

// A band of output rows r, columns cl and `n` output channels of a convolution of a transposed
// convolution's spread: its useful MACs (the spread's own pixels only) on the band, `band`,
// when code generation cannot see the spread (in HBM, or in the band's slice of it).
void BandPlanner::spread_band_macs(tpu::Conv2DOp conv, tpu::Conv2DOp band, const Rows& r, const Rows& cl, int64_t n) {
  std::pair<codegen::PixelAxis, codegen::PixelAxis> axes;
  if (auto z = conv.getInput().getDefiningOp<tpu::ZeroInsertOp>()) axes = codegen::spread_axes(z);
  else if (auto s = spreads_.find(conv.getInput().getAsOpaquePointer()); s != spreads_.end()) axes = s->second;
  else return;
  const codegen::ConvShape c = codegen::conv_shape(conv);
  uint64_t taps = codegen::taps_on_pixels(uint64_t(r.o0), uint64_t(r.o1), axes.first, c.KH, c.sh, c.pt, c.dh) *
                  codegen::taps_on_pixels(uint64_t(cl.o0), uint64_t(cl.o1), axes.second, c.KW, c.sw, c.pl, c.dw);
  band->setAttr(tpu::kUsefulMacsAttr, b_.getI64IntegerAttr(int64_t(c.N * taps * c.CIg * uint64_t(n))));
}

// One band of the group: output rows r (its input rows and padding), columns cl (all, or a
// tile's with its input columns and padding), channels [c0, c0 + n): its inputs loaded or
// sliced first (as the whole ops had theirs before the group, so a residual add planned into
// the convolution's epilogues finds its other operand there), then its ops cloned. Returns the
// last one's result.
Value BandPlanner::clone_band(const std::vector<mlir::Operation*>& group, const Rows& r, const Rows& cl, bool tile, int64_t c0, int64_t n) {
  const int64_t C = band_dims(group.back()->getResult(0))[3];
  const int64_t o0 = r.o0, o1 = r.o1;
  std::vector<mlir::IRMapping> maps(group.size());
  for (size_t k = 0; k < group.size(); ++k) {
    mlir::Operation* op = group[k];
    for (Value v : op->getOperands()) {
      if (in_group(group, v) || maps[k].contains(v)) continue;
      if (v.getDefiningOp<mlir::tosa::ConstOp>()) {
        if (n < C) maps[k].map(v, channels_of(v, C, c0, n));
        continue;
      }
      bool win = k == 0 && windowed(op), all = n == C || reads_all_channels(op, v);
      int64_t from = all ? 0 : c0, count = all ? -1 : n;
      int64_t x0 = tile ? (win ? cl.i0 : cl.o0) : 0, xn = tile ? (win ? cl.i1 - cl.i0 : cl.o1 - cl.o0) : -1;
      maps[k].map(v, win ? band_of(v, r.i0, r.i1 - r.i0, layer_of(op), from, count, x0, xn)
                         : band_of(v, o0, o1 - o0, layer_of(op), from, count, x0, xn));
    }
  }
  mlir::IRMapping chain;  // the group's results in this band
  Value prev;
  for (size_t k = 0; k < group.size(); ++k) {
    mlir::Operation* op = group[k];
    mlir::IRMapping map = maps[k];
    for (auto [from, to] : chain.getValueMap()) map.map(from, to);
    mlir::Operation* c = b_.clone(*op, map);
    auto d = band_dims(op->getResult(0));
    d[1] = o1 - o0, d[3] = n;
    if (tile) d[2] = cl.o1 - cl.o0;
    c->getResult(0).setType(mlir::RankedTensorType::get(d, mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType()).getElementType()));
    if (op == group.front() && mlir::isa<tpu::Conv2DOp, tpu::PoolOp, tpu::ZeroInsertOp>(op)) {
      auto pad = mlir::cast<mlir::DenseI64ArrayAttr>(op->getAttr("pad")).asArrayRef();
      c->setAttr("pad", b_.getDenseI64ArrayAttr({r.pad_top, r.pad_bottom, tile ? cl.pad_top : pad[2], tile ? cl.pad_bottom : pad[3]}));
    }
    if (auto conv = mlir::dyn_cast<tpu::Conv2DOp>(c); conv && n < C && conv.getGroups() != 1) conv.setGroups(n);  // depthwise: the band's channels
    if (auto conv = mlir::dyn_cast<tpu::Conv2DOp>(op); conv && k == 0) spread_band_macs(conv, mlir::cast<tpu::Conv2DOp>(c), r, cl, n);
    if (auto rz = mlir::dyn_cast<tpu::ResizeNearestOp>(op)) {  // the band's rows, from its first input row
      std::vector<int64_t> src;
      for (int64_t y = o0; y < o1; ++y) src.push_back(rz.getRows()[size_t(y)] - r.i0);
      c->setAttr("rows", b_.getDenseI64ArrayAttr(src));
    }
    auto shown = shown_dims_.find(op);  // the whole layer's shape
    c->setAttr(tpu::kBandAttr, b_.getDenseI64ArrayAttr(shown != shown_dims_.end() ? shown->second : band_dims(op->getResult(0))));
    inherit(c->getResult(0), op->getResult(0));
    chain.map(op->getResult(0), c->getResult(0));
    prev = c->getResult(0);
  }
  return prev;
}

void BandPlanner::rewrite(const std::vector<mlir::Operation*>& group, const BandShape& shape, Value* into, int64_t offset, int64_t step) {
  mlir::Operation* last = group.back();
  Value whole = last->getResult(0);
  auto out = band_dims(whole);
  const int64_t C = out[3], W = out[2], channels = shape.channels;
  const bool tile = shape.cols > 0 && shape.cols < W;  // bands of some columns too (band_tiles.cpp)
  const int64_t cols = tile ? shape.cols : W;
  std::string out_layer = layer_of(last);
  b_.setInsertionPoint(last);
  Value dest;
  if (into) {
    dest = *into;
  } else if (big(whole)) {
    dest = b_.create<tpu::HbmTensorOp>(whole.getLoc(), whole.getType(), text(out_layer));
    inherit(dest, whole);
  }
  auto joined = [&](std::vector<Value> parts, int64_t axis, std::vector<int64_t> shape) {
    if (parts.size() == 1) return parts[0];
    auto type = mlir::RankedTensorType::get(shape, mlir::cast<mlir::RankedTensorType>(whole.getType()).getElementType());
    Value r = b_.create<tpu::ConcatOp>(whole.getLoc(), type, parts, b_.getI64IntegerAttr(axis), text(out_layer)).getResult();
    r.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
    inherit(r, whole);
    return r;
  };
  std::vector<Value> row_parts;
  auto in = band_dims(group.front()->getOperand(0));
  for (auto [o0, o1] : bands(group, shape.rows)) {
    Rows r = band_input(group.front(), in[1], o0, o1);
    std::vector<Value> col_parts;
    for (int64_t x0 = 0; x0 < W; x0 += cols) {
      const int64_t x1 = std::min(W, x0 + cols);
      Rows cl = tile ? through(tile_window(group.front()), in[2], x0, x1) : Rows{x0, x1, 0, in[2], 0, 0};
      std::vector<Value> channel_parts;
      for (int64_t c0 = 0; c0 < C; c0 += channels) {
        Value prev = clone_band(group, r, cl, tile, c0, std::min(channels, C - c0));
        if (dest) {
          dest = b_.create<tpu::StoreRowsOp>(whole.getLoc(), dest.getType(), prev, dest, b_.getI64IntegerAttr(1),
                                             b_.getI64IntegerAttr(offset + o0 * step), text(out_layer), b_.getI64IntegerAttr(c0),
                                             b_.getI64IntegerAttr(step), b_.getI64IntegerAttr(tile ? x0 : 0));
          dest.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
          inherit(dest, whole);
        } else {
          channel_parts.push_back(prev);
        }
      }
      if (!dest) {
        auto d = out;
        d[1] = o1 - o0, d[2] = x1 - x0;
        col_parts.push_back(joined(channel_parts, 3, d));
      }
    }
    if (!dest) {
      auto d = out;
      d[1] = o1 - o0;
      row_parts.push_back(joined(col_parts, 2, d));
    }
  }
  Value result = dest ? dest : joined(row_parts, 1, out);
  if (into) *into = dest;
  if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(group.front()); z && dest && group.size() == 1)
    spreads_[result.getAsOpaquePointer()] = codegen::spread_axes(z);
  if (!dest && row_parts.size() == 1) inherit(result, whole);
  retire(group, result);
  if (dest) in_hbm_.insert(result.getAsOpaquePointer());
}

void BandPlanner::retire(const std::vector<mlir::Operation*>& group, Value by) {
  Value whole = group.back()->getResult(0);
  whole.replaceAllUsesWith(by);
  // The erased values' addresses may be reused by values made later: forget them.
  in_hbm_.erase(whole.getAsOpaquePointer());
  for (auto it = group.rbegin(); it != group.rend(); ++it) {
    scales_.erase((*it)->getResult(0).getAsOpaquePointer());
    (*it)->erase();
  }
}

// A pool over a whole image in HBM, in bands of its rows: each band pooled over its rows (a
// maximum, or an average weighted by its share of the rows, rows / H), the bands joined by
// max or add. The average is the same sum in another order.
void BandPlanner::rewrite_global_pool(tpu::PoolOp pool) {
  Value x = pool.getInput(), whole = pool.getOutput();
  auto d = band_dims(x);
  const int64_t H = d[1], C = d[3], lanes = int64_t(lanes_);
  const bool avg = pool.getKind() == "avg";
  const std::string layer = pool.getLayer().str();
  // Channels per band: all, or (second pass) as many lane blocks as one row of fits.
  int64_t channels = C;
  if (channels_ && ub_bytes(d, 1) > budget_ && C > lanes) {
    auto block = d;
    block[3] = lanes;
    channels = std::min(C, lanes * std::max<int64_t>(1, int64_t(budget_ / ub_bytes(block, 1))));
  }
  auto band = d;
  band[3] = channels;
  int64_t rows = std::max<int64_t>(1, std::min<int64_t>(H, int64_t(budget_ / std::max<uint64_t>(1, ub_bytes(band, 1)))));
  b_.setInsertionPoint(pool);
  std::vector<Value> parts;
  for (int64_t c0 = 0; c0 < C; c0 += channels) {
    const int64_t nc = std::min(channels, C - c0);
    auto out = band_dims(whole);
    out[3] = nc;
    auto type = mlir::RankedTensorType::get(out, mlir::cast<mlir::RankedTensorType>(whole.getType()).getElementType());
    Value acc;
    for (int64_t i0 = 0; i0 < H; i0 += rows) {
      int64_t n = std::min(rows, H - i0);
      mlir::IRMapping map;
      map.map(x, nc == C ? band_of(x, i0, n, layer) : band_of(x, i0, n, layer, c0, nc));
      auto c = mlir::cast<tpu::PoolOp>(b_.clone(*pool, map));
      c.getOutput().setType(type);
      c.setKernelAttr(b_.getDenseI64ArrayAttr({n, pool.getKernel()[1]}));
      c->setAttr(tpu::kBandAttr, b_.getDenseI64ArrayAttr(band_dims(whole)));
      inherit(c.getOutput(), whole);
      Value part = c.getOutput();
      if (avg && n != H) part = scaled_band(part, float(n) / float(H), pool.getLoc(), layer, whole);
      if (acc) {
        double inf = std::numeric_limits<double>::infinity();
        acc = avg ? b_.create<tpu::AddOp>(pool.getLoc(), type, acc, part, b_.getF64FloatAttr(-inf), b_.getF64FloatAttr(inf), text(layer)).getResult()
                  : b_.create<tpu::BinaryOp>(pool.getLoc(), type, acc, part, text("max"), text(layer)).getResult();
        acc.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
        inherit(acc, whole);
      } else {
        acc = part;
      }
    }
    parts.push_back(acc);
  }
  Value result = parts[0];
  if (parts.size() > 1) {
    result = b_.create<tpu::ConcatOp>(pool.getLoc(), whole.getType(), parts, b_.getI64IntegerAttr(3), text(layer)).getResult();
    result.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
    inherit(result, whole);
  }
  whole.replaceAllUsesWith(result);
  scales_.erase(whole.getAsOpaquePointer());
  pool->erase();
}

// x times `scale` on every channel (an affine step with one constant per channel), a band op
// with `like`'s INT8 scale: a band's share of an average over the image, or a concat's input
// rescaled to the concat's scale.
Value BandPlanner::scaled_band(Value x, float scale, mlir::Location loc, const std::string& layer, Value like) {
  const int64_t C = band_dims(x).back();
  auto per_channel = [&](float v) { return tpu::make_const(b_, loc, {C}, std::vector<float>(size_t(C), v)); };
  Value r = b_.create<tpu::AffineOp>(loc, x.getType(), x, per_channel(scale), per_channel(0.0f), text(layer));
  r.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
  inherit(r, like);
  return r;
}

// A concat of channels whose result lives in HBM: each input's rows stored straight into its
// channels of the result, as many rows at a time as the widest input fits in the budget, so
// the joined image is never in the unified buffer. INT8 inputs of another scale are first
// rescaled to the result's (an affine step of 1 and 0).
void BandPlanner::rewrite_concat(tpu::ConcatOp cat) {
  Value whole = cat.getOutput();
  auto out = band_dims(whole);
  const std::string layer = cat.getLayer().str();
  b_.setInsertionPoint(cat);
  Value dest = b_.create<tpu::HbmTensorOp>(cat.getLoc(), whole.getType(), text(layer));
  inherit(dest, whole);
  uint64_t widest = 1;
  for (Value v : cat.getInputs()) widest = std::max(widest, ub_bytes(band_dims(v), 1));
  const int64_t rows = std::clamp<int64_t>(int64_t(budget_ / widest), 1, out[1]);
  auto whole_scale = scales_.find(whole.getAsOpaquePointer());
  for (int64_t o0 = 0; o0 < out[1]; o0 += rows) {
    const int64_t n = std::min(rows, out[1] - o0);
    int64_t c0 = 0;
    for (Value v : cat.getInputs()) {
      auto d = band_dims(v);
      Value part = band_of(v, o0, n, layer);
      auto scale = scales_.find(v.getAsOpaquePointer());
      if (whole_scale != scales_.end() && scale != scales_.end() && scale->second != whole_scale->second)
        part = scaled_band(part, 1.0f, cat.getLoc(), layer, whole);
      dest = b_.create<tpu::StoreRowsOp>(cat.getLoc(), whole.getType(), part, dest, b_.getI64IntegerAttr(1), b_.getI64IntegerAttr(o0),
                                         text(layer), b_.getI64IntegerAttr(c0));
      // The layer's one row of the bounds, with its whole shape (codegen/bands.cpp).
      dest.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getDenseI64ArrayAttr(out));
      inherit(dest, whole);
      c0 += d[3];
    }
  }
  whole.replaceAllUsesWith(dest);
  in_hbm_.erase(whole.getAsOpaquePointer());
  in_hbm_.insert(dest.getAsOpaquePointer());
  scales_.erase(whole.getAsOpaquePointer());
  cat->erase();
}

// Whether every band of the group reads at least one row of its input (a band wholly in
// the padding below the image has nothing to load).
bool BandPlanner::bands_read_rows(const std::vector<mlir::Operation*>& group, int64_t rows) {
  int64_t in_rows = band_dims(group.front()->getOperand(0))[1];
  for (auto [o0, o1] : bands(group, rows)) {
    Rows r = band_input(group.front(), in_rows, o0, o1);
    if (r.i1 <= r.i0) return false;
  }
  return true;
}

size_t BandPlanner::run() {
  mlir::Block& body = fn_.getBody().front();
  if (!has_images(fn_)) return 0;
  // The groups: an op that runs in bands and the elementwise ops after it that only it feeds.
  std::vector<std::vector<mlir::Operation*>> groups;
  std::set<mlir::Operation*> grouped, spreads, phased;  // transposed convolutions in phases (band_subpixel.cpp)
  for (mlir::Operation& op : body)
    if (!grouped.count(&op) && bandable(&op)) {
      if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(&op); z && z.getOutput().hasOneUse())
        if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(*z.getOutput().getUsers().begin()); c && subpixel(c)) {
          spreads.insert(&op);  // no band of its own: the phases read its input
          continue;
        }
      groups.push_back(chain_from(&op, grouped));
      if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(&op); c && subpixel(c)) {
        cut_subpixel_group(groups.back());
        phased.insert(&op);
      }
      grouped.insert(groups.back().begin(), groups.back().end());
    }
  split_narrow_tails(groups);
  // Images too large for their share of the buffer live in HBM: model inputs (not returned
  // as they are), and the results of the groups.
  for (Value a : fn_.getArguments()) {
    bool returned = false;
    for (mlir::Operation* u : a.getUsers()) returned |= mlir::isa<mlir::func::ReturnOp>(u);
    if (one_image(a) && !a.use_empty() && !returned && too_big(a) && !phases_only_) in_hbm_.insert(a.getAsOpaquePointer());
  }
  for (auto& g : groups)
    if (phases_only_ ? phased.count(g.front()) != 0 : too_big(g.back()->getResult(0)))
      in_hbm_.insert(g.back()->getResult(0).getAsOpaquePointer());
  std::map<mlir::Operation*, size_t> group_at;  // a group by its last op, where it is rewritten
  for (size_t i = 0; i < groups.size(); ++i) group_at[groups[i].back()] = i;
  std::vector<mlir::Operation*> ops;  // a copy: rewriting adds and erases ops
  for (mlir::Operation& op : body) ops.push_back(&op);
  size_t banded = 0;
  std::vector<tpu::SliceOp> in_place;  // channel views (channel_view)
  for (mlir::Operation* op : ops) {
    if (auto g = group_at.find(op); g != group_at.end()) {
      const auto& group = groups[g->second];
      bool touches = big(group.back()->getResult(0));
      for (mlir::Operation* m : group)
        for (Value v : m->getOperands()) touches |= big(v);
      // A concat of channels into HBM: its inputs stored into their channels of the result.
      if (auto cat = mlir::dyn_cast<tpu::ConcatOp>(group[0]); channels_ && cat && group.size() == 1 && big(cat.getOutput())) {
        rewrite_concat(cat);
        ++banded;
        continue;
      }
      // A transposed convolution whose kernel is its stride: in phases of 1x1 convolutions.
      if (phased.count(group[0])) {
        rewrite_subpixel(group);
        ++banded;
        continue;
      }
      // A pool over a whole image in HBM: pooled band by band, the bands' results combined.
      if (group.size() == 1 && global_pool(group[0]) && big(group[0]->getOperand(0))) {
        rewrite_global_pool(mlir::cast<tpu::PoolOp>(group[0]));
        ++banded;
        continue;
      }
      if (touches && flat(group)) {
        rewrite_flat(group);
        ++banded;
        continue;
      }
      BandShape shape = touches ? band_shape(group) : BandShape{};
      if (touches && bands_read_rows(group, shape.rows)) {
        rewrite(group, shape);
        ++banded;
        continue;
      }
      // Not in bands: made whole in the unified buffer, its members' inputs loaded whole.
      in_hbm_.erase(group.back()->getResult(0).getAsOpaquePointer());
      for (mlir::Operation* m : group) load_whole(m);
      continue;
    }
    if (grouped.count(op) || spreads.count(op)) continue;  // an earlier member: its group's last op decides
    if (auto slice = mlir::dyn_cast<tpu::SliceOp>(op); slice && channels_ && channel_view(slice)) {
      in_place.push_back(slice);
      continue;
    }
    if (!mlir::isa<mlir::func::ReturnOp>(op)) load_whole(op);
  }
  // The channel slices read in place: their readers load the image's channels instead; each
  // stays, unread, so its layer is reported (with no work).
  for (tpu::SliceOp slice : in_place) {
    if (!slice.getOutput().use_empty()) throw InternalError(fmt::format("a channel slice '{}' read in place is still read", layer_of(slice)));
    slice->setAttr(tpu::kInPlaceAttr, b_.getUnitAttr());
  }
  return banded;
}

}  // namespace vtpu::compiler::bands

namespace vtpu::compiler {

bool has_images(mlir::func::FuncOp fn) {
  // An elementwise op of an image counts in a model that takes an image (not a transformer's
  // attention scores, which are 4-D too).
  bool image_input = false, images = false;
  for (mlir::Value a : fn.getArguments()) image_input |= bands::one_image(a);
  fn.walk([&](mlir::Operation* op) { images |= bands::windowed(op) || (image_input && bands::elementwise(op) && bands::bandable(op)); });
  return images;
}

size_t phases_through_hbm(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, std::map<const void*, float>& scales) {
  return bands::BandPlanner(fn, cfg, int8, cfg.core.unified_buffer.bytes, scales, false, true).run();
}

size_t split_into_bands(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget,
                        std::map<const void*, float>& scales, bool channels) {
  size_t split = bands::BandPlanner(fn, cfg, int8, budget, scales, channels).run();
  if (channels) split += split_matmul_rows(fn, cfg, int8, budget, scales);
  return split;
}

}  // namespace vtpu::compiler
