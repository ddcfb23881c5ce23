#pragma once
// A sweep's rows for spreadsheets and scripts: CSV (one row per point, one column per axis
// and figure) and JSON Lines (one object per point, params and layers structured).
#include <string>
#include <vector>

#include "vtpu/sweep/results.h"

namespace vtpu::sweep {

// `metrics`: the metric columns, in order (a sweep's metrics:); empty: all.
std::string export_csv(const std::vector<PointResult>& rows, const std::vector<std::string>& metrics = {});
std::string export_jsonl(const std::vector<PointResult>& rows);

}  // namespace vtpu::sweep
