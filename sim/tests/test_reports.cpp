// DMA timing against the memory formula, and the reports: documented, deterministic.
#include <fmt/format.h>

#include <cmath>
#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "sim_test_util.h"
#include "vtpu/sim/report.h"

namespace vtpu::sim {
namespace {

using testing::run_asm;

// A DMA of N bytes from HBM address 0 spread over C channels (docs/microarch.md, "DMA
// engine", and docs/dram.md): each channel gets N / C bytes in one row of one bank, so its
// first burst pays tRCD + tCL on a closed bank and the rest stream at bus rate.
TEST(DmaTiming, LoadOfNBytesOnCChannels) {
  for (const char* preset : {"tiny-8x8", "tiny-16x16"}) {
    config::Config cfg = config::load_preset(preset);
    const auto& mem = cfg.memory;
    const auto& ub = cfg.core.unified_buffer;
    uint64_t N = uint64_t(mem.interleave_bytes) * mem.channels * 2;  // two chunks per channel
    ASSERT_LE(N / mem.channels, mem.row_bytes) << "the formula below assumes one DRAM row per channel";
    auto cyc = [&](double ns) { return uint64_t(std::ceil(ns * cfg.clock_mhz / 1000 - 1e-6)); };
    double bytes_per_cycle = mem.bandwidth_gbytes_per_s * 1e9 / mem.channels / (cfg.clock_mhz * 1e6);
    double burst = double(mem.burst_bytes) / bytes_per_cycle;
    ASSERT_EQ(burst, std::floor(burst)) << "pick presets whose bursts take whole cycles";
    uint64_t bursts_per_channel = N / mem.channels / mem.burst_bytes;
    uint64_t hbm = cyc(mem.t_rcd_ns) + cyc(mem.t_cl_ns) + bursts_per_channel * uint64_t(burst) + cyc(mem.access_latency_ns);
    uint64_t ub_side = (N + ub.row_bytes * ub.write_ports - 1) / (ub.row_bytes * ub.write_ports);
    uint64_t S = cfg.core.dma.setup_cycles;
    uint64_t D = S + std::max(hbm, ub_side) + ub.write_latency_cycles;

    std::string text = fmt::format(".desc d bytes={}\n  dma.load desc=d src=r0 dst=r0 flag=f1\n  wait f1\n  halt\n", N);
    SimOptions o;
    o.record_trace = true;
    std::string out = run_asm(preset, text, [](const RunResult& r) {
      return fmt::format("{} {} {}", r.trace.at(0).end, r.stats.total_cycles, r.stats.total.hbm_read_bytes);
    }, {}, o);
    EXPECT_EQ(out, fmt::format("{} {} {}", D, D + 2, N)) << preset;
  }
}

std::string conv_report() {
  return run_asm("tiny-8x8", [] {
    std::ifstream f(std::string(VTPU_SOURCE_DIR) + "/examples/conv3x3.s");
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }(), [](const RunResult& r) {
    ReportMeta meta{"test", "conv3x3.s", 1, {"x=random", "w=random"}};
    return report_json(r, config::load_preset("tiny-8x8"), meta);
  });
}

// vtpu sim's summary never cuts a tag (it did at 24 characters): the whole name, then its numbers.
TEST(Reports, SummaryTableKeepsLongTagsWhole) {
  const std::string tag = "encoder.layer.11.attention.output.dense.bias_add";
  std::string table = run_asm("tiny-8x8", ".tag " + tag + "\n  nop\n  halt\n", [](const RunResult& r) {
    return summary_table(r, config::load_preset("tiny-8x8"));
  });
  size_t at = table.find(tag);
  ASSERT_NE(at, std::string::npos) << table;
  std::string row = table.substr(at, table.find('\n', at) - at);
  EXPECT_EQ(row.find(' '), tag.size()) << "the tag is followed by its columns, whole: " << row;
}

TEST(Reports, SameRunGivesByteIdenticalReports) {
  std::string a = conv_report(), b = conv_report();
  ASSERT_EQ(a.rfind("{", 0), 0u) << a;
  EXPECT_EQ(a, b);
}

// Every key of a real report appears in docs/reports.md.
TEST(Reports, EveryKeyIsDocumented) {
  std::ifstream f(std::string(VTPU_SOURCE_DIR) + "/docs/reports.md");
  std::stringstream ss;
  ss << f.rdbuf();
  std::string doc = ss.str();
  auto j = nlohmann::json::parse(conv_report());
  std::vector<std::string> missing;
  std::function<void(const nlohmann::json&, const std::string&)> walk = [&](const nlohmann::json& x, const std::string& path) {
    if (!x.is_object()) return;
    for (auto it = x.begin(); it != x.end(); ++it) {
      // Tensor names, tags and unit names are data, not keys.
      if (path == "outputs" || path.ends_with("energy_pj") || path.ends_with("stall_cycles") || path == "units") {
        if (doc.find(it.key()) == std::string::npos) missing.push_back(path + "." + it.key());
        if (path == "units") walk(it.value(), "units.unit");
        continue;
      }
      if (doc.find("`" + it.key()) == std::string::npos && doc.find("." + it.key()) == std::string::npos)
        missing.push_back(path + "." + it.key());
      walk(it.value(), path.empty() ? it.key() : path + "." + it.key());
    }
  };
  walk(j, "");
  for (const auto& t : j["per_tag"]) walk(t, "per_tag");
  EXPECT_TRUE(missing.empty()) << fmt::format("undocumented: {}", fmt::join(missing, ", "));
}

TEST(Reports, TotalsAreConsistent) {
  auto j = nlohmann::json::parse(conv_report());
  const auto& t = j["totals"];
  uint64_t cycles = t["cycles"];
  EXPECT_EQ(t["macs"].get<uint64_t>(), 9u * 4u * 4u * 64u);  // 9 taps x 4 output rows x 4 pixels x (8 x 8)
  EXPECT_NEAR(t["mxu_temporal_utilization"].get<double>(), double(j["counters"]["mxu"]["rows_streamed"].get<uint64_t>()) / double(cycles), 1e-12);
  // Per-tag energies and counters add up to the totals (static energy aside).
  double e = 0;
  uint64_t bundles = 0;
  for (const auto& tag : j["per_tag"]) e += tag["energy_pj"]["total"].get<double>() - tag["energy_pj"]["static"].get<double>(), bundles += tag["bundles"].get<uint64_t>();
  EXPECT_NEAR(e, j["counters"]["energy_pj"]["total"].get<double>() - j["counters"]["energy_pj"]["static"].get<double>(), 1e-6);
  EXPECT_EQ(bundles, j["counters"]["bundles"].get<uint64_t>());
  EXPECT_EQ(j["units"]["sequencer"]["busy_cycles"].get<uint64_t>() + j["units"]["sequencer"]["stall_cycles"].get<uint64_t>() +
                j["units"]["sequencer"]["idle_cycles"].get<uint64_t>(),
            cycles);
}

TEST(Reports, TraceIsChromeTraceJson) {
  std::string out = run_asm("tiny-8x8", "  vec.relu dst=ub[r0+0] a=ub[r0+64] rows=2 dt=int8 flag=f1\n  wait f1\n  halt\n",
                            [](const RunResult& r) {
                              std::ostringstream os;
                              write_trace(os, r.trace, {""}, 1000);
                              return os.str();
                            }, {}, [] { SimOptions o; o.record_trace = true; return o; }());
  auto j = nlohmann::json::parse(out);
  bool vec = false, stall = false;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "vec.relu") vec = e["args"]["begin_cycle"] == 0;
    if (e["ph"] == "X" && e["name"] == "wait_vector") stall = true;
  }
  EXPECT_TRUE(vec) << out;
  EXPECT_TRUE(stall) << out;
}

// A layer that a loop runs several times (a batch in chunks) reports its passes' spans summed,
// not the span from its first pass to its last (sim/src/tag_passes.h): tags a and b, a DMA
// each, alternate `passes` times.
TEST(Reports, ATagRunInALoopReportsItsPassesSpansSummed) {
  auto spans = [](int passes) {
    std::string text = fmt::format(
        ".desc d bytes=8192\n  li r5, {}\ntop:\n.tag a\n  dma.load desc=d src=r0 dst=r0 flag=f1\n  wait f1\n"
        ".tag b\n  dma.load desc=d src=r0 dst=r0 flag=f1\n  wait f1\n  loop r5, top\n  halt\n",
        passes);
    return run_asm("tiny-8x8", text, [](const RunResult& r) {
      std::string out = fmt::format("{}", r.stats.total_cycles);
      for (const auto& t : r.stats.per_tag)
        if (!t.tag.empty()) out += fmt::format(" {} {} {} {}", t.tag, t.c.span_cycles, t.c.first_issue, t.c.last_done);
      return out;
    });
  };
  auto parse = [](const std::string& out) {
    std::istringstream in(out);
    uint64_t total = 0;
    in >> total;
    std::map<std::string, std::array<uint64_t, 3>> tags;
    std::string tag;
    uint64_t span, first, last;
    while (in >> tag >> span >> first >> last) tags[tag] = {span, first, last};
    return std::make_pair(total, tags);
  };
  auto [total1, one] = parse(spans(1));
  ASSERT_EQ(one.size(), 2u) << spans(1);
  EXPECT_EQ(one["a"][0], one["a"][2] - one["a"][1]);  // one pass: the plain span
  auto [total3, three] = parse(spans(3));
  ASSERT_EQ(three.size(), 2u) << spans(3);
  for (const char* t : {"a", "b"}) {
    EXPECT_LT(three[t][0], three[t][2] - three[t][1]) << t << ": the span ran from the first pass to the last";
    EXPECT_GE(three[t][0], 2 * one[t][0]) << t;
  }
  // The two tags' spans tile the run, bar the loop's bundles.
  EXPECT_LE(three["a"][0] + three["b"][0], total3);
  EXPECT_GE(three["a"][0] + three["b"][0], total3 * 8 / 10);
}

}  // namespace
}  // namespace vtpu::sim
