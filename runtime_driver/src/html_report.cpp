// The HTML report of a run (docs/reports.md, "HTML report"): totals, per-layer cycles by
// what the sequencer waited on, energy per inference by unit, a roofline plot of the layers
// and the layer table. Charts are Vega-Lite specs drawn by the plots library; one colour
// means one unit on every chart of the page.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "vtpu/plots/page.h"
#include "vtpu/runtime/runtime.h"

namespace vtpu::runtime {
namespace {

using nlohmann::json;

constexpr const char* kIssuing = "issuing / overlapped";

// Every name a colour stands for on the page: the units, and the part of a layer's span in
// which the sequencer did not stall (given the palette's grey, before the static power).
json page_colours() {
  std::vector<std::string> names;
  for (size_t u = 0; u < sim::kNumUnits; ++u)
    if (sim::Unit(u) != sim::Unit::Static) names.emplace_back(sim::unit_name(sim::Unit(u)));
  names.emplace_back(kIssuing);
  names.emplace_back(sim::unit_name(sim::Unit::Static));
  return plots::colour_scale(names);
}

// A colour encoding on `field` whose legend lists only the names the chart shows.
json colour(const std::string& field, const std::string& title, const json& values) {
  std::vector<std::string> present;
  for (const auto& v : values)
    if (std::find(present.begin(), present.end(), v[field]) == present.end()) present.push_back(v[field]);
  json legend = title.empty() ? json(nullptr) : json({{"title", title}, {"values", present}});
  return {{"field", field}, {"type", "nominal"}, {"scale", page_colours()}, {"legend", legend}};
}

// The unit a stall reason waits for (docs/microarch.md, stall reasons).
std::string waits_on(sim::StallReason r) {
  switch (r) {
    case sim::StallReason::WaitDma:
    case sim::StallReason::DmaBusy: return "dma";
    case sim::StallReason::WaitMxu:
    case sim::StallReason::MxuBusy: return "mxu";
    case sim::StallReason::WaitWeights:
    case sim::StallReason::WeightFifoFull:
    case sim::StallReason::WeightPathBusy: return "weight_fifo";
    case sim::StallReason::WaitVector:
    case sim::StallReason::VectorBusy: return "vector";
    case sim::StallReason::WaitFlag: return "sequencer";
  }
  return "sequencer";
}

// Per-layer stacked bars: each layer's span split into stall reasons and the rest.
json cycles_chart(const ModelRun& run) {
  json values = json::array();
  std::vector<std::string> order;
  for (const auto& t : run.sim.stats.per_tag) {
    const sim::Counters& c = t.c;
    std::string layer = t.tag.empty() ? "(untagged)" : t.tag;
    order.push_back(layer);
    uint64_t span = c.span_cycles, stalls = 0;
    for (size_t r = 0; r < sim::kNumStallReasons; ++r) {
      if (!c.stall[r]) continue;
      values.push_back({{"layer", layer}, {"part", sim::stall_reason_name(sim::StallReason(r))},
                        {"unit", waits_on(sim::StallReason(r))}, {"cycles", c.stall[r]}, {"span", span}});
      stalls += c.stall[r];
    }
    values.push_back({{"layer", layer}, {"part", kIssuing}, {"unit", kIssuing}, {"cycles", span > stalls ? span - stalls : 0},
                      {"span", span}});
  }
  return {
      {"width", 760},
      {"height", {{"step", 18}}},
      {"data", {{"values", values}}},
      {"transform", {{{"calculate", "datum.span > 0 ? datum.cycles / datum.span : 0"}, {"as", "share"}}}},
      {"mark", {{"type", "bar"}, {"tooltip", true}}},
      {"encoding",
       {{"y", {{"field", "layer"}, {"type", "nominal"}, {"sort", order}, {"title", "layer"}, {"axis", {{"labelLimit", 260}}}}},
        {"x", {{"aggregate", "sum"}, {"field", "cycles"}, {"type", "quantitative"}, {"title", "cycles (first issue to last done)"}}},
        {"color", colour("unit", "sequencer waiting on", values)},
        {"order", {{"field", "part"}}},
        {"tooltip",
         {{{"field", "layer"}}, {{"field", "part"}, {"title", "stall reason"}}, {{"field", "cycles"}, {"format", ","}},
          {{"field", "share"}, {"format", ".1%"}, {"title", "share of the layer"}}}}}}};
}

json energy_chart(const ModelRun& run) {
  const auto& e = run.sim.stats.total.energy_pj;
  double total = run.sim.stats.total.energy_total_pj();
  json values = json::array();
  for (size_t u = 0; u < sim::kNumUnits; ++u)
    values.push_back({{"unit", sim::unit_name(sim::Unit(u))}, {"uj", e[u] * 1e-6 / double(run.batch)},
                      {"share", total > 0 ? e[u] / total : 0.0}});
  return {{"width", 760},
          {"height", {{"step", 20}}},
          {"data", {{"values", values}}},
          {"mark", {{"type", "bar"}, {"tooltip", true}}},
          {"encoding",
           {{"y", {{"field", "unit"}, {"type", "nominal"}, {"sort", "-x"}, {"title", "unit"}}},
            {"x", {{"field", "uj"}, {"type", "quantitative"}, {"axis", {{"tickCount", 8}}},
                   {"title", fmt::format("energy per inference (µJ; batch {})", run.batch)}}},
            {"color", colour("unit", "", values)},
            {"tooltip",
             {{{"field", "unit"}}, {{"field", "uj"}, {"format", ".3f"}, {"title", "µJ per inference"}},
              {{"field", "share"}, {"format", ".1%"}, {"title", "share of the total"}}}}}}};
}

// Log-log roofline: x = MACs per HBM byte, y = MACs per cycle achieved by each layer, under
// the config's roof min(peak, HBM bytes per cycle x intensity).
json roofline_chart(const ModelRun& run) {
  const sim::Stats& s = run.sim.stats;
  double peak = double(s.mxu_count) * s.mxu_rows * s.mxu_cols;
  double bpc = run.config.memory.bandwidth_gbytes_per_s * 1e9 / (run.config.clock_mhz * 1e6);
  json dots = json::array();
  double xmin = 1, xmax = 10;
  for (const LayerRow& r : run.layers) {
    double bytes = double(r.memory_cycles) * bpc;  // the compulsory HBM traffic the compiler's bound counts
    if (!r.macs || !r.cycles || bytes <= 0) continue;
    double x = double(r.macs) / bytes;
    xmin = std::min(xmin, x), xmax = std::max(xmax, x);
    std::string unit = r.bound_by == "compute" ? "mxu" : r.bound_by == "memory" ? "dma" : "vector";
    dots.push_back({{"layer", r.layer}, {"op", r.op}, {"intensity", x}, {"macs_per_cycle", double(r.macs) / double(r.cycles)},
                    {"cycles", r.cycles}, {"roofline", r.bound_cycles}, {"unit", unit}});
  }
  xmin = std::pow(10, std::floor(std::log10(xmin))), xmax = std::pow(10, std::ceil(std::log10(xmax)) + 1);
  json roof = json::array();
  for (double x = xmin; x <= xmax * 1.0001; x *= std::pow(10, 0.05))
    roof.push_back({{"intensity", x}, {"macs_per_cycle", std::min(peak, bpc * x)}});
  json x_enc = {{"field", "intensity"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}}, {"title", "MACs per HBM byte"}};
  json y_enc = {{"field", "macs_per_cycle"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}},
                {"title", "MACs per cycle achieved"}};
  json tooltip = {{{"field", "layer"}}, {{"field", "op"}}, {{"field", "intensity"}, {"format", ".2f"}, {"title", "MACs per byte"}},
                  {{"field", "macs_per_cycle"}, {"format", ".1f"}, {"title", "MACs per cycle"}},
                  {{"field", "cycles"}, {"format", ","}}, {{"field", "roofline"}, {"format", ","}, {"title", "roofline cycles"}}};
  return {{"width", 760},
          {"height", 420},
          {"layer",
           {{{"data", {{"values", roof}}},
             {"mark", {{"type", "line"}, {"color", "#333"}}},
             {"encoding", {{"x", x_enc}, {"y", y_enc}}}},
            {{"data", {{"values", json::array({{{"intensity", xmax}, {"macs_per_cycle", peak}}})}}},
             {"mark", {{"type", "text"}, {"align", "right"}, {"dy", -8}, {"color", "#333"}}},
             {"encoding", {{"x", x_enc}, {"y", y_enc}, {"text", {{"value", fmt::format("roof: peak {:.0f} MACs/cycle, HBM {:.1f} B/cycle", peak, bpc)}}}}}},
            {{"data", {{"values", dots}}},
             {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}, {"tooltip", true}}},
             {"encoding",
              {{"x", x_enc}, {"y", y_enc}, {"tooltip", tooltip},
               {"color", colour("unit", "busiest unit", dots)}}}},
            {{"data", {{"values", dots}}},
             {"mark", {{"type", "text"}, {"align", "left"}, {"dx", 7}, {"dy", -6}, {"fontSize", 10}}},
             {"encoding", {{"x", x_enc}, {"y", y_enc}, {"text", {{"field", "layer"}}}}}}}}};
}

std::string layer_table_html(const ModelRun& run) {
  std::string o = "<table>\n<tr><th>layer</th><th>op</th><th>output shape</th><th>cycles</th><th>roofline</th><th>MXU %</th>"
                  "<th>top stall (cycles)</th><th>stall cycles</th><th>energy µJ (batch)</th><th>bound</th></tr>\n";
  for (const LayerRow& r : run.layers)
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td>"
                     "<td>{:.3f}</td><td>{}</td></tr>\n",
                     plots::html_escape(r.layer), plots::html_escape(r.op.empty() ? "-" : r.op), r.shape.empty() ? "-" : r.shape,
                     r.cycles, r.bound_cycles ? std::to_string(r.bound_cycles) : "-", 100 * r.mxu_utilization,
                     r.top_stall.empty() ? "-" : fmt::format("{} {}", r.top_stall, r.top_stall_cycles), r.stall_cycles,
                     r.energy_uj, r.bound_by);
  return o + "</table>\n";
}

}  // namespace

std::string html_report(const ModelRun& run, const std::string& title) {
  plots::Page page{title, {}};
  page.sections.push_back({"", "", nullptr,
                           fmt::format("<p>config <b>{}</b></p>\n<pre>{}</pre>\n", plots::html_escape(run.config.name),
                                       plots::html_escape(totals_text(run)))});
  page.sections.push_back({"Cycles per layer, by what the sequencer waited on",
                           "Each bar is a layer's span from the issue of its first bundle to the end of its last "
                           "operation; coloured parts are sequencer stalls, by the unit waited on (hover for the "
                           "exact reason); the rest is issue time or time overlapped with other layers' work.",
                           cycles_chart(run), ""});
  page.sections.push_back({"Energy per inference, by unit",
                           fmt::format("The run's energy divided by its batch of {}, the same figure as the totals' "
                                       "energy per inference (docs/energy.md).",
                                       run.batch),
                           energy_chart(run), ""});
  page.sections.push_back({"Roofline",
                           "Each dot is a layer, labelled, coloured by the unit that was busiest over its span (mxu: "
                           "compute-bound, dma: memory-bound, vector); the line is the config's roof. Layers without "
                           "MACs or compulsory HBM traffic are not shown.",
                           roofline_chart(run), ""});
  page.sections.push_back({"Layers", "", nullptr, layer_table_html(run)});
  return plots::html_page(page);
}

}  // namespace vtpu::runtime
