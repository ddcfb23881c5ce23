// The rules of docs/microarch.md. Each accept_* returns the earliest cycle an operation can
// issue and why it waited; each exec_* commits its timing and computes its data.
#include "machine.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "compute.h"
#include "vtpu/config/timing.h"

namespace vtpu::sim::detail {

using isa::Dtype;
using isa::FieldKind;

namespace {

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

bool has_operand(const isa::OpDef& def, std::string_view name) {
  for (const auto& o : def.operands)
    if (o.name == name) return true;
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Storage

uint64_t MxuState::fifo_occupancy(uint64_t t) const {
  uint64_t n = fifo.size();
  for (uint64_t p : pop_times)
    if (p > t) ++n;
  return n;
}

void HbmStore::read(uint64_t addr, uint8_t* dst, uint64_t n) const {
  while (n) {
    uint64_t page = addr / kPage, off = addr % kPage, len = std::min(n, kPage - off);
    auto it = pages_.find(page);
    if (it == pages_.end()) std::memset(dst, 0, len);
    else std::memcpy(dst, it->second.get() + off, len);
    addr += len, dst += len, n -= len;
  }
}

void HbmStore::write(uint64_t addr, const uint8_t* src, uint64_t n) {
  while (n) {
    uint64_t page = addr / kPage, off = addr % kPage, len = std::min(n, kPage - off);
    auto it = pages_.find(page);
    if (it == pages_.end()) {
      // Zeros into a page never written leave it as it reads (zero) without holding memory:
      // large pods mostly move zeros when only their timing is asked for.
      static const uint8_t kZeros[kPage] = {};
      if (std::memcmp(src, kZeros, len) == 0) {
        addr += len, src += len, n -= len;
        continue;
      }
      it = pages_.emplace(page, std::make_unique<uint8_t[]>(kPage)).first;  // zero-filled
    }
    auto& p = it->second;
    std::memcpy(p.get() + off, src, len);
    addr += len, src += len, n -= len;
  }
}

// ---------------------------------------------------------------------------------------
// Machine

Machine::Machine(const config::Config& cfg, const isa::Program& prog, const SimOptions& opt,
                 HbmStore& hbm, HbmPort hbm_port, Fabric* fabric)
    : cfg_(cfg), prog_(prog), opt_(opt), hbm_(hbm), hbm_port_(std::move(hbm_port)), fabric_(fabric) {
  bundles_ = isa::decode_program(prog);
  // The program may name only the registers and sync flags the config's scalar unit has.
  if (auto v = isa::first_register_or_flag_past(bundles_, cfg.core.scalar.registers, cfg.core.scalar.sync_flags))
    fail(OpRef{uint32_t(v->bundle), v->slot, bundles_[v->bundle].at(v->slot).def, bundles_[v->bundle].tag}, v->message);
  R_ = cfg.core.mxu.rows;
  C_ = cfg.core.mxu.cols;
  ub_bytes_ = cfg.core.unified_buffer.bytes;
  ub_.reset(static_cast<uint8_t*>(std::calloc(ub_bytes_, 1)));
  if (!ub_) throw UserError(fmt::format("cannot allocate the {}-byte unified buffer", ub_bytes_));
  mxu_.resize(cfg.core.mxu.count);
  for (MxuState& m : mxu_) m.acc.resize(size_t(cfg.core.accumulators.rows) * C_);  // zeroed
  flags_.resize(isa::kNumFlags);
  per_tag_.resize(prog.tags.size());
  passes_ = TagPasses(prog.tags.size());
  stats_.clock_mhz = cfg.clock_mhz;
  stats_.mxu_count = cfg.core.mxu.count;
  stats_.mxu_rows = R_;
  stats_.mxu_cols = C_;
  imem_start();
}

std::string Machine::where(const OpRef& ref) const {
  std::string s = fmt::format("bundle {} (slot {}, {}", ref.bundle, isa::slot(ref.slot).name,
                              ref.def ? ref.def->mnemonic : "nop");
  if (ref.tag < prog_.tags.size() && !prog_.tags[ref.tag].empty()) s += fmt::format(", tag '{}'", prog_.tags[ref.tag]);
  return s + ")";
}

void Machine::fail(const OpRef& ref, const std::string& what) const {
  throw SimError(fmt::format("{}: {}", where(ref), what));
}

int64_t Machine::f(const Operation& op, SlotId s, std::string_view name) const {
  return isa::field(op, s, name);
}

uint32_t Machine::check_mxu(const OpRef& ref, std::string_view field, int64_t mxu) {
  if (mxu < 0 || uint64_t(mxu) >= mxu_.size())
    fail(ref, fmt::format("field '{}' = {} but the config has {} MXU(s) (core.mxu.count); use 0..{}", field,
                          mxu, mxu_.size(), mxu_.size() - 1));
  return uint32_t(mxu);
}

void Machine::check_ub(const OpRef& ref, std::string_view field, uint64_t addr, uint64_t bytes, bool aligned) {
  uint64_t cap = ub_bytes_;
  if (addr > cap || bytes > cap - addr)
    fail(ref, fmt::format("'{}' reaches unified-buffer bytes {}..{}, past its {} bytes "
                          "(core.unified_buffer.bytes)",
                          field, addr, addr + bytes - 1, cap));
  uint64_t al = cfg_.core.unified_buffer.alignment_bytes;
  if (aligned && al > 1 && addr % al)
    fail(ref, fmt::format("'{}' = unified-buffer address {} is not a multiple of {} "
                          "(core.unified_buffer.alignment_bytes)",
                          field, addr, al));
}

uint64_t Machine::check_acc(const OpRef& ref, std::string_view field, int mxu, uint64_t row, uint64_t rows) {
  uint64_t per = cfg_.core.accumulators.rows;
  if (mxu >= 0) {
    if (row + rows > per)
      fail(ref, fmt::format("'{}' reaches accumulator rows {}..{} of MXU {}, which has {} rows "
                            "(core.accumulators.rows)",
                            field, row, row + rows - 1, mxu, per));
    return uint64_t(mxu) * per + row;
  }
  uint64_t total = per * mxu_.size();
  if (row + rows > total)
    fail(ref, fmt::format("'{}' reaches accumulator rows {}..{}, past the {} rows of {} MXU(s) "
                          "(vector operations address MXU m's row r as m*{}+r)",
                          field, row, row + rows - 1, total, mxu_.size(), per));
  return row;
}

void Machine::add_increment(int64_t flag, uint64_t done, StallReason source, uint32_t bundle, int64_t amount) {
  if (flag == 0) return;
  flags_[size_t(flag)].pending.push_back({done, amount, source, bundle});
}

void Machine::charge_done(const OpRef& ref, uint64_t done) {
  last_done_ = std::max(last_done_, done);
  Counters& c = tagc(ref.tag);
  c.last_done = std::max(c.last_done, done);
  passes_.done(ref.tag, done);
}

void Machine::trace(Unit u, uint16_t lane, const OpRef& ref, const char* name, uint64_t b, uint64_t e) {
  if (opt_.record_trace && e > b) trace_.push_back({u, lane, ref.tag, ref.bundle, name, b, e});
}

// ---- unified-buffer banks ----

uint64_t Machine::ub_group_cycles(const std::vector<std::pair<uint64_t, uint64_t>>& reads,
                                  const std::vector<std::pair<uint64_t, uint64_t>>& writes) {
  const auto& u = cfg_.core.unified_buffer;
  uint64_t worst = 0;
  auto count = [&](const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint32_t ports) {
    bank_hits_.assign(u.banks, 0);
    for (auto [a, len] : ranges)
      for (uint64_t blk = a / u.row_bytes; blk <= (a + len - 1) / u.row_bytes; ++blk) ++bank_hits_[blk % u.banks];
    for (uint32_t h : bank_hits_) worst = std::max<uint64_t>(worst, ceil_div(h, ports));
  };
  count(reads, u.read_ports);
  count(writes, u.write_ports);
  return worst;
}

// Sum over rows i < n of f(i), where f depends only on the operands' addresses modulo one
// sweep of the banks: evaluate one period and extrapolate exactly.
uint64_t Machine::periodic_sum(uint64_t n, const std::vector<uint64_t>& steps, const std::function<uint64_t(uint64_t)>& f) {
  const auto& u = cfg_.core.unified_buffer;
  uint64_t M = u.row_bytes * u.banks, P = 1;
  for (uint64_t st : steps) {
    uint64_t p = M / std::gcd(st % M == 0 ? M : st % M, M);
    P = std::lcm(P, p);
  }
  uint64_t limit = std::min(n, P), full = 0;
  std::vector<uint64_t> prefix(limit + 1, 0);
  for (uint64_t i = 0; i < limit; ++i) prefix[i + 1] = prefix[i] + f(i);
  if (n <= P) return prefix[n];
  full = prefix[P];
  return (n / P) * full + prefix[n % P];
}

// ---- sync flags ----

Machine::Accept Machine::accept_wait(const Operation& op, uint64_t t, const OpRef& ref) {
  int64_t flag = f(op, SlotId::Control, "flag"), n = f(op, SlotId::Control, "count");
  if (flag == 0) fail(ref, "wait on f0, which means 'no flag'; use a flag f1..f63");
  FlagState& fs = flags_[size_t(flag)];
  std::sort(fs.pending.begin(), fs.pending.end(), [](auto& a, auto& b) { return a.done < b.done; });
  int64_t v = fs.value;
  for (const auto& p : fs.pending)
    if (p.done <= t) v += p.amount;
  if (v >= n) return {t, StallReason::WaitFlag};
  for (const auto& p : fs.pending) {
    if (p.done <= t) continue;
    v += p.amount;
    if (v >= n) return {p.done, p.source};
  }
  std::string who;
  for (const auto& p : fs.pending) who += fmt::format(" bundle {} (done at cycle {});", p.bundle, p.done);
  if (fabric_) {  // another chip may still signal it: decided at a synchronisation
    blocked_ = fmt::format("{}: waits for f{} >= {}; f{} can reach {} with what is known so far.{}", where(ref), flag, n,
                           flag, v, who.empty() ? "" : " Pending increments:" + who);
    return {kUnknown, StallReason::WaitIci};
  }
  fail(ref, fmt::format("deadlock: waits for f{} >= {}, but f{} can only reach {} — no issued operation "
                        "will increment it further.{} Check the flag numbers and counts of the operations "
                        "that should signal f{}.",
                        flag, n, flag, v, who.empty() ? "" : " Pending increments:" + who, flag));
}

void Machine::exec_wait(const Operation& op, uint64_t t) {
  int64_t flag = f(op, SlotId::Control, "flag"), n = f(op, SlotId::Control, "count");
  FlagState& fs = flags_[size_t(flag)];
  std::erase_if(fs.pending, [&](const FlagState::Pending& p) {
    if (p.done > t) return false;
    fs.value += p.amount;
    return true;
  });
  fs.value -= n;
}

// ---- MXU ----

Machine::Accept Machine::accept_wload(const Operation& op, uint64_t t, const OpRef& ref) {
  uint32_t m = check_mxu(ref, "mxu", f(op, SlotId::MxuWeight, "mxu"));
  return {std::max(t, mxu_[m].wpath_free), StallReason::WeightPathBusy};
}

void Machine::exec_wload(const Operation& op, uint64_t T, const OpRef& ref) {
  uint32_t m = uint32_t(f(op, SlotId::MxuWeight, "mxu"));
  MxuState& ms = mxu_[m];
  if (ms.fifo.empty())
    fail(ref, fmt::format("the weight FIFO of MXU {} is empty and no dma.wfifo to it is in flight; "
                          "issue a dma.wfifo for this tile first",
                          m));
  if (ms.shadow)
    fail(ref, fmt::format("would overwrite the shadow weights of MXU {} (loaded from the dma.wfifo at bundle "
                          "{}) before any mxu.matmul swap=1 used them",
                          m, ms.shadow->loaded_by_bundle));
  std::shared_ptr<Tile> tile = ms.fifo.front();
  ms.fifo.pop_front();
  uint64_t start = std::max({T, tile->ready, ms.shadow_free});
  uint64_t end = start + cfg_.core.mxu.weight_shift_cycles;
  std::erase_if(ms.pop_times, [&](uint64_t p) { return p <= T; });
  ms.pop_times.push_back(start);
  ms.shadow = tile;
  ms.shadow_ready = end;
  ms.wpath_free = end;
  Counters& c = tagc(ref.tag);
  c.weight_loads++;
  c.weight_shift_cycles += end - start;
  charge_done(ref, end);
  trace(Unit::WeightFifo, uint16_t(m), ref, "mxu.wload", start, end);
}

Machine::Accept Machine::accept_matmul(const Operation& op, uint64_t t, const OpRef& ref) {
  uint32_t m = check_mxu(ref, "mxu", f(op, SlotId::MxuMatmul, "mxu"));
  const MxuState& ms = mxu_[m];
  Accept a{std::max(t, ms.data_free), StallReason::MxuBusy};
  if (f(op, SlotId::MxuMatmul, "swap")) {
    if (!ms.shadow)
      fail(ref, fmt::format("swap=1 but no mxu.wload has loaded new weights into MXU {} since its last swap", m));
    if (ms.shadow_ready > a.t) a = {ms.shadow_ready, StallReason::WaitWeights};
  } else if (!ms.active) {
    fail(ref, fmt::format("MXU {} has no weights: the first mxu.matmul must swap in a tile (swap=1)", m));
  }
  return a;
}

void Machine::exec_matmul(const Operation& op, uint64_t T, const OpRef& ref) {
  const auto& mc = cfg_.core.mxu;
  uint32_t m = uint32_t(f(op, SlotId::MxuMatmul, "mxu"));
  MxuState& ms = mxu_[m];
  uint64_t S = T + mc.input_latency_cycles;
  if (f(op, SlotId::MxuMatmul, "swap")) {
    ms.active = ms.shadow;
    ms.shadow.reset();
    ms.shadow_free = S;
  }
  const Tile& w = *ms.active;
  Dtype dt = Dtype(f(op, SlotId::MxuMatmul, "dtype"));
  config::DType cdt = dt == Dtype::Int8 ? config::DType::kInt8 : config::DType::kBf16;
  if (!config::supports(cfg_, cdt))
    fail(ref, fmt::format("dtype={} but this config's MXU multiplies only what core.mxu.dtypes lists",
                          isa::dtype_name(dt)));
  if (w.dtype != dt)
    fail(ref, fmt::format("dtype={} but the weights in MXU {} are {} (descriptor of the dma.wfifo at bundle {})",
                          isa::dtype_name(dt), m, isa::dtype_name(w.dtype), w.loaded_by_bundle));
  uint64_t B = uint64_t(f(op, SlotId::MxuMatmul, "rows"));
  unsigned esz = isa::dtype_bytes(dt);
  uint64_t row_bytes = uint64_t(R_) * esz;
  uint64_t stride = uint64_t(f(op, SlotId::MxuMatmul, "stride"));
  if (stride == 0) stride = row_bytes;
  if (stride % esz) fail(ref, fmt::format("stride={} is not a multiple of the {}-byte {} element", stride, esz, isa::dtype_name(dt)));
  uint64_t src = uint64_t(reg(f(op, SlotId::MxuMatmul, "src_reg"))) + uint64_t(f(op, SlotId::MxuMatmul, "src_off"));
  uint64_t span = (B - 1) * stride + row_bytes;
  check_ub(ref, "src", src, span, false);
  uint64_t drow = uint64_t(reg(f(op, SlotId::MxuMatmul, "dst_reg"))) + uint64_t(f(op, SlotId::MxuMatmul, "dst_off"));
  uint64_t grow = check_acc(ref, "dst", int(m), drow, B);
  bool accumulate = f(op, SlotId::MxuMatmul, "acc") != 0;
  // One input row per cycle, or more when a row needs several accesses to one bank.
  uint64_t stream = periodic_sum(B, {stride}, [&](uint64_t j) { return ub_group_cycles({{src + j * stride, row_bytes}}, {}); });
  uint64_t D = T + stream + config::mxu_fill_drain_cycles(cfg_);

  hazards_.check_and_add({Space::Ub, src, src + span, false, T, T + stream, ref}, prog_);
  hazards_.check_and_add({Space::Acc, grow, grow + B, true, T, D, ref, int(m)}, prog_);

  if (!opt_.timing_only)
    matmul_compute(dt, ub_.get() + src, stride / esz, w, ms.acc.data() + drow * C_, C_, B, C_, accumulate);

  ms.data_free = T + stream;
  add_increment(f(op, SlotId::MxuMatmul, "flag"), D, StallReason::WaitMxu, ref.bundle);
  Counters& c = tagc(ref.tag);
  c.matmuls++;
  c.mxu_rows += B;
  (dt == Dtype::Int8 ? c.macs_int8 : c.macs_bf16) += B * w.k * w.n;
  c.pe_rows += B * R_ * C_;
  c.ub_read_bytes += B * row_bytes;
  c.acc_write_bytes += B * C_ * 4;
  if (accumulate) c.acc_read_bytes += B * C_ * 4;
  charge_done(ref, D);
  c.ub_bank_extra_cycles += stream - B;
  trace(Unit::Mxu, uint16_t(m), ref, "mxu.matmul", S, S + stream);
}

// ---- vector unit ----

Machine::Accept Machine::accept_vector(const Operation&, uint64_t t, const OpRef&) {
  return {std::max(t, vec_free_), StallReason::VectorBusy};
}

void Machine::exec_vector(const Operation& op, uint64_t T, const OpRef& ref) {
  const isa::OpDef& def = *ref.def;
  const auto& vc = cfg_.core.vector;
  uint32_t W = C_;
  auto V = [&](std::string_view n) { return f(op, SlotId::Vector, n); };
  Dtype dt = Dtype(V("dt"));
  Dtype odt = has_operand(def, "odt") ? Dtype(V("odt")) : dt;
  uint64_t rows = uint64_t(V("rows"));
  const isa::VectorParams* param = has_operand(def, "param") ? &prog_.params[size_t(V("param"))] : nullptr;
  if (std::string e = vector_check(def, dt, odt, param, W); !e.empty()) fail(ref, e);

  bool pool = def.op_class == isa::OpClass::VecPool;
  uint64_t window = pool ? param->window.size() : 1;
  uint32_t lat = config::vector_latency(cfg_, def.op_class);
  Counters& c = tagc(ref.tag);

  struct Resolved {
    VecOperand v;
    Space space;
    uint64_t lo, hi;
  };
  auto operand = [&](const char* name, Dtype type, bool write) {
    std::string p(name);
    bool acc = V(p + "_mem") == 1;
    uint64_t addr = uint64_t(reg(V(p + "_reg"))) + uint64_t(V(p + "_off"));
    Resolved r;
    r.v.dtype = type;
    if (acc) {
      if (type != Dtype::Int32 && type != Dtype::Fp32)
        fail(ref, fmt::format("operand '{}' is in the accumulators, which hold int32 or fp32, not {}", name,
                              isa::dtype_name(type)));
      r.v.row_bytes = W * 4;
      uint64_t n = std::max<uint64_t>(rows, 1), first = addr;  // the rows [first, first + n) it touches
      if (!write && V("bcast") && p == "b") n = 1;
      if (!write && pool) {
        // Pooling from the accumulators: the window offsets and the stride are whole rows.
        const int64_t rb = int64_t(r.v.row_bytes), step = param->pool_stride ? param->pool_stride : rb;
        std::vector<int64_t> whole(param->window.begin(), param->window.end());
        whole.push_back(step);
        for (int64_t v : whole)
          if (v % rb)
            fail(ref, fmt::format("pooling from the accumulators, whose rows are {} bytes, needs .vparam '{}' to "
                                  "give window offsets and pool_stride in whole rows (multiples of {}), not {}",
                                  rb, param->name, rb, v));
        const int64_t wmin = *std::min_element(param->window.begin(), param->window.end()) / rb;
        const int64_t wmax = *std::max_element(param->window.begin(), param->window.end()) / rb;
        const int64_t span = int64_t(std::max<uint64_t>(rows, 1) - 1) * (step / rb);  // last output row's base
        const int64_t lo = int64_t(addr) + std::min<int64_t>(0, span) + wmin;
        const int64_t hi = int64_t(addr) + std::max<int64_t>(0, span) + wmax + 1;
        if (lo < 0) fail(ref, "pooling window reaches below accumulator row 0");
        first = uint64_t(lo), n = uint64_t(hi - lo);
      }
      uint64_t g = check_acc(ref, name, -1, first, n);
      uint64_t mx = g / cfg_.core.accumulators.rows, row = g % cfg_.core.accumulators.rows;
      if (row + n > cfg_.core.accumulators.rows)
        fail(ref, fmt::format("operand '{}' spans two MXUs' accumulators (rows {}..{})", name, g, g + n - 1));
      r.v.ptr = reinterpret_cast<uint8_t*>(mxu_[mx].acc.data() + (row + (addr - first)) * W);
      r.space = Space::Acc, r.lo = g, r.hi = g + n;
      (write ? c.acc_write_bytes : c.acc_read_bytes) += n * r.v.row_bytes;
    } else {
      r.v.row_bytes = W * isa::dtype_bytes(type);
      uint64_t n = rows;
      if (!write && V("bcast") && p == "b") n = 1;
      uint64_t lo = addr, hi = addr + n * r.v.row_bytes;
      if (!write && pool) {
        int64_t step = param->pool_stride ? param->pool_stride : int64_t(r.v.row_bytes);
        int64_t wmin = *std::min_element(param->window.begin(), param->window.end());
        int64_t wmax = *std::max_element(param->window.begin(), param->window.end());
        int64_t l = int64_t(addr) + wmin, h = int64_t(addr) + int64_t(rows - 1) * step + wmax + int64_t(r.v.row_bytes);
        if (l < 0) fail(ref, "pooling window reaches below unified-buffer address 0");
        lo = uint64_t(l), hi = uint64_t(h);
      }
      check_ub(ref, name, lo, hi - lo, true);
      r.v.ptr = ub_.get() + addr;
      r.space = Space::Ub, r.lo = lo, r.hi = hi;
      (write ? c.ub_write_bytes : c.ub_read_bytes) += hi - lo;
    }
    return r;
  };

  Resolved a = operand("a", dt, false);
  Resolved b{};
  bool binary = has_operand(def, "b");
  if (binary) b = operand("b", dt, false);
  Resolved d = operand("dst", odt, true);

  // Issue-stage cycles: the unit takes `sublanes` rows per step (a vector register's worth);
  // a step costs the lanes' passes or the busiest bank over its rows' accesses, whichever is
  // longer (pooling: the window's rows one after another, banks not modelled).
  uint64_t lane_passes = config::vector_lane_passes(cfg_), S = std::max<uint64_t>(1, vc.sublanes);
  uint64_t steps_n = config::vector_steps(cfg_, rows);
  uint64_t occ = steps_n * lane_passes * window;
  if (!pool) {
    bool b_ub = binary && b.space == Space::Ub, b_every_row = b_ub && !V("bcast");
    // b reading the very bytes a reads (x * x) is one access, not two.
    if (b_every_row && a.space == Space::Ub && a.lo == b.lo && a.v.row_bytes == b.v.row_bytes) b_ub = b_every_row = false;
    std::vector<uint64_t> strides;
    if (a.space == Space::Ub) strides.push_back(S * a.v.row_bytes);
    if (b_every_row) strides.push_back(S * b.v.row_bytes);
    if (d.space == Space::Ub) strides.push_back(S * d.v.row_bytes);
    if (!strides.empty() || b_ub) {  // a broadcast b alone still costs the first step its bank cycles
      std::vector<std::pair<uint64_t, uint64_t>> rd, wr;
      auto step_cost = [&](uint64_t g) {  // rows g*S .. g*S + n - 1, consecutive: one range per operand
        rd.clear(), wr.clear();
        uint64_t i = g * S, n = std::min(rows, i + S) - i;
        if (a.space == Space::Ub) rd.emplace_back(a.lo + i * a.v.row_bytes, n * a.v.row_bytes);
        if (b_every_row) rd.emplace_back(b.lo + i * b.v.row_bytes, n * b.v.row_bytes);
        else if (b_ub && i == 0) rd.emplace_back(b.lo, b.v.row_bytes);
        if (d.space == Space::Ub) wr.emplace_back(d.lo + i * d.v.row_bytes, n * d.v.row_bytes);
        return std::max(lane_passes, ub_group_cycles(rd, wr));
      };
      // Whole steps repeat with the banks' period; a partial last step is costed alone (as is
      // the first when b is broadcast, which reads b's row only there).
      uint64_t whole = rows / S, first = b_ub && !b_every_row && whole ? 1 : 0;
      occ = first ? step_cost(0) : 0;
      occ += periodic_sum(whole - first, strides, [&](uint64_t g) { return step_cost(g + first); });
      if (rows % S) occ += step_cost(whole);
      c.ub_bank_extra_cycles += occ - steps_n * lane_passes;
    }
  }
  uint64_t D = T + occ + lat;
  hazards_.check_and_add({a.space, a.lo, a.hi, false, T, T + occ, ref}, prog_);
  if (binary) hazards_.check_and_add({b.space, b.lo, b.hi, false, T, T + occ, ref}, prog_);
  hazards_.check_and_add({d.space, d.lo, d.hi, true, T, D, ref}, prog_);

  if (!opt_.timing_only) vector_compute(def, d.v, a.v, b.v, binary && V("bcast"), rows, W, param);

  vec_free_ = T + occ;
  add_increment(V("flag"), D, StallReason::WaitVector, ref.bundle);
  c.vector_ops++;
  c.vector_busy_cycles += occ;
  c.vector_elements += rows * W * window;
  if (def.op_class == isa::OpClass::VecMul || def.op_class == isa::OpClass::VecRescale ||
      def.op_class == isa::OpClass::VecTranscendental)
    c.vector_mul_elements += rows * W;
  charge_done(ref, D);
  trace(Unit::Vector, 0, ref, def.mnemonic.data(), T, T + occ);
}

// ---------------------------------------------------------------------------------------
// Sequencer

// Branches depend on the scalar registers alone (nothing loads them from memory), so a taken
// branch to a bundle with the same registers as the last taken branch there repeats that
// path forever: the program can never halt, and says so at once instead of at the cycle limit.
void Machine::check_progress(uint32_t target, const OpRef& ref, uint64_t cycle) {
  auto [it, fresh] = regs_at_branch_.try_emplace(target, RegsAt{regs_, cycle});
  if (fresh) return;
  if (it->second.regs == regs_)
    fail(ref, fmt::format("the program loops forever: it branches to bundle {} with the same registers as at cycle {}, "
                          "and branches depend only on registers, so the same path repeats; check the loop's counter",
                          target, it->second.cycle));
  it->second = {regs_, cycle};
}

// A counted loop whose body has no other branch (nor a halt; waits and signals only add
// time) and never writes its counter runs `count` more times, each at least one cycle per
// bundle: when that passes the cycle limit, say so now, not after simulating it (a
// `loop r5, 0` with r5 = 0 repeats 2^32 times).
void Machine::check_loop_bound(size_t pc, size_t target, uint32_t count, const OpRef& ref, uint64_t cycle) {
  if (target > pc) return;
  if (plain_loop_.empty()) plain_loop_.assign(bundles_.size(), -1);
  if (plain_loop_[pc] < 0) {
    bool plain = true;
    const int64_t counter = f(bundles_[pc].at(SlotId::Control), SlotId::Control, "rs1");
    for (size_t i = target; i <= pc && plain; ++i) {
      const Operation& c = bundles_[i].at(SlotId::Control);
      if (i < pc)
        plain = c.is_nop() || (c.def->op_class != isa::OpClass::Branch && c.def->op_class != isa::OpClass::Halt);
      for (size_t s = 0; s < isa::kNumSlots && plain; ++s) {
        const Operation& op = bundles_[i].slots[s];
        plain = op.is_nop() || !has_operand(*op.def, "rd") || f(op, SlotId(s), "rd") != counter;
      }
    }
    plain_loop_[pc] = plain;
  }
  if (!plain_loop_[pc]) return;
  uint64_t least = uint64_t(count) * (pc - target + 1) + uint64_t(count - 1) * cfg_.core.scalar.branch_penalty_cycles;
  if (least > opt_.max_cycles || cycle + least > opt_.max_cycles)
    fail(ref, fmt::format("the loop back to bundle {} repeats {} more times (its counter), at least {} cycles in all, "
                          "past the cycle limit {} at cycle {}; check the loop's counter or raise --max-cycles",
                          target, count, least, opt_.max_cycles, cycle));
}

void Machine::run(const std::function<void(uint64_t)>& sync) {
  const auto& sc = cfg_.core.scalar;
  // Tie-break order for stall attribution, and the order operations take effect.
  static constexpr SlotId kAcceptOrder[] = {SlotId::Control, SlotId::Dma, SlotId::Ici, SlotId::MxuWeight,
                                            SlotId::MxuMatmul, SlotId::Vector};
  uint64_t prev = 0, penalty = 0;
  bool first = true;
  size_t pc = 0;
  uint64_t T = 0;
  uint64_t next_sync = 1 << 16;
  while (true) {
    if (pc >= bundles_.size())
      throw SimError(fmt::format("the program ran past its last bundle ({}) without halt; end it with `halt`",
                                 bundles_.size() ? bundles_.size() - 1 : 0));
    const Bundle& b = bundles_[pc];
    auto ref_of = [&](SlotId s) { return OpRef{uint32_t(pc), s, b.at(s).def, b.tag}; };
    uint64_t earliest = first ? 0 : prev + 1 + penalty;
    // Past an instruction fetch from HBM when the bundle's window is not resident yet (the
    // windows move once the bundle issues: in a system it may be accepted more than once).
    const uint64_t fetched = imem_ready(pc, earliest);
    Accept best{fetched, StallReason::ImemFetch};
    SlotId stall_slot = SlotId::Control;
    for (SlotId s : kAcceptOrder) {
      const Operation& op = b.at(s);
      if (op.is_nop()) continue;
      OpRef ref = ref_of(s);
      Accept a{fetched, StallReason::WaitFlag};
      switch (s) {
        case SlotId::Control:
          if (op.def->mnemonic == "wait") a = accept_wait(op, fetched, ref);
          else if (op.def->mnemonic == "barrier") a = accept_barrier(op, fetched, ref);
          break;
        case SlotId::Dma: a = accept_dma(op, fetched, ref); break;
        case SlotId::Ici: a = accept_ici(fetched, ref); break;
        case SlotId::MxuWeight: a = accept_wload(op, fetched, ref); break;
        case SlotId::MxuMatmul: a = accept_matmul(op, fetched, ref); break;
        case SlotId::Vector: a = accept_vector(op, fetched, ref); break;
        default: break;
      }
      if (a.t > best.t) best = a, stall_slot = s;
    }
    // In a system, a bundle issues only below the horizon, with everything the network
    // can still deliver before it known (docs/microarch.md, "Time across chips").
    if (fabric_ && (best.t == kUnknown || best.t >= fabric_->horizon())) {
      apply_deliveries(fabric_->synchronize(best.t));
      continue;
    }
    T = best.t;
    if (T > opt_.max_cycles)
      throw SimError(fmt::format("{}: cycle limit {} reached (the program may loop forever or wait on a very "
                                 "long transfer); raise it with --max-cycles",
                                 where(ref_of(stall_slot)), opt_.max_cycles));
    Counters& c = tagc(b.tag);
    imem_issued(pc, earliest, T, c);
    if (T > earliest) {
      uint64_t stall = T - earliest;
      c.stall[size_t(best.why)] += stall;
      c.stall_cycles += stall;
      trace(Unit::Sequencer, 0, ref_of(stall_slot), stall_reason_name(best.why).data(), earliest, T);
    }
    c.bundles++;
    c.first_issue = std::min(c.first_issue, T);
    passes_.issued(b.tag, T);
    if (fabric_) land_writes(T);
    hazards_.retire_before(T);

    // Effects, in the order docs/microarch.md gives.
    const Operation& ctl = b.at(SlotId::Control);
    if (!ctl.is_nop() && ctl.def->mnemonic == "wait") exec_wait(ctl, T);
    auto t0 = std::chrono::steady_clock::now();
    if (!b.at(SlotId::Dma).is_nop()) exec_dma(b.at(SlotId::Dma), T, ref_of(SlotId::Dma));
    if (!b.at(SlotId::Ici).is_nop()) exec_ici(b.at(SlotId::Ici), T, ref_of(SlotId::Ici));
    auto t1 = std::chrono::steady_clock::now();
    if (!b.at(SlotId::MxuMatmul).is_nop()) exec_matmul(b.at(SlotId::MxuMatmul), T, ref_of(SlotId::MxuMatmul));
    auto t2 = std::chrono::steady_clock::now();
    if (!b.at(SlotId::MxuWeight).is_nop()) exec_wload(b.at(SlotId::MxuWeight), T, ref_of(SlotId::MxuWeight));
    if (!b.at(SlotId::Vector).is_nop()) exec_vector(b.at(SlotId::Vector), T, ref_of(SlotId::Vector));
    auto t3 = std::chrono::steady_clock::now();
    prof_[0] += std::chrono::duration<double>(t1 - t0).count();
    prof_[1] += std::chrono::duration<double>(t2 - t1).count();
    prof_[2] += std::chrono::duration<double>(t3 - t2).count();

    // Scalar unit and control: read every register before writing any.
    std::array<std::pair<int64_t, uint32_t>, 3> writes{};
    size_t nw = 0;
    for (SlotId s : {SlotId::S0, SlotId::S1}) {
      const Operation& op = b.at(s);
      if (op.is_nop()) continue;
      c.scalar_ops++;
      uint32_t a = reg(f(op, s, "rs1")), bb = reg(f(op, s, "rs2"));
      uint32_t imm = uint32_t(int32_t(f(op, s, "imm")));
      std::string_view m = op.def->mnemonic;
      bool use_imm = m.back() == 'i' && m != "li";
      uint32_t y = use_imm ? imm : bb;
      std::string_view base = use_imm ? m.substr(0, m.size() - 1) : m;
      uint32_t r = 0;
      if (m == "li") r = imm;
      else if (base == "add") r = a + y;
      else if (base == "sub") r = a - y;
      else if (base == "mul") r = uint32_t(uint64_t(a) * y);
      else if (base == "and") r = a & y;
      else if (base == "or") r = a | y;
      else if (base == "xor") r = a ^ y;
      else if (base == "shl") r = a << (y & 31);
      else if (base == "shr") r = a >> (y & 31);
      else if (base == "sra") r = uint32_t(int32_t(a) >> (y & 31));
      else if (base == "slt") r = int32_t(a) < int32_t(y);
      else if (base == "sltu") r = a < y;
      else if (base == "seq") r = a == y;
      else if (base == "sne") r = a != y;
      else if (base == "min") r = uint32_t(std::min(int32_t(a), int32_t(y)));
      else if (base == "max") r = uint32_t(std::max(int32_t(a), int32_t(y)));
      else throw InternalError(fmt::format("scalar operation {} not implemented", m));
      writes[nw++] = {f(op, s, "rd"), r};
    }
    bool halt = false, taken = false;
    size_t next = pc + 1;
    if (!ctl.is_nop()) {
      std::string_view m = ctl.def->mnemonic;
      int32_t a = int32_t(reg(f(ctl, SlotId::Control, "rs1"))), bb = int32_t(reg(f(ctl, SlotId::Control, "rs2")));
      size_t target = size_t(f(ctl, SlotId::Control, "target"));
      if (m == "halt") halt = true;
      else if (m == "signal") {
        int64_t fl = f(ctl, SlotId::Control, "flag");
        if (fl == 0) fail(ref_of(SlotId::Control), "signal on f0, which means 'no flag'; use f1..f63");
        add_increment(fl, T + 1, StallReason::WaitFlag, uint32_t(pc), f(ctl, SlotId::Control, "count"));
      }
      else if (m == "jmp") taken = true;
      else if (m == "beq") taken = a == bb;
      else if (m == "bne") taken = a != bb;
      else if (m == "blt") taken = a < bb;
      else if (m == "bge") taken = a >= bb;
      else if (m == "loop") {
        uint32_t nv = uint32_t(a) - 1;
        writes[nw++] = {f(ctl, SlotId::Control, "rs1"), nv};
        taken = nv != 0;
        if (taken) check_loop_bound(pc, target, nv, ref_of(SlotId::Control), T);
      }
      else if (m == "barrier") exec_barrier(ctl);  // a single chip reaches every barrier at once
      if (taken) next = target;
      if (taken && target <= pc) passes_.next_pass();
    }
    for (size_t i = 0; i < nw; ++i)
      if (writes[i].first != 0) regs_[size_t(writes[i].first)] = writes[i].second;
    if (taken) check_progress(uint32_t(next), ref_of(SlotId::Control), T);

    last_done_ = std::max(last_done_, T + 1);
    if (!fabric_ && T >= next_sync) {
      sync(T);
      if (opt_.progress) opt_.progress(T, pc);
      next_sync = T + (1 << 16);
    }
    if (halt) break;
    prev = T;
    penalty = taken ? sc.branch_penalty_cycles : 0;
    first = false;
    pc = next;
  }

  if (std::getenv("VTPU_SIM_PROFILE"))
    fmt::print(stderr, "sim profile: dma {:.1f} ms, matmul {:.1f} ms, vector {:.1f} ms\n", prof_[0] * 1e3, prof_[1] * 1e3, prof_[2] * 1e3);
  if (fabric_) return;  // the system finalizes once the network has drained
  finalize();
  sync(stats_.total_cycles);
}

void Machine::finalize() {
  stats_.total_cycles = last_done_;
  passes_.close(per_tag_);
  for (size_t t = 0; t < per_tag_.size(); ++t) {
    if (per_tag_[t].bundles == 0 && per_tag_[t].last_done == 0) continue;
    stats_.per_tag.push_back({prog_.tags[t], per_tag_[t]});
    stats_.total.add(per_tag_[t]);
  }
  std::stable_sort(stats_.per_tag.begin(), stats_.per_tag.end(),
                   [](const TagStats& a, const TagStats& b) { return a.c.first_issue < b.c.first_issue; });
}

}  // namespace vtpu::sim::detail
