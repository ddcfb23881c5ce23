// Emission: program text, descriptors, parameters, HBM constants, DMA and vector helpers, bounds (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

std::string Codegen::quote(const std::string& s) { return isa::quote(s); }

void Codegen::decl(const std::string& s) { decls_ += s + "\n"; }

void Codegen::code(const std::string& s) {
  if (join_last_bundle(s)) return;
  code_ += s + "\n";
  if (code_.size() - counted_to_ >= kCountStepBytes) count_bundles();
}

namespace {

// The mnemonic and first operand of one operation's text ("li r5, 64" -> {"li", "r5"}).
std::pair<std::string_view, std::string_view> mnemonic_and_first(std::string_view op) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  op = trim(op);
  size_t sp = op.find(' ');
  if (sp == std::string_view::npos) return {op, {}};
  std::string_view rest = trim(op.substr(sp + 1));
  return {op.substr(0, sp), trim(rest.substr(0, rest.find(',')))};
}

}  // namespace

// A lone `li` goes into the bundle before it when that bundle has a scalar slot free, writes
// no register the li writes and does not branch: registers are read before they are written
// within a bundle (docs/isa.md), and the li's value is there for the next bundle either way,
// so the program computes the same and issues one bundle fewer. On a small array a weight
// tile's address (`li` ahead of its `dma.wfifo`) took a bundle of its own per tile: half of
// an LSTM's 7M bundles on tiny-8x8. Not across a label, a directive or a comment, and not
// where a stream's prologue may still be inserted (hoist_at_, at the end of the text).
bool Codegen::join_last_bundle(const std::string& s) {
  auto [mn, rd] = mnemonic_and_first(s);
  if (mn != "li" || rd.empty() || s.find("||") != std::string::npos || s.find_first_of(":#/\n") != std::string::npos)
    return false;
  if (code_.size() < 2 || code_.back() != '\n' || (hoist_at_ && *hoist_at_ >= code_.size())) return false;
  size_t start = code_.rfind('\n', code_.size() - 2);
  start = start == std::string::npos ? 0 : start + 1;
  std::string_view last(code_.data() + start, code_.size() - 1 - start);
  if (last.find_first_of(":#/\"") != std::string_view::npos || !isa::is_bundle_line(last)) return false;
  int scalar = 0;
  for (size_t at = 0; at <= last.size();) {
    size_t bar = last.find("||", at);
    auto [m, first] = mnemonic_and_first(last.substr(at, bar == std::string_view::npos ? std::string_view::npos : bar - at));
    const isa::OpDef* def = isa::find_op(m);
    if (!def || def->op_class == isa::OpClass::Branch || def->op_class == isa::OpClass::Halt) return false;
    if (def->slot_class == isa::SlotClass::Scalar && (++scalar > 1 || first == rd)) return false;
    if (bar == std::string_view::npos) break;
    at = bar + 2;
  }
  std::string joined = " || " + s.substr(s.find_first_not_of(' '));
  code_.insert(code_.size() - 1, joined);
  if (counted_to_ > start) counted_to_ += joined.size();
  return true;
}

// The bundles of the text since the last count, as the assembler will count them: a program
// past the instruction set's limit is refused while it is generated, at the layer that passes
// it, rather than once all of it has been (an LSTM with 52M weights on a 4x4 array generated
// more than 16M bundles and took minutes to be refused by the assembler).
void Codegen::count_bundles() {
  counted_to_ += count_bundle_lines(std::string_view(code_).substr(counted_to_), bundles_);
  if (bundles_ > isa::kMaxBundles)
    too_large_for_isa(fmt::format("more than {} bundles, at '{}'", isa::kMaxBundles, current_layer_), bundles_,
                      isa::kMaxBundles);
}

// Adds the bundles of `text`'s whole lines to `bundles`; returns the bytes they take (a last
// line without its newline is left for the next count).
size_t Codegen::count_bundle_lines(std::string_view text, uint64_t& bundles) {
  size_t at = 0, nl;
  while ((nl = text.find('\n', at)) != std::string_view::npos) {
    bundles += isa::is_bundle_line(text.substr(at, nl - at));
    at = nl + 1;
  }
  return at;
}

// A program past one of the instruction set's limits (`what`): in row bands smaller bands
// would only need more, so a larger buffer is the way; otherwise the model is too large.
void Codegen::too_large_for_isa(const std::string& what, uint64_t need, uint64_t limit) const {
  if (!band_shapes_.empty())
    throw DoesNotFitError(kProgramSizeKey, need, limit,
                          fmt::format("in row bands the program does not fit the instruction set ({}); use a config "
                                      "with a larger unified buffer",
                                      what));
  throw CompileError(fmt::format("the generated program does not fit the instruction set ({}); the model is too large "
                                 "for this compiler version on config '{}'",
                                 what, cfg_.name));
}

void Codegen::tag(const std::string& layer) { code(".tag " + quote(layer)); }

// One DMA load with descriptor d (its addresses in the descriptor), waited for.
void Codegen::load_wait(const std::string& d) {
  code("  " + emit::dma_load({d}, reg(0), reg(0), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1)));
}

// Constant bytes into the unified buffer at `ub`: a copy in HBM, loaded, waited for.
void Codegen::load_constant(std::vector<uint8_t> bytes, uint64_t ub) {
  uint64_t n = bytes.size(), hbm = hbm_const(std::move(bytes));
  load_wait(new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, hbm, ub)));
}

// A row of the C lanes: `on_valid` in the first `valid`, `on_pad` in the others (the padding
// of a partial lane block), as fp32 or bf16 (exact for 0, 1 and +-inf).
std::vector<uint8_t> Codegen::lane_row(uint64_t valid, float on_valid, float on_pad, isa::Dtype dt) const {
  const size_t esz = dt == isa::Dtype::Fp32 ? 4 : 2;
  std::vector<uint8_t> row(C_ * esz);
  for (uint64_t i = 0; i < C_; ++i) {
    uint32_t b;
    float f = i < valid ? on_valid : on_pad;
    std::memcpy(&b, &f, 4);
    if (esz == 4) std::memcpy(&row[i * 4], &b, 4);
    else row[i * 2] = uint8_t(b >> 16), row[i * 2 + 1] = uint8_t(b >> 24);  // bf16: the upper half
  }
  return row;
}

uint64_t Codegen::hbm_alloc(uint64_t bytes) {
  uint64_t at = hbm_next_;
  hbm_next_ = align_up(hbm_next_ + bytes, hbm_align_);
  if (hbm_next_ > cfg_.memory.bytes)
    throw DoesNotFitError("memory.bytes", hbm_next_, cfg_.memory.bytes,
                          fmt::format("the model needs {} bytes of HBM but the config has {} (memory.bytes is at least {} "
                                      "bytes too small); use a config with more memory or a smaller batch",
                                      hbm_next_, cfg_.memory.bytes, hbm_next_ - cfg_.memory.bytes));
  return at;
}

uint64_t Codegen::hbm_const(std::vector<uint8_t> bytes) {
  // The bands of one layer (bands.cpp) make the same weight tiles and constants again: one
  // copy in HBM. Only there, so other programs keep their bytes.
  std::optional<std::pair<size_t, size_t>> key;
  if (in_band_) {
    key.emplace(std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size())), bytes.size());
    auto [lo, hi] = band_consts_.equal_range(*key);
    for (auto it = lo; it != hi; ++it)
      if (segments_[it->second].data == bytes) return segments_[it->second].hbm_addr;
  }
  uint64_t at = hbm_alloc(bytes.size());
  if (key) band_consts_.emplace(*key, segments_.size());
  const_bytes_ += bytes.size();
  segments_.push_back({at, std::move(bytes)});
  return at;
}

// Identical descriptors and parameters are shared (the tables hold isa::kMaxDescriptors and
// isa::kMaxVectorParams at most): the name of `body`'s entry, declared with `directive` the
// first time.
std::string Codegen::intern(std::map<std::string, std::string>& names, const char* prefix, const char* directive,
                            const std::string& body) {
  auto it = names.find(body);
  if (it != names.end()) return it->second;
  std::string name = fmt::format("{}{}", prefix, names.size());
  decl(fmt::format("{} {} {}", directive, name, body));
  names[body] = name;
  return name;
}

std::string Codegen::new_desc(const std::string& body) {
  // A program that fills the instruction set's descriptor table is refused here rather than
  // once the whole program has been generated and assembled.
  if (desc_names_.size() >= isa::kMaxDescriptors && !desc_names_.count(body)) {
    if (!band_shapes_.empty())
      throw DoesNotFitError(kProgramSizeKey, desc_names_.size() + 1, isa::kMaxDescriptors,
                            fmt::format("in row bands the program needs more than {} DMA descriptors (at '{}'); use a "
                                        "config with a larger unified buffer",
                                        isa::kMaxDescriptors, current_layer_));
    too_large_for_isa(fmt::format("more than {} DMA descriptors, at '{}'", isa::kMaxDescriptors, current_layer_),
                      desc_names_.size() + 1, isa::kMaxDescriptors);
  }
  return intern(desc_names_, "d", ".desc", body);
}

// One unified-buffer copy of `shape` ("bytes=... [dim=[...]]"). The addresses go in
// registers, so copies of one shape share a descriptor (the table is finite).
void Codegen::ub_copy(uint64_t src, uint64_t dst, const std::string& shape) {
  std::string d = new_desc(shape);
  code("  " + emit::li(reg(1), int64_t(src)) + " || " + emit::li(reg(2), int64_t(dst)));
  code("  " + emit::dma_copy({d}, reg(1), reg(2), emit::flag(1)));
  code("  " + emit::wait(emit::flag(1)));
}

// A unified-buffer copy that is not waited for: independent copies (a transpose's or a
// head split's runs) overlap in the DMA engine instead of paying its setup one by one.
// They count on f1 until copies_wait().
void Codegen::ub_copy_async(uint64_t src, uint64_t dst, const std::string& shape) {
  std::string d = new_desc(shape);
  code("  " + emit::li(reg(1), int64_t(src)) + " || " + emit::li(reg(2), int64_t(dst)));
  code("  " + emit::dma_copy({d}, reg(1), reg(2), emit::flag(1)));
  if (++copies_in_flight_ == 1024) copies_wait();
}

void Codegen::copies_wait() {
  if (copies_in_flight_) code("  " + emit::wait(emit::flag(1), copies_in_flight_));
  copies_in_flight_ = 0;
}

// One vector instruction (printed by its emitter without a flag), waited for: the flag,
// every vector operation's last operand, is the vector unit's.
void Codegen::vec_wait(const std::string& line) {
  code("  " + line + " flag=" + emit::flag(flags_.vector).text);
  code("  " + emit::wait(emit::flag(flags_.vector)));
}

// Copies that move single lanes move 4-byte (fp32) elements, since DMA rows start on
// unified-buffer words; `what` names the move in the error.
void Codegen::require_fp32_lane_moves(const std::string& layer, const std::string& what) {
  if (cfg_.core.unified_buffer.alignment_bytes > 4)
    throw CompileError(fmt::format("node '{}': {} 4-byte elements, finer than core.unified_buffer.alignment_bytes = {}",
                                   layer, what, cfg_.core.unified_buffer.alignment_bytes));
}

std::string Codegen::new_param(const std::string& body) {
  // A program past the vector parameter table is refused here, where it overflows, rather
  // than once all of it has been generated and assembled (an LSTM's per-step requantization
  // on a small array took minutes to be refused so).
  if (param_names_.size() >= isa::kMaxVectorParams && !param_names_.count(body))
    too_large_for_isa(fmt::format("more than {} vector params, at '{}'", isa::kMaxVectorParams, current_layer_),
                      param_names_.size() + 1, isa::kMaxVectorParams);
  return intern(param_names_, "p", ".vparam", body);
}

// An operand address for a vector operation's text: "r0+addr" when it fits the 24-bit
// offset fields, else "rN+0" with the `li` that loads it appended to `pre` (emitted in
// front of the operation, in bundles of their own).
std::string Codegen::reg_ref(uint64_t addr, int reg, std::string& pre) {
  if (addr <= kMaxOffset) return fmt::format("r0+{}", addr);
  pre += "  " + emit::li(codegen::reg(unsigned(reg)), int64_t(addr)) + "\n";
  return fmt::format("r{}+0", reg);
}

// "r0+addr" when the address fits the 24-bit offset fields, else loads it into `reg`
// (in a bundle of its own: registers are read before a bundle writes them).
std::string Codegen::addr_ref(uint64_t addr, int reg) {
  if (addr <= kMaxOffset) return fmt::format("r0+{}", addr);
  if (addr > UINT32_MAX) throw CompileError(fmt::format("address {} exceeds the 32-bit registers", addr));
  code("  " + emit::li(codegen::reg(unsigned(reg)), int64_t(addr)));
  return fmt::format("r{}+0", reg);
}

std::string Codegen::addr_ref_held(uint64_t addr, int reg, std::optional<uint64_t>& held, bool& loaded) {
  loaded = false;
  if (addr <= kMaxOffset) return fmt::format("r0+{}", addr);
  if (held && addr >= *held && addr - *held <= kMaxOffset) return fmt::format("r{}+{}", reg, addr - *held);
  std::string ref = addr_ref(addr, reg);
  held = addr, loaded = true;
  return ref;
}

// Blocked-layout DMA between HBM row-major [rows, features] and UB. The blocks' transfers
// are independent: all are issued, then waited for together, so they share the HBM
// channels instead of each paying the memory's latency alone.
void Codegen::load_act(const Act& a, uint64_t hbm, uint64_t hbm_row_bytes) {
  clear_partial_blocks(a);
  if (!hbm_row_bytes) hbm_row_bytes = a.features * esz_;
  for (uint64_t b = 0; b < a.blocks; ++b) {
    uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz_, hbm + b * R_ * esz_,
                                         a.base + b * a.block_bytes, a.rows, hbm_row_bytes, R_ * esz_));
    code("  " + emit::dma_load({d}, hbm_base(hbm), reg(0), emit::flag(1)));
  }
  if (a.blocks) code("  " + emit::wait(emit::flag(1), a.blocks));
}

// Clears the padding lanes of a partial lane block before a load fills its valid lanes, so no
// stale value is read as data.
void Codegen::clear_partial_blocks(const Act& a) {
  for (uint64_t b = 0; b < a.blocks; ++b)
    if (a.features - b * R_ < R_) clear(a.base + b * a.block_bytes, a.block_bytes);
}

void Codegen::store_act(const Act& a, uint64_t hbm, uint64_t hbm_row_bytes) {
  if (!hbm_row_bytes) hbm_row_bytes = a.features * esz_;
  for (uint64_t b = 0; b < a.blocks; ++b) {
    uint64_t fw = std::min<uint64_t>(R_, a.features - b * R_);
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * esz_,
                                         a.base + b * a.block_bytes, hbm + b * R_ * esz_, a.rows, R_ * esz_, hbm_row_bytes));
    code("  " + emit::dma_store({d}, reg(0), hbm_base(hbm), emit::flag(1)));
  }
  if (a.blocks) code("  " + emit::wait(emit::flag(1), a.blocks));
}

// Zero the padding border of a padded image buffer [N, Hp, Wp] x blocks (the interior is
// about to be overwritten): top and bottom rows whole, left and right columns as strided
// rows that all read the same zero bytes of HBM.
// With `lowest`, the border holds the dtype's lowest value instead (-inf, or -128): the
// padding of a max pool over inputs that may be negative.
// With `unwaited`, the loads are left in flight on f1 and counted there.
void Codegen::clear_border(const Act& xp, uint64_t N, uint64_t Hp, uint64_t Wp, uint64_t pt, uint64_t pb, uint64_t pl,
                  uint64_t pr, bool lowest, uint64_t* unwaited) {
  uint64_t px = R_ * esz_;
  uint64_t src = zero_hbm_;
  if (lowest) {
    std::vector<uint8_t> pat(std::max(pt, pb) * Wp * px + std::max(pl, pr) * px);
    for (size_t i = 0; i < pat.size(); i += esz_)
      if (q8_) pat[i] = 0x80;
      else pat[i] = 0x80, pat[i + 1] = 0xFF;  // bf16 -inf, little-endian
    src = hbm_const(std::move(pat));
  }
  for (uint64_t b = 0; b < xp.blocks; ++b)
    for (uint64_t n = 0; n < N; ++n) clear_frame(xp.base + b * xp.block_bytes + n * Hp * Wp * px, Hp, Wp, pt, pb, pl, pr, px, src, unwaited);
}

// The border of one image of Hp x Wp pixels of `px` bytes at `img`, from HBM bytes at `src`
// (zeros, or a pattern): top and bottom rows whole, left and right columns as strided rows
// that all read the same bytes. A run of rows longer than the zeros in HBM goes in pieces.
void Codegen::clear_frame(uint64_t img, uint64_t Hp, uint64_t Wp, uint64_t pt, uint64_t pb, uint64_t pl, uint64_t pr, uint64_t px,
                          uint64_t src, uint64_t* unwaited) {
  uint64_t H = Hp - pt - pb;
  auto load = [&](uint64_t dst, uint64_t bytes, uint64_t rows, uint64_t dst_stride) {
    std::string d = new_desc(rows > 1 ? fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}]", bytes, src, dst, rows, dst_stride)
                                      : fmt::format("bytes={} src_off={} dst_off={}", bytes, src, dst));
    code("  " + emit::dma_load({d}, reg(0), reg(0), emit::flag(1)));
    if (unwaited) ++*unwaited;
    else code("  " + emit::wait(emit::flag(1)));
  };
  auto fill = [&](uint64_t dst, uint64_t bytes, uint64_t rows, uint64_t dst_stride) {
    if (rows > 1 || src != zero_hbm_) return load(dst, bytes, rows, dst_stride);  // a pattern is as long as its rows
    for (uint64_t at = 0; at < bytes; at += kZeroHbmBytes) load(dst + at, std::min(kZeroHbmBytes, bytes - at), 1, 0);
  };
  if (pt) fill(img, pt * Wp * px, 1, 0);
  if (pb) fill(img + (pt + H) * Wp * px, pb * Wp * px, 1, 0);
  if (pl && H) fill(img + pt * Wp * px, pl * px, H, Wp * px);
  if (pr && H) fill(img + (pt * Wp + Wp - pr) * px, pr * px, H, Wp * px);
}

// Zero-fill UB bytes by loading from HBM that is never written.
void Codegen::clear(uint64_t ub, uint64_t bytes) {
  while (bytes) {
    uint64_t n = std::min<uint64_t>(bytes, kZeroHbmBytes);
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", n, zero_hbm_, ub));
    load_wait(d);
    ub += n, bytes -= n;
  }
}

// The op being generated's bound row; `shape` for another op generated along with it, `node`
// the ONNX node whose MACs they are when not `layer`'s own (LayerBound::node).
void Codegen::add_bound(const std::string& layer, uint64_t macs, uint64_t hbm_bytes,
               std::optional<std::vector<int64_t>> shape, const std::string& node) {
  LayerBound lb;
  lb.layer = layer;
  lb.node = node == layer ? "" : node;
  lb.op = current_op_;
  lb.shape = shape ? *shape : current_shape_;
  lb.macs = macs;
  // A stream's prologue hoisted into an earlier layer's code (run_blocks) runs under that
  // layer's tag: its tiles' bytes and its weight loads are not this layer's to wait for.
  lb.hbm_bytes = hbm_bytes - std::min(hbm_bytes, hoisted_tiles_ * R_ * C_ * esz_);
  uint64_t wloads = wloads_ - wloads_mark_;
  lb.weight_tiles = wloads - std::min(wloads, hoisted_wloads_);
  wloads_mark_ = wloads_, hoisted_tiles_ = hoisted_wloads_ = 0;
  set_limits(lb);
  bounds_.push_back(lb);
}

// A bound row's compute, memory and weight-path limits from its MACs, HBM bytes and tiles.
void Codegen::set_limits(LayerBound& lb) const {
  uint64_t nm = uint64_t(cfg_.core.mxu.count);
  lb.compute_cycles = ceil_div(lb.macs, nm * R_ * C_);
  double bytes_per_cycle = cfg_.memory.bandwidth_gbytes_per_s * 1e9 / (cfg_.clock_mhz * 1e6);
  lb.memory_cycles = uint64_t(std::ceil(double(lb.hbm_bytes) / bytes_per_cycle));
  lb.weight_path_cycles = ceil_div(lb.weight_tiles, nm) * cfg_.core.mxu.weight_shift_cycles;
}

// The bounds rows of the ops fused into `layer`'s epilogues (after the layer's own row).
void Codegen::add_fused_bounds() {
  for (auto& [layer, opname, shape] : fused_bounds_) {
    LayerBound lb;
    lb.layer = layer;
    lb.op = opname;
    lb.shape = shape;
    bounds_.push_back(lb);
  }
  fused_bounds_.clear();
}

// Issues `steps` in order on the vector flag and waits for the last.
void Codegen::emit_steps(const std::vector<VecStep>& steps) {
  uint64_t in_flight = 0;
  for (const VecStep& st : steps) {
    if (st.waits && in_flight) code("  " + emit::wait(emit::flag(flags_.vector), in_flight)), in_flight = 0;
    code_ += with_flag(st.text, flags_.vector);
    ++in_flight;
  }
  if (in_flight) code("  " + emit::wait(emit::flag(flags_.vector), in_flight));
}

// The latency of the vector operation in `text` (by its class, docs/isa.md).
uint64_t Codegen::vec_latency(const std::string& text) const {
  size_t at = text.find("vec.");
  if (at == std::string::npos) throw InternalError("not a vector operation: " + text);
  const isa::OpDef* def = isa::find_op(text.substr(at, text.find(' ', at) - at));
  if (!def) throw InternalError("unknown vector operation: " + text);
  return config::vector_latency(cfg_, def->op_class);
}

// Issue cycles of a vector operation over `rows` rows (docs/microarch.md, banks aside).
uint64_t Codegen::vec_occ(uint64_t rows) const { return config::vector_issue_cycles(cfg_, rows); }

}  // namespace vtpu::compiler::codegen
