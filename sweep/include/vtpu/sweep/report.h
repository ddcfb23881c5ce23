#pragma once
// The HTML report of a sweep (vtpu sweep plot; docs/sweeps.md, "Plots"): Pareto fronts of
// latency against energy, throughput against area and throughput against power, each axis's
// effect on throughput and energy, a roofline of the best points, and tables; every dot's
// tooltip shows its point's axis values and figures. Built on plots/ (Vega-Lite, one
// self-contained page).
#include <string>
#include <vector>

#include "vtpu/plots/page.h"
#include "vtpu/sweep/results.h"

namespace vtpu::sweep {

// The report as a page of sections (charts are Vega-Lite specs), and as one HTML document.
// `rows` as Database::all() gives them (grid order: axis values then come in the order the
// sweep file lists them).
plots::Page sweep_page(const std::string& title, const std::vector<PointResult>& rows);
std::string sweep_report(const std::string& title, const std::vector<PointResult>& rows);

}  // namespace vtpu::sweep
