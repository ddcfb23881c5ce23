// The multi-chip report: every key documented in docs/reports.md, figures consistent with
// each other and with the config's energy table, and a Perfetto timeline whose link tracks
// hold non-overlapping slices.
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "multichip_util.h"
#include "vtpu/sim/system_report.h"

namespace vtpu::sim {
namespace {

using testing::run_system;
using testing::small_system;

// Every chip sends 3000 bytes to its +1 neighbour and 512 to its -1 neighbour, signals, and
// meets the others at a barrier.
std::vector<std::string> exchange(uint32_t n) {
  std::vector<std::string> progs;
  for (uint32_t c = 0; c < n; ++c)
    progs.push_back(fmt::format(R"(
      .tag exchange
      .desc big bytes=3008
      .desc small bytes=512
        li r3, {} || li r4, {}
        li r5, 8192 || li r6, 16384
        ici.send desc=big src=r0 dst=r5 chip=r3 flag=f1 sflag=f2
        ici.send desc=small src=r0 dst=r6 chip=r4 flag=f3 sflag=f4
        wait f1
        wait f3
        wait f2
        wait f4
        barrier 1
        halt
    )", (c + 1) % n, (c + n - 1) % n));
  return progs;
}

struct Reports {
  std::string json, table, trace;
};

Reports reports(bool timing_only = false) {
  config::Config cfg = small_system({4});
  SystemOptions o;
  o.sim.record_trace = true;
  o.sim.timing_only = timing_only;
  std::string got = run_system(cfg, exchange(4), [&](const SystemResult& r) {
    ReportMeta meta{"test", "exchange", 1, {}};
    std::ostringstream t;
    write_system_trace(t, r, cfg, std::vector<std::vector<std::string>>(4, {"", "exchange"}));
    nlohmann::json j;
    j["json"] = system_report_json(r, cfg, meta);
    j["table"] = system_summary_table(r, cfg);
    j["trace"] = t.str();
    return j.dump();
  }, o);
  auto j = nlohmann::json::parse(got, nullptr, false);
  if (j.is_discarded()) ADD_FAILURE() << got;
  if (j.is_discarded()) return {got, got, got};
  return {j["json"], j["table"], j["trace"]};
}

TEST(MultiChipReports, EveryKeyIsDocumented) {
  std::ifstream f(std::string(VTPU_SOURCE_DIR) + "/docs/reports.md");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str().substr(ss.str().find("## Multi-chip reports"));
  Reports r = reports();
  auto j = nlohmann::json::parse(r.json);
  std::vector<std::string> missing;
  std::function<void(const nlohmann::json&, const std::string&)> walk = [&](const nlohmann::json& x,
                                                                            const std::string& path) {
    if (x.is_array()) {
      for (const auto& e : x) walk(e, path + "[]");
      return;
    }
    if (!x.is_object()) return;
    for (auto it = x.begin(); it != x.end(); ++it) {
      std::string key = path.ends_with("stall_cycles") ? "stall_cycles.<reason>" : it.key();
      if (doc.find("`" + key) == std::string::npos && doc.find("." + key) == std::string::npos &&
          doc.find("`" + path.substr(path.rfind('.') + 1) + "." + it.key()) == std::string::npos)
        missing.push_back(path + "." + it.key());
      if (!path.ends_with("stall_cycles")) walk(it.value(), path.empty() ? it.key() : path + "." + it.key());
    }
  };
  walk(j, "");
  EXPECT_TRUE(missing.empty()) << fmt::format("undocumented: {}", fmt::join(missing, ", "));
}

// A timing-only run (what a sweep simulates) moves no data, an ICI send's payload included, and
// reports what the full run does: every figure, and the timeline.
TEST(MultiChipReports, TimingOnlyReportsWhatTheFullRunDoes) {
  Reports full = reports(false), timing = reports(true);
  EXPECT_EQ(timing.json, full.json);
  EXPECT_EQ(timing.table, full.table);
  EXPECT_EQ(timing.trace, full.trace);
}

TEST(MultiChipReports, FiguresAddUp) {
  Reports r = reports();
  auto j = nlohmann::json::parse(r.json);
  config::Config cfg = small_system({4});
  uint64_t sent = 0, received = 0, link_bytes = 0;
  for (const auto& c : j["chips"]) sent += c["ici"]["bytes_sent"].get<uint64_t>(), received += c["ici"]["bytes_received"].get<uint64_t>();
  double link_pj = 0;
  for (const auto& l : j["links"]) {
    link_bytes += l["bytes"].get<uint64_t>();
    link_pj += l["energy_pj"].get<double>();
    EXPECT_LE(l["utilization"].get<double>(), 1.0);
  }
  EXPECT_EQ(sent, 4u * (3008 + 512));
  EXPECT_EQ(received, sent);
  EXPECT_EQ(link_bytes, sent);  // every send is one hop here
  EXPECT_DOUBLE_EQ(link_pj, double(link_bytes) * 8 * cfg.energy.ici_pj_per_bit);
  EXPECT_NEAR(j["totals"]["link_energy_j"].get<double>(), link_pj * 1e-12, 1e-18);
  EXPECT_EQ(j["simulated"]["chips"].get<int>(), 4);
  EXPECT_EQ(j["simulated"]["lookahead_cycles"].get<int>(), 110);
  EXPECT_NE(r.table.find("chip 3 (3)"), std::string::npos) << r.table;
  EXPECT_NE(r.table.find("0 -> 1 (d0+)"), std::string::npos) << r.table;
}

TEST(MultiChipReports, TraceHasAProcessPerChipAndNonOverlappingLinkSlices) {
  Reports r = reports();
  auto j = nlohmann::json::parse(r.trace);
  std::map<int, std::string> process;
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> slices;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "X") slices[{e["pid"].get<int>(), e["tid"].get<int>()}].emplace_back(e["ts"], e["ts"].get<double>() + e["dur"].get<double>());
  }
  ASSERT_EQ(process.size(), 5u);
  EXPECT_EQ(process[1], "chip 0 (0)");
  EXPECT_EQ(process[5], "ICI links");
  size_t link_slices = 0;
  for (auto& [track, v] : slices) {
    if (track.first != 5) continue;
    std::sort(v.begin(), v.end());
    for (size_t i = 1; i < v.size(); ++i) EXPECT_GE(v[i].first, v[i - 1].second) << "link track " << track.second;
    link_slices += v.size();
  }
  EXPECT_GE(link_slices, 8u);  // at least one per send (4 chips x 2)
}

}  // namespace
}  // namespace vtpu::sim
