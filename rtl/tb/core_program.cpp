// Random legal programs for the core cross-check, in the RTL core's subset. Each program
// loads input rows and a scratch image into the unified buffer, streams 1-6 weight tiles
// through the FIFO (prefetching while the previous tile computes), runs matmuls with and
// without swaps, accumulation and counted loops, transforms accumulator rows and the
// scratch image with vector operations (arithmetic, clamps, requantization, conversions
// between every pair of types; bank conflicts from unaligned rows included) and copies,
// and stores the scratch image as the output. Flags guard every dependence, so the simulator's
// race checker accepts it; scalar noise, branches and signal/wait pairs are mixed in.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <stdexcept>

#include "core_harness.h"

// Bundles are written with designated initializers naming only the slots they use.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace vtpu::rtl {
namespace {

struct Gen {
  std::mt19937_64 rng;
  uint64_t pick(uint64_t lo, uint64_t hi) { return lo + rng() % (hi - lo + 1); }  // [lo, hi]
  bool chance(unsigned percent) { return rng() % 100 < percent; }
};

// One bundle: operations by slot; branch targets are label names.
struct B {
  std::string label, s0, s1, dma, mxw, mxm, vec, ctl;
  std::string text() const {
    std::vector<std::string> ops;
    for (const std::string* s : {&s0, &s1, &dma, &mxw, &mxm, &vec, &ctl})
      if (!s->empty()) ops.push_back(*s);
    std::string t = ops.empty() ? "nop" : ops[0];
    for (size_t i = 1; i < ops.size(); ++i) t += " || " + ops[i];
    return (label.empty() ? "  " : label + ": ") + t;
  }
};

}  // namespace

std::string random_core_program(const config::Config& cfg, uint64_t seed, const std::string& dtype) {
  Gen g{std::mt19937_64(seed * 0x2545F4914F6CDD1Dull + 17)};
  const bool bf16 = dtype == "bf16";
  const uint32_t R = cfg.core.mxu.rows, C = cfg.core.mxu.cols;
  const uint32_t esz = bf16 ? 2 : 1;
  const std::string acct = bf16 ? "fp32" : "int32";
  const uint32_t vrow = C * 4;                                  // an accumulator-type vector row in the UB
  const uint32_t XU = 0, RU = 0x4000;                           // UB: input rows, scratch image
  const uint32_t RU_BYTES = 16 * vrow + 64;                     // a multiple of 64
  const uint32_t acc_rows = cfg.core.accumulators.rows;
  const uint32_t ACC_MM = std::min<uint32_t>(acc_rows / 2, 64);  // matmul destinations
  const uint32_t ACC_V = ACC_MM, ACC_V_ROWS = 32;                // vector destinations
  const uint64_t HX = 0x1000, HW = 0x10000, HI = 0x80000, HO = 0x200000;

  const uint32_t nrows = uint32_t(g.pick(1, 2 * R));
  const uint32_t xrow = R * esz;
  const uint32_t xs = g.chance(60) ? xrow : xrow + 4 * uint32_t(g.pick(1, 2));  // UB stride of input rows
  const uint32_t ntiles = uint32_t(g.pick(1, 6));

  std::string head = fmt::format(".config {}\n", cfg.name);
  head += fmt::format(".tensor x role=input dtype={} shape=[{}, {}] addr={:#x}\n", dtype, nrows, R, HX);
  head += fmt::format(".tensor w role=input dtype={} shape=[{}, {}, {}] addr={:#x}\n", dtype, ntiles, R, C, HW);
  head += fmt::format(".tensor init role=input dtype=uint8 shape=[{}] addr={:#x}\n", RU_BYTES, HI);
  head += fmt::format(".tensor out role=output dtype=uint8 shape=[{}] addr={:#x}\n", RU_BYTES, HO);
  // The scratch image moves in rows of 64 bytes, or longer ones the DMA moves in beats.
  const uint32_t init_row = g.chance(50) ? 64 : g.chance(50) ? RU_BYTES : RU_BYTES / 4;
  head += fmt::format(".desc init bytes={} dim=[{}, {}, {}]\n", init_row, RU_BYTES / init_row, init_row, init_row);
  const bool halves = g.chance(50);
  const uint32_t out_row = halves ? (g.chance(50) ? 32 : RU_BYTES / 2) : (g.chance(50) ? 64 : RU_BYTES);
  const uint32_t out_rows = (halves ? RU_BYTES / 2 : RU_BYTES) / out_row;
  head += fmt::format(".desc out bytes={} dim=[{}, {}, {}]\n", out_row, out_rows, out_row, out_row);
  const uint32_t n1 = nrows > 1 && g.chance(50) ? uint32_t(g.pick(1, nrows - 1)) : nrows;
  head += fmt::format(".desc x1 bytes={} dim=[{}, {}, {}]\n", xrow, n1, xrow, xs);
  if (n1 < nrows) head += fmt::format(".desc x2 bytes={} dim=[{}, {}, {}]\n", xrow, nrows - n1, xrow, xs);
  std::vector<std::pair<uint32_t, uint32_t>> tile_kn;
  for (uint32_t t = 0; t < ntiles; ++t) {
    const bool partial = g.chance(30);
    const uint32_t K = partial ? uint32_t(g.pick(1, R)) : R, N = partial ? uint32_t(g.pick(1, C)) : C;
    tile_kn.push_back({K, N});
    head += fmt::format(".desc wt{} bytes={} dim=[{}, {}, 0] dtype={}\n", t, N * esz, K, C * esz, dtype);
  }

  std::vector<B> code;
  std::vector<B>* out = &code;  // where push() appends: the program, or one MXU's stream
  auto noise = [&](std::string& slot) {  // scalar work on registers nothing else reads
    static const char* ops[] = {"add", "sub", "mul", "and", "or", "xor", "shl", "shr", "sra", "slt", "sltu",
                                "seq", "sne", "min", "max"};
    static const char* iops[] = {"addi", "muli", "andi", "ori", "xori", "shli", "shri", "srai", "slti"};
    const unsigned rd = unsigned(g.pick(23, 29)), a = unsigned(g.pick(23, 29)), b = unsigned(g.pick(23, 29));
    switch (g.rng() % 3) {
      case 0: slot = fmt::format("{} r{}, r{}, r{}", ops[g.rng() % 15], rd, a, b); break;
      case 1: slot = fmt::format("{} r{}, r{}, {}", iops[g.rng() % 9], rd, a, int32_t(g.rng())); break;
      default: slot = fmt::format("li r{}, {}", rd, int32_t(g.rng())); break;
    }
  };
  auto maybe_noise = [&](B& b) {
    if (b.s1.empty() && g.chance(25)) noise(b.s1);
  };
  auto push = [&](B b) {
    maybe_noise(b);
    out->push_back(std::move(b));
  };

  // --- loads
  push({.s0 = fmt::format("li r1, {:#x}", HX), .s1 = fmt::format("li r2, {}", XU)});
  push({.s0 = fmt::format("li r3, {:#x}", HI), .s1 = fmt::format("li r4, {}", RU)});
  unsigned nloads = 1;
  push({.dma = "dma.load desc=init src=r3 dst=r4 flag=f1"});
  if (n1 < nrows) {
    push({.s0 = fmt::format("addi r1, r1, {}", n1 * xrow), .s1 = fmt::format("addi r2, r2, {}", n1 * xs),
          .dma = "dma.load desc=x1 src=r1 dst=r2 flag=f1"});
    push({.dma = "dma.load desc=x2 src=r1 dst=r2 flag=f1"});
    nloads += 2;
  } else {
    push({.dma = "dma.load desc=x1 src=r1 dst=r2 flag=f1"});
    nloads += 1;
  }
  // --- weight tiles and matmuls, one stream per MXU (interleaved when there are several):
  // two tiles prefetched; tile t+2 after tile t's wload. MXU m streams the same tiles
  // through its own FIFO into its own accumulators.
  const uint32_t mxus = cfg.core.mxu.count;
  std::set<uint32_t> acc_written;  // accumulator rows holding a value (m * acc_rows + row)
  unsigned nmm = 0, label_n = 0;
  bool signalled = false;
  std::vector<std::vector<B>> streams(mxus);
  for (uint32_t m = 0; m < mxus; ++m) {
    if (mxus > 1) out = &streams[m];
    // registers: the tile address, the loop counter and the loop's row and accumulator bases
    const unsigned ra = m == 0 ? 5 : 6, rc = m == 0 ? 20 : 17, rx = rc + 1, ry = rc + 2;
    const uint32_t abase = m * acc_rows;
    if (m == 0) push({.s0 = fmt::format("li r{}, {:#x}", ra, HW)});
    else push({.s1 = fmt::format("li r{}, {:#x}", ra, HW)});
    unsigned next_tile = 0;
    auto wfifo = [&](B& b) {
      b.dma = fmt::format("dma.wfifo desc=wt{} src=r{} mxu={}{}", next_tile, ra, m, g.chance(50) ? " flag=f2" : "");
      b.s0 = fmt::format("addi r{}, r{}, {}", ra, ra, R * C * esz);
      ++next_tile;
    };
    for (unsigned i = 0; i < 2 && next_tile < ntiles; ++i) {
      B b;
      wfifo(b);
      push(b);
    }
    if (m == 0) {
      if (g.chance(30)) push({.ctl = "signal f6, 2"});
      signalled = !out->empty() && out->back().ctl == "signal f6, 2";
      push({.ctl = fmt::format("wait f1, {}", nloads)});
    }
    auto matmul = [&](bool swap) {
      const uint32_t s = uint32_t(g.pick(0, nrows - 1));
      const uint32_t rows = uint32_t(g.pick(1, std::min<uint32_t>(nrows - s, 2 * R)));
      const uint32_t dst = uint32_t(g.pick(0, ACC_MM - rows));
      bool all = true;
      for (uint32_t i = 0; i < rows; ++i) all = all && acc_written.count(abase + dst + i);
      const bool acc = all && g.chance(60);
      for (uint32_t i = 0; i < rows; ++i) acc_written.insert(abase + dst + i);
      ++nmm;
      return fmt::format("mxu.matmul mxu={} src=r0+{} dst=r0+{} rows={} dtype={}{}{}{} flag=f3", m, XU + s * xs, dst,
                         rows, dtype, xs != xrow ? fmt::format(" stride={}", xs) : "", acc ? " acc=1" : "",
                         swap ? " swap=1" : "");
    };
    const std::string wload = fmt::format("mxu.wload mxu={}", m);
    push({.mxw = wload});
    for (uint32_t t = 0; t < ntiles; ++t) {
      B sw{.mxm = matmul(true)};
      const bool more = t + 1 < ntiles;
      bool loaded_next = false;
      if (more && g.chance(50)) sw.mxw = wload, loaded_next = true;
      push(sw);
      const unsigned extra = unsigned(g.pick(0, 2));
      for (unsigned e = 0; e < extra; ++e) {
        if (more && !loaded_next && g.chance(40)) {
          push({.mxw = wload});
          loaded_next = true;
        }
        if (g.chance(30)) {  // a counted loop of matmuls over consecutive row blocks
          const uint32_t b = uint32_t(g.pick(1, std::max<uint32_t>(1, nrows / 2)));
          const uint32_t nblk = uint32_t(g.pick(1, std::max<uint32_t>(1, nrows / b)));
          const uint32_t dst = uint32_t(g.pick(0, ACC_MM - b * nblk));
          push({.s0 = fmt::format("li r{}, {}", rx, XU), .s1 = fmt::format("li r{}, {}", ry, dst), .ctl = ""});
          push({.s0 = fmt::format("li r{}, {}", rc, nblk)});
          const std::string L = fmt::format("blk{}", label_n++);
          B body{.label = L,
                 .s0 = fmt::format("addi r{}, r{}, {}", rx, rx, b * xs),
                 .s1 = fmt::format("addi r{}, r{}, {}", ry, ry, b),
                 .mxm = fmt::format("mxu.matmul mxu={} src=r{}+0 dst=r{}+0 rows={} dtype={}{} flag=f3", m, rx, ry, b,
                                    dtype, xs != xrow ? fmt::format(" stride={}", xs) : ""),
                 .ctl = fmt::format("loop r{}, {}", rc, L)};
          out->push_back(body);
          for (uint32_t i = 0; i < b * nblk; ++i) acc_written.insert(abase + dst + i);
          nmm += nblk;
        } else {
          push({.mxm = matmul(false)});
        }
      }
      if (more && !loaded_next) push({.mxw = wload});
      if (more && next_tile < ntiles) {  // a strictly later bundle than the wload that makes room
        B b;
        wfifo(b);
        push(b);
      }
    }
  }
  out = &code;
  if (mxus > 1) {  // interleave the streams, each in its own order, matmuls after the loads' wait
    std::vector<size_t> at(mxus, 0);
    for (uint32_t m = 1; m < mxus; ++m)
      while (at[m] < streams[m].size() && streams[m][at[m]].mxm.empty()) code.push_back(streams[m][at[m]++]);
    while (at[0] < streams[0].size() && streams[0][at[0]].ctl.rfind("wait f1", 0) != 0) code.push_back(streams[0][at[0]++]);
    code.push_back(streams[0][at[0]++]);
    for (size_t left = 0;;) {
      left = 0;
      for (uint32_t m = 0; m < mxus; ++m) left += streams[m].size() - at[m];
      if (left == 0) break;
      uint64_t pick = g.rng() % left;
      for (uint32_t m = 0; m < mxus; ++m) {
        const size_t rem = streams[m].size() - at[m];
        if (pick < rem) {
          code.push_back(streams[m][at[m]++]);
          break;
        }
        pick -= rem;
      }
    }
  }
  if (g.chance(30)) {  // a taken forward branch over a bundle that must not run
    const std::string L = fmt::format("skip{}", label_n++);
    push({.ctl = fmt::format("beq r0, r0, {}", L)});
    code.push_back({.s0 = "li r1, 0", .ctl = "halt"});
    code.push_back({.label = L, .ctl = fmt::format("bne r0, r0, {}", L)});
  }
  push({.ctl = fmt::format("wait f3, {}", nmm)});

  // --- vector operations and unified-buffer copies
  struct Range {
    bool acc;
    uint64_t lo, hi;
    bool write;
  };
  // What issued vector ops (flag f4) and dma.copy transfers (flag f7) still occupy: a new
  // operation that writes what they touch, or reads what they write, waits on both flags.
  std::vector<Range> pending;
  unsigned pend_vec = 0, pend_copy = 0, ncopy_desc = 0, nparams = 0;
  auto conflicts = [&](const std::vector<Range>& rs) {
    for (const Range& r : rs)
      for (const Range& p : pending)
        if (p.acc == r.acc && p.lo < r.hi && r.lo < p.hi && (p.write || r.write)) return true;
    return false;
  };
  // Emits the waits; the last one may share the bundle of the operation that needs it.
  auto drain = [&](B& op_bundle) {
    std::vector<std::string> waits;
    if (pend_vec) waits.push_back(fmt::format("wait f4, {}", pend_vec));
    if (pend_copy) waits.push_back(fmt::format("wait f7, {}", pend_copy));
    for (size_t i = 0; i < waits.size(); ++i) {
      if (i + 1 == waits.size() && g.chance(50)) op_bundle.ctl = waits[i];
      else push({.ctl = waits[i]});
    }
    pending.clear();
    pend_vec = pend_copy = 0;
  };
  std::vector<uint32_t> acc_rows_list(acc_written.begin(), acc_written.end());
  const unsigned nvec = unsigned(g.pick(1, 10));
  for (unsigned v = 0; v < nvec; ++v) {
    if (g.chance(20)) {  // dma.copy: rows of the scratch image to other rows of it
      const uint32_t bytes = 4 * uint32_t(g.pick(1, g.chance(70) ? 16 : 50)), n = uint32_t(g.pick(1, 4));
      const uint32_t ss = bytes + 4 * uint32_t(g.pick(0, 4)), ds = bytes + 4 * uint32_t(g.pick(0, 4));
      const uint32_t sspan = (n - 1) * ss + bytes, dspan = (n - 1) * ds + bytes;
      if (sspan > RU_BYTES || dspan > RU_BYTES) continue;
      const uint32_t so = RU + 4 * uint32_t(g.pick(0, (RU_BYTES - sspan) / 4));
      const uint32_t dof = RU + 4 * uint32_t(g.pick(0, (RU_BYTES - dspan) / 4));
      if (so < dof + dspan && dof < so + sspan) continue;  // source and destination apart
      const std::vector<Range> rs{{false, so, so + sspan, false}, {false, dof, dof + dspan, true}};
      head += fmt::format(".desc cp{} bytes={} dim=[{}, {}, {}]\n", ncopy_desc, bytes, n, ss, ds);
      push({.s0 = fmt::format("li r10, {}", so), .s1 = fmt::format("li r11, {}", dof)});
      B b{.dma = fmt::format("dma.copy desc=cp{} src=r10 dst=r11 flag=f7", ncopy_desc++)};
      if (conflicts(rs)) drain(b);
      push(b);
      pending.insert(pending.end(), rs.begin(), rs.end());
      ++pend_copy;
      continue;
    }
    static const char* kOps[] = {"vec.add",     "vec.sub",   "vec.max",     "vec.min",     "vec.relu",
                                 "vec.copy",    "vec.clamp", "vec.mul",     "vec.rescale", "vec.cvt",
                                 "vec.affine",  "vec.rsum",  "vec.rmax",    "vec.maxpool", "vec.avgpool",
                                 "vec.exp",     "vec.tanh",  "vec.sigmoid", "vec.recip",   "vec.rsqrt",
                                 "vec.gelu",    "vec.erf",   "vec.log",     "vec.addrescale"};
    static const char* kTypes[] = {"int8", "bf16", "int32", "fp32", "uint8", "int16"};
    static const uint32_t kSize[] = {1, 2, 4, 4, 1, 2};
    const std::string op = kOps[g.rng() % std::size(kOps)];
    const bool table = op == "vec.exp" || op == "vec.tanh" || op == "vec.sigmoid" || op == "vec.recip" ||
                       op == "vec.rsqrt" || op == "vec.gelu" || op == "vec.erf" || op == "vec.log";
    const bool pool = op == "vec.maxpool" || op == "vec.avgpool";
    const bool rescale = op == "vec.rescale" || op == "vec.addrescale";
    const bool binary = op == "vec.add" || op == "vec.sub" || op == "vec.max" || op == "vec.min" || op == "vec.mul" ||
                        op == "vec.addrescale";
    // source and result types: mostly the accumulator type, sometimes any other
    unsigned dt = acct == "fp32" ? 3 : 2, odt = dt;
    if (g.chance(40)) dt = odt = unsigned(g.rng() % 6);
    if (rescale) {
      static const unsigned kInt[] = {0, 2, 4, 5};
      dt = g.chance(70) || op == "vec.addrescale" ? 2 : kInt[g.rng() % 4];  // vec.addrescale adds int32 rows
      odt = kInt[g.rng() % 4];
    }
    if (op == "vec.cvt") dt = unsigned(g.rng() % 6), odt = unsigned(g.rng() % 6);
    if (op == "vec.rsum") odt = unsigned(g.rng() % 6);
    if (table && dt != 1 && dt != 3) dt = odt = g.chance(50) ? 1 : 3;  // the table functions take bf16 or fp32
    const bool acc_ok_src = dt == 2 || dt == 3, acc_ok_dst = odt == 2 || odt == 3;
    const uint32_t srow = C * kSize[dt], drow = C * kSize[odt];
    const uint32_t rows = uint32_t(g.pick(1, 6));
    std::string param;
    // pooling: window offsets (bytes, from each output row's base) and the base step
    std::vector<int64_t> window;
    int64_t pool_stride = 0;
    // Pooling from the accumulators: the window and stride in whole accumulator rows.
    const bool pool_acc = pool && acc_ok_src && !acc_rows_list.empty() && g.chance(80);
    const int64_t acc_row_bytes = 4 * int64_t(C);
    if (pool) {
      const unsigned wn = unsigned(g.pick(1, 5));
      for (unsigned w = 0; w < wn; ++w)
        window.push_back(pool_acc ? acc_row_bytes * (int64_t(g.pick(0, 2)) - 1) : 4 * int64_t(g.pick(0, 48)) - 64);
      pool_stride = g.chance(50) ? 0 : pool_acc ? acc_row_bytes * int64_t(g.pick(1, 2)) : 4 * int64_t(g.pick(1, 24));
    }
    if (op == "vec.clamp" || rescale || op == "vec.affine" || pool) {  // a fresh .vparam record
      const std::string name = fmt::format("p{}", nparams++);
      std::string line = ".vparam " + name;
      if (rescale) {
        const bool per_lane = g.chance(40);
        std::string mult, shift;
        for (uint32_t n = 0; n < (per_lane ? C : 1); ++n) {
          mult += fmt::format("{}{}", n ? ", " : "", g.chance(10) ? 0 : int64_t(g.pick(1, 0x7FFFFFFF)));
          shift += fmt::format("{}{}", n ? ", " : "", g.chance(20) ? g.pick(32, 62) : g.pick(2, 40));
        }
        line += fmt::format(" mult=[{}] shift=[{}] in_zp={} out_zp={} double_round={}", mult, shift,
                            int32_t(g.pick(0, 200)) - 100, int32_t(g.pick(0, 60)) - 30, g.chance(50) ? 1 : 0);
      }
      if (pool) {
        std::string w;
        for (size_t i = 0; i < window.size(); ++i) w += fmt::format("{}{}", i ? ", " : "", window[i]);
        line += fmt::format(" window=[{}] pool_stride={}", w, pool_stride);
      }
      if (op == "vec.affine" || op == "vec.avgpool") {  // scale and bias: one value or one per lane, some exact, some not
        auto value = [&] {
          switch (g.rng() % 4) {
            case 0: return fmt::format("{}", double(int64_t(g.pick(0, 64)) - 32) / 8);
            case 1: return fmt::format("{:.9g}", double(int64_t(g.pick(0, 2000000)) - 1000000) / 777);
            case 2: return std::string(g.chance(50) ? "1e-40" : "-3e38");
            default: return fmt::format("{:.9g}", double(g.rng() % 1000) * 1e-3);
          }
        };
        for (const char* key : {"scale", "bias"}) {
          if (pool && std::string(key) == "bias") continue;
          if (g.chance(20)) continue;  // the default (1.0, 0.0)
          std::string v;
          const uint32_t count = g.chance(50) ? C : 1;
          for (uint32_t n = 0; n < count; ++n) v += (n ? ", " : "") + value();
          line += fmt::format(" {}=[{}]", key, v);
        }
      }
      if (op != "vec.affine" && !pool && g.chance(70)) {
        const double lo = double(int64_t(g.pick(0, 4000)) - 3000) / 8, hi = lo + double(g.pick(0, 8000)) / 4;
        line += fmt::format(" min={} max={}", lo, hi);
      }
      head += line + "\n";
      param = " param=" + name;
    }
    // a source: written accumulator rows, or anywhere in the scratch image
    auto source = [&](uint32_t n, Range& r) {
      std::vector<uint32_t> starts;
      for (uint32_t a : acc_rows_list) {
        bool ok = acc_ok_src;
        for (uint32_t i = 0; i < n && ok; ++i) ok = acc_written.count(a + i);
        if (ok) starts.push_back(a);
      }
      if (!starts.empty() && g.chance(60)) {
        const uint32_t a = starts[g.rng() % starts.size()];
        r = {true, a, a + n, false};
        return fmt::format("acc[r0+{}]", a);
      }
      const uint32_t off = RU + 4 * uint32_t(g.pick(0, (RU_BYTES - n * srow) / 4));
      r = {false, off, off + uint64_t(n) * srow, false};
      return fmt::format("ub[r0+{}]", off);
    };
    Range ra, rb{}, rd;
    std::string a;
    if (pool_acc) {  // accumulator rows all written before; the range covers every window row
      const int64_t wmin = *std::min_element(window.begin(), window.end()) / acc_row_bytes;
      const int64_t wmax = *std::max_element(window.begin(), window.end()) / acc_row_bytes;
      const int64_t step = pool_stride ? pool_stride / acc_row_bytes : 1;
      const uint32_t n = uint32_t(int64_t(rows - 1) * step + wmax - wmin + 1);
      std::vector<uint32_t> starts;  // the lowest row read
      for (uint32_t lo : acc_rows_list) {
        bool ok = int64_t(lo) - wmin >= 0;
        for (uint32_t i = 0; i < n && ok; ++i) ok = acc_written.count(lo + i);
        if (ok) starts.push_back(lo);
      }
      if (starts.empty()) continue;
      const uint32_t lo = starts[g.rng() % starts.size()];
      ra = {true, lo, lo + n, false};
      a = fmt::format("acc[r0+{}]", int64_t(lo) - wmin);
    } else if (pool) {  // from the scratch image; the range covers every window row
      const int64_t wmin = *std::min_element(window.begin(), window.end());
      const int64_t wmax = *std::max_element(window.begin(), window.end());
      const int64_t step = pool_stride ? pool_stride : int64_t(srow);
      const int64_t span = int64_t(rows - 1) * step + wmax + srow - wmin;
      if (span > int64_t(RU_BYTES)) continue;
      const int64_t lo = RU + 4 * int64_t(g.pick(0, uint64_t(RU_BYTES - span) / 4));
      ra = {false, uint64_t(lo), uint64_t(lo + span), false};
      a = fmt::format("ub[r0+{}]", lo - wmin);
    } else {
      a = source(rows, ra);
    }
    const bool bcast = binary && g.chance(30);
    const std::string b = binary ? source(bcast ? 1 : rows, rb) : "";
    std::string d;
    if (acc_ok_dst && g.chance(30)) {
      const uint32_t row = ACC_V + uint32_t(g.pick(0, ACC_V_ROWS - rows));
      rd = {true, row, row + rows, true};
      d = fmt::format("acc[r0+{}]", row);
    } else {
      const uint32_t off = RU + 4 * uint32_t(g.pick(0, (RU_BYTES - rows * drow) / 4));
      rd = {false, off, off + uint64_t(rows) * drow, true};
      d = fmt::format("ub[r0+{}]", off);
    }
    // The destination is the same rows as a source, or apart from it: a partial overlap
    // would make the result depend on the order elements are written within a row (for a
    // pooling window, any overlap would).
    auto partial = [&](const Range& src) {
      return src.acc == rd.acc && src.lo < rd.hi && rd.lo < src.hi && (src.lo != rd.lo || srow != drow || pool);
    };
    if (partial(ra) || (binary && partial(rb))) continue;
    std::string text = fmt::format("{} dst={} a={}", op, d, a);
    if (binary) text += fmt::format(" b={}", b);
    text += fmt::format(" rows={} dt={}{}{}{} flag=f4", rows, kTypes[dt],
                        rescale || op == "vec.cvt" || op == "vec.rsum" ? fmt::format(" odt={}", kTypes[odt])
                                                                                     : "",
                        bcast ? " bcast=1" : "", param);
    B bundle{.vec = text};
    std::vector<Range> rs{ra, rd};
    if (binary) rs.push_back(rb);
    if (conflicts(rs)) drain(bundle);
    push(bundle);
    pending.insert(pending.end(), rs.begin(), rs.end());
    ++pend_vec;
    if (rd.acc) {
      for (uint64_t i = rd.lo; i < rd.hi; ++i)
        if (!acc_written.count(uint32_t(i))) acc_written.insert(uint32_t(i)), acc_rows_list.push_back(uint32_t(i));
    }
  }
  if (pend_vec) push({.ctl = fmt::format("wait f4, {}", pend_vec)});
  if (pend_copy) push({.ctl = fmt::format("wait f7, {}", pend_copy)});
  if (signalled) push({.ctl = "wait f6, 2"});

  // --- store the scratch image
  push({.s0 = fmt::format("li r8, {}", RU), .s1 = fmt::format("li r9, {:#x}", HO)});
  unsigned nstores = 1;
  if (halves) {
    push({.s0 = fmt::format("addi r8, r8, {}", RU_BYTES / 2), .s1 = fmt::format("addi r9, r9, {}", RU_BYTES / 2),
          .dma = "dma.store desc=out src=r8 dst=r9 flag=f5"});
    push({.dma = "dma.store desc=out src=r8 dst=r9 flag=f5"});
    nstores = 2;
  } else {
    push({.dma = "dma.store desc=out src=r8 dst=r9 flag=f5"});
  }
  if (g.chance(50)) push({.ctl = fmt::format("wait f5, {}", nstores)});
  push({.ctl = "halt"});

  std::string text = head;
  for (const B& b : code) text += b.text() + "\n";
  return text;
}

std::string core_stream_program(const config::Config& cfg, const std::string& dtype, uint32_t tiles, uint32_t rows) {
  const uint32_t R = cfg.core.mxu.rows, C = cfg.core.mxu.cols, esz = dtype == "bf16" ? 2 : 1;
  const std::string acct = dtype == "bf16" ? "fp32" : "int32";
  const uint32_t xrow = R * esz, vrow = C * 4, RU = 0x8000;
  if (rows > cfg.core.accumulators.rows || uint64_t(rows) * xrow > RU || RU + uint64_t(rows) * vrow > cfg.core.unified_buffer.bytes)
    throw std::invalid_argument("core_stream_program: the rows do not fit this config");
  std::string t = fmt::format(".config {}\n", cfg.name);
  t += fmt::format(".tensor x role=input dtype={} shape=[{}, {}] addr=0x0\n", dtype, rows, R);
  t += fmt::format(".tensor w role=input dtype={} shape=[{}, {}, {}] addr=0x100000\n", dtype, tiles, R, C);
  t += fmt::format(".tensor out role=output dtype=uint8 shape=[{}] addr=0x200000\n", rows * vrow);
  t += fmt::format(".desc x bytes={} dim=[{}, {}, {}]\n", xrow, rows, xrow, xrow);
  t += fmt::format(".desc wt bytes={} dim=[{}, {}, 0] dtype={}\n", C * esz, R, C * esz, dtype);
  t += fmt::format(".desc out bytes={} dim=[{}, {}, {}]\n", vrow, rows, vrow, vrow);
  t += "  li r5, 0x100000\n  dma.load desc=x src=r0 dst=r0 flag=f1\n";
  const uint32_t step = R * C * esz;
  t += fmt::format("  dma.wfifo desc=wt src=r5 mxu=0 || addi r5, r5, {}\n", step);
  if (tiles > 1) t += fmt::format("  dma.wfifo desc=wt src=r5 mxu=0 || addi r5, r5, {}\n", step);
  t += "  mxu.wload mxu=0 || wait f1\n";
  for (uint32_t i = 0; i < tiles; ++i) {
    const bool next = i + 1 < tiles;
    t += fmt::format("  mxu.matmul mxu=0 src=0 dst=0 rows={} dtype={}{} swap=1 flag=f2{}\n", rows, dtype,
                     i ? " acc=1" : "", next ? " || mxu.wload mxu=0" : "");
    if (i + 2 < tiles) t += fmt::format("  dma.wfifo desc=wt src=r5 mxu=0 || addi r5, r5, {}\n", step);
  }
  t += fmt::format("  wait f2, {}\n", tiles);
  t += fmt::format("  li r6, {} || li r7, 0x200000\n", RU);
  t += fmt::format("  vec.copy dst=ub[r6+0] a=acc[r0+0] rows={} dt={} flag=f3\n  wait f3\n", rows, acct);
  t += "  dma.store desc=out src=r6 dst=r7 flag=f4\n  halt\n";
  return t;
}

Inputs random_core_inputs(const isa::Program& prog, uint64_t seed) {
  Gen g{std::mt19937_64(seed * 0x9E3779B97F4A7C15ull + 5)};
  // Value style per program: moderate magnitudes, the whole range, or many specials.
  const unsigned style = unsigned(g.rng() % 3);
  auto bf16_value = [&]() -> uint16_t {
    const unsigned k = unsigned(g.rng() % 100);
    if (style == 2 && k < 20) {
      static const uint16_t sp[] = {0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x0000, 0x8000, 0x0001, 0x807F, 0x7F7F};
      return sp[g.rng() % 10];
    }
    const uint16_t sign = uint16_t((g.rng() & 1) << 15);
    const uint16_t exp = style == 1 ? uint16_t(g.pick(1, 254)) : uint16_t(g.pick(120, 134));
    return uint16_t(sign | (exp << 7) | (g.rng() & 0x7F));
  };
  auto word = [&]() -> uint32_t {  // scratch image words: ints, floats, specials
    switch (g.rng() % 4) {
      case 0: return uint32_t(int32_t(g.pick(0, 2000)) - 1000);
      case 1: return uint32_t(bf16_value()) << 16 | uint32_t(g.rng() & 0xFFFF);
      case 2: return uint32_t(g.rng());
      default: {
        static const uint32_t sp[] = {0x7FC00000, 0xFFC00001, 0x7F800000, 0xFF800000, 0x00000000,
                                      0x80000000, 0x00000001, 0x807FFFFF, 0x80000000, 0x7FFFFFFF};
        return sp[g.rng() % 10];
      }
    }
  };
  Inputs in;
  for (const auto& t : prog.tensors) {
    if (t.role != isa::TensorRole::Input) continue;
    std::vector<uint8_t> b(t.bytes());
    if (t.dtype == isa::Dtype::Bf16) {
      for (size_t i = 0; i + 1 < b.size(); i += 2) {
        const uint16_t v = bf16_value();
        std::memcpy(&b[i], &v, 2);
      }
    } else if (t.dtype == isa::Dtype::Int8) {
      for (auto& x : b) x = style == 1 ? uint8_t(g.rng()) : uint8_t(int8_t(int(g.pick(0, 40)) - 20));
      if (style == 2)
        for (auto& x : b)
          if (g.chance(20)) x = g.chance(50) ? 0x80 : 0x7F;
    } else {
      for (size_t i = 0; i + 3 < b.size(); i += 4) {
        const uint32_t v = word();
        std::memcpy(&b[i], &v, 4);
      }
    }
    in[t.name] = std::move(b);
  }
  return in;
}

}  // namespace vtpu::rtl
