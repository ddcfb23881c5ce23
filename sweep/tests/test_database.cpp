// Results in SQLite: every field survives the round trip, rows persist, merging counts what
// it adds, and the exports write what the rows hold.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <sqlite3.h>

#include "vtpu/sweep/database.h"
#include "vtpu/sweep/export.h"
#include "vtpu/support/error.h"

namespace vtpu::sweep {
namespace {
namespace fs = std::filesystem;

fs::path tmp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("vtpu-sweep-db-test-" + std::to_string(getpid()));
  fs::create_directories(d);
  return d / name;
}

PointResult row(const std::string& key, int64_t index, uint64_t cycles) {
  PointResult r;
  r.key = key, r.index = index, r.round = 2, r.model = "resnet50", r.dtype = "int8", r.batch = 4;
  r.params = R"({"array":"128","memory.bandwidth_gbytes_per_s":"34"})";
  r.config_fingerprint = "00ff", r.status = "ok", r.message = "a, \"quoted\"\nmessage";
  r.cycles = cycles, r.macs = 12345678901ull, r.hbm_bytes = 1ull << 40, r.onchip_bytes = 29ull << 20;
  r.clock_mhz = 700, r.latency_s = 1.5e-3, r.throughput = 2666.7, r.tops = 5.9, r.peak_tops = 91.75;
  r.mxu_utilization = 0.0625, r.energy_per_inference_j = 5.1e-2, r.average_power_w = 36.9, r.area_mm2 = 332.8;
  r.bound_compute = 0.25, r.bound_memory = 0.7, r.bound_vector = 0.05;
  r.layers = {{"conv1", 1000, "memory"}, {"fc", 20, "compute"}};
  r.dnf_buffer = "core.unified_buffer.bytes", r.dnf_needed = 7, r.dnf_available = 3, r.dnf_short = 4;
  r.feasible = false, r.violations = "power_w 36.9 > 30", r.compile_cpu_s = 1.25, r.simulate_cpu_s = 0.125;
  r.program_cached = true, r.tool = "0.1.0";
  return r;
}

TEST(SweepDatabase, EveryFieldRoundTripsAndPersists) {
  fs::path p = tmp("a.sqlite");
  fs::remove(p);
  PointResult r = row("k1", 3, 975561);
  {
    Database db(p);
    db.put(r);
    db.put(row("k0", 1, 5));
    db.set_meta("sweep_name", "x");
  }
  Database db(p, true);
  std::vector<PointResult> all = db.all();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].key, "k0");  // by grid index
  EXPECT_EQ(to_json(all[1]), to_json(r));
  EXPECT_EQ(*db.meta("sweep_name"), "x");
  EXPECT_TRUE(db.has("k1"));
  EXPECT_FALSE(db.has("k2"));
  EXPECT_EQ(db.statuses().at("k1"), "ok");
  EXPECT_EQ(result_from_json(to_json(r)).layers[0].bound_by, "memory");
  r.params = R"({"memory":"2x","clock":"1x"})";  // axes keep the sweep file's order, not alphabetical
  EXPECT_EQ(result_from_json(to_json(r)).params, r.params);
}

TEST(SweepDatabase, MergeAddsNewKeysAndCountsDuplicatesAndConflicts) {
  fs::path a = tmp("m1.sqlite"), b = tmp("m2.sqlite"), out = tmp("m.sqlite");
  for (const fs::path& p : {a, b, out}) fs::remove(p);
  {
    Database da(a), db(b);
    da.put(row("x", 0, 10)), da.put(row("y", 1, 11));
    db.put(row("y", 1, 11)), db.put(row("z", 2, 12)), db.put(row("w", 3, 99));
  }
  { Database w(out); w.put(row("w", 3, 13)); }
  Database m(out);
  Database::MergeStats s1 = m.merge_from(a);
  EXPECT_EQ(s1.added, 2u);
  EXPECT_EQ(s1.duplicates, 0u);
  Database::MergeStats s2 = m.merge_from(b);
  EXPECT_EQ(s2.added, 1u);       // z
  EXPECT_EQ(s2.duplicates, 2u);  // y, w
  EXPECT_EQ(s2.conflicts, 1u);   // w: other cycles; the row already there stays
  EXPECT_EQ(m.count(), 4u);
  for (const PointResult& r : m.all())
    if (r.key == "w") EXPECT_EQ(r.cycles, 13u);
}

TEST(SweepDatabase, NotADatabaseIsAClearError) {
  fs::path p = tmp("bad.sqlite");
  { std::ofstream(p) << "not sqlite at all, just text that is long enough to be a header......"; }
  try {
    Database db(p);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
  }
  EXPECT_THROW(Database(tmp("missing.sqlite"), true), UserError);
}

// A small RFC 4180 reader, written apart from the writer, to read the export back.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += '"', ++i;
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field), field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

TEST(SweepExport, CsvHasOneRowPerPointWithAxesAndFigures) {
  PointResult ok = row("k", 0, 975561), dnf = row("d", 1, 0);
  dnf.status = "does_not_fit";
  auto rows = read_csv(export_csv({ok, dnf}, {"cycles", "area_mm2"}));
  ASSERT_EQ(rows.size(), 3u);
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  for (const char* c : {"array", "memory.bandwidth_gbytes_per_s", "status", "cycles", "area_mm2", "dnf_buffer", "dnf_short",
                        "layer_bounds", "message"})
    ASSERT_TRUE(col.count(c)) << c;
  EXPECT_FALSE(col.count("tops"));  // only the metrics asked for
  for (const auto& r : rows) EXPECT_EQ(r.size(), rows[0].size());
  EXPECT_EQ(rows[1][col["array"]], "128");
  EXPECT_EQ(rows[1][col["cycles"]], "975561");
  EXPECT_EQ(rows[1][col["message"]], "a, \"quoted\"\nmessage");
  EXPECT_EQ(rows[1][col["layer_bounds"]], "conv1:memory:1000;fc:compute:20");
  EXPECT_EQ(rows[2][col["cycles"]], "");  // a point that did not run has no figures
  EXPECT_EQ(rows[2][col["area_mm2"]], "332.8");  // but its area is known
  EXPECT_EQ(rows[2][col["dnf_short"]], "4");
}

TEST(SweepExport, JsonlIsOneObjectPerPoint) {
  std::string j = export_jsonl({row("a", 0, 1), row("b", 1, 2)});
  ASSERT_EQ(std::count(j.begin(), j.end(), '\n'), 2);
  auto first = nlohmann::json::parse(j.substr(0, j.find('\n')));
  EXPECT_EQ(first["params"]["array"], "128");
  EXPECT_EQ(first["layers"][1][0], "fc");
  EXPECT_EQ(first["cycles"], 1);
}

}  // namespace
}  // namespace vtpu::sweep

namespace vtpu::sweep {
namespace {

TEST(SweepDatabase, ADatabaseOfAnOlderVtpuStillReadsAndGrowsItsColumns) {
  fs::path p = tmp("old.sqlite");
  fs::remove(p);
  { Database db(p); db.put(row("k", 0, 7)); }
  // An older vtpu had no hbm_gbytes_per_s column.
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "ALTER TABLE points DROP COLUMN hbm_gbytes_per_s", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(raw);
  {
    Database ro(p, true);
    ASSERT_EQ(ro.all().size(), 1u);
    EXPECT_EQ(ro.all()[0].cycles, 7u);
    EXPECT_EQ(ro.all()[0].hbm_gbytes_per_s, 0);
  }
  Database rw(p);
  PointResult r = row("k2", 1, 8);
  r.hbm_gbytes_per_s = 34;
  rw.put(r);
  EXPECT_EQ(rw.all()[1].hbm_gbytes_per_s, 34);
}

}  // namespace
}  // namespace vtpu::sweep

namespace vtpu::sweep {
namespace {

TEST(SweepDocs, NameEveryFieldMetricAndStatus) {
  std::ifstream f(std::string(VTPU_SOURCE_DIR) + "/docs/sweeps.md");
  std::string doc((std::istreambuf_iterator<char>(f)), {});
  ASSERT_FALSE(doc.empty());
  for (const ResultField& r : result_fields()) EXPECT_NE(doc.find("`" + std::string(r.name) + "`"), std::string::npos) << r.name;
  for (const MetricInfo& m : metric_table()) EXPECT_NE(doc.find("`" + std::string(m.name) + "`"), std::string::npos) << m.name;
  for (std::string_view s : kStatuses) EXPECT_NE(doc.find("| `" + std::string(s) + "` |"), std::string::npos) << s;
}

}  // namespace
}  // namespace vtpu::sweep
