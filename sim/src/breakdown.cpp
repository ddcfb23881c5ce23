// The MXU cycle breakdown of a traced run (vtpu/sim/breakdown.h, docs/reports.md).
#include "vtpu/sim/breakdown.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "vtpu/isa/bundle.h"
#include "vtpu/support/error.h"

namespace vtpu::sim {
namespace {

using Spans = std::vector<std::pair<uint64_t, uint64_t>>;  // [begin, end), sorted, disjoint

Spans normalized(Spans v) {
  std::sort(v.begin(), v.end());
  Spans out;
  for (const auto& s : v) {
    if (s.second <= s.first) continue;
    if (!out.empty() && s.first <= out.back().second) out.back().second = std::max(out.back().second, s.second);
    else out.push_back(s);
  }
  return out;
}

// a ∩ b (keep) or a \ b (!keep), both normalized.
Spans combine(const Spans& a, const Spans& b, bool keep) {
  Spans out;
  size_t j = 0;
  for (auto [lo, hi] : a) {
    while (j < b.size() && b[j].second <= lo) ++j;
    uint64_t at = lo;
    for (size_t k = j; k < b.size() && b[k].first < hi; ++k) {
      const uint64_t blo = std::max(b[k].first, lo), bhi = std::min(b[k].second, hi);
      if (keep) out.push_back({blo, bhi});
      else if (blo > at) out.push_back({at, blo});
      at = std::max(at, bhi);
    }
    if (!keep && at < hi) out.push_back({at, hi});
  }
  return out;
}

uint64_t length(const Spans& s) {
  uint64_t n = 0;
  for (const auto& [lo, hi] : s) n += hi - lo;
  return n;
}

}  // namespace

MxuBreakdown mxu_breakdown(const RunResult& run, const isa::Program& program) {
  const Stats& st = run.stats;
  MxuBreakdown b;
  b.cycles = st.total_cycles;
  if (b.cycles == 0) return b;
  if (run.trace.empty() && st.total.bundles > 0)
    throw InternalError("mxu_breakdown needs a run simulated with record_trace");
  const std::vector<isa::Bundle> bundles = isa::decode_program(program);
  // The MXU a stalled bundle waits for: its matmul's, else its weight load's.
  auto mxu_of = [&](uint32_t bundle) -> int64_t {
    if (bundle >= bundles.size()) return -1;
    const isa::Bundle& bb = bundles[bundle];
    for (isa::SlotId s : {isa::SlotId::MxuMatmul, isa::SlotId::MxuWeight})
      if (!bb.at(s).is_nop()) return isa::field(bb.at(s), s, "mxu");
    return -1;
  };
  const uint32_t n = std::max<uint32_t>(1, st.mxu_count);
  for (uint32_t m = 0; m < n; ++m) {
    Spans active, shift, wait;
    for (const TraceEvent& e : run.trace) {
      if (e.unit == Unit::Mxu && e.lane == m) active.push_back({e.begin, e.end});
      else if (e.unit == Unit::WeightFifo && e.lane == m) shift.push_back({e.begin, e.end});
      else if (e.unit == Unit::Sequencer &&
               (std::strcmp(e.name, "wait_weights") == 0 || std::strcmp(e.name, "weight_path_busy") == 0) &&
               mxu_of(e.bundle) == int64_t(m))
        wait.push_back({e.begin, e.end});
    }
    active = normalized(std::move(active));
    const Spans idle_wait = combine(normalized(std::move(wait)), active, false);
    const Spans sh = normalized(std::move(shift));
    const uint64_t a = length(active), s = length(combine(idle_wait, sh, true)), w = length(idle_wait) - s;
    b.array_active += double(a) / double(b.cycles);
    b.weight_shift += double(s) / double(b.cycles);
    b.weight_stall += double(w) / double(b.cycles);
  }
  b.array_active /= n, b.weight_shift /= n, b.weight_stall /= n;
  b.non_matrix = 1.0 - b.array_active - b.weight_shift - b.weight_stall;
  const auto& stall = st.total.stall;
  b.raw_stalls = double(stall[size_t(StallReason::WaitMxu)] + stall[size_t(StallReason::WaitVector)]) / double(b.cycles);
  b.input_stalls = double(stall[size_t(StallReason::WaitDma)]) / double(b.cycles);
  return b;
}

}  // namespace vtpu::sim
