// Report writers. Field names and units are documented in docs/reports.md; keep the two in
// step (a test checks every key of a real report is documented).
#include "vtpu/sim/report.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

namespace vtpu::sim {
namespace {

using nlohmann::json;

// Peak of the simulated core: 2 ops per MAC on every PE of every MXU each cycle.
double peak_tops(const Stats& s) { return 2.0 * s.mxu_count * s.mxu_rows * s.mxu_cols * s.clock_mhz * 1e6 / 1e12; }

json counters_json(const Counters& c, uint64_t span_cycles, const Stats& s) {
  json j;
  j["bundles"] = c.bundles;
  json stalls = json::object();
  for (size_t i = 0; i < kNumStallReasons; ++i) stalls[std::string(stall_reason_name(StallReason(i)))] = c.stall[i];
  j["stall_cycles"] = stalls;
  j["stall_cycles_total"] = c.stall_cycles;
  j["mxu"] = {{"matmuls", c.matmuls},
              {"rows_streamed", c.mxu_rows},
              {"weight_loads", c.weight_loads},
              {"macs_int8", c.macs_int8},
              {"macs_bf16", c.macs_bf16},
              {"spatial_utilization", c.pe_rows ? double(c.macs()) / double(c.pe_rows) : 0.0},
              {"temporal_utilization",
               span_cycles && s.mxu_count ? double(c.mxu_rows) / (double(span_cycles) * s.mxu_count) : 0.0}};
  j["vector"] = {{"ops", c.vector_ops}, {"busy_cycles", c.vector_busy_cycles}, {"elements", c.vector_elements}};
  j["ub_bank_conflict_cycles"] = c.ub_bank_extra_cycles;
  j["dma"] = {{"transfers", c.dma_transfers}, {"busy_cycles", c.dma_busy_cycles}};
  j["ici"] = {{"sends", c.ici_sends}, {"signals", c.ici_signals}, {"bytes_sent", c.ici_bytes_sent},
              {"hop_bytes", c.ici_hop_bytes}, {"bytes_received", c.ici_bytes_received}};
  j["mxu"]["weight_shift_cycles"] = c.weight_shift_cycles;
  j["scalar_ops"] = c.scalar_ops;
  j["bytes"] = {{"hbm_read", c.hbm_read_bytes},  {"hbm_write", c.hbm_write_bytes},
                {"ub_read", c.ub_read_bytes},    {"ub_write", c.ub_write_bytes},
                {"acc_read", c.acc_read_bytes},  {"acc_write", c.acc_write_bytes},
                {"weight_fifo", c.wfifo_bytes}};
  json e = json::object();
  for (size_t u = 0; u < kNumUnits; ++u) e[std::string(unit_name(Unit(u)))] = c.energy_pj[u];
  e["total"] = c.energy_total_pj();
  j["energy_pj"] = e;
  return j;
}

}  // namespace

std::string report_json(const RunResult& r, const config::Config& cfg, const ReportMeta& meta) {
  const Stats& s = r.stats;
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["tool"] = {{"name", "vtpu"}, {"version", meta.tool_version}};
  j["program"] = meta.program;
  j["seed"] = meta.seed;
  j["inputs"] = meta.inputs;
  j["config"] = {{"name", cfg.name}, {"fingerprint", fmt::format("0x{:016x}", config::fingerprint(cfg))},
                 {"clock_mhz", cfg.clock_mhz}, {"mxu_count", s.mxu_count}, {"mxu_rows", s.mxu_rows},
                 {"mxu_cols", s.mxu_cols}};
  double secs = s.seconds();
  double energy_j = s.total.energy_total_pj() * 1e-12;
  j["totals"] = {{"cycles", s.total_cycles},
                 {"seconds", secs},
                 {"macs", s.total.macs()},
                 {"achieved_tops", secs > 0 ? 2.0 * double(s.total.macs()) / secs / 1e12 : 0.0},
                 {"peak_tops", peak_tops(s)},
                 {"mxu_temporal_utilization", s.mxu_temporal_utilization()},
                 {"mxu_spatial_utilization", s.mxu_spatial_utilization()},
                 {"mxu_utilization", s.mxu_overall_utilization()},
                 {"energy_j", energy_j},
                 {"average_power_w", secs > 0 ? energy_j / secs : 0.0},
                 {"hbm_row_hits", s.hbm_row_hits},
                 {"hbm_row_misses", s.hbm_row_misses},
                 {"hbm_row_empty", s.hbm_row_empty}};
  j["counters"] = counters_json(s.total, s.total_cycles, s);
  // Busy / stall / idle cycles per unit (docs/reports.md, "units").
  auto unit = [&](uint64_t busy, uint64_t stall, uint64_t lanes) {
    uint64_t cap = s.total_cycles * lanes;
    return json{{"busy_cycles", busy}, {"stall_cycles", stall}, {"idle_cycles", cap > busy + stall ? cap - busy - stall : 0},
                {"instances", lanes}};
  };
  j["units"] = {{"sequencer", unit(s.total.bundles, s.total.stall_cycles, 1)},
                {"dma", unit(s.total.dma_busy_cycles, 0, 1)},
                {"mxu", unit(s.total.mxu_rows + s.total.ub_bank_extra_cycles, 0, s.mxu_count)},
                {"weight_path", unit(s.total.weight_shift_cycles, 0, s.mxu_count)},
                {"vector", unit(s.total.vector_busy_cycles, 0, 1)}};
  json tags = json::array();
  for (const TagStats& t : s.per_tag) {
    json tj = counters_json(t.c, t.c.span_cycles, s);
    tj["tag"] = t.tag;
    tj["first_issue_cycle"] = t.c.first_issue == UINT64_MAX ? 0 : t.c.first_issue;
    tj["last_done_cycle"] = t.c.last_done;
    tj["span_cycles"] = t.c.span_cycles;
    tags.push_back(std::move(tj));
  }
  j["per_tag"] = tags;
  json outs = json::object();
  for (const auto& [name, bytes] : r.outputs) outs[name] = {{"bytes", bytes.size()}};
  j["outputs"] = outs;
  return j.dump(2) + "\n";
}

std::string summary_table(const RunResult& r, const config::Config& cfg) {
  const Stats& s = r.stats;
  std::string o;
  double secs = s.seconds();
  double ej = s.total.energy_total_pj() * 1e-12;
  o += fmt::format("config {} ({}x{} x{} MXU @ {} MHz)\n", cfg.name, s.mxu_rows, s.mxu_cols, s.mxu_count, cfg.clock_mhz);
  o += fmt::format("cycles {}  = {:.3f} us   MACs {}   achieved {:.3f} / peak {:.1f} TOPS\n", s.total_cycles,
                   secs * 1e6, s.total.macs(), secs > 0 ? 2.0 * double(s.total.macs()) / secs / 1e12 : 0.0,
                   peak_tops(s));
  o += fmt::format("MXU utilization {:.1f}% (temporal {:.1f}%, spatial {:.1f}%)   energy {:.3f} uJ   avg power {:.2f} W\n",
                   100 * s.mxu_overall_utilization(), 100 * s.mxu_temporal_utilization(),
                   100 * s.mxu_spatial_utilization(), ej * 1e6, secs > 0 ? ej / secs : 0.0);
  // The tag column is as wide as the longest tag: a table never cuts a name.
  size_t tw = 24;
  for (const TagStats& t : s.per_tag) tw = std::max(tw, t.tag.size());
  o += fmt::format("\n{:<{}} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>12}\n", "tag", tw, "first", "last", "bundles",
                   "stall", "MACs", "vec ops", "energy nJ");
  for (const TagStats& t : s.per_tag)
    o += fmt::format("{:<{}} {:>10} {:>10} {:>9} {:>10} {:>10} {:>8} {:>12.3f}\n",
                     t.tag.empty() ? "(untagged)" : t.tag, tw, t.c.first_issue == UINT64_MAX ? 0 : t.c.first_issue,
                     t.c.last_done, t.c.bundles, t.c.stall_cycles, t.c.macs(), t.c.vector_ops,
                     t.c.energy_total_pj() * 1e-3);
  o += "\nstall cycles by reason:";
  bool any = false;
  for (size_t i = 0; i < kNumStallReasons; ++i)
    if (s.total.stall[i]) o += fmt::format("  {} {}", stall_reason_name(StallReason(i)), s.total.stall[i]), any = true;
  if (!any) o += "  none";
  o += "\nenergy by unit (nJ):";
  for (size_t u = 0; u < kNumUnits; ++u)
    if (s.total.energy_pj[u] > 0) o += fmt::format("  {} {:.3f}", unit_name(Unit(u)), s.total.energy_pj[u] * 1e-3);
  o += fmt::format("\nbytes: HBM read {} write {}, UB read {} write {}, accumulators read {} write {}\n",
                   s.total.hbm_read_bytes, s.total.hbm_write_bytes, s.total.ub_read_bytes, s.total.ub_write_bytes,
                   s.total.acc_read_bytes, s.total.acc_write_bytes);
  return o;
}

namespace {

// The track an event belongs to before overlapping events are split apart: what it carries.
std::string track_base(const TraceEvent& e) {
  switch (e.unit) {
    case Unit::Sequencer: return "sequencer.stall";
    case Unit::Dma: return "dma";  // its lane is the transfer count at issue, not a slot: slots are assigned below
    case Unit::Mxu: return fmt::format("mxu{}.matmul", e.lane);
    case Unit::WeightFifo: return fmt::format("mxu{}.wload", e.lane);
    case Unit::Vector: return "vector";
    default: return fmt::format("{}{}", unit_name(e.unit), e.lane);
  }
}

// Simulated time in nanoseconds, whole: every track's slices are compared in these units, so
// a slice that ends when the next one starts never overlaps it after conversion.
int64_t cycle_ns(uint64_t cycle, double clock_mhz) { return std::llround(double(cycle) * 1000.0 / clock_mhz); }

}  // namespace

void write_trace(std::ostream& out, const std::vector<TraceEvent>& events, const std::vector<std::string>& tags,
                 double clock_mhz) {
  // Chrome trace event format: one process (the chip), one thread (track) per thing a unit
  // carries. Trace viewers draw a track's slices as a stack: they must nest or follow each
  // other. Events on one base track that overlap in time (DMA transfers in flight together)
  // go to the lowest-numbered track free at their start: "dma[0]", "dma[1]", ..., so there
  // are never more DMA tracks than transfers in flight (core.dma.max_in_flight).
  std::vector<size_t> order(events.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return events[a].begin < events[b].begin; });
  struct Base {
    std::vector<int64_t> free_at;  // per sub-track: the end of its last slice (ns)
    std::vector<int> tid;
  };
  std::map<std::string, Base> bases;
  std::vector<std::pair<std::string, size_t>> track_of(events.size());  // base name, sub-track
  for (size_t i : order) {
    const TraceEvent& e = events[i];
    std::string base = track_base(e);
    Base& b = bases[base];
    int64_t begin = cycle_ns(e.begin, clock_mhz);
    size_t k = 0;
    while (k < b.free_at.size() && b.free_at[k] > begin) ++k;
    if (k == b.free_at.size()) b.free_at.push_back(0);
    b.free_at[k] = cycle_ns(e.end, clock_mhz);
    track_of[i] = {base, k};
  }
  // Track ids in name order (sequencer, dma, mxu, vector sort together); a base split in
  // several tracks, and the DMA always, name each with its index.
  json arr = json::array();
  arr.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "vtpu chip 0"}}}});
  int next_tid = 1;
  for (auto& [base, b] : bases) {
    for (size_t k = 0; k < b.free_at.size(); ++k) {
      std::string name = b.free_at.size() > 1 || base == "dma" ? fmt::format("{}[{}]", base, k) : base;
      b.tid.push_back(next_tid);
      arr.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", next_tid}, {"args", {{"name", name}}}});
      arr.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 1}, {"tid", next_tid}, {"args", {{"sort_index", next_tid}}}});
      ++next_tid;
    }
  }
  for (size_t i : order) {
    const TraceEvent& e = events[i];
    int64_t b = cycle_ns(e.begin, clock_mhz), d = cycle_ns(e.end, clock_mhz) - b;
    arr.push_back({{"name", e.name}, {"ph", "X"}, {"pid", 1}, {"tid", bases[track_of[i].first].tid[track_of[i].second]},
                   {"ts", double(b) / 1000.0}, {"dur", double(d) / 1000.0},
                   {"args", {{"bundle", e.bundle}, {"tag", e.tag < tags.size() ? tags[e.tag] : ""},
                             {"begin_cycle", e.begin}, {"end_cycle", e.end}}}});
  }
  json j;
  j["traceEvents"] = arr;
  j["displayTimeUnit"] = "ns";
  out << j.dump() << "\n";
}

}  // namespace vtpu::sim
