#pragma once
// The outputs of a run: the JSON report (schema in docs/reports.md), the readable summary
// table, and the Chrome-trace / Perfetto timeline.
#include <ostream>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::sim {

// What a report echoes so that a run can be reproduced (DESIGN.md, determinism).
struct ReportMeta {
  std::string tool_version;
  std::string program;         // path or model name
  uint64_t seed = 0;           // for inputs that were generated
  std::vector<std::string> inputs;  // "NAME=FILE" or "NAME=random"
};

inline constexpr int kReportSchemaVersion = 1;

std::string report_json(const RunResult& r, const config::Config& cfg, const ReportMeta& meta);
std::string summary_table(const RunResult& r, const config::Config& cfg);
// One track per thing a unit carries (sequencer.stall, dma[k], mxuN.matmul, mxuN.wload,
// vector), each holding slices that only follow one another; times in microseconds of
// simulated time (docs/reports.md, "Timeline").
void write_trace(std::ostream& out, const std::vector<TraceEvent>& events,
                 const std::vector<std::string>& tags, double clock_mhz);

}  // namespace vtpu::sim
