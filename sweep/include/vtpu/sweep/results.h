#pragma once
// What a sweep records for each point (one row; docs/sweeps.md lists every field) and the
// metric table that sweep files, exports, the Pareto search and the plots share.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vtpu::sweep {

// How a point ended. Points are never dropped: each of these is a row.
//   ok            simulated
//   does_not_fit  the compiler found a buffer too small (dnf_* say which and by how much)
//   invalid       the combination of axis values is not a valid config (message says why)
//   unsupported   the config cannot run the point (a dtype its MXU lacks, an array shape the
//                 compiler does not handle)
//   excluded      a constraint known before running (area, on-chip or off-chip memory) fails
//   error         anything else (message); rerun with --retry-errors
inline constexpr std::string_view kStatuses[] = {"ok", "does_not_fit", "invalid", "unsupported", "excluded", "error"};

struct LayerBound {
  std::string layer;
  uint64_t cycles = 0;
  std::string bound_by;  // compute, memory or vector (docs/runtime.md)
};

struct PointResult {
  std::string key;       // identity of the point (docs/sweeps.md, "Resuming")
  int64_t index = 0;     // position in the sweep's grid
  int round = 0;         // search round that added it
  std::string model, dtype;
  int64_t batch = 0;     // as run (the model's own when the sweep says 0)
  std::string params;    // JSON object: axis name -> value label
  std::string config_fingerprint;  // hex; "" when the config is invalid
  std::string status = "error";
  std::string message;
  // Figures (status ok; area and on-chip bytes whenever the config is valid).
  uint64_t cycles = 0, macs = 0, hbm_bytes = 0, onchip_bytes = 0;
  double hbm_gbytes_per_s = 0;  // the config's off-chip bandwidth (for rooflines)
  double clock_mhz = 0, latency_s = 0, throughput = 0, tops = 0, peak_tops = 0, mxu_utilization = 0;
  double energy_per_inference_j = 0, average_power_w = 0, area_mm2 = 0;
  double bound_compute = 0, bound_memory = 0, bound_vector = 0;  // share of the layers' cycles
  std::vector<LayerBound> layers;
  // Does not fit: which buffer (config key), how much one allocation needed, how much was
  // free for it, and the difference (in the key's unit: bytes, or rows for accumulators).
  std::string dnf_buffer;
  uint64_t dnf_needed = 0, dnf_available = 0, dnf_short = 0;
  bool feasible = true;     // every constraint holds
  std::string violations;   // the constraints that do not, e.g. "power_w 81.2 > 75"
  // CPU seconds of the worker that compiled the point's program (0: it came from the cache of
  // an earlier run) and of the one that simulated it.
  double compile_cpu_s = 0, simulate_cpu_s = 0;
  bool program_cached = false;
  std::string tool;  // vtpu version that ran it
};

// Every field of PointResult by name, in the order the database and the exports use; the
// one list they all walk.
using FieldPtr = std::variant<std::string PointResult::*, uint64_t PointResult::*, int64_t PointResult::*,
                              double PointResult::*, int PointResult::*, bool PointResult::*,
                              std::vector<LayerBound> PointResult::*>;
struct ResultField {
  std::string_view name;
  FieldPtr ptr;
};
const std::vector<ResultField>& result_fields();
// One JSON object per point (what --jsonl writes; params and layers as JSON values).
std::string to_json(const PointResult& r);
PointResult result_from_json(const std::string& json);

// A metric as sweep files name it (metrics:, search.objectives:, plots).
struct MetricInfo {
  std::string_view name, unit, doc;
  bool higher_is_better;
  double (*get)(const PointResult&);
};
const std::vector<MetricInfo>& metric_table();
const MetricInfo* find_metric(std::string_view name);
std::vector<std::string> metric_names();

// The layers' JSON ([[name, cycles, bound_by], ...]) and back.
std::string layers_json(const std::vector<LayerBound>& layers);
std::vector<LayerBound> layers_from_json(const std::string& json);

}  // namespace vtpu::sweep
