// The per-layer table and CSV on rows with hostile names, read back independently (Python's
// csv module for the CSV).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "vtpu/runtime/runtime.h"

namespace {

namespace fs = std::filesystem;
using vtpu::runtime::LayerRow;
using vtpu::runtime::ModelRun;

ModelRun hostile_rows() {
  ModelRun run;
  for (std::string name : {std::string("plain"), std::string("quote \"q\" inside"), std::string("comma, inside"),
                           std::string("line\nbreak"), std::string("crlf\r\nboth, \"all\""),
                           std::string("a_very_long_layer_name_that_no_fixed_column_would_hold_whole")}) {
    LayerRow r;
    r.layer = name;
    r.op = "matmul+add+unary+softmax+concat";
    r.shape = "1024x1024x1024";
    r.cycles = 12345678901234ull;
    r.top_stall = "weight_path_busy";
    r.top_stall_cycles = 9876543210ull;
    r.bound_by = "memory";
    run.layers.push_back(r);
  }
  return run;
}

TEST(Tables, CsvRoundTripsHostileNamesThroughPythonCsv) {
  fs::path dir = fs::temp_directory_path() / ("vtpu_tables_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  ModelRun run = hostile_rows();
  std::ofstream(dir / "l.csv", std::ios::binary) << vtpu::runtime::layers_csv(run);
  std::string cmd = "/usr/bin/python3 -c \"import csv, json, sys; json.dump(list(csv.reader(open(sys.argv[1], newline=''), "
                    "strict=True)), open(sys.argv[2], 'w'))\" " + (dir / "l.csv").string() + " " + (dir / "rows.json").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream f(dir / "rows.json");
  auto rows = nlohmann::json::parse(f);
  ASSERT_EQ(rows.size(), run.layers.size() + 1);
  for (size_t i = 0; i < run.layers.size(); ++i) {
    EXPECT_EQ(rows[i + 1].size(), rows[0].size());
    EXPECT_EQ(rows[i + 1][0].get<std::string>(), run.layers[i].layer);
    EXPECT_EQ(rows[i + 1][3].get<std::string>(), "12345678901234");
  }
  fs::remove_all(dir);
}

TEST(Tables, TextTableKeepsEveryCellWholeAndOneRowPerLayer) {
  ModelRun run = hostile_rows();
  std::string t = vtpu::runtime::layer_table(run);
  EXPECT_EQ(size_t(std::count(t.begin(), t.end(), '\n')), run.layers.size() + 1) << t;  // a line break in a name is escaped
  for (const char* s : {"a_very_long_layer_name_that_no_fixed_column_would_hold_whole", "line\\nbreak",
                        "matmul+add+unary+softmax+concat", "1024x1024x1024", "12345678901234",
                        "weight_path_busy 9876543210", "quote \"q\" inside"})
    EXPECT_NE(t.find(s), std::string::npos) << s << "\n" << t;
  // Columns line up: "cycles" ends where every row's cycle count ends.
  size_t end = t.find("cycles") + 6;
  for (size_t at = t.find('\n') + 1; at < t.size(); at = t.find('\n', at) + 1)
    EXPECT_EQ(t.substr(at + end - 14, 14), "12345678901234") << t;
}

}  // namespace
