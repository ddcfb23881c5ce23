#pragma once
// A hand-scheduled GEMM program for any config: Y[M x N] = A[M x K] x W[K x N], int8 (output
// requantized to int8) or bf16 (output bf16). It keeps every MXU streaming: weight tiles are
// fetched two ahead into the weight FIFO and shifted into the shadow weights one ahead, and
// the drain of a finished output block (vector unit -> unified buffer -> HBM) is pipelined
// behind the next block's matmuls. Used by the benchmarks (and as a reference schedule for
// the compiler's).
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>
#include <vector>

#include "vtpu/config/config.h"

namespace vtpu::bench {

struct GemmShape {
  uint32_t M, K, N;
  bool bf16;
};

inline std::string gemm_program(const config::Config& cfg, const GemmShape& g) {
  const auto& mx = cfg.core.mxu;
  const uint32_t R = mx.rows, C = mx.cols, nm = mx.count;
  const uint32_t esz = g.bf16 ? 2 : 1, out_esz = g.bf16 ? 2 : 1;
  const uint32_t kt = (g.K + R - 1) / R, nt = (g.N + C - 1) / C;
  const uint32_t mc = std::min<uint32_t>(g.M, cfg.core.accumulators.rows / 2);  // two regions
  const uint32_t mchunks = (g.M + mc - 1) / mc;
  auto align = [](uint64_t x, uint64_t a) { return (x + a - 1) / a * a; };
  const uint64_t a_bytes = uint64_t(g.M) * g.K * esz, w_bytes = uint64_t(g.K) * g.N * esz;
  const uint64_t W0 = align(a_bytes, 4096), Y0 = align(W0 + w_bytes, 4096);
  const uint64_t slice = align(uint64_t(g.M) * R * esz, 64);
  const uint64_t stage_bytes = align(uint64_t(mc) * C * out_esz, 64);
  const uint64_t stage0 = uint64_t(kt) * slice;
  if (stage0 + 2 * nm * stage_bytes > cfg.core.unified_buffer.bytes)
    throw std::runtime_error("gemm_program: A does not fit the unified buffer");
  const char* dt = g.bf16 ? "bf16" : "int8";

  std::string s, code;
  s += fmt::format(".tensor A role=input dtype={} shape=[{}, {}] addr=0\n", dt, g.M, g.K);
  s += fmt::format(".tensor W role=input dtype={} shape=[{}, {}] addr={}\n", dt, g.K, g.N, W0);
  s += fmt::format(".tensor Y role=output dtype={} shape=[{}, {}] addr={}\n", dt, g.M, g.N, Y0);
  if (!g.bf16) s += ".vparam rq mult=[1073741824] shift=[40]\n";  // x 2^-10, saturate to int8

  // A, one K-slice per transfer: M rows of (up to) R elements, packed R wide in the UB.
  for (uint32_t k = 0; k < kt; ++k) {
    uint32_t kw = std::min(R, g.K - k * R);
    s += fmt::format(".desc a{} bytes={} src_off={} dst_off={} dim=[{}, {}, {}]\n", k, kw * esz, uint64_t(k) * R * esz,
                     uint64_t(k) * slice, g.M, uint64_t(g.K) * esz, R * esz);
    code += fmt::format("  dma.load desc=a{} src=r0 dst=r0 flag=f25\n", k);
  }
  // Weight tiles and output blocks.
  for (uint32_t n = 0; n < nt; ++n)
    for (uint32_t k = 0; k < kt; ++k) {
      uint32_t kw = std::min(R, g.K - k * R), nw = std::min(C, g.N - n * C);
      s += fmt::format(".desc w{}_{} bytes={} src_off={} dtype={} dim=[{}, {}, 0]\n", n, k, nw * esz,
                       W0 + (uint64_t(k) * R * g.N + uint64_t(n) * C) * esz, dt, kw, uint64_t(g.N) * esz);
    }
  for (uint32_t n = 0; n < nt; ++n)
    for (uint32_t c = 0; c < mchunks; ++c) {
      uint32_t nw = std::min(C, g.N - n * C), rows = std::min(mc, g.M - c * mc);
      s += fmt::format(".desc y{}_{} bytes={} dst_off={} dim=[{}, {}, {}]\n", n, c, nw * out_esz,
                       Y0 + (uint64_t(c) * mc * g.N + uint64_t(n) * C) * out_esz, rows, C * out_esz,
                       uint64_t(g.N) * out_esz);
    }

  // Each MXU's tiles: blocks (n, chunk) for n = m, m + nm, ...; kt tiles per block.
  struct Tile {
    uint32_t n, chunk, k;
  };
  std::vector<std::vector<Tile>> work(nm);
  for (uint32_t n = 0; n < nt; ++n)
    for (uint32_t c = 0; c < mchunks; ++c)
      for (uint32_t k = 0; k < kt; ++k) work[n % nm].push_back({n, c, k});
  // Flags: f1+m matmul done, f9+m vector done, f17+m store done, f25 A loaded (within the default 32 sync flags).
  auto wfifo = [&](uint32_t m, const Tile& t) {
    return fmt::format("dma.wfifo desc=w{}_{} src=r0 mxu={}", t.n, t.k, m);
  };
  std::string pro;
  for (uint32_t m = 0; m < nm; ++m) {
    for (size_t i = 0; i < std::min<size_t>(2, work[m].size()); ++i) pro += "  " + wfifo(m, work[m][i]) + "\n";
    if (!work[m].empty()) pro += fmt::format("  mxu.wload mxu={}\n", m);
  }
  code = pro + code + fmt::format("  wait f25, {}\n", kt);

  // Drain pipeline per MXU, one stage per step so it hides behind the next matmuls:
  // step t: the block's last matmul; end of step t+1: wait for it, vector op into a staging
  // buffer; start of step t+2: wait for the vector op, store to HBM.
  struct Drain {
    uint32_t m, n, chunk, region, rows, stage;
  };
  std::vector<Drain> to_vector, to_store;
  std::vector<uint32_t> blocks_done(nm, 0), stores_issued(nm, 0), stores_waited(nm, 0);
  auto run_vector = [&](const Drain& d) {
    uint64_t acc_row = uint64_t(d.m) * cfg.core.accumulators.rows + uint64_t(d.region) * mc;
    uint64_t stage = stage0 + (uint64_t(d.m) * 2 + d.stage) * stage_bytes;
    // The staging buffer must be free: the store that used it two blocks ago is done.
    if (stores_issued[d.m] >= 2 && stores_waited[d.m] < stores_issued[d.m] - 1) {
      code += fmt::format("  wait f{}\n", 17 + d.m);
      ++stores_waited[d.m];
    }
    code += fmt::format("  wait f{}\n", 1 + d.m);
    if (g.bf16)
      code += fmt::format("  vec.cvt dst=ub[r0+{}] a=acc[r0+{}] rows={} dt=fp32 odt=bf16 flag=f{}\n", stage, acc_row,
                          d.rows, 9 + d.m);
    else
      code += fmt::format("  vec.rescale dst=ub[r0+{}] a=acc[r0+{}] rows={} param=rq flag=f{}\n", stage, acc_row,
                          d.rows, 9 + d.m);
  };
  auto run_store = [&](const Drain& d) {
    uint64_t stage = stage0 + (uint64_t(d.m) * 2 + d.stage) * stage_bytes;
    // Registers are read before the bundle writes them: set r1 one bundle ahead.
    code += fmt::format("  wait f{} || li r1, {}\n", 9 + d.m, stage);
    code += fmt::format("  dma.store desc=y{}_{} src=r1 dst=r0 flag=f{}\n", d.n, d.chunk, 17 + d.m);
    ++stores_issued[d.m];
  };

  size_t steps = 0;
  for (const auto& w : work) steps = std::max(steps, w.size());
  for (size_t t = 0; t < steps; ++t) {
    for (const Drain& d : to_store) run_store(d);
    to_store.clear();
    std::vector<Drain> finished;
    for (uint32_t m = 0; m < nm; ++m) {
      if (t >= work[m].size()) continue;
      const Tile& tl = work[m][t];
      uint32_t rows = std::min(mc, g.M - tl.chunk * mc);
      uint32_t region = uint32_t(t / kt) % 2;
      bool last_k = tl.k == kt - 1;
      std::string op = fmt::format("mxu.matmul mxu={} src=r0+{} dst=r0+{} rows={} dtype={} swap=1{}{}", m,
                                   uint64_t(tl.k) * slice + uint64_t(tl.chunk) * mc * R * esz, region * mc, rows, dt,
                                   tl.k ? " acc=1" : "", last_k ? fmt::format(" flag=f{}", 1 + m) : "");
      if (t + 1 < work[m].size()) op += fmt::format(" || mxu.wload mxu={}", m);
      if (t + 2 < work[m].size()) op += " || " + wfifo(m, work[m][t + 2]);
      code += "  " + op + "\n";
      if (last_k) finished.push_back({m, tl.n, tl.chunk, region, rows, blocks_done[m]++ % 2});
    }
    for (const Drain& d : to_vector) run_vector(d);
    to_store = std::move(to_vector);
    to_vector = std::move(finished);
  }
  for (const Drain& d : to_store) run_store(d);
  for (const Drain& d : to_vector) run_vector(d);
  for (const Drain& d : to_vector) run_store(d);
  for (uint32_t m = 0; m < nm; ++m)
    if (stores_issued[m] > stores_waited[m])
      code += fmt::format("  wait f{}, {}\n", 17 + m, stores_issued[m] - stores_waited[m]);
  code += "  halt\n";
  return s + code;
}

}  // namespace vtpu::bench
