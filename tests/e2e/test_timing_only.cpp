// The timing-only simulation (sim::SimOptions::timing_only, what sweeps run) gives exactly
// the cycles and statistics of a full simulation, on every model of the zoo: the JSON report
// (cycles, per-unit busy and stall cycles, every counter per layer, energy) is byte-identical;
// only the outputs, which timing-only does not compute, are left out. The same holds for the
// program read back without its constant bytes, as a sweep reads it (isa::ReadOptions).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "vtpu/compiler/compiler.h"
#include "vtpu/models/zoo.h"
#include "vtpu/sim/report.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"
#include "zoo_params.h"

namespace {

using namespace vtpu;

class TimingOnly : public ::testing::TestWithParam<std::string> {};

TEST_P(TimingOnly, GivesTheCyclesAndStatsOfAFullSimulation) {
  const models::ZooEntry* e = models::find(GetParam());
  ASSERT_TRUE(e);
  config::Config cfg = config::load_preset(e->default_config);
  compiler::CompileOptions o;
  o.precision = e->default_dtype == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16;
  isa::Program prog = compiler::compile_onnx(models::materialize(e->name, models::default_dir()), cfg, o).program;
  std::map<std::string, std::vector<uint8_t>> inputs;
  sim::fill_missing_inputs(prog, 1, inputs);
  auto path = std::filesystem::temp_directory_path() / fmt::format("vtpu_timing_only_{}_{}.vtpu", e->name, ::getpid());
  isa::write_program(prog, path);
  isa::Program heads = isa::read_program(path, {.constant_bytes = false});
  std::filesystem::remove(path);
  auto report = [&](bool timing_only, const isa::Program& program = {}) {
    return run_in_child(
        [&] {
          sim::SimOptions so;
          so.timing_only = timing_only;
          sim::RunResult r = sim::simulate(cfg, program.code.empty() ? prog : program, inputs, so);
          if (timing_only != r.outputs.empty()) return std::string("ERR outputs ") + (timing_only ? "computed" : "missing");
          r.outputs.clear();
          return sim::report_json(r, cfg, {"test", e->name, 1, {}});
        },
        [](const std::exception& ex) { return std::string("ERR ") + ex.what(); }, "ERR child crashed");
  };
  std::string full = report(false), timing = report(true), from_heads = report(true, heads);
  ASSERT_EQ(full.rfind("ERR", 0), std::string::npos) << full;
  ASSERT_EQ(timing.rfind("ERR", 0), std::string::npos) << timing;
  EXPECT_NE(full.find("\"cycles\""), std::string::npos);
  EXPECT_EQ(timing, full);
  EXPECT_EQ(from_heads, full);
  bool has_constants = false;
  for (const isa::ConstSegment& c : heads.constants) has_constants |= c.bytes() > 0;
  if (has_constants)  // a full run needs the bytes it was not given: refused, not run on zeros
    EXPECT_NE(report(false, heads).find("without its constant bytes"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(EveryZooModel, TimingOnly, ::testing::ValuesIn(vtpu::testing::zoo_model_names()),
                         vtpu::testing::zoo_test_name);

}  // namespace
