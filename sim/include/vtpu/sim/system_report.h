#pragma once
// Reports of a multi-chip run (docs/reports.md, "Multi-chip reports"): the JSON report with a
// table per chip and per link, the readable summary, and a Perfetto timeline with a process
// per chip and one for the links.
#include <ostream>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/sim/report.h"
#include "vtpu/sim/system.h"

namespace vtpu::sim {

std::string system_report_json(const SystemResult& r, const config::Config& cfg, const ReportMeta& meta);
std::string system_summary_table(const SystemResult& r, const config::Config& cfg);
// tags[i]: the tag table of chip i's program.
void write_system_trace(std::ostream& out, const SystemResult& r, const config::Config& cfg,
                        const std::vector<std::vector<std::string>>& tags);

// Link energy: bytes x 8 x energy.ici_pj_per_bit for every link a byte crosses.
double link_energy_pj(const LinkStats& l, const config::Config& cfg);

}  // namespace vtpu::sim
