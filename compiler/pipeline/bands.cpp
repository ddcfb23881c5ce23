// Activations larger than the unified buffer (docs/compiler.md, "Activations larger than the
// unified buffer"): when one sample's activations do not fit, the images too large for the
// buffer are kept in HBM (tpu.hbm_tensor, row-major like a model input) and the layers that
// read or write them run in bands of output rows: each band loads the input rows it needs,
// halo included (tpu.load_rows), runs the layer on them with the padding of the image's edges
// only, and writes its rows to HBM (tpu.store_rows) or joins the others (tpu.concat) when the
// result is small. A transposed convolution's spread input (tpu.zero_insert) runs in bands
// too: a band's input rows are those its stride puts in it, the zeros around them its padding.
// A pool over a whole image runs band by band, the bands' results combined; a one-row gate
// broadcast over an image's rows feeds every band. A convolution or pool runs together with
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

#include "dialect/attr_names.h"
#include "dialect/tpu_dialect.h"
#include "mlir/Dialect/Tosa/IR/TosaOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "pipeline/pipeline.h"
#include "transforms/tosa_utils.h"

namespace vtpu::compiler {
namespace {

using mlir::Value;

std::vector<int64_t> band_dims(Value v) {
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  return {t.getShape().begin(), t.getShape().end()};
}

// An NHWC image of one sample in a float type: what runs in bands of rows (dimension 1).
bool one_image(Value v) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(v.getType());
  return t && t.getRank() == 4 && t.getShape()[0] == 1 && t.getShape()[1] > 0 && mlir::isa<mlir::FloatType>(t.getElementType());
}

// What sets the rows of a band's input: a convolution's or pool's window along H.
struct Window {
  int64_t kernel = 1, stride = 1, dilation = 1, pad_top = 0;
};

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

bool bandable(mlir::Operation* op) {
  if (op->getNumResults() != 1 || !one_image(op->getResult(0)) || !window_of(op)) return false;
  if (auto c = mlir::dyn_cast<tpu::Conv2DOp>(op))  // weights computed at run time are not cut in bands
    if (!c.getWeight().getDefiningOp<mlir::tosa::ConstOp>() || !c.getBias().getDefiningOp<mlir::tosa::ConstOp>()) return false;
  for (Value v : op->getOperands())
    if (!v.getDefiningOp<mlir::tosa::ConstOp>() && !one_image(v)) return false;
  return true;
}

// A band of output rows [o0, o1) of an op: the input rows [i0, i1) it reads and the padding
// above and below them (the image's own edges only).
struct Rows {
  int64_t o0 = 0, o1 = 0, i0 = 0, i1 = 0, pad_top = 0, pad_bottom = 0;
};

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
  Window w = *window_of(op);
  int64_t first = o0 * w.stride - w.pad_top, last = (o1 - 1) * w.stride - w.pad_top + (w.kernel - 1) * w.dilation;
  Rows r{o0, o1, std::max<int64_t>(0, first), std::min(in_rows - 1, last) + 1, 0, 0};
  r.pad_top = r.i0 - first, r.pad_bottom = last + 1 - r.i1;
  return r;
}

class BandPlanner {
 public:
  BandPlanner(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget, std::map<const void*, float>& scales)
      : fn_(fn), b_(fn.getContext()), lanes_(cfg.core.mxu.rows), esz_(int8 ? 1 : 2), budget_(budget), scales_(scales) {}

  size_t run();

 private:
  // A layer's unified-buffer bytes for `rows` rows of an image of dims d (codegen's Act).
  uint64_t ub_bytes(const std::vector<int64_t>& d, int64_t rows) const {
    uint64_t blocks = (uint64_t(d[3]) + lanes_ - 1) / lanes_;
    return blocks * ((uint64_t(rows * d[2]) * lanes_ * esz_ + 63) / 64 * 64);
  }
  bool big(Value v) const { return in_hbm_.count(v.getAsOpaquePointer()) > 0; }
  std::vector<mlir::Operation*> chain_from(mlir::Operation* op, const std::set<mlir::Operation*>& grouped);
  int64_t band_rows(const std::vector<mlir::Operation*>& group);
  void rewrite_global_pool(tpu::PoolOp pool);
  std::vector<std::pair<int64_t, int64_t>> bands(const std::vector<mlir::Operation*>& group, int64_t rows);
  // Any other reader of an image in HBM loads it whole, just before it.
  void load_whole(mlir::Operation* op) {
    b_.setInsertionPoint(op);
    for (mlir::OpOperand& use : op->getOpOperands())
      if (big(use.get())) use.set(band_of(use.get(), 0, band_dims(use.get())[1], layer_of(op)));
  }
  bool bands_read_rows(const std::vector<mlir::Operation*>& group, int64_t rows);
  void rewrite(const std::vector<mlir::Operation*>& group, int64_t rows);
  Value band_of(Value v, int64_t start, int64_t rows, const std::string& layer);
  void inherit(Value to, Value from) {
    if (auto s = scales_.find(from.getAsOpaquePointer()); s != scales_.end()) scales_[to.getAsOpaquePointer()] = s->second;
  }
  mlir::StringAttr text(const std::string& s) { return b_.getStringAttr(s); }

  mlir::func::FuncOp fn_;
  mlir::OpBuilder b_;
  uint64_t lanes_, esz_, budget_;
  std::map<const void*, float>& scales_;
  std::set<const void*> in_hbm_;
};

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

namespace {

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

}  // namespace

// Output rows per band: the most whose loads, outputs and a padded copy of the input fit
// the budget (at least one).
int64_t BandPlanner::band_rows(const std::vector<mlir::Operation*>& group) {
  auto out = band_dims(group.back()->getResult(0));
  Window w = *window_of(group.front());
  auto need = [&](int64_t h) {
    uint64_t bytes = 2 * ub_bytes(out, h);
    for (mlir::Operation* op : group)
      for (Value v : op->getOperands()) {
        if (v.getDefiningOp<mlir::tosa::ConstOp>() || in_group(group, v)) continue;
        auto d = band_dims(v);
        bool win = op == group.front() && windowed(op);
        int64_t in_rows = win ? (h - 1) * w.stride + (w.kernel - 1) * w.dilation + 1 : h;
        if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(op)) in_rows = h / z.getStride()[0] + 1;
        bytes += (win && w.kernel > 1 ? 2 : 1) * ub_bytes(d, std::min(in_rows, d[1]));
      }
    return bytes;
  };
  int64_t lo = 1, hi = out[1];
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (need(mid) <= budget_) lo = mid;
    else hi = mid - 1;
  }
  // A spread's band holds at least one input row: at least `stride` rows.
  if (auto z = mlir::dyn_cast<tpu::ZeroInsertOp>(group.front())) lo = std::min(out[1], std::max(lo, z.getStride()[0]));
  return lo;
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

// Band `start` (rows of dimension 1) of v: loaded from HBM, or a slice of it in the unified buffer.
Value BandPlanner::band_of(Value v, int64_t start, int64_t rows, const std::string& layer) {
  auto d = band_dims(v);
  if (start == 0 && rows == d[1] && !big(v)) return v;
  auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
  d[1] = rows;
  auto type = mlir::RankedTensorType::get(d, t.getElementType());
  Value r;
  if (big(v))
    r = b_.create<tpu::LoadRowsOp>(v.getLoc(), type, v, b_.getI64IntegerAttr(1), b_.getI64IntegerAttr(start), text(layer));
  else
    r = b_.create<tpu::SliceOp>(v.getLoc(), type, v, b_.getDenseI64ArrayAttr({0, start, 0, 0}), text(layer));
  r.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
  inherit(r, v);
  return r;
}

void BandPlanner::rewrite(const std::vector<mlir::Operation*>& group, int64_t rows) {
  mlir::Operation* last = group.back();
  Value whole = last->getResult(0);
  auto out = band_dims(whole);
  std::string out_layer = layer_of(last);
  b_.setInsertionPoint(last);
  Value dest;
  if (big(whole)) {
    dest = b_.create<tpu::HbmTensorOp>(whole.getLoc(), whole.getType(), text(out_layer));
    inherit(dest, whole);
  }
  std::vector<Value> parts;
  int64_t in_rows = band_dims(group.front()->getOperand(0))[1];
  for (auto [o0, o1] : bands(group, rows)) {
    Rows r = band_input(group.front(), in_rows, o0, o1);
    // Every op's band inputs first (as the whole ops had theirs before the group), so a
    // residual add planned into the convolution's epilogues finds its other operand there.
    std::vector<mlir::IRMapping> maps(group.size());
    for (size_t k = 0; k < group.size(); ++k) {
      mlir::Operation* op = group[k];
      for (Value v : op->getOperands()) {
        if (v.getDefiningOp<mlir::tosa::ConstOp>() || in_group(group, v) || maps[k].contains(v)) continue;
        bool win = k == 0 && windowed(op);
        maps[k].map(v, win ? band_of(v, r.i0, r.i1 - r.i0, layer_of(op)) : band_of(v, o0, o1 - o0, layer_of(op)));
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
      d[1] = o1 - o0;
      c->getResult(0).setType(mlir::RankedTensorType::get(d, mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType()).getElementType()));
      if (op == group.front() && mlir::isa<tpu::Conv2DOp, tpu::PoolOp, tpu::ZeroInsertOp>(op)) {
        auto pad = mlir::cast<mlir::DenseI64ArrayAttr>(op->getAttr("pad")).asArrayRef();
        c->setAttr("pad", b_.getDenseI64ArrayAttr({r.pad_top, r.pad_bottom, pad[2], pad[3]}));
      }
      if (auto rz = mlir::dyn_cast<tpu::ResizeNearestOp>(op)) {  // the band's rows, from its first input row
        std::vector<int64_t> src;
        for (int64_t y = o0; y < o1; ++y) src.push_back(rz.getRows()[size_t(y)] - r.i0);
        c->setAttr("rows", b_.getDenseI64ArrayAttr(src));
      }
      c->setAttr(tpu::kBandAttr, b_.getDenseI64ArrayAttr(band_dims(op->getResult(0))));  // the whole layer's shape
      inherit(c->getResult(0), op->getResult(0));
      chain.map(op->getResult(0), c->getResult(0));
      prev = c->getResult(0);
    }
    if (dest) {
      dest = b_.create<tpu::StoreRowsOp>(whole.getLoc(), whole.getType(), prev, dest, b_.getI64IntegerAttr(1),
                                         b_.getI64IntegerAttr(o0), text(out_layer));
      dest.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
      inherit(dest, whole);
    } else {
      parts.push_back(prev);
    }
  }
  Value result = dest;
  if (!dest) {
    result = parts.size() == 1 ? parts[0] : b_.create<tpu::ConcatOp>(whole.getLoc(), whole.getType(), parts, b_.getI64IntegerAttr(1), text(out_layer)).getResult();
    if (parts.size() > 1) result.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
    inherit(result, whole);
  }
  whole.replaceAllUsesWith(result);
  // The erased values' addresses may be reused by values made later: forget them.
  in_hbm_.erase(whole.getAsOpaquePointer());
  if (dest) in_hbm_.insert(result.getAsOpaquePointer());
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
  const int64_t H = d[1], C = d[3];
  const bool avg = pool.getKind() == "avg";
  const std::string layer = pool.getLayer().str();
  int64_t rows = std::max<int64_t>(1, std::min<int64_t>(H, int64_t(budget_ / std::max<uint64_t>(1, ub_bytes(d, 1)))));
  b_.setInsertionPoint(pool);
  Value acc;
  for (int64_t i0 = 0; i0 < H; i0 += rows) {
    int64_t n = std::min(rows, H - i0);
    mlir::IRMapping map;
    map.map(x, band_of(x, i0, n, layer));
    auto c = mlir::cast<tpu::PoolOp>(b_.clone(*pool, map));
    c.setKernelAttr(b_.getDenseI64ArrayAttr({n, pool.getKernel()[1]}));
    c->setAttr(tpu::kBandAttr, b_.getDenseI64ArrayAttr(band_dims(whole)));
    inherit(c.getOutput(), whole);
    Value part = c.getOutput();
    if (avg && n != H) {
      auto per_channel = [&](float v) { return tpu::make_const(b_, pool.getLoc(), {C}, std::vector<float>(size_t(C), v)); };
      part = b_.create<tpu::AffineOp>(pool.getLoc(), whole.getType(), part, per_channel(float(n) / float(H)), per_channel(0.0f),
                                      text(layer));
      part.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
      inherit(part, whole);
    }
    if (acc) {
      double inf = std::numeric_limits<double>::infinity();
      acc = avg ? b_.create<tpu::AddOp>(pool.getLoc(), whole.getType(), acc, part, b_.getF64FloatAttr(-inf), b_.getF64FloatAttr(inf), text(layer)).getResult()
                : b_.create<tpu::BinaryOp>(pool.getLoc(), whole.getType(), acc, part, text("max"), text(layer)).getResult();
      acc.getDefiningOp()->setAttr(tpu::kBandAttr, b_.getUnitAttr());
      inherit(acc, whole);
    } else {
      acc = part;
    }
  }
  whole.replaceAllUsesWith(acc);
  scales_.erase(whole.getAsOpaquePointer());
  pool->erase();
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
  auto too_big = [&](Value v) { return ub_bytes(band_dims(v), band_dims(v)[1]) > budget_ / 2; };
  // The groups: an op that runs in bands and the elementwise ops after it that only it feeds.
  std::vector<std::vector<mlir::Operation*>> groups;
  std::set<mlir::Operation*> grouped;
  for (mlir::Operation& op : body)
    if (!grouped.count(&op) && bandable(&op)) {
      groups.push_back(chain_from(&op, grouped));
      grouped.insert(groups.back().begin(), groups.back().end());
    }
  // Images too large for their share of the buffer live in HBM: model inputs (not returned
  // as they are), and the results of the groups.
  for (Value a : fn_.getArguments()) {
    bool returned = false;
    for (mlir::Operation* u : a.getUsers()) returned |= mlir::isa<mlir::func::ReturnOp>(u);
    if (one_image(a) && !a.use_empty() && !returned && too_big(a)) in_hbm_.insert(a.getAsOpaquePointer());
  }
  for (auto& g : groups)
    if (too_big(g.back()->getResult(0))) in_hbm_.insert(g.back()->getResult(0).getAsOpaquePointer());
  std::map<mlir::Operation*, size_t> group_at;  // a group by its last op, where it is rewritten
  for (size_t i = 0; i < groups.size(); ++i) group_at[groups[i].back()] = i;
  std::vector<mlir::Operation*> ops;  // a copy: rewriting adds and erases ops
  for (mlir::Operation& op : body) ops.push_back(&op);
  size_t banded = 0;
  for (mlir::Operation* op : ops) {
    if (auto g = group_at.find(op); g != group_at.end()) {
      const auto& group = groups[g->second];
      bool touches = big(group.back()->getResult(0));
      for (mlir::Operation* m : group)
        for (Value v : m->getOperands()) touches |= big(v);
      // A pool over a whole image in HBM: pooled band by band, the bands' results combined.
      if (group.size() == 1 && global_pool(group[0]) && big(group[0]->getOperand(0))) {
        rewrite_global_pool(mlir::cast<tpu::PoolOp>(group[0]));
        ++banded;
        continue;
      }
      int64_t rows = touches ? band_rows(group) : 0;
      if (touches && bands_read_rows(group, rows)) {
        rewrite(group, rows);
        ++banded;
        continue;
      }
      // Not in bands: made whole in the unified buffer, its members' inputs loaded whole.
      in_hbm_.erase(group.back()->getResult(0).getAsOpaquePointer());
      for (mlir::Operation* m : group) load_whole(m);
      continue;
    }
    if (grouped.count(op)) continue;  // an earlier member: its group's last op decides
    if (!mlir::isa<mlir::func::ReturnOp>(op)) load_whole(op);
  }
  return banded;
}

}  // namespace

bool has_images(mlir::func::FuncOp fn) {
  bool images = false;
  fn.walk([&](mlir::Operation* op) { images |= windowed(op); });
  return images;
}

size_t split_into_bands(mlir::func::FuncOp fn, const config::Config& cfg, bool int8, uint64_t budget,
                        std::map<const void*, float>& scales) {
  return BandPlanner(fn, cfg, int8, budget, scales).run();
}

}  // namespace vtpu::compiler
