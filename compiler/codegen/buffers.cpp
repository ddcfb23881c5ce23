// Buffers and liveness: unified-buffer allocation of activations, uses, release (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Temporaries (work rows, padded or packed copies) come from the top of the buffer and
// activations from the bottom, so freeing a temporary leaves one hole, not a scattering.
std::optional<uint64_t> UbAllocator::alloc_high(uint64_t bytes) {
  bytes = align_up(std::max<uint64_t>(bytes, 1), align_);
  // As high as the operations' 24-bit address offsets reach from r0 first (a unified buffer
  // above 16 MiB), so a temporary needs no register loaded before each use; else the top.
  const uint64_t reach = std::min<uint64_t>(cap_, kMaxOffset + 1);
  for (int pass = 0; pass < (cap_ > reach ? 2 : 1); ++pass)  // the top again only when it is higher
    for (auto it = free_.rbegin(); it != free_.rend(); ++it) {
      const uint64_t top = pass ? cap_ : reach;
      uint64_t start = it->first, end = std::min(start + it->second, top);
      if (end < start + bytes) continue;
      uint64_t at = end - bytes;
      uint64_t size = it->second;
      free_.erase(start);
      if (at > start) free_[start] = at - start;
      if (start + size > at + bytes) free_[at + bytes] = start + size - at - bytes;
      used_[at] = bytes;
      high_ = std::max(high_, at + bytes);
      return at;
    }
  return std::nullopt;
}

std::optional<uint64_t> UbAllocator::alloc(uint64_t bytes) {
  bytes = align_up(std::max<uint64_t>(bytes, 1), align_);
  // Best fit: the smallest hole that holds it, so large holes stay whole for large tensors;
  // first among the holes that hold it within the operations' 24-bit reach from r0 (a
  // unified buffer above 16 MiB), so its uses need no register loaded before each.
  const uint64_t reach = std::min<uint64_t>(cap_, kMaxOffset + 1);
  auto best = free_.end();
  for (int pass = 0; pass < (cap_ > reach ? 2 : 1) && best == free_.end(); ++pass)
    for (auto it = free_.begin(); it != free_.end(); ++it)
      if (it->second >= bytes && (pass || it->first + bytes <= reach) && (best == free_.end() || it->second < best->second))
        best = it;
  if (best == free_.end()) return std::nullopt;
  uint64_t at = best->first, left = best->second - bytes;
  free_.erase(best);
  if (left) free_[at + bytes] = left;
  used_[at] = bytes;
  high_ = std::max(high_, at + bytes);
  return at;
}

// Frees the allocation that holds `at` (an activation may start past its allocation's
// first byte, see Codegen::new_act).
void UbAllocator::release(uint64_t at) {
  auto u = used_.upper_bound(at);
  if (u == used_.begin()) return;
  --u;
  if (at >= u->first + u->second) return;
  at = u->first;
  uint64_t n = u->second;
  used_.erase(u);
  auto [it, ok] = free_.emplace(at, n);
  auto next = std::next(it);
  if (next != free_.end() && it->first + it->second == next->first) it->second += next->second, free_.erase(next);
  if (it != free_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) prev->second += it->second, free_.erase(it);
  }
}

uint64_t UbAllocator::in_use() const {
  uint64_t n = 0;
  for (auto& [a, b] : used_) n += b;
  return n;
}

uint64_t UbAllocator::largest_free() const {
  uint64_t m = 0;
  for (auto& [a, n] : free_) m = std::max(m, n);
  return m;
}

// An fp32 twin of `a` (same rows and lane blocks, 4-byte elements) in new unified-buffer
// space: `a` converted (then scaled by `rescale`, for INT8 inputs), or zeros if !convert.
Act Codegen::fp32_twin(const Act& a, const std::string& layer, const std::string& what, bool convert,
              std::optional<double> rescale) {
  Act t = a;
  t.block_bytes = align_up(a.rows * R_ * 4, block_align_);
  t.base = ub_take(t.bytes(), fmt::format("the fp32 {} of '{}'", what, layer));
  if (!convert) {
    clear(t.base, t.bytes());  // padding lanes stay zero
    return t;
  }
  std::string p = rescale ? new_param(fmt::format("scale=[{}]", *rescale)) : "";
  for (uint64_t blk = 0; blk < a.blocks; ++blk)
    in_vector_pieces(a.rows, [&](uint64_t r0, uint64_t n) {
      code(bundle({emit::li(reg(1), int64_t(a.base + blk * a.block_bytes + r0 * R_ * esz_)),
                   emit::li(reg(2), int64_t(t.base + blk * t.block_bytes + r0 * R_ * 4))}));
      vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), n, dtype_, isa::Dtype::Fp32));
      if (rescale) vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), n, isa::Dtype::Fp32, emit::Param{p}));
    });
  return t;
}

// Converts an fp32 twin back into `a` (rounding to INT8 or bf16) and frees it.
void Codegen::from_fp32_twin(const Act& t, const Act& a) {
  for (uint64_t blk = 0; blk < a.blocks; ++blk)
    in_vector_pieces(a.rows, [&](uint64_t r0, uint64_t n) {
      code(bundle({emit::li(reg(1), int64_t(t.base + blk * t.block_bytes + r0 * R_ * 4)),
                   emit::li(reg(2), int64_t(a.base + blk * a.block_bytes + r0 * R_ * esz_))}));
      vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), n, isa::Dtype::Fp32, dtype_));
    });
  ub_.release(t.base);
}

// Unified-buffer bytes for `what`, or the error every allocation gives: what needs how
// much, what is free (and whether it is only free in pieces), and by how much the buffer
// is too small.
uint64_t Codegen::ub_take(uint64_t bytes, const std::string& what, bool temporary) {
  if (auto at = temporary ? ub_.alloc_high(bytes) : ub_.alloc(bytes)) return *at;
  uint64_t free = ub_.capacity() - ub_.in_use(), largest = ub_.largest_free();
  std::string pieces = free >= bytes ? fmt::format(", in pieces of at most {} bytes", largest) : "";
  throw DoesNotFitError("core.unified_buffer.bytes", bytes, largest,
                        fmt::format("{} needs {} bytes of the unified buffer but only {} of its {} bytes are free{} "
                                    "(core.unified_buffer.bytes is at least {} bytes too small); use a config with a larger "
                                    "unified buffer or a smaller batch",
                                    what, bytes, free, ub_.capacity(), pieces, bytes - std::min(bytes, largest)));
}

// The layout of an activation of `shape` (no base yet): rows of R lanes per block of features.
Act Codegen::act_layout(const std::vector<int64_t>& shape) const {
  Act a;
  a.shape = shape;
  a.features = shape.empty() ? 1 : uint64_t(shape.back());  // a scalar: one row of one feature
  a.rows = numel(shape) / a.features;
  a.blocks = ceil_div(a.features, R_);
  a.block_bytes = align_up(a.rows * R_ * esz_, block_align_);
  return a;
}

// The bytes new_act takes for an activation of `shape` (without slack).
uint64_t Codegen::act_bytes(const std::vector<int64_t>& shape) const { return act_layout(shape).bytes(); }

// With `apart_from` (another activation's base), the activation starts one bank after it
// (modulo the banks), so an elementwise op on the two reads row i of each from different
// banks instead of paying a conflict on every step.
Act Codegen::new_act(const std::vector<int64_t>& shape, const std::string& what, bool temporary, uint64_t slack,
            std::optional<uint64_t> apart_from) {
  Act a = act_layout(shape);
  uint64_t rb = cfg_.core.unified_buffer.row_bytes, period = rb * cfg_.core.unified_buffer.banks;
  if (apart_from && ub_.largest_free() >= a.bytes() + slack + period) {
    uint64_t at = ub_take(a.bytes() + slack + period, what, temporary || output_high_);
    a.base = at + (*apart_from + rb + period - at % period) % period;
    return a;
  }
  a.base = ub_take(a.bytes() + slack, what, temporary || output_high_);
  return a;
}

// The output of an elementwise op: the buffer of an operand this op is the last user of
// (and no alias shares), so residual adds and activation chains need no second copy.
Act Codegen::out_in_place(Value out, std::initializer_list<Value> operands, const std::string& layer) {
  for (Value in : operands) {
    auto p = in.getAsOpaquePointer();
    auto it = acts_.find(p);
    if (it == acts_.end() || uses_[p] != 1 || it->second.shape != shape_of(out)) continue;
    bool shared = false;
    for (const auto& [k, a] : acts_) shared |= k != p && a.base == it->second.base;
    if (shared) continue;
    return it->second;
  }
  return new_act(shape_of(out), fmt::format("the output of '{}'", layer));
}

// Whether the op being generated is v's last user and no alias shares its buffer, so the
// op may overwrite it (its padding lanes included).
bool Codegen::last_use(Value v) {
  auto p = v.getAsOpaquePointer();
  auto it = acts_.find(p);
  if (it == acts_.end() || uses_[p] != 1) return false;
  for (const auto& [k, a] : acts_)
    if (k != p && a.base == it->second.base) return false;
  return true;
}

const Act& Codegen::act(Value v) {
  auto it = acts_.find(v.getAsOpaquePointer());
  if (it == acts_.end()) {
    std::string from = "an argument";
    if (mlir::Operation* d = v.getDefiningOp())
      from = d->getName().getStringRef().str() + (d->hasAttr("layer") ? " '" + d->getAttrOfType<mlir::StringAttr>("layer").str() + "'" : "");
    throw InternalError(fmt::format("activation ({}) used before it was produced (by a {})", from, current_op_));
  }
  return it->second;
}

void Codegen::define(Value v, const Act& a) { acts_[v.getAsOpaquePointer()] = a; }

void Codegen::uses_left(mlir::func::FuncOp fn) {
  fn.walk([&](mlir::Operation* op) {
    for (Value v : op->getOperands()) uses_[v.getAsOpaquePointer()]++;
  });
}

void Codegen::release(Value v) {
  auto p = v.getAsOpaquePointer();
  if (--uses_[p] > 0) return;
  auto it = acts_.find(p);
  if (it == acts_.end()) return;
  // Aliases (reshape without data movement) share a base: free once nobody uses it.
  uint64_t base = it->second.base;
  acts_.erase(it);
  for (auto& [k, a] : acts_)
    if (a.base == base) return;
  ub_.release(base);
}

}  // namespace vtpu::compiler::codegen
