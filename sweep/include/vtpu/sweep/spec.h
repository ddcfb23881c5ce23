#pragma once
// A sweep file (YAML, docs/sweeps.md): a base config, the axes that vary it, the models,
// data types and batch sizes to run, constraints, the search, and the metrics to record.
// Loading validates everything that can be checked without running a point and reports the
// first problem as FILE:LINE:COLUMN: error: key 'KEY': WHAT, with a hint.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/support/error.h"

namespace vtpu::sweep {

class SweepError : public UserError {
 public:
  SweepError(std::string file, int line, int column, std::string key, std::string what, std::string hint = "");
  const std::string& key() const { return key_; }
  int line() const { return line_; }

 private:
  std::string key_;
  int line_;
};

// One value of an axis: the config keys it sets, each to a YAML value (a scalar such as
// "128" or "24MiB", or a flow sequence such as "[2, 2]").
struct AxisValue {
  std::string label;  // how exports and plots show it
  std::vector<std::pair<std::string, std::string>> sets;
  double number = 0;  // the value as a number when it is one (plots sort by it), else the index
};

struct Axis {
  std::string name;               // `name:`, else the key(s)
  std::vector<std::string> keys;  // config keys it sets (for display)
  std::vector<AxisValue> values;
  int base_index = -1;  // the value that leaves the base config as it is, if any
};

struct ModelSpec {
  std::string name;               // zoo name or the path as written
  std::filesystem::path path;     // the .onnx file (empty for zoo models until materialized)
  bool zoo = false;
  std::vector<int64_t> batches;   // 0: the model's own batch
  // INT8 calibration data, input name -> .npy or image files (docs/runtime.md, --calibrate);
  // empty: seeded random samples.
  std::map<std::string, std::string> calibrate;
};

struct Constraints {
  std::optional<double> area_mm2;        // at most, estimated (docs/sweeps.md)
  std::optional<double> power_w;         // average power at most
  std::optional<uint64_t> onchip_bytes;  // unified buffer + accumulators + weight FIFOs, at most
  std::optional<uint64_t> memory_bytes;  // off-chip memory (memory.bytes), at most
};

enum class SearchKind { kGrid, kRandom, kPareto, kOneAtATime };

struct Search {
  SearchKind kind = SearchKind::kGrid;
  uint64_t samples = 0;  // random: points drawn; pareto: the first round's sample
  uint64_t seed = 1;
  int rounds = 2;        // pareto: refinement rounds after the first sample
  // pareto: the metrics whose front is refined (each minimized or maximized as results.h says).
  std::vector<std::string> objectives{"latency_s", "energy_per_inference_j"};
};

struct SweepSpec {
  std::filesystem::path file;   // the sweep file ("" when parsed from a string)
  std::string name;             // `name:`, else the file's stem
  std::string base;             // preset name or config path, as written
  std::string base_yaml;        // the base config's YAML with `set:` applied
  config::Config base_config;   // that, loaded
  std::vector<ModelSpec> models;
  std::vector<std::string> dtypes{"int8"};
  std::vector<Axis> axes;
  Constraints constraints;
  Search search;
  std::vector<std::string> metrics;  // recorded and exported, in this order
  uint64_t seed = 1;                 // generated inputs and INT8 calibration samples
  bool timing_only = true;           // simulation: timing (default) or full
  uint64_t text_hash = 0;            // of the file's text
};

SweepSpec load_sweep(const std::filesystem::path& file);
// `dir` resolves relative paths (the base config, ONNX files, calibration data).
SweepSpec parse_sweep(const std::string& yaml, const std::string& source_name, const std::filesystem::path& dir);

// Applies `sets` (config key -> YAML value) to a config's YAML text: the text, and loaded.
std::string with_sets(const std::string& base_yaml, const std::vector<std::pair<std::string, std::string>>& sets);
config::Config apply_sets(const std::string& base_yaml, const std::vector<std::pair<std::string, std::string>>& sets,
                          const std::string& source_name);

}  // namespace vtpu::sweep
