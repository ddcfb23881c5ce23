// The sweep report: its fronts are the Pareto fronts by definition, its tooltips carry each
// point's configuration, and Debian's headless Chromium draws every chart without an error.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "vtpu/plots/headless.h"
#include "vtpu/sweep/report.h"

namespace vtpu::sweep {
namespace {

using nlohmann::json;

// A synthetic sweep: two groups, two axes, figures from a seeded generator.
std::vector<PointResult> rows() {
  std::vector<PointResult> out;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  int64_t index = 0;
  for (const char* model : {"resnet50", "bert-base-layer"})
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 3; ++b) {
        PointResult r;
        r.index = index++, r.model = model, r.dtype = "int8", r.batch = 1, r.status = "ok";
        r.key = "k" + std::to_string(r.index);
        r.params = json{{"array", std::to_string(64 << a)}, {"memory.bandwidth_gbytes_per_s", std::to_string(17 << b)}}.dump();
        r.latency_s = 1e-3 * u(rng), r.energy_per_inference_j = 1e-2 * u(rng), r.throughput = 1 / r.latency_s;
        r.area_mm2 = 100 * u(rng), r.average_power_w = 30 * u(rng), r.tops = 5 * u(rng), r.peak_tops = 90;
        r.macs = 4'000'000'000ull, r.hbm_bytes = uint64_t(3e7 * u(rng)), r.hbm_gbytes_per_s = 17 << b;
        out.push_back(r);
      }
  PointResult dnf = out.back();
  dnf.key = "dnf", dnf.index = index, dnf.status = "does_not_fit";
  out.push_back(dnf);
  return out;
}

const json* chart(const plots::Page& p, const std::string& heading) {
  for (const auto& s : p.sections)
    if (s.heading == heading) return &s.chart;
  return nullptr;
}

TEST(SweepReport, FrontsAreThePointsNoOtherPointBeats) {
  std::vector<PointResult> rs = rows();
  plots::Page page = sweep_page("t", rs);
  const json* c = chart(page, "Latency against energy");
  ASSERT_TRUE(c);
  const json& data = (*c)["data"]["values"];
  EXPECT_EQ(data.size(), rs.size() - 1);  // the point that did not fit is not drawn
  for (const json& p : data) {
    bool dominated = false;
    for (const json& q : data)
      if (q["group"] == p["group"] && q["point"] != p["point"])
        dominated |= double(q["latency_ms"]) <= double(p["latency_ms"]) && double(q["energy_mj"]) <= double(p["energy_mj"]) &&
                     (double(q["latency_ms"]) < double(p["latency_ms"]) || double(q["energy_mj"]) < double(p["energy_mj"]));
    EXPECT_EQ(bool(p["front_latency_energy"]), !dominated) << p.dump();
    EXPECT_EQ(p["axis0"], json::parse(rs[size_t(int64_t(p["point"]))].params)["array"]);
  }
  // The tooltip names every axis, in the sweep's order.
  std::string tips = (*c)["spec"]["layer"][0]["encoding"]["tooltip"].dump();
  EXPECT_LT(tips.find("\"array\""), tips.find("memory.bandwidth_gbytes_per_s")) << tips;
  EXPECT_TRUE(chart(page, "What each axis does"));
  EXPECT_TRUE(chart(page, "Roofline of the best points"));
}

TEST(SweepReport, EachAxisAloneIsPerformanceOverTheBasePoint) {
  // One at a time around (a=1x, b=1x): a=2x halves the latency, b=2x quadruples it.
  std::vector<PointResult> rs;
  for (const char* model : {"m1", "m2"})
    for (auto [a, b, lat] : std::initializer_list<std::tuple<const char*, const char*, double>>{
             {"1x", "1x", 1.0}, {"2x", "1x", 0.5}, {"1x", "1x", 1.0}, {"1x", "2x", 4.0}, {"1x", "0.5x", 2.0}}) {
      PointResult r;
      r.model = model, r.dtype = "int8", r.batch = 1, r.status = "ok", r.latency_s = lat, r.throughput = 1 / lat;
      r.energy_per_inference_j = 1, r.area_mm2 = 1, r.average_power_w = 1, r.tops = 1, r.peak_tops = 2, r.macs = 1, r.hbm_bytes = 1;
      r.hbm_gbytes_per_s = 1;
      r.params = json{{"a", a}, {"b", b}}.dump();
      r.index = int64_t(rs.size());
      rs.push_back(r);
    }
  plots::Page page = sweep_page("t", rs);
  const json* c = chart(page, "Each axis alone, from the base point");
  ASSERT_TRUE(c);
  std::map<std::string, double> got;
  for (const json& d : (*c)["data"]["values"])
    got[d["group"].get<std::string>() + " " + d["axis"].get<std::string>() + "=" + d["value"].get<std::string>()] = d["relative"];
  EXPECT_EQ((*c)["spec"]["encoding"]["x"]["sort"]["field"], "order");
  for (const json& d : (*c)["data"]["values"])  // values in numeric order: 0.5x, 1x, 2x
    if (d["axis"] == "b") EXPECT_EQ(d["order"], d["value"] == "0.5x" ? 0 : d["value"] == "1x" ? 1 : 2) << d.dump();
  EXPECT_DOUBLE_EQ(got.at("m1 int8 b1 a=2x"), 2.0);
  EXPECT_DOUBLE_EQ(got.at("m1 int8 b1 b=2x"), 0.25);
  EXPECT_DOUBLE_EQ(got.at("m2 int8 b1 b=0.5x"), 0.5);
  EXPECT_DOUBLE_EQ(got.at("m1 int8 b1 a=1x"), 1.0);
  EXPECT_DOUBLE_EQ(got.at("geometric mean b=2x"), 0.25);
  EXPECT_DOUBLE_EQ(got.at("geometric mean a=1x"), 1.0);  // the base point, once per model
}

TEST(SweepReport, ChromiumDrawsEveryChart) {
  if (!plots::have_vega()) GTEST_FAIL() << "this build has no Vega (scripts/install-deps.sh, then reconfigure)";
  if (!plots::have_chromium()) GTEST_SKIP() << "no /usr/bin/chromium (scripts/install-deps.sh installs it)";
  std::filesystem::path html = std::filesystem::temp_directory_path() / ("vtpu_sweep_report_" + std::to_string(getpid()) + ".html");
  std::ofstream(html) << sweep_report("sweep </script> test", rows());
  plots::Rendered r = plots::render_headless(html, html.string() + ".png");
  ASSERT_TRUE(r.ran) << r.log;
  EXPECT_EQ(r.charts_error, "");
  EXPECT_EQ(r.charts_rendered, 6);
  EXPECT_NE(r.dom.find("does_not_fit"), std::string::npos);  // the status table
  std::filesystem::remove(html);
}

}  // namespace
}  // namespace vtpu::sweep
