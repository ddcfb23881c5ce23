// Reports of a multi-chip run. Field names and units are documented in docs/reports.md,
// "Multi-chip reports"; a test checks every key of a real report is documented. The chips'
// timelines come from the single-chip trace writer (report.cpp), one process per chip.
#include "vtpu/sim/system_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "vtpu/config/topology.h"

namespace vtpu::sim {
namespace {

using nlohmann::json;

std::string dir_name(int dir) { return dir > 0 ? "+" : "-"; }

json chip_json(const RunResult& c, uint32_t id, const config::Topology& t) {
  const Counters& k = c.stats.total;
  json stalls = json::object();
  for (size_t i = 0; i < kNumStallReasons; ++i) stalls[std::string(stall_reason_name(StallReason(i)))] = k.stall[i];
  return {{"chip", id},
          {"coords", t.coords(id)},
          {"cycles", c.stats.total_cycles},
          {"bundles", k.bundles},
          {"stall_cycles", stalls},
          {"stall_cycles_total", k.stall_cycles},
          {"ici", {{"sends", k.ici_sends}, {"signals", k.ici_signals}, {"bytes_sent", k.ici_bytes_sent},
                   {"bytes_received", k.ici_bytes_received}, {"hop_bytes", k.ici_hop_bytes}}},
          {"bytes", {{"hbm_read", k.hbm_read_bytes}, {"hbm_write", k.hbm_write_bytes}}},
          {"energy_j", k.energy_total_pj() * 1e-12}};
}

// One process for the links, a track per link, and a slice per stretch of packets of one
// transfer crossing it back to back.
void append_link_tracks(json& arr, const SystemResult& r, const config::Config& cfg) {
  const int pid = int(r.chips.size()) + 1;
  const double mhz = cfg.clock_mhz;
  arr.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", "ICI links"}}}});
  for (size_t i = 0; i < r.links.size(); ++i) {
    const LinkStats& l = r.links[i];
    arr.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", i},
                   {"args", {{"name", fmt::format("link {}->{} (dim {}{})", l.from, l.to, l.dim, dir_name(l.dir))}}}});
  }
  for (const LinkSlice& s : r.link_trace)
    arr.push_back({{"name", fmt::format("chip {} -> chip {}", s.src, s.dst)},
                   {"ph", "X"},
                   {"pid", pid},
                   {"tid", s.link},
                   {"ts", s.begin / mhz},
                   {"dur", (s.end - s.begin) / mhz},
                   {"args", {{"bundle", s.bundle}, {"bytes", s.bytes}, {"begin_cycle", s.begin}, {"end_cycle", s.end}}}});
}

}  // namespace

double link_energy_pj(const LinkStats& l, const config::Config& cfg) {
  return double(l.bytes) * 8.0 * cfg.energy.ici_pj_per_bit;
}

std::string system_report_json(const SystemResult& r, const config::Config& cfg, const ReportMeta& meta) {
  const config::Topology t(cfg);
  const double secs = double(r.total_cycles) / (cfg.clock_mhz * 1e6);
  // Estimating by symmetry, chip 0 and its links stand for every chip and link.
  const double scale_chips = r.symmetric ? double(r.system_chips) / double(r.chips.size()) : 1.0;
  const double scale_links = r.symmetric ? double(t.links().size()) / double(std::max<size_t>(1, r.links.size())) : 1.0;
  json j;
  j["schema_version"] = kReportSchemaVersion;
  j["kind"] = "system";
  j["tool"] = {{"name", "vtpu"}, {"version", meta.tool_version}};
  j["program"] = meta.program;
  j["seed"] = meta.seed;
  j["config"] = {{"name", cfg.name},
                 {"fingerprint", fmt::format("0x{:016x}", config::fingerprint(cfg))},
                 {"clock_mhz", cfg.clock_mhz},
                 {"chips", cfg.system.chips},
                 {"shape", cfg.ici.shape},
                 {"wraparound", cfg.ici.wraparound},
                 {"twist", cfg.ici.twist},
                 {"link_bandwidth_gbytes_per_s", cfg.ici.link_bandwidth_gbytes_per_s}};
  j["simulated"] = {{"chips", r.chips.size()},
                    {"links", r.links.size()},
                    {"by_symmetry", r.symmetric},
                    {"quantum_cycles", r.quantum_cycles},
                    {"lookahead_cycles", r.lookahead_cycles}};
  double chip_pj = 0, link_pj = 0;
  uint64_t link_bytes = 0;
  json chips = json::array();
  for (size_t i = 0; i < r.chips.size(); ++i) {
    chips.push_back(chip_json(r.chips[i], uint32_t(i), t));
    chip_pj += r.chips[i].stats.total.energy_total_pj();
  }
  json links = json::array();
  for (const LinkStats& l : r.links) {
    double e = link_energy_pj(l, cfg);
    link_pj += e, link_bytes += l.bytes;
    links.push_back({{"from", l.from},
                     {"to", l.to},
                     {"dim", l.dim},
                     {"dir", dir_name(l.dir)},
                     {"bytes", l.bytes},
                     {"packets", l.packets},
                     {"busy_cycles", l.busy_cycles},
                     {"utilization", r.total_cycles ? l.busy_cycles / double(r.total_cycles) : 0.0},
                     {"credit_stall_cycles", l.credit_stall_cycles},
                     {"queue_cycles", l.queue_cycles},
                     {"energy_pj", e}});
  }
  j["totals"] = {{"cycles", r.total_cycles},
                 {"seconds", secs},
                 {"energy_j", chip_pj * scale_chips * 1e-12},
                 {"link_energy_j", link_pj * scale_links * 1e-12},
                 {"link_bytes", double(link_bytes) * scale_links}};
  j["chips"] = chips;
  j["links"] = links;
  return j.dump(2) + "\n";
}

std::string system_summary_table(const SystemResult& r, const config::Config& cfg) {
  const config::Topology t(cfg);
  std::string o;
  o += fmt::format("system {}: {} chips in a {} {}{}, simulated {}\n", cfg.name, cfg.system.chips,
                   fmt::join(cfg.ici.shape, "x"), cfg.ici.wraparound ? "torus" : "mesh", t.twisted() ? " (twisted)" : "",
                   r.symmetric ? "by symmetry (chip 0 stands for every chip)" : fmt::format("chip by chip ({})", r.chips.size()));
  o += fmt::format("cycles {} = {:.3f} us; quantum {} cycles (lookahead {})\n", r.total_cycles,
                   double(r.total_cycles) / cfg.clock_mhz, r.quantum_cycles, r.lookahead_cycles);
  o += fmt::format("\n{:<22} {:>12} {:>10} {:>12} {:>12} {:>10} {:>10} {:>10} {:>12}\n", "chip", "cycles", "bundles",
                   "sent B", "received B", "wait_ici", "ici_busy", "barrier", "energy uJ");
  auto chip_row = [&](size_t i) {
    const Counters& k = r.chips[i].stats.total;
    o += fmt::format("{:<22} {:>12} {:>10} {:>12} {:>12} {:>10} {:>10} {:>10} {:>12.3f}\n", t.name(uint32_t(i)),
                     r.chips[i].stats.total_cycles, k.bundles, k.ici_bytes_sent, k.ici_bytes_received,
                     k.stall[size_t(StallReason::WaitIci)], k.stall[size_t(StallReason::IciBusy)],
                     k.stall[size_t(StallReason::Barrier)], k.energy_total_pj() * 1e-6);
  };
  const size_t kShow = 16;
  for (size_t i = 0; i < r.chips.size() && i < kShow; ++i) chip_row(i);
  if (r.chips.size() > kShow) o += fmt::format("... {} more chips in the JSON report (--report)\n", r.chips.size() - kShow);

  // Links: the busiest first.
  std::vector<size_t> order(r.links.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.links[a].busy_cycles > r.links[b].busy_cycles; });
  o += fmt::format("\n{:<24} {:>12} {:>9} {:>12} {:>8} {:>14} {:>14} {:>12}\n", "link", "bytes", "packets", "busy cyc",
                   "busy %", "credit stall", "queue cycles", "energy uJ");
  double sum_util = 0;
  for (const LinkStats& l : r.links) sum_util += r.total_cycles ? l.busy_cycles / double(r.total_cycles) : 0;
  for (size_t n = 0; n < order.size() && n < kShow; ++n) {
    const LinkStats& l = r.links[order[n]];
    o += fmt::format("{:<24} {:>12} {:>9} {:>12.0f} {:>7.1f}% {:>14.0f} {:>14.0f} {:>12.3f}\n",
                     fmt::format("{} -> {} (d{}{})", l.from, l.to, l.dim, dir_name(l.dir)), l.bytes, l.packets,
                     l.busy_cycles, r.total_cycles ? 100 * l.busy_cycles / double(r.total_cycles) : 0,
                     l.credit_stall_cycles, l.queue_cycles, link_energy_pj(l, cfg) * 1e-6);
  }
  if (r.links.size() > kShow) o += fmt::format("... {} more links in the JSON report\n", r.links.size() - kShow);
  if (!r.links.empty()) o += fmt::format("mean link busy {:.1f}% over {} links\n", 100 * sum_util / double(r.links.size()), r.links.size());
  return o;
}

void write_system_trace(std::ostream& out, const SystemResult& r, const config::Config& cfg,
                        const std::vector<std::vector<std::string>>& tags) {
  const config::Topology t(cfg);
  json arr = json::array();
  // Each chip's own tracks, as the single-chip writer makes them, under a process of its own.
  for (size_t i = 0; i < r.chips.size(); ++i) {
    std::ostringstream one;
    write_trace(one, r.chips[i].trace, i < tags.size() ? tags[i] : std::vector<std::string>{}, cfg.clock_mhz);
    json chip = json::parse(one.str());
    for (json& e : chip["traceEvents"]) {
      e["pid"] = i + 1;
      if (e.value("name", "") == "process_name") e["args"]["name"] = t.name(uint32_t(i));
    }
    for (json& e : chip["traceEvents"]) arr.push_back(std::move(e));
  }
  append_link_tracks(arr, r, cfg);
  json j;
  j["traceEvents"] = arr;
  j["displayTimeUnit"] = "ns";
  out << j.dump() << "\n";
}

}  // namespace vtpu::sim
