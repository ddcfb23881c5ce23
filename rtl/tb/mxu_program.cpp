// Programs for the MXU cross-check: random generation, the expected behaviour (cycle
// formulas of docs/microarch.md "MXU" and values from vtpu::numerics::ref), and the run
// that compares a Verilated model against it.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <tuple>

#include "mxu_harness.h"
#include "vtpu/numerics/float.h"
#include "vtpu/numerics/mxu.h"

namespace vtpu::rtl {
namespace nm = vtpu::numerics;

// =======================================================================================
// Random programs
// =======================================================================================
namespace {

class Gen {
 public:
  explicit Gen(uint64_t seed) : rng_(seed) {}
  uint32_t u32() { return static_cast<uint32_t>(rng_()); }
  unsigned below(unsigned n) { return n == 0 ? 0 : static_cast<unsigned>(rng_() % n); }
  unsigned range(unsigned lo, unsigned hi) { return lo + below(hi - lo + 1); }  // [lo, hi]
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

 private:
  std::mt19937_64 rng_;
};

// How a program draws its bf16 values. Each mode stresses a different part of the
// arithmetic; specials are sprinkled in with probability `special`.
enum class Bf16Mode { Near, Wide, Cancel, Tiny };

struct ValueStyle {
  Bf16Mode mode = Bf16Mode::Near;
  double special = 0.0;
};

uint16_t bf16_special(Gen& g) {
  switch (g.below(12)) {
    case 0: return 0x0000;                                              // +0
    case 1: return 0x8000;                                              // -0
    case 2: return 0x7F80;                                              // +inf
    case 3: return 0xFF80;                                              // -inf
    case 4: return static_cast<uint16_t>(0x7F80 | g.range(1, 0x7F) | (g.below(2) << 15));  // NaN
    case 5: return static_cast<uint16_t>(g.range(1, 0x7F) | (g.below(2) << 15));           // denormal
    case 6: return static_cast<uint16_t>(0x7F7F | (g.below(2) << 15));                     // max finite
    case 7: return static_cast<uint16_t>(0x0080 | (g.below(2) << 15));                     // min normal
    case 8: return static_cast<uint16_t>((g.range(1, 12) << 7) | g.below(128) | (g.below(2) << 15));   // tiny
    case 9: return static_cast<uint16_t>((g.range(243, 254) << 7) | g.below(128) | (g.below(2) << 15));  // huge
    case 10: return static_cast<uint16_t>(0x3F80 | (g.below(2) << 15));                    // +-1
    default: return static_cast<uint16_t>(0x7FC0 | (g.below(2) << 15));                    // quiet NaN
  }
}

uint16_t bf16_value(Gen& g, const ValueStyle& s) {
  if (s.special > 0 && g.chance(s.special)) return bf16_special(g);
  const unsigned sign = g.below(2) << 15;
  unsigned exp = 127, frac = g.below(128);
  switch (s.mode) {
    case Bf16Mode::Near: exp = g.range(121, 133); break;            // sums round, cancel, carry
    case Bf16Mode::Wide: exp = g.range(1, 254); break;              // products overflow/underflow
    case Bf16Mode::Cancel:                                          // exact cancellations, zeros
      exp = g.range(126, 128);
      frac = g.below(4) << 5;
      break;
    case Bf16Mode::Tiny: exp = g.range(40, 90); break;              // sums near 2^-126 (FTZ)
  }
  return static_cast<uint16_t>(sign | (exp << 7) | frac);
}

uint16_t int8_lane(Gen& g) {
  static constexpr int8_t kEdge[] = {-128, 127, -127, 0, 1, -1};
  const int8_t v = g.chance(0.2) ? kEdge[g.below(6)] : static_cast<int8_t>(g.u32());
  const uint16_t garbage = static_cast<uint16_t>(g.below(256) << 8);  // bits 15..8 must be ignored
  return static_cast<uint16_t>(garbage | static_cast<uint8_t>(v));
}

uint16_t padding(Gen& g) {  // must take no part in any result
  switch (g.below(4)) {
    case 0: return static_cast<uint16_t>(0x7FC1 | (g.below(2) << 15));
    case 1: return static_cast<uint16_t>(0x7F80 | (g.below(2) << 15));
    default: return static_cast<uint16_t>(g.u32());
  }
}

uint32_t acc_value(Gen& g) {
  switch (g.below(10)) {
    case 0: return g.u32();
    case 1: return 0x80000000u;                                          // -0 / INT32_MIN
    case 2: return 0x7FFFFFFFu - g.below(1u << 18);                      // near INT32_MAX
    case 3: return static_cast<uint32_t>(g.below(0x007FFFFF) + 1) | (g.below(2) << 31);  // denormal
    case 4: return 0x7F800000u | g.below(0x7FFFFF) | (g.below(2) << 31);  // inf / NaN payload
    case 5: return static_cast<uint32_t>(static_cast<int32_t>(g.range(0, 200000)) - 100000);
    default: {  // normal fp32 of a typical partial-sum magnitude
      const uint32_t exp = g.range(118, 140);
      return (g.below(2) << 31) | (exp << 23) | (g.u32() & 0x7FFFFF);
    }
  }
}

Tile random_tile(Gen& g, const MxuParams& p, bool bf16, const ValueStyle& s) {
  Tile t;
  t.bf16 = bf16;
  t.k = g.chance(0.5) ? p.rows : g.range(1, p.rows);
  t.n = g.chance(0.5) ? p.cols : g.range(1, p.cols);
  t.w.resize(size_t(p.rows) * p.cols);
  for (unsigned k = 0; k < p.rows; ++k)
    for (unsigned n = 0; n < p.cols; ++n) {
      uint16_t& w = t.w[size_t(k) * p.cols + n];
      if (k >= t.k || n >= t.n) w = padding(g);
      else w = bf16 ? bf16_value(g, s) : int8_lane(g);
    }
  return t;
}

Matmul random_matmul(Gen& g, const MxuParams& p, const Tile& t, bool swap, const ValueStyle& s,
                     bool long_mode) {
  Matmul m;
  m.swap = swap;
  m.bf16 = t.bf16;
  m.acc = g.chance(0.5);
  const unsigned R = p.rows;
  const unsigned r = g.below(100);
  if (r < 45) m.rows = g.range(1, R);
  else if (r < 85) m.rows = g.range(1, 2 * R + 3);
  else m.rows = g.range(R, long_mode ? 8 * R + 16 : 4 * R + 4);
  m.rows = std::min(m.rows, p.acc_rows);
  // Destinations mostly overlap a small window, so matmuls accumulate onto each other.
  const unsigned window = std::min(p.acc_rows, 3 * R + 8);
  if (g.chance(0.1) || m.rows > window) m.dst = p.acc_rows - m.rows - g.below(std::min(4u, p.acc_rows - m.rows + 1));
  else m.dst = g.below(window - m.rows + 1);
  m.a.resize(size_t(m.rows) * R);
  for (unsigned b = 0; b < m.rows; ++b)
    for (unsigned k = 0; k < R; ++k) {
      uint16_t& a = m.a[size_t(b) * R + k];
      if (k >= t.k) a = padding(g);
      else a = t.bf16 ? bf16_value(g, s) : int8_lane(g);
    }
  return m;
}

}  // namespace

Program random_program(const MxuParams& p, uint64_t seed, bool long_mode) {
  Gen g(seed);
  Program prog;
  prog.seed = seed;
  prog.origin = long_mode ? "random (long)" : "random";
  const unsigned R = p.rows, C = p.cols;

  ValueStyle style;
  style.mode = static_cast<Bf16Mode>(g.below(4));
  static constexpr double kSpecial[] = {0.0, 0.01, 0.05, 0.2};
  style.special = kSpecial[g.below(4)];

  // Accumulators: random in the destination window and at the top rows, 0 elsewhere.
  prog.acc_init.assign(size_t(p.acc_rows) * C, 0);
  const unsigned window = std::min(p.acc_rows, 3 * R + 8);
  for (unsigned row = 0; row < p.acc_rows; ++row)
    if (row < window || row + 24 >= p.acc_rows)
      for (unsigned n = 0; n < C; ++n) prog.acc_init[size_t(row) * C + n] = acc_value(g);

  const unsigned n_tiles = 1 + g.below(long_mode ? 10 : 4);
  uint64_t ready = g.chance(0.5) ? 0 : g.below(20);
  for (unsigned i = 0; i < n_tiles; ++i) {
    const bool bf16 = p.bf16 && g.chance(0.5);
    prog.tiles.push_back(random_tile(g, p, bf16, style));
    prog.tiles.back().ready = ready;
    if (!g.chance(0.3)) ready += g.below(R + C + 24);
  }

  // Bundles. Shadow state in program order: a wload needs the shadow swapped out; a swap
  // needs a wload since the last swap.
  unsigned next_tile = 0;
  int active = -1, shadow = -1;
  unsigned matmuls = 0;
  const unsigned max_matmuls = n_tiles * (long_mode ? 4 : 3);
  uint64_t earliest = g.below(4);
  auto gap = [&]() -> uint64_t {
    const unsigned r = g.below(100);
    if (r < 60) return 0;
    if (r < 85) return g.range(1, 3);
    return g.below(R + C + 12);
  };
  while (true) {
    const bool can_wl = shadow < 0 && next_tile < n_tiles;
    const bool can_swap = shadow >= 0;
    const bool can_plain = active >= 0;
    if (!can_wl && !can_swap && (!can_plain || matmuls >= max_matmuls)) break;
    // Choose among: plain matmul, swap matmul, wload, swap matmul + wload, plain matmul + wload.
    std::vector<int> options;
    if (can_plain && matmuls < max_matmuls) options.push_back(0);
    if (can_swap) options.push_back(1);
    if (can_wl) options.push_back(2);
    if (can_swap && next_tile < n_tiles) options.push_back(3), options.push_back(3);
    if (can_plain && can_wl) options.push_back(4);
    const int choice = options[g.below(unsigned(options.size()))];
    Bundle b;
    earliest += gap();
    b.earliest = earliest;
    const bool mm = choice != 2, swap = choice == 1 || choice == 3;
    b.wl = choice >= 2;
    if (mm) {
      if (swap) {
        active = shadow;
        shadow = -1;
      }
      b.mm = random_matmul(g, p, prog.tiles[size_t(active)], swap, style, long_mode);
      ++matmuls;
    }
    if (b.wl) shadow = int(next_tile++);
    prog.bundles.push_back(std::move(b));
  }
  return prog;
}

std::string describe(const Program& prog, const MxuParams& p) {
  std::string s;
  for (size_t i = 0; i < prog.tiles.size(); ++i) {
    const Tile& t = prog.tiles[i];
    s += fmt::format("  tile {}: {} K={} N={} (of {}x{}), in the weight FIFO from cycle {}\n", i,
                     t.bf16 ? "bf16" : "int8", t.k, t.n, p.rows, p.cols, t.ready);
  }
  int shadow = -1, active = -1;
  unsigned next_tile = 0;
  for (size_t i = 0; i < prog.bundles.size(); ++i) {
    const Bundle& b = prog.bundles[i];
    std::string ops;
    if (b.mm) {
      if (b.mm->swap) active = shadow, shadow = -1;
      ops += fmt::format("mxu.matmul rows={} dst={} dtype={} acc={} swap={} (tile {})", b.mm->rows,
                         b.mm->dst, b.mm->bf16 ? "bf16" : "int8", int(b.mm->acc), int(b.mm->swap), active);
    }
    if (b.wl) {
      shadow = int(next_tile++);
      ops += fmt::format("{}mxu.wload (tile {})", ops.empty() ? "" : " || ", shadow);
    }
    s += fmt::format("  bundle {} (not before cycle {}): {}\n", i, b.earliest, ops);
  }
  return s;
}

// =======================================================================================
// Expected behaviour
// =======================================================================================
namespace {

// One matmul on the accumulator image `acc` (acc_rows x C words), by the reference.
void compute(const MxuParams& p, const Tile& t, const Matmul& m, std::vector<uint32_t>& acc) {
  const unsigned R = p.rows, C = p.cols, B = m.rows;
  uint32_t* block = acc.data() + size_t(m.dst) * C;
  if (!m.bf16) {
    std::vector<int8_t> a(size_t(B) * R), w(size_t(R) * C);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<int8_t>(m.a[i] & 0xFF);
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(t.w[i] & 0xFF);
    std::vector<int32_t> out(size_t(B) * C);
    std::memcpy(out.data(), block, out.size() * 4);
    nm::ref::matmul_tile_int8(a.data(), R, w.data(), C, out.data(), C, B, t.k, t.n, m.acc);
    std::memcpy(block, out.data(), out.size() * 4);
    // Columns past the tile get a 0 partial sum: written as 0, unchanged when accumulating.
    if (!m.acc)
      for (unsigned b = 0; b < B; ++b)
        for (unsigned n = t.n; n < C; ++n) block[size_t(b) * C + n] = 0;
    return;
  }
  std::vector<float> out(size_t(B) * C);
  std::memcpy(out.data(), block, out.size() * 4);
  nm::ref::matmul_tile_bf16(m.a.data(), R, t.w.data(), C, out.data(), C, B, t.k, t.n, m.acc);
  std::memcpy(block, out.data(), out.size() * 4);
  // Columns past the tile get a +0 partial sum: written as +0, or added under the policy.
  for (unsigned b = 0; b < B; ++b)
    for (unsigned n = t.n; n < C; ++n) {
      uint32_t& x = block[size_t(b) * C + n];
      x = m.acc ? nm::sf::add(x, 0u) : 0u;
    }
}

bool event_less(const Event& x, const Event& y) {
  return std::tie(x.cycle, x.kind, x.a) < std::tie(y.cycle, y.kind, y.a);
}

}  // namespace

Expected expect(const Program& prog, const MxuParams& p) {
  Expected e;
  e.acc_final = prog.acc_init;
  const uint64_t R = p.rows, C = p.cols, in = p.in_lat, out = p.out_lat;
  // docs/microarch.md, "MXU".
  uint64_t data_free = 0;      // T_prev + B_prev
  uint64_t wpath_free = 0;     // shift end of the previous wload
  uint64_t shadow_ready = 0;   // shift end of the wload that filled the shadow
  uint64_t shadow_free = 0;    // S of the matmul that swapped the shadow out
  int active = -1, shadow = -1;
  size_t next_tile = 0;
  uint64_t prev_issue = 0;
  auto add = [&](uint64_t cycle, EventKind kind, unsigned a, std::vector<uint32_t> data = {}) {
    e.events.push_back(Event{cycle, kind, a, std::move(data)});
    e.last_cycle = std::max(e.last_cycle, cycle);
  };
  for (size_t i = 0; i < prog.bundles.size(); ++i) {
    const Bundle& b = prog.bundles[i];
    uint64_t T = std::max<uint64_t>(b.earliest, i == 0 ? 0 : prev_issue + 1);
    if (b.mm) T = std::max({T, data_free, b.mm->swap ? shadow_ready : 0});
    if (b.wl) T = std::max(T, wpath_free);
    prev_issue = T;
    add(T, EventKind::Issue, unsigned(i));
    if (b.mm) {  // a matmul with swap=1 acts before the bundle's wload
      const Matmul& m = *b.mm;
      const uint64_t S = T + in;
      if (m.swap) {
        active = shadow;
        shadow = -1;
        shadow_free = S;
      }
      compute(p, prog.tiles[size_t(active)], m, e.acc_final);
      for (unsigned j = 0; j < m.rows; ++j) {
        add(T + j, EventKind::InReq, j);
        const uint32_t* row = e.acc_final.data() + size_t(m.dst + j) * C;
        add(S + j + R + C - 2 + out, EventKind::AccWrite, m.dst + j, std::vector<uint32_t>(row, row + C));
      }
      add(S + m.rows + R + C - 2 + out, EventKind::Done, 0);
      data_free = T + m.rows;
    }
    if (b.wl) {
      const Tile& t = prog.tiles[next_tile];
      shadow = int(next_tile++);
      const uint64_t start = std::max({T, t.ready, shadow_free});
      add(start, EventKind::WfPop, 0);
      for (unsigned r = 0; r < R; ++r) add(start + r, EventKind::WfRead, unsigned(R - 1 - r));
      wpath_free = shadow_ready = start + p.shift;
    }
  }
  std::sort(e.events.begin(), e.events.end(), event_less);
  return e;
}

std::string describe(const Event& e) {
  switch (e.kind) {
    case EventKind::Issue: return fmt::format("cycle {}: bundle {} issues", e.cycle, e.a);
    case EventKind::InReq: return fmt::format("cycle {}: input row {} requested", e.cycle, e.a);
    case EventKind::WfPop: return fmt::format("cycle {}: weight FIFO pop (shift starts)", e.cycle);
    case EventKind::WfRead: return fmt::format("cycle {}: weight tile row {} read", e.cycle, e.a);
    case EventKind::Done: return fmt::format("cycle {}: done", e.cycle);
    case EventKind::AccWrite: {
      std::string s = fmt::format("cycle {}: accumulator row {} written [", e.cycle, e.a);
      for (size_t n = 0; n < e.data.size(); ++n) s += fmt::format("{}{:08x}", n ? " " : "", e.data[n]);
      return s + "]";
    }
  }
  return "?";
}

// =======================================================================================
// The run
// =======================================================================================
RunResult run(MxuPort& m, const Program& prog) {
  const MxuParams& p = m.params();
  const unsigned R = p.rows, C = p.cols;
  const Expected exp = expect(prog, p);
  RunResult res;

  // Reset; preload the nonzero accumulator rows through the external write port.
  m.set_mm(false, 1, 0, false, false, false);
  m.set_wl(false);
  m.set_wf(false, 0, 0);
  m.set_acc_rd_addr(0);
  std::vector<uint16_t> zeros(std::max(R, C), 0);
  m.set_in_data(zeros.data());
  m.set_wf_data(zeros.data());
  m.set_rst_n(false);
  for (unsigned row = 0; row < p.acc_rows; ++row) {
    const uint32_t* v = prog.acc_init.data() + size_t(row) * C;
    if (std::any_of(v, v + C, [](uint32_t x) { return x != 0; })) {
      m.set_ext_write(true, row, v);
      m.tick();
    }
  }
  m.set_ext_write(false, 0, nullptr);
  m.tick();
  m.tick();
  m.set_rst_n(true);
  m.tick();

  std::vector<Event> act;
  std::vector<uint32_t> wdata(C);
  size_t bi = 0, fifo_head = 0;
  int streaming = -1, loading = -1;  // bundle whose rows stream in, tile being shifted in
  uint64_t last_issue = 0;
  const uint64_t limit = exp.last_cycle + R + C + 64;
  for (uint64_t cycle = 0; cycle <= limit; ++cycle) {
    // The sequencer: the next bundle issues when every operation in it is accepted.
    bool fire = false;
    if (bi < prog.bundles.size()) {
      const Bundle& b = prog.bundles[bi];
      fire = cycle >= b.earliest && (bi == 0 || cycle > last_issue);
      if (fire && b.mm) fire = m.mm_data_free() && (!b.mm->swap || m.mm_shadow_ready());
      if (fire && b.wl) fire = m.wl_ready();
    }
    const Bundle* fb = fire ? &prog.bundles[bi] : nullptr;
    if (fb && fb->mm)
      m.set_mm(true, fb->mm->rows, fb->mm->dst, fb->mm->acc, fb->mm->swap, fb->mm->bf16);
    else
      m.set_mm(false, 1, 0, false, false, false);
    m.set_wl(fb && fb->wl);
    // The weight FIFO: its oldest tile, available from its ready cycle.
    if (fifo_head < prog.tiles.size() && cycle >= prog.tiles[fifo_head].ready)
      m.set_wf(true, prog.tiles[fifo_head].k, prog.tiles[fifo_head].n);
    else
      m.set_wf(false, 0, 0);
    m.eval();

    if (fb) {
      act.push_back(Event{cycle, EventKind::Issue, unsigned(bi), {}});
      if (fb->mm) streaming = int(bi);
      last_issue = cycle;
      ++bi;
    }
    if (m.in_req()) {  // the unified buffer answers in the same cycle
      const unsigned j = m.in_req_row();
      act.push_back(Event{cycle, EventKind::InReq, j, {}});
      const Matmul* mm = streaming >= 0 ? &*prog.bundles[size_t(streaming)].mm : nullptr;
      m.set_in_data(mm && j < mm->rows ? mm->a.data() + size_t(j) * R : zeros.data());
    }
    if (m.wf_pop()) {
      act.push_back(Event{cycle, EventKind::WfPop, 0, {}});
      loading = int(fifo_head++);
    }
    if (m.wf_rd()) {
      const unsigned r = m.wf_row();
      act.push_back(Event{cycle, EventKind::WfRead, r, {}});
      m.set_wf_data(loading >= 0 && r < R ? prog.tiles[size_t(loading)].w.data() + size_t(r) * C : zeros.data());
    }
    if (m.acc_we()) {
      m.acc_wdata(wdata.data());
      act.push_back(Event{cycle, EventKind::AccWrite, m.acc_waddr(), wdata});
    }
    if (m.done()) act.push_back(Event{cycle, EventKind::Done, 0, {}});
    m.tick();
  }
  res.cycles = limit + 1;
  std::sort(act.begin(), act.end(), event_less);
  res.events = act.size();

  auto fail = [&](const std::string& what) {
    res.ok = false;
    res.message = fmt::format(
        "MXU cross-check mismatch: model {} (R={} C={} in={} out={} shift={} acc_rows={}), {} program{}\n{}\n"
        "program:\n{}",
        p.name, R, C, p.in_lat, p.out_lat, p.shift, p.acc_rows, prog.origin,
        prog.origin.rfind("random", 0) == 0 ? fmt::format(", seed {}", prog.seed) : std::string(), what,
        describe(prog, p));
  };

  const size_t n = std::max(act.size(), exp.events.size());
  for (size_t i = 0; i < n; ++i) {
    const Event* x = i < exp.events.size() ? &exp.events[i] : nullptr;
    const Event* y = i < act.size() ? &act[i] : nullptr;
    if (x && y && *x == *y) continue;
    std::string what = fmt::format("first difference at event #{}:\n  expected: {}\n  RTL:      {}", i,
                                   x ? describe(*x) : "(nothing more)", y ? describe(*y) : "(nothing more)");
    if (x && y && x->cycle == y->cycle && x->kind == y->kind && x->a == y->a && x->kind == EventKind::AccWrite)
      for (size_t c = 0; c < C; ++c)
        if (x->data[c] != y->data[c]) {
          what += fmt::format("\n  first differing value: cycle {}, accumulator row {}, column {}: expected "
                              "0x{:08x}, RTL 0x{:08x}",
                              x->cycle, x->a, c, x->data[c], y->data[c]);
          break;
        }
    fail(what);
    return res;
  }

  // Nothing else may have changed: read every accumulator row back.
  for (unsigned row = 0; row < p.acc_rows; ++row) {
    m.set_acc_rd_addr(row);
    m.eval();
    m.acc_rd_data(wdata.data());
    for (unsigned c = 0; c < C; ++c)
      if (wdata[c] != exp.acc_final[size_t(row) * C + c]) {
        fail(fmt::format("accumulator contents after the run differ: row {}, column {}: expected 0x{:08x}, "
                         "RTL 0x{:08x}",
                         row, c, exp.acc_final[size_t(row) * C + c], wdata[c]));
        return res;
      }
  }
  return res;
}

}  // namespace vtpu::rtl
