// Row bands through HBM (docs/compiler.md, "Activations larger than the unified buffer"): the
// band planner (compiler/pipeline/bands.cpp) decided which images live in HBM and split the
// layers that touch them into bands; here their loads and stores are printed. An image in HBM
// is row-major [rows, channels] like a model input, so a band of rows is one contiguous piece
// and load_act/store_act move it in the blocked layout.
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

namespace {

// Byte offset of row `start` of dimension `axis` (every dimension before it 1), at channel
// `channel` of the last dimension (and column `col` of an image's rows), in a row-major tensor
// of `shape` with `esz`-byte elements.
uint64_t rows_offset(const std::vector<int64_t>& shape, int64_t axis, int64_t start, int64_t channel, uint64_t esz, int64_t col = 0) {
  uint64_t inner = 1;
  for (size_t d = size_t(axis) + 1; d < shape.size(); ++d) inner *= uint64_t(shape[d]);
  return (uint64_t(start) * inner + uint64_t(col) * uint64_t(shape.back()) + uint64_t(channel)) * esz;
}

// The HBM bytes from one image row of a band to the next when they are not consecutive: rows
// `step` apart (a transposed convolution's phase), or a tile's rows (some of the columns); 0
// when they are.
uint64_t row_pitch(const std::vector<int64_t>& whole, const std::vector<int64_t>& band, int64_t axis, int64_t step, uint64_t esz) {
  const bool tile = whole.size() == 4 && band.size() == 4 && band[2] < whole[2];
  return step > 1 || tile ? rows_offset(whole, axis, step, 0, esz) : 0;
}

}  // namespace

// A band between HBM (row-major at `hbm`) and the unified buffer (`a`, blocked): like
// load_act/store_act, but the addresses go in registers r1 (HBM) and r2 (unified buffer),
// stepped block by block in the bundle of each block's transfer, so all the full blocks of a
// band share one descriptor and every band of a layer shares it (the table holds 4096).
// `hbm_row_bytes`: the HBM tensor's bytes per row when the band holds some of its channels
// only (0: the band's own). `image_row_pitch`: the HBM bytes from one image row (dimension 1
// of the band, a.shape[2] pixels) to the next when they are not consecutive (row_pitch); 0:
// consecutive.
void Codegen::move_rows(const Act& a, uint64_t hbm, bool load, uint64_t hbm_row_bytes, uint64_t image_row_pitch) {
  if (hbm > uint64_t(INT32_MAX) || a.base + a.bytes() > uint64_t(INT32_MAX)) {
    if (image_row_pitch)
      throw CompileError(fmt::format("a band of an image in HBM whose rows are apart lies past 2 GiB of HBM (at {}); "
                                     "use a chip with a larger unified buffer, or a smaller input",
                                     hbm));
    return load ? load_act(a, hbm, hbm_row_bytes) : store_act(a, hbm, hbm_row_bytes);
  }
  if (!hbm_row_bytes) hbm_row_bytes = a.features * esz_;
  if (load) clear_partial_blocks(a);
  code("  " + emit::addi(reg(1), hbm_base(hbm), int64_t(hbm)));
  code("  " + emit::li(reg(2), int64_t(a.base)));
  const uint64_t W = a.shape.size() == 4 ? uint64_t(a.shape[2]) : 1, H = a.rows / std::max<uint64_t>(1, W);
  for (uint64_t b = 0; b < a.blocks; ++b) {
    uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
    // Strides of a pixel and of an image row in HBM and in the unified buffer, source first.
    auto dim = [&](uint64_t count, uint64_t hbm_stride, uint64_t ub_stride) {
      return fmt::format(" dim=[{}, {}, {}]", count, load ? hbm_stride : ub_stride, load ? ub_stride : hbm_stride);
    };
    std::string d = new_desc(fmt::format("bytes={} src_off=0 dst_off=0", fw * esz_) +
                             (image_row_pitch ? dim(W, hbm_row_bytes, R_ * esz_) + dim(H, image_row_pitch, W * R_ * esz_)
                                              : dim(a.rows, hbm_row_bytes, R_ * esz_)));
    std::string move = load ? emit::dma_load({d}, reg(1), reg(2), emit::flag(1)) : emit::dma_store({d}, reg(2), reg(1), emit::flag(1));
    if (b + 1 == a.blocks) code("  " + move);
    else code(bundle({move, emit::addi(reg(1), reg(1), int64_t(R_ * esz_)), emit::addi(reg(2), reg(2), int64_t(a.block_bytes))}));
  }
  if (a.blocks) code("  " + emit::wait(emit::flag(1), a.blocks));
}

uint64_t Codegen::hbm_act(Value v, const std::string& layer) const {
  auto it = hbm_acts_.find(v.getAsOpaquePointer());
  if (it == hbm_acts_.end()) throw InternalError(fmt::format("node '{}': rows loaded from an image that is not in HBM", layer));
  return it->second;
}

// An image kept in HBM: the output tensor's own bytes when the model returns it (its last
// store's result), so no copy is needed; else HBM of its own.
void Codegen::gen_hbm_tensor(tpu::HbmTensorOp op) {
  Value last = op.getOutput();
  for (bool more = true; more;) {
    more = false;
    for (mlir::Operation* u : last.getUsers())
      if (auto s = mlir::dyn_cast<tpu::StoreRowsOp>(u); s && s.getDest() == last) {
        last = s.getOutput(), more = true;
        break;
      }
  }
  uint64_t bytes = numel(shape_of(last)) * esz_;
  auto fn = op->getParentOfType<mlir::func::FuncOp>();
  // The image and its reshapes (a flat view of a narrow image, pipeline/bands.cpp): the same bytes.
  std::vector<Value> views{last};
  for (size_t k = 0; k < views.size(); ++k)
    for (mlir::Operation* u : views[k].getUsers())
      if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(u)) views.push_back(r.getOutput());
  for (Value v : views)
    for (mlir::OpOperand& use : v.getUses())
      if (mlir::isa<mlir::func::ReturnOp>(use.getOwner())) {
        unsigned i = use.getOperandNumber();
        uint64_t addr = io_alloc(bytes, fn.getResultAttrOfType<mlir::StringAttr>(i, "vtpu.name").str());
        hbm_outputs_[i] = addr;
        hbm_acts_[op.getOutput().getAsOpaquePointer()] = addr;
        return;
      }
  size_t readers = 0;
  for (Value v : views)
    for (mlir::Operation* u : v.getUsers()) readers += mlir::isa<tpu::LoadRowsOp>(u);
  const uint64_t span = align_up(bytes, hbm_align_);
  uint64_t at = 0;
  auto fit = reuse_hbm_ ? std::find_if(hbm_free_.begin(), hbm_free_.end(), [&](const auto& f) { return f.second >= span; })
                        : hbm_free_.end();
  if (fit != hbm_free_.end()) {  // first fit among the images read for the last time
    at = fit->first;
    uint64_t left = fit->second - span;
    hbm_free_.erase(fit);
    if (left) hbm_free_[at + span] = left;
  } else {
    at = hbm_alloc(bytes);
  }
  if (reuse_hbm_ && readers) hbm_readers_[at] = {span, readers};
  hbm_acts_[op.getOutput().getAsOpaquePointer()] = at;
}

// A reshape of an image in HBM (a narrow image seen flat, pipeline/bands.cpp): the same
// row-major bytes, nothing moves.
bool Codegen::gen_hbm_reshape(tpu::ReshapeOp op) {
  auto it = hbm_acts_.find(op.getInput().getAsOpaquePointer());
  if (it == hbm_acts_.end()) return false;
  hbm_acts_[op.getOutput().getAsOpaquePointer()] = it->second;
  return true;
}

// Whether a model input's user reads it from HBM in bands: a band's load, or a reshape
// (a flat view) only bands' loads read; or does not read it at all (an op kept in place,
// tpu::kInPlaceAttr).
bool reads_rows(mlir::Operation* user) {
  if (mlir::isa<tpu::LoadRowsOp>(user) || user->hasAttr(tpu::kInPlaceAttr)) return true;
  auto r = mlir::dyn_cast<tpu::ReshapeOp>(user);
  if (!r || r.getOutput().use_empty()) return false;
  for (mlir::Operation* u : r.getOutput().getUsers())
    if (!mlir::isa<tpu::LoadRowsOp>(u)) return false;
  return true;
}

void Codegen::gen_store_rows(tpu::StoreRowsOp op) {
  std::string layer = op.getLayer().str();
  uint64_t at = hbm_act(op.getDest(), layer);
  const Act& band = act(op.getBand());
  tag(layer);
  auto whole = shape_of(op.getDest());
  // With a row step (a transposed convolution's phase, pipeline/band_subpixel.cpp): the band's
  // image rows `step` rows of the tensor apart; a tile's (pipeline/band_tiles.cpp) a whole row.
  const int64_t step = int64_t(op.getRowStep());
  uint64_t pitch = row_pitch(whole, band.shape, op.getAxis(), step, esz_);
  if (pitch && (op.getAxis() != 1 || whole.size() != 4))
    throw InternalError(fmt::format("node '{}': rows apart along dimension {} of a rank-{} tensor", layer, op.getAxis(), whole.size()));
  move_rows(band, at + rows_offset(whole, op.getAxis(), int64_t(op.getStart()), int64_t(op.getChannelStart()), esz_, int64_t(op.getColStart())),
            false, uint64_t(whole.back()) * esz_, pitch);
  band_bytes_[layer] += band.rows * band.features * esz_;
  hbm_acts_[op.getOutput().getAsOpaquePointer()] = at;
  // A store that is itself its layer's work (a concat of channels into HBM) makes the layer's
  // row of the bounds, merged over its stores.
  if (op->getAttrOfType<mlir::DenseI64ArrayAttr>(tpu::kBandAttr)) add_bound(layer, 0, 0);
}

void Codegen::gen_load_rows(tpu::LoadRowsOp op) {
  std::string layer = op.getLayer().str();
  uint64_t at = hbm_act(op.getInput(), layer);
  auto whole = shape_of(op.getInput());
  const uint64_t from =
      at + rows_offset(whole, op.getAxis(), int64_t(op.getStart()), int64_t(op.getChannelStart()), esz_, int64_t(op.getColStart()));
  // Rows of a model input that packed convolutions read straight from HBM (conv_packed.cpp,
  // packed_view): nothing moves here.
  bool view = !op.getOutput().use_empty();
  for (mlir::Operation* u : op.getOutput().getUsers()) view &= mlir::isa<tpu::Conv2DOp>(u) && conv_form(u) == "packed";
  if (view) {
    input_hbm_[op.getOutput().getAsOpaquePointer()] = from;
    return;
  }
  tag(layer);
  Act a = new_act(shape_of(op.getOutput()), fmt::format("rows of the input of '{}'", layer));
  move_rows(a, from, true, uint64_t(whole.back()) * esz_, row_pitch(whole, a.shape, op.getAxis(), 1, esz_));
  band_bytes_[layer] += a.rows * a.features * esz_;
  define(op.getOutput(), a);
  // The image's last band read (and waited for): its bytes for the images made after it.
  if (auto r = hbm_readers_.find(at); r != hbm_readers_.end() && --r->second.second == 0) {
    hbm_free_[at] = r->second.first;
    hbm_readers_.erase(r);
  }
}

// A model output whose image is in HBM at `from` but not in the output's own bytes (the model
// returns it twice): copied through the unified buffer, as many rows at a time as fit.
void Codegen::copy_hbm_rows(uint64_t from, uint64_t to, const std::vector<int64_t>& shape) {
  uint64_t features = shape.empty() ? 1 : uint64_t(shape.back()), rows = numel(shape) / features;
  uint64_t row_ub = ceil_div(features, R_) * R_ * esz_;
  uint64_t step = std::max<uint64_t>(1, std::min(rows, ub_.largest_free() / 2 / row_ub));
  for (uint64_t r0 = 0; r0 < rows; r0 += step) {
    uint64_t n = std::min(step, rows - r0);
    Act a = new_act({int64_t(n), int64_t(features)}, "a copy of an output");
    move_rows(a, from + r0 * features * esz_, true);
    move_rows(a, to + r0 * features * esz_, false);
    ub_.release(a.base);
  }
}

// The bounds of a layer run in bands as one row: its bands' rows summed (with the bytes of
// the loads and stores around them), its whole shape, and the limits computed again.
void Codegen::merge_band_bounds() {
  if (band_shapes_.empty() && band_bytes_.empty()) return;
  std::vector<LayerBound> merged;
  std::map<std::string, size_t> at;  // by band_key
  // A band's other rows (its loads, slices, joins) go with the layer's first banded op.
  std::map<std::string, std::string> first_op;
  for (const LayerBound& b : bounds_)
    if (band_shapes_.count(band_key(b.layer, b.op))) first_op.emplace(b.layer, b.op);
  std::set<size_t> own;  // rows kept apart (own_rows_)
  for (LayerBound& b : bounds_) {
    if (own_rows_.count(band_key(b.layer, b.op))) {
      own.insert(merged.size());
      merged.push_back(std::move(b));
      continue;
    }
    auto op = first_op.find(b.layer);
    auto whole = op == first_op.end() ? band_shapes_.end()
                 : band_shapes_.count(band_key(b.layer, b.op)) ? band_shapes_.find(band_key(b.layer, b.op))
                                                                : band_shapes_.find(band_key(b.layer, op->second));
    if (whole == band_shapes_.end()) {
      merged.push_back(std::move(b));
      continue;
    }
    auto [it, first] = at.emplace(whole->first, merged.size());
    if (first) {  // the banded op's row, wherever its first band's slice or load was
      merged.push_back(std::move(b));
      merged.back().shape = whole->second;
      merged.back().op = whole->first.substr(whole->first.find('\x1f') + 1);
      continue;
    }
    LayerBound& m = merged[it->second];
    m.macs += b.macs, m.hbm_bytes += b.hbm_bytes, m.weight_tiles += b.weight_tiles;
  }
  // The loads and stores: the bytes of the layer they serve (a layer that reads an image in
  // HBM whole too).
  std::set<size_t> changed;
  for (auto& [key, i] : at) changed.insert(i);
  for (auto& [layer, bytes] : band_bytes_)
    for (size_t i = 0; i < merged.size(); ++i)
      if (merged[i].layer == layer && !own.count(i)) {
        merged[i].hbm_bytes += bytes;
        changed.insert(i);
        break;
      }
  for (size_t i : changed) set_limits(merged[i]);
  bounds_ = std::move(merged);
}

}  // namespace vtpu::compiler::codegen
