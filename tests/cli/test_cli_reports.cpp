// The figures `vtpu run` writes: the per-layer table, the CSV and the Perfetto trace, each
// checked against an independent reading (the JSON report, Python's csv module, the trace
// format's nesting rule and the config's DMA slots).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_util.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/plots/headless.h"

namespace {

using nlohmann::json;

// Three chained matmuls whose node names are hostile to tables and CSV: a long name, one
// with quotes and a comma, one with a comma only. (Line breaks in names are covered by the
// runtime's own CSV test: the compiler cannot yet carry them into a program's tags.)
const std::vector<std::string> kHostile = {"a_layer_name_well_past_twenty_eight_characters_long", "fc \"one\", two",
                                           "fc,three"};

fs::path hostile_model(const fs::path& dir) {
  vtpu::testing::OnnxBuilder m;
  m.input("x", {4, 16});
  m.init("w1", {16, 16}, 0.3f);
  m.init("w2", {16, 16}, 0.3f);
  m.init("w3", {16, 8}, 0.3f);
  m.node("MatMul", kHostile[0], {"x", "w1"}, {"h1"});
  m.node("MatMul", kHostile[1], {"h1", "w2"}, {"h2"});
  m.node("MatMul", kHostile[2], {"h2", "w3"}, {"y"});
  m.output("y", {4, 8});
  return m.save_to(dir / "hostile.onnx");
}

// The CSV read back by Python's csv module (RFC 4180 dialect), as JSON rows.
json python_csv(const fs::path& csv) {
  fs::path out = csv.parent_path() / "rows.json";
  std::string cmd = "/usr/bin/python3 -c \"import csv, json, sys; json.dump(list(csv.reader(open(sys.argv[1], newline=''), "
                    "strict=True)), open(sys.argv[2], 'w'))\" " + csv.string() + " " + out.string();
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return json::parse(read_file(out));
}

TEST(CliReports, CsvQuotesHostileNamesPerRfc4180) {
  fs::path dir = scratch("csv");
  fs::path model = hostile_model(dir);
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 -q --csv " + (dir / "l.csv").string());
  ASSERT_EQ(r.code, 0) << r.err;
  std::string text = read_file(dir / "l.csv");
  EXPECT_NE(text.find("\"fc \"\"one\"\", two\""), std::string::npos) << text;  // quoted, inner quotes doubled
  EXPECT_NE(text.find("\r\n"), std::string::npos) << "RFC 4180 lines end in CRLF";
  json rows = python_csv(dir / "l.csv");
  ASSERT_GE(rows.size(), 4u) << rows.dump();
  size_t width = rows[0].size();
  EXPECT_EQ(rows[0][0], "layer");
  std::vector<std::string> layers;
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].size(), width) << rows[i].dump();  // every row has every column
    layers.push_back(rows[i][0]);
  }
  for (const std::string& name : kHostile)
    EXPECT_NE(std::find(layers.begin(), layers.end(), name), layers.end()) << name << " not read back; got " << rows.dump();
  fs::remove_all(dir.parent_path());
}

// Every cell of the table is printed whole: each layer's full name, and its top stall
// reason with that reason's cycles exactly as the JSON report counts them.
TEST(CliReports, LayerTableNeverCutsANumberOrName) {
  fs::path dir = scratch("table");
  fs::path model = hostile_model(dir);
  CliResult r = vtpu("run " + model.string() + " -c tiny-8x8 --report " + (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  json report = json::parse(read_file(dir / "r.json"));
  int checked = 0;
  for (const auto& tag : report["per_tag"]) {
    std::string name = tag["tag"];
    if (name.empty()) continue;
    std::string shown = name;
    for (size_t at; (at = shown.find('\n')) != std::string::npos;) shown.replace(at, 1, "\\n");
    size_t row = r.out.find("\n" + shown + " ");
    ASSERT_NE(row, std::string::npos) << "no row starts with the whole name '" << shown << "':\n" << r.out;
    std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
    std::string top;
    uint64_t most = 0;
    for (const auto& [reason, cycles] : tag["stall_cycles"].items())
      if (cycles.get<uint64_t>() > most) most = cycles, top = reason;
    if (most) {
      EXPECT_NE(line.find(top + " " + std::to_string(most) + " "), std::string::npos) << line;
    }
    ++checked;
  }
  EXPECT_GE(checked, 3);
  fs::remove_all(dir.parent_path());
}

struct Slice {
  int64_t begin, end;  // ns, as a trace viewer converts microseconds
  std::string name;
};

// The timeline of `make run`'s own job: on every track the slices nest or follow one
// another (Perfetto drops or misdraws the others), tracks are named by what they carry,
// there are no more DMA tracks than the config has transfer slots, and each slice's time
// is its cycles at the config's clock.
TEST(CliReports, TraceSlicesNestOrFollowOnNamedTracks) {
  fs::path dir = scratch("trace");
  CliResult r = vtpu("run mlp0 -c tpu-v1 --dtype int8 -q --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  CliResult cfg = vtpu("config check tpu-v1");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cfg.out, m, std::regex("max_in_flight: (\\d+)"))) << cfg.out;
  int slots = std::stoi(m[1]);
  ASSERT_TRUE(std::regex_search(cfg.out, m, std::regex("\nclock_mhz: ([0-9.]+)"))) << cfg.out;
  double mhz = std::stod(m[1]);

  json t = json::parse(read_file(dir / "t.json"));
  std::map<int, std::string> names;
  std::map<int, std::vector<Slice>> tracks;
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"]] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    double ts = e["ts"], dur = e["dur"];
    int64_t b = std::llround(ts * 1000), end = std::llround((ts + dur) * 1000);
    tracks[e["tid"]].push_back({b, end, e["name"]});
    EXPECT_NEAR(ts, e["args"]["begin_cycle"].get<double>() / mhz, 1e-3) << e.dump();
    EXPECT_NEAR(ts + dur, e["args"]["end_cycle"].get<double>() / mhz, 2e-3) << e.dump();
  }
  std::regex track_name(R"((sequencer\.stall|dma\[\d+\]|mxu\d+\.(matmul|wload)|vector)(\[\d+\])?)");
  int dma_tracks = 0;
  size_t dma_slices = 0;
  for (auto& [tid, slices] : tracks) {
    ASSERT_TRUE(names.count(tid)) << "track " << tid << " has no name";
    EXPECT_TRUE(std::regex_match(names[tid], track_name)) << names[tid];
    if (names[tid].rfind("dma[", 0) == 0) ++dma_tracks, dma_slices += slices.size();
    std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
    });
    std::vector<Slice> open;
    int bad = 0;
    for (const Slice& s : slices) {
      while (!open.empty() && open.back().end <= s.begin) open.pop_back();
      if (!open.empty() && s.end > open.back().end) ++bad;  // starts inside one and ends outside it
      open.push_back(s);
    }
    EXPECT_EQ(bad, 0) << names[tid] << ": " << bad << " of " << slices.size() << " slices overlap without nesting";
  }
  EXPECT_GE(dma_slices, 300u);  // mlp0's weights and activations
  EXPECT_GE(dma_tracks, 2);
  EXPECT_LE(dma_tracks, slots);
  for (const char* want : {"mxu0.matmul", "mxu0.wload", "sequencer.stall"}) {
    bool found = false;
    for (const auto& [tid, n] : names) found |= n == want;
    EXPECT_TRUE(found) << want;
  }
  fs::remove_all(dir.parent_path());
}

// The HTML report as a person sees it: headless Chromium opens the page offline and Vega-Lite
// draws all three charts, with their axes, legends and labelled roofline dots (the page
// sets data-charts-rendered only once every chart is drawn). A PNG is left for a look.
TEST(CliReports, HtmlReportDrawsEveryChart) {
  fs::path dir = scratch("html");
  fs::path html = dir / "report.html";
  CliResult r = vtpu("run lenet5 -c tiny-16x16 -q --html " + html.string());
  ASSERT_EQ(r.code, 0) << r.err;
  std::string page = read_file(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* s : {"conv1", "fc3", "energy per inference", "top stall (cycles)"})
    EXPECT_NE(page.find(s), std::string::npos) << s;
  if (!vtpu::plots::have_chromium()) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
  fs::path png = kRoot / "build" / "cli_report.png";
  if (!fs::exists(png.parent_path())) png = dir / "report.png";
  vtpu::plots::Rendered shown = vtpu::plots::render_headless(html, png, 1100, 2600);
  ASSERT_TRUE(shown.ran) << shown.log;
  ASSERT_EQ(shown.charts_rendered, 3) << "error: " << shown.charts_error;
  std::string dom = shown.dom.substr(shown.dom.rfind("</head>"));
  for (const char* s : {"cycles (first issue to last done)", "sequencer waiting on", "energy per inference (µJ; batch 1)",
                        "MACs per HBM byte", "MACs per cycle achieved", "busiest unit", "roof: peak 256 MACs/cycle",
                        "mark-rect", "mark-symbol", "mark-text", "wait_dma", ">conv1<", ">fc3<"})
    EXPECT_NE(dom.find(s), std::string::npos) << s;
  EXPECT_TRUE(fs::exists(png) && fs::file_size(png) > 50000) << png;
  fs::remove_all(dir.parent_path());
}

}  // namespace
