// The figures of the layer table against definitions independent of the code that makes them
// (docs/reports.md "Useful MACs", docs/runtime.md "roofline"):
// - every zoo layer's MAC count equals the useful MACs computed from the ONNX graph alone
//   (tests/e2e/onnx_useful_macs.py: ONNX's shape inference and the operators' definitions);
// - no layer runs in fewer cycles than its roofline bound, the largest of its compute,
//   memory and weight-path limits (a bound the simulator beats is a bug in one of the two).
// Each zoo model on its own preset and dtype; VTPU_BOUNDS_FULL=1: on every preset and dtype
// that compiles it.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/models/zoo.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"

namespace {

using namespace vtpu;

// node name -> useful MACs, from the independent script.
std::map<std::string, uint64_t> onnx_macs(const std::filesystem::path& model) {
  std::string cmd = fmt::format("/usr/bin/python3 {}/tests/e2e/onnx_useful_macs.py '{}'", VTPU_SOURCE_DIR, model.string());
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::map<std::string, uint64_t> out;
  if (!p) return out;
  char line[4096];
  while (std::fgets(line, sizeof line, p.get())) {
    std::string s(line);
    size_t tab = s.rfind('\t');
    if (tab == std::string::npos) continue;
    out[s.substr(0, tab)] += std::stoull(s.substr(tab + 1));
  }
  return out;
}

struct Cell {
  std::string preset;
  compiler::Precision precision;
};

std::vector<Cell> cells_of(const models::ZooEntry& e) {
  const auto p = [](const std::string& d) { return d == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16; };
  if (!std::getenv("VTPU_BOUNDS_FULL")) return {{e.default_config, p(e.default_dtype)}};
  std::vector<Cell> v;
  for (const std::string& preset : config::preset_names())
    for (const char* d : {"int8", "bf16"}) v.push_back({preset, p(d)});
  return v;
}

class ReportBounds : public ::testing::TestWithParam<std::string> {};

TEST_P(ReportBounds, UsefulMacsFromTheOnnxGraphAndNoLayerBelowItsBound) {
  const models::ZooEntry* e = models::find(GetParam());
  ASSERT_TRUE(e);
  const auto model = models::materialize(e->name, models::default_dir());
  const std::map<std::string, uint64_t> want = onnx_macs(model);
  ASSERT_FALSE(want.empty()) << "tests/e2e/onnx_useful_macs.py gave nothing for " << model;
  int compiled = 0;
  for (const Cell& cell : cells_of(*e)) {
    const config::Config cfg = config::load_preset(cell.preset);
    const std::string what = fmt::format("{} on {} {}", e->name, cell.preset, cell.precision == compiler::Precision::Int8 ? "int8" : "bf16");
    compiler::CompileOptions o;
    o.precision = cell.precision;
    o.calibration_samples = 1;  // scales change no bound
    compiler::CompileResult c;
    try {
      c = compiler::compile_onnx(model, cfg, o);
    } catch (const std::exception& ex) {
      continue;  // a preset that does not hold it (ZooOnEveryPreset checks why)
    }
    ++compiled;
    // Every ONNX node's useful MACs, as the compiler counts them, against the ONNX graph; a
    // row reported under another layer's tag (a matmul stream's first one) names its node.
    // Each layer's report row then holds the MACs of the nodes its code makes.
    std::map<std::string, uint64_t> got, row_want;
    std::set<std::pair<std::string, std::string>> made;  // (layer, node): a node's MACs once per row
    for (const auto& b : c.bounds) {
      const std::string& node = b.node.empty() ? b.layer : b.node;
      got[node] += b.macs;
      if (b.macs && want.count(node) && made.insert({b.layer, node}).second) row_want[b.layer] += want.at(node);
    }
    for (const auto& [layer, macs] : want) EXPECT_EQ(got[layer], macs) << what << ": layer " << layer;
    for (const auto& [layer, macs] : got)
      if (macs) {
        EXPECT_TRUE(want.count(layer)) << what << ": layer " << layer << " counts " << macs << " MACs the ONNX graph does not have";
      }

    // The simulated cycles of every layer against its bound (timing-only: the same cycles).
    std::string rows = run_in_child(
        [&] {
          std::map<std::string, std::vector<uint8_t>> inputs;
          sim::fill_missing_inputs(c.program, 1, inputs);
          sim::SimOptions so;
          so.timing_only = true;
          sim::RunResult r = sim::simulate(cfg, c.program, inputs, so);
          runtime::apply_useful_macs(r.stats, c.bounds);
          std::ostringstream os;
          for (const runtime::LayerRow& l : runtime::layer_rows(r.stats, c.bounds))
            os << l.layer << '\t' << l.cycles << '\t' << l.bound_cycles << '\t' << l.compute_cycles << '\t' << l.memory_cycles
               << '\t' << l.weight_path_cycles << '\t' << l.macs << '\n';
          return os.str();
        },
        [](const std::exception& ex) { return std::string("ERR ") + ex.what(); }, "ERR child crashed");
    ASSERT_EQ(rows.rfind("ERR", 0), std::string::npos) << what << ": " << rows;
    std::istringstream is(rows);
    std::string line;
    int layers = 0;
    while (std::getline(is, line)) {
      std::istringstream ls(line);
      std::string layer;
      uint64_t cycles, bound, compute, memory, weights, macs;
      std::getline(ls, layer, '\t');
      ls >> cycles >> bound >> compute >> memory >> weights >> macs;
      ++layers;
      EXPECT_GE(cycles, bound) << what << ": layer " << layer << " ran in " << cycles << " cycles, below its bound (compute "
                               << compute << ", memory " << memory << ", weight path " << weights << ")";
      // The report's MACs are the useful ones wherever the layer has a matmul.
      if (macs) {
        EXPECT_EQ(macs, row_want[layer]) << what << ": reported MACs of " << layer;
      }
    }
    EXPECT_GT(layers, 0) << what;
  }
  EXPECT_GE(compiled, 1) << e->name << " compiled on none of its cells";
}

INSTANTIATE_TEST_SUITE_P(EveryZooModel, ReportBounds, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& e : models::zoo()) names.push_back(e.name);
                           return names;
                         }()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
