// Sweep files: what loads, and every kind of mistake giving FILE:LINE:COLUMN, the key, what is
// wrong and a hint (docs/sweeps.md, "Errors").
#include <gtest/gtest.h>

#include "vtpu/config/config.h"
#include "vtpu/sweep/points.h"
#include "vtpu/sweep/spec.h"

namespace vtpu::sweep {
namespace {

SweepSpec parse(const std::string& yaml) { return parse_sweep(yaml, "t.yaml", "."); }

// The error a sweep file gives: its message, and the line it names.
struct Failure {
  std::string message;
  int line = 0;
};
Failure failure(const std::string& yaml) {
  try {
    parse(yaml);
  } catch (const SweepError& e) {
    return {e.what(), e.line()};
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return {};
}

constexpr const char* kGood = R"(name: demo
base: tiny-16x16
models:
  - lenet5
  - {name: mlp0, batches: [8]}
dtypes: [int8, bf16]
axes:
  - key: memory.bandwidth_gbytes_per_s
    values: [16, 64]
  - name: array
    keys: [core.mxu.rows, core.mxu.cols]
    values: [8, 16]
  - key: clock_mhz
    scale: [0.5, 1, 2]
  - name: buffers
    values:
      - {core.unified_buffer.bytes: 128KiB, core.accumulators.rows: 512}
      - {core.unified_buffer.bytes: 256KiB, core.accumulators.rows: 1024}
constraints: {area_mm2: 100, power_w: 2W, onchip_bytes: 1MiB}
search: {kind: random, samples: 5, seed: 3}
metrics: [cycles, latency_s, energy_per_inference_j]
)";

TEST(SweepSpec, LoadsEverySection) {
  SweepSpec s = parse(kGood);
  EXPECT_EQ(s.name, "demo");
  EXPECT_EQ(s.base_config.name, "tiny-16x16");
  ASSERT_EQ(s.models.size(), 2u);
  EXPECT_TRUE(s.models[0].zoo);
  EXPECT_EQ(s.models[0].batches, std::vector<int64_t>{0});
  EXPECT_EQ(s.models[1].batches, std::vector<int64_t>{8});
  EXPECT_EQ(s.dtypes, (std::vector<std::string>{"int8", "bf16"}));
  ASSERT_EQ(s.axes.size(), 4u);
  EXPECT_EQ(s.axes[0].name, "memory.bandwidth_gbytes_per_s");
  EXPECT_EQ(s.axes[1].values[0].sets.size(), 2u);  // rows and cols
  // scale multiplies the base config's value: tiny-16x16 runs at 1000 MHz.
  EXPECT_EQ(s.axes[2].values[0].sets[0], (std::pair<std::string, std::string>{"clock_mhz", "500"}));
  EXPECT_EQ(s.axes[2].values[2].label, "2x");
  EXPECT_EQ(s.axes[2].base_index, 1);
  EXPECT_EQ(s.axes[3].values[1].sets.size(), 2u);
  EXPECT_DOUBLE_EQ(*s.constraints.power_w, 2.0);
  EXPECT_EQ(*s.constraints.onchip_bytes, 1u << 20);
  EXPECT_EQ(s.search.kind, SearchKind::kRandom);
  EXPECT_EQ(s.metrics.size(), 3u);
  EXPECT_TRUE(s.timing_only);
  // 2 models x 1 batch x 2 dtypes x 2 x 2 x 3 x 2
  EXPECT_EQ(grid_size(s), 96u);
}

TEST(SweepSpec, AppliedValuesGiveTheConfigTheyName) {
  SweepSpec s = parse(kGood);
  Point p = point_at(s, 0);
  p.values = {1, 0, 2, 1};
  config::Config c = apply_sets(s.base_yaml, point_sets(s, p), "t");
  EXPECT_DOUBLE_EQ(c.memory.bandwidth_gbytes_per_s, 64);
  EXPECT_EQ(c.core.mxu.rows, 8u);
  EXPECT_EQ(c.core.mxu.cols, 8u);
  EXPECT_DOUBLE_EQ(c.clock_mhz, 2000);
  EXPECT_EQ(c.core.unified_buffer.bytes, 256u * 1024);
  // Keys derived from an edited key follow it (the preset's own text is edited, not its
  // resolved form): tiny-16x16 leaves the vector lanes to their default, = core.mxu.cols.
  EXPECT_EQ(c.core.vector.lanes, 8u);
}

TEST(SweepSpec, SetChangesTheBaseForEveryPoint) {
  SweepSpec s = parse("base: tpu-v1\nset: {memory.bandwidth_gbytes_per_s: 68}\nmodels: [mlp0]\n");
  EXPECT_DOUBLE_EQ(s.base_config.memory.bandwidth_gbytes_per_s, 68);
  EXPECT_EQ(grid_size(s), 1u);
}

TEST(SweepSpec, ErrorsNameLineKeyAndFix) {
  struct Case {
    const char* yaml;
    int line;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {"base: tpu-v1\nmodels: [mlp0]\nmodel: x\n", 3, {"t.yaml:3:1", "key 'model'", "did you mean 'models'?"}},
      {"models: [mlp0]\n", 1, {"key 'base'", "missing", "preset"}},
      {"base: tpu-v9\nmodels: [mlp0]\n", 1, {"t.yaml:1:7", "unknown preset 'tpu-v9'", "did you mean 'tpu-v1'"}},
      {"base: tpu-v1\nmodels: [resnet5]\n", 2, {"'resnet5' is not a zoo model", "did you mean 'resnet50'?"}},
      {"base: tpu-v1\nmodels: [nothere.onnx]\n", 2, {"nothere.onnx does not exist"}},
      {"base: tpu-v1\nmodels: [mlp0]\ndtypes: [int4]\n", 3, {"'int4' is not int8 or bf16"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: core.mxu.row\n    values: [1]\n", 4,
       {"t.yaml:4:10", "'core.mxu.row' is not a config key", "did you mean 'core.mxu.rows'?"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: core.mxu.rows\n    values: [128, 5000]\n", 5,
       {"t.yaml:5:19", "config key 'core.mxu.rows'", "5000 out of range [1, 4096]"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: core.unified_buffer.bytes\n    values: [24MB]\n", 5,
       {"ambiguous size unit 'MB'"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: memory.kind\n    scale: [2]\n", 5, {"not a numeric key"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: core.mxu.rows\n    scale: [0.3]\n", 5, {"is not a whole number"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: clock_mhz\n    values: [700, 700]\n", 5, {"'700' is listed twice"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: clock_mhz\n    values: [1]\n  - key: clock_mhz\n    values: [2]\n",
       6, {"'clock_mhz' is already set by another axis"}},
      {"base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: clock_mhz\n    values: [600, 800]\nsearch: {kind: one_at_a_time}\n",
       4, {"none of the values of 'clock_mhz' gives the base config"}},
      {"base: tpu-v1\nmodels: [mlp0]\nmetrics: [cycle]\n", 3, {"'cycle' is not a metric", "did you mean 'cycles'?"}},
      {"base: tpu-v1\nmodels: [mlp0]\nsearch: {kind: pareto}\n", 3, {"key 'search.samples'", "missing"}},
      {"base: tpu-v1\nmodels: [mlp0]\nsearch: {kind: pareto, samples: 4, objectives: [cycles]}\n", 3,
       {"at least two objectives"}},
      {"base: tpu-v1\nmodels: [mlp0]\nconstraints: {power_w: 3 parsecs}\n", 3, {"constraints.power_w"}},
      {"base: tpu-v1\nset: {core.mxu.rows: 0}\nmodels: [mlp0]\n", 2, {"config key 'core.mxu.rows'", "out of range"}},
      {"base: tpu-v1\nmodels: [mlp0\n", 3, {"t.yaml:3:1"}},
      {"", 1, {"the file is empty"}},
      {"base: tpu-v1\nmodels: [mlp0]\nsimulation: fast\n", 3, {"'fast' is not timing or full"}},
      {"base: tpu-v1\nmodels: [mlp0, mlp0]\n", 2, {"'mlp0' is listed twice"}},
  };
  for (const Case& c : cases) {
    Failure f = failure(c.yaml);
    EXPECT_EQ(f.line, c.line) << f.message;
    for (const std::string& s : c.says) EXPECT_NE(f.message.find(s), std::string::npos) << "missing '" << s << "' in:\n" << f.message;
    EXPECT_NE(f.message.find("error:"), std::string::npos) << f.message;
  }
}

TEST(SweepSpec, CrossKeyProblemsOfACombinationAreLeftToThePoint) {
  // 100 accumulator rows pass the key's own range check but not a check across keys (each of
  // the 2 banks must hold a tile's 256 rows), which another axis could fix: the file loads, and
  // such a point is recorded as invalid.
  SweepSpec s = parse("base: tpu-v1\nmodels: [mlp0]\naxes:\n  - key: core.accumulators.rows\n    values: [100, 4096]\n");
  EXPECT_THROW(apply_sets(s.base_yaml, s.axes[0].values[0].sets, "p"), config::ConfigError);
  EXPECT_NO_THROW(apply_sets(s.base_yaml, s.axes[0].values[1].sets, "p"));
}

TEST(SweepSpec, FileErrorsNameTheFile) {
  try {
    load_sweep("/nonexistent/sweep.yaml");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/sweep.yaml"), std::string::npos);
  }
}

}  // namespace
}  // namespace vtpu::sweep
