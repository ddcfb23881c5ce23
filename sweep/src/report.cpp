// The sweep report: data rows for Vega-Lite, the Pareto fronts computed here (points.h), one
// chart per question an architect asks of a sweep. docs/sweeps.md, "Plots", says what each
// chart shows.
#include "vtpu/sweep/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "vtpu/config/schema.h"
#include "vtpu/sweep/points.h"

namespace vtpu::sweep {
namespace {

using nlohmann::json;

struct Axes {
  std::vector<std::string> names;                 // in the sweep file's order
  std::map<std::string, std::vector<std::string>> values;  // labels in the file's order
};

// Axis names and value labels in order of first appearance, which in grid order is the
// order the sweep file gives them.
Axes axes_of(const std::vector<PointResult>& rows) {
  Axes a;
  for (const PointResult& r : rows) {
    if (r.params.empty()) continue;
    nlohmann::ordered_json p = nlohmann::ordered_json::parse(r.params, nullptr, false);
    if (!p.is_object()) continue;
    for (auto it = p.begin(); it != p.end(); ++it) {
      if (!a.values.count(it.key())) a.names.push_back(it.key());
      auto& v = a.values[it.key()];
      std::string label = it.value().get<std::string>();
      if (std::find(v.begin(), v.end(), label) == v.end()) v.push_back(label);
    }
  }
  // Values that all read as numbers (sizes, bandwidths, scale factors "0.5x") go in numeric
  // order; others stay in order of appearance.
  for (auto& [name, labels] : a.values) {
    std::vector<std::pair<double, std::string>> num;
    for (const std::string& l : labels) {
      std::string t = !l.empty() && l.back() == 'x' ? l.substr(0, l.size() - 1) : l;
      double v = 0;
      bool ok = false;
      for (config::KeyType k : {config::KeyType::kNumber, config::KeyType::kBytes, config::KeyType::kBandwidth,
                                config::KeyType::kFrequency, config::KeyType::kTime, config::KeyType::kPower})
        if (!ok && config::parse_quantity(t, k, v).empty()) ok = true;
      if (!ok) break;
      num.push_back({v, l});
    }
    if (num.size() != labels.size()) continue;
    std::stable_sort(num.begin(), num.end(), [](auto& x, auto& y) { return x.first < y.first; });
    for (size_t i = 0; i < num.size(); ++i) labels[i] = num[i].second;
  }
  return a;
}

std::string group_of(const PointResult& r) { return fmt::format("{} {} b{}", r.model, r.dtype, r.batch); }

// Field names for Vega-Lite: a dot in a field name means a nested field there.
std::string axis_field(size_t i) { return fmt::format("axis{}", i); }

json point_row(const PointResult& r, const Axes& ax) {
  json p = r.params.empty() ? json::object() : json::parse(r.params);
  json row = {{"group", group_of(r)},
              {"point", r.index},
              {"latency_ms", r.latency_s * 1e3},
              {"energy_mj", r.energy_per_inference_j * 1e3},
              {"throughput", r.throughput},
              {"area_mm2", r.area_mm2},
              {"power_w", r.average_power_w},
              {"tops", r.tops},
              {"peak_tops", r.peak_tops},
              {"tops_per_w", r.average_power_w > 0 ? r.tops / r.average_power_w : 0.0},
              {"mxu_pct", 100 * r.mxu_utilization},
              {"memory_bound_pct", 100 * r.bound_memory},
              {"intensity", r.hbm_bytes ? double(r.macs) / double(r.hbm_bytes) : 0.0},
              {"feasible", r.feasible ? "yes" : "no: " + r.violations}};
  for (size_t i = 0; i < ax.names.size(); ++i) row[axis_field(i)] = p.value(ax.names[i], std::string("-"));
  return row;
}

// The tooltip of a point: its group, its axis values, then the figures.
json tooltip(const Axes& ax) {
  json t = json::array({{{"field", "group"}, {"title", "model dtype batch"}}, {{"field", "point"}, {"title", "grid point"}}});
  for (size_t i = 0; i < ax.names.size(); ++i) t.push_back({{"field", axis_field(i)}, {"title", ax.names[i]}});
  for (auto [f, title, fmt] : std::initializer_list<std::array<const char*, 3>>{{"latency_ms", "latency (ms)", ".4g"},
                                                                               {"energy_mj", "energy / inference (mJ)", ".4g"},
                                                                               {"throughput", "inferences/s", ".4g"},
                                                                               {"tops", "TOPS", ".3g"},
                                                                               {"mxu_pct", "MXU %", ".1f"},
                                                                               {"power_w", "power (W)", ".3g"},
                                                                               {"area_mm2", "area (mm2)", ".4g"},
                                                                               {"memory_bound_pct", "memory-bound cycles %", ".0f"},
                                                                               {"feasible", "feasible", ""}}) {
    json e = {{"field", f}, {"title", title}};
    if (*fmt) e["format"] = fmt;
    t.push_back(e);
  }
  return t;
}

// Marks each row of a group on the front of (x, y), each minimized or maximized.
void mark_front(json& rows, const std::string& flag, const std::string& x, bool x_max, const std::string& y, bool y_max) {
  std::map<std::string, std::vector<size_t>> by_group;
  for (size_t i = 0; i < rows.size(); ++i) by_group[rows[i]["group"]].push_back(i);
  for (auto& [g, idx] : by_group) {
    std::vector<std::vector<double>> costs;
    for (size_t i : idx) {
      double a = rows[i][x], b = rows[i][y];
      costs.push_back({x_max ? -a : a, y_max ? -b : b});
    }
    std::set<size_t> front;
    for (size_t f : pareto_front(costs)) front.insert(idx[f]);
    for (size_t i : idx) rows[i][flag] = front.count(i) > 0;
  }
}

json scale(bool log) { return log ? json{{"type", "log"}, {"zero", false}} : json{{"zero", false}}; }

// All points faint, the front's points joined and solid, one panel per model/dtype/batch.
json front_chart(const json& rows, const Axes& ax, const json& colours, const std::string& flag, const std::string& x,
                 const std::string& x_title, const std::string& y, const std::string& y_title) {
  json enc = {{"x", {{"field", x}, {"type", "quantitative"}, {"title", x_title}, {"scale", scale(true)}}},
              {"y", {{"field", y}, {"type", "quantitative"}, {"title", y_title}, {"scale", scale(true)}}},
              {"color", {{"field", "group"}, {"type", "nominal"}, {"scale", colours}, {"title", "model dtype batch"}}},
              {"tooltip", tooltip(ax)}};
  json all = {{"mark", {{"type", "point"}, {"opacity", 0.35}, {"filled", true}}}, {"encoding", enc}};
  json line_enc = enc;
  line_enc["order"] = {{"field", x}, {"type", "quantitative"}};
  json front_line = {{"transform", {{{"filter", {{"field", flag}, {"equal", true}}}}}},
                     {"mark", {{"type", "line"}, {"point", {{"filled", true}, {"size", 60}}}}},
                     {"encoding", line_enc}};
  return {{"data", {{"values", rows}}},
          {"facet", {{"field", "group"}, {"type", "nominal"}, {"title", nullptr}}},
          {"columns", 2},
          {"spec", {{"width", 330}, {"height", 240}, {"layer", {all, front_line}}}},
          {"resolve", {{"scale", {{"x", "independent"}, {"y", "independent"}}}}}};
}

// Each axis's effect: the geometric mean of a metric over the points with each value, over
// its geometric mean over all points of the group (1 = no effect on average).
json sensitivity_chart(const std::vector<PointResult>& ok, const Axes& ax, const json& colours) {
  json data = json::array();
  for (const char* metric : {"throughput", "energy per inference"}) {
    bool thr = std::string(metric) == "throughput";
    std::map<std::string, std::pair<double, size_t>> whole;                       // group -> log sum, n
    std::map<std::tuple<std::string, std::string, std::string>, std::pair<double, size_t>> by;  // group, axis, value
    for (const PointResult& r : ok) {
      double v = thr ? r.throughput : r.energy_per_inference_j;
      if (!(v > 0)) continue;
      json p = json::parse(r.params);
      auto& w = whole[group_of(r)];
      w.first += std::log(v), ++w.second;
      for (const std::string& a : ax.names) {
        auto& b = by[{group_of(r), a, p.value(a, std::string("-"))}];
        b.first += std::log(v), ++b.second;
      }
    }
    for (const auto& [k, s] : by) {
      const auto& [g, a, value] = k;
      const auto& w = whole[g];
      const auto& labels = ax.values.at(a);
      size_t order = size_t(std::find(labels.begin(), labels.end(), value) - labels.begin());
      data.push_back({{"metric", metric}, {"group", g}, {"axis", a}, {"value", value}, {"order", order},
                      {"relative", std::exp(s.first / double(s.second) - w.first / double(w.second))}, {"points", s.second}});
    }
  }
  json enc = {{"x", {{"field", "value"}, {"type", "ordinal"}, {"sort", {{"field", "order"}}}, {"title", nullptr}}},
              {"y", {{"field", "relative"}, {"type", "quantitative"}, {"title", "geometric mean / all points"}, {"scale", scale(true)}}},
              {"color", {{"field", "group"}, {"type", "nominal"}, {"scale", colours}, {"title", "model dtype batch"}}},
              {"tooltip", json::array({{{"field", "metric"}}, {{"field", "group"}}, {{"field", "axis"}}, {{"field", "value"}},
                                       {{"field", "relative"}, {"format", ".3f"}}, {{"field", "points"}}})}};
  return {{"data", {{"values", data}}},
          {"facet", {{"row", {{"field", "metric"}, {"type", "nominal"}, {"title", nullptr},
                              {"sort", {"throughput", "energy per inference"}}}},
                     {"column", {{"field", "axis"}, {"type", "nominal"}, {"title", nullptr}, {"sort", ax.names}}}}},
          {"spec", {{"width", 200}, {"height", 160}, {"mark", {{"type", "line"}, {"point", true}}}, {"encoding", enc}}},
          {"resolve", {{"scale", {{"x", "independent"}}}}}};
}

// Each axis varied alone from a base point (the most common value of every axis, which is
// the base config's in a one_at_a_time search): performance (base latency / latency) per
// value, per group and as the geometric mean over the groups. Null when no point differs
// from the base in one axis only.
json alone_chart(const std::vector<PointResult>& ok, const Axes& ax, const json& colours) {
  std::map<std::string, std::vector<std::pair<const PointResult*, nlohmann::ordered_json>>> by;
  for (const PointResult& r : ok) by[group_of(r)].push_back({&r, nlohmann::ordered_json::parse(r.params)});
  json data = json::array();
  std::map<std::pair<std::string, std::string>, std::pair<double, size_t>> mean;  // (axis, value) -> log sum, n
  std::set<std::tuple<std::string, std::string, std::string>> counted;
  for (const auto& [g, rs] : by) {
    std::map<std::string, std::string> base;
    for (const std::string& a : ax.names) {
      std::map<std::string, size_t> n;
      for (const auto& [r, p] : rs) ++n[p.value(a, std::string())];
      base[a] = std::max_element(n.begin(), n.end(), [](auto& x, auto& y) { return x.second < y.second; })->first;
    }
    const PointResult* b = nullptr;
    for (const auto& [r, p] : rs) {
      bool all = true;
      for (const std::string& a : ax.names) all &= p.value(a, std::string()) == base[a];
      if (all) b = r;
    }
    if (!b) continue;
    for (const auto& [r, p] : rs) {
      std::vector<std::string> differ;
      for (const std::string& a : ax.names)
        if (p.value(a, std::string()) != base[a]) differ.push_back(a);
      for (const std::string& a : ax.names) {
        if (!(differ.empty() || (differ.size() == 1 && differ[0] == a))) continue;
        std::string value = p.value(a, std::string());
        const auto& labels = ax.values.at(a);
        double rel = b->latency_s / r->latency_s;
        if (counted.count({g, a, value})) continue;
        data.push_back({{"group", g}, {"axis", a}, {"value", value}, {"relative", rel},
                        {"order", size_t(std::find(labels.begin(), labels.end(), value) - labels.begin())}});
        if (!counted.insert({g, a, value}).second) continue;  // the base point, listed once per axis
        auto& m = mean[{a, value}];
        m.first += std::log(rel), ++m.second;
      }
    }
  }
  if (data.size() <= ax.names.size() * by.size()) return nullptr;  // base points only
  size_t groups = by.size();
  for (const auto& [k, m] : mean) {
    if (m.second != groups || groups < 2) continue;
    const auto& labels = ax.values.at(k.first);
    data.push_back({{"group", "geometric mean"}, {"axis", k.first}, {"value", k.second}, {"relative", std::exp(m.first / double(m.second))},
                    {"order", size_t(std::find(labels.begin(), labels.end(), k.second) - labels.begin())}});
  }
  json dom = colours["domain"], range = colours["range"];
  dom.push_back("geometric mean"), range.push_back("#000000");
  json enc = {{"x", {{"field", "value"}, {"type", "ordinal"}, {"sort", {{"field", "order"}}}, {"title", nullptr}}},
              {"y", {{"field", "relative"}, {"type", "quantitative"}, {"title", "performance / base point"}, {"scale", scale(true)}}},
              {"color", {{"field", "group"}, {"type", "nominal"}, {"scale", {{"domain", dom}, {"range", range}}}, {"title", nullptr}}},
              {"tooltip", json::array({{{"field", "group"}}, {{"field", "axis"}}, {{"field", "value"}}, {{"field", "relative"}, {"format", ".3f"}}})}};
  return {{"data", {{"values", data}}},
          {"facet", {{"field", "axis"}, {"type", "nominal"}, {"title", nullptr}, {"sort", ax.names}}},
          {"spec", {{"width", 170}, {"height", 220}, {"mark", {{"type", "line"}, {"point", true}}}, {"encoding", enc}}},
          {"resolve", {{"scale", {{"x", "independent"}}}}}};
}

// The front points against their own rooflines: achieved TOPS over MACs per HBM byte, under
// min(peak TOPS, 2 x intensity x bandwidth).
json roofline_chart(const json& rows, const Axes& ax, const json& colours) {
  json best = json::array(), roofs = json::array();
  double lo = 1e300, hi = 0;
  for (const json& r : rows)
    if ((r["front_latency_energy"] || r["front_throughput_area"] || r["front_throughput_power"]) && double(r["intensity"]) > 0)
      best.push_back(r), lo = std::min(lo, double(r["intensity"])), hi = std::max(hi, double(r["intensity"]));
  for (const json& r : best) {
    double peak = r["peak_tops"], bw = r["hbm_gbs"], ridge = peak * 1e12 / (2 * bw * 1e9);
    for (double x : {std::min(lo, ridge) / 4, ridge, std::max(hi, ridge) * 4})
      roofs.push_back({{"point", r["point"]}, {"group", r["group"]}, {"intensity", x}, {"roof", std::min(peak, 2 * x * bw * 1e9 / 1e12)}});
  }
  json x = {{"field", "intensity"}, {"type", "quantitative"}, {"title", "operational intensity (MACs per HBM byte)"}, {"scale", scale(true)}};
  json color = {{"field", "group"}, {"type", "nominal"}, {"scale", colours}, {"title", "model dtype batch"}};
  json roof_layer = {{"data", {{"values", roofs}}},
                     {"mark", {{"type", "line"}, {"opacity", 0.3}, {"strokeDash", {4, 3}}}},
                     {"encoding", {{"x", x}, {"y", {{"field", "roof"}, {"type", "quantitative"}, {"scale", scale(true)}, {"title", "TOPS"}}},
                                   {"color", color}, {"detail", {{"field", "point"}, {"type", "nominal"}}}}}};
  json dots = {{"data", {{"values", best}}},
               {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}}},
               {"encoding", {{"x", x}, {"y", {{"field", "tops"}, {"type", "quantitative"}, {"scale", scale(true)}, {"title", "TOPS"}}},
                             {"color", color}, {"tooltip", tooltip(ax)}}}};
  return {{"width", 640}, {"height", 380}, {"layer", {roof_layer, dots}}};
}

std::string status_table(const std::vector<PointResult>& rows) {
  std::map<std::string, std::map<std::string, size_t>> n;
  for (const PointResult& r : rows) ++n[group_of(r)][r.status];
  std::string h = "<table><tr><th>model dtype batch</th>";
  for (std::string_view s : kStatuses) h += "<th>" + plots::html_escape(s) + "</th>";
  h += "</tr>";
  for (const auto& [g, c] : n) {
    h += "<tr><td>" + plots::html_escape(g) + "</td>";
    for (std::string_view s : kStatuses) h += fmt::format("<td>{}</td>", c.count(std::string(s)) ? c.at(std::string(s)) : 0);
    h += "</tr>";
  }
  return h + "</table>";
}

// The best point of each group for each objective, with its axis values.
std::string best_table(const json& rows, const Axes& ax) {
  struct Objective {
    const char* name;
    const char* field;
    bool max;
  };
  const Objective objs[] = {{"lowest latency", "latency_ms", false},
                            {"lowest energy / inference", "energy_mj", false},
                            {"most inferences/s per mm2", "per_mm2", true},
                            {"most TOPS/W", "tops_per_w", true}};
  std::map<std::string, std::vector<const json*>> by;
  for (const json& r : rows) by[r["group"]].push_back(&r);
  std::string h = "<table><tr><th>model dtype batch</th><th>best by</th>";
  for (const std::string& a : ax.names) h += "<th>" + plots::html_escape(a) + "</th>";
  h += "<th>latency (ms)</th><th>energy (mJ)</th><th>inferences/s</th><th>area (mm2)</th><th>TOPS/W</th></tr>";
  for (const auto& [g, rs] : by)
    for (const Objective& o : objs) {
      const json* b = *std::min_element(rs.begin(), rs.end(), [&](const json* x, const json* y) {
        double a = (*x)[o.field], c = (*y)[o.field];
        return o.max ? a > c : a < c;
      });
      h += "<tr><td>" + plots::html_escape(g) + "</td><td>" + o.name + "</td>";
      for (size_t i = 0; i < ax.names.size(); ++i) h += "<td>" + plots::html_escape((*b)[axis_field(i)].get<std::string>()) + "</td>";
      h += fmt::format("<td>{:.4g}</td><td>{:.4g}</td><td>{:.4g}</td><td>{:.4g}</td><td>{:.3g}</td></tr>", double((*b)["latency_ms"]),
                       double((*b)["energy_mj"]), double((*b)["throughput"]), double((*b)["area_mm2"]), double((*b)["tops_per_w"]));
    }
  return h + "</table>";
}

}  // namespace

plots::Page sweep_page(const std::string& title, const std::vector<PointResult>& rows) {
  Axes ax = axes_of(rows);
  std::vector<PointResult> ok;
  for (const PointResult& r : rows)
    if (r.status == "ok" && r.feasible && r.latency_s > 0) ok.push_back(r);
  std::vector<std::string> groups;
  for (const PointResult& r : ok)
    if (std::find(groups.begin(), groups.end(), group_of(r)) == groups.end()) groups.push_back(group_of(r));
  json colours = plots::colour_scale(std::vector<std::string>(groups.begin(), groups.begin() + long(std::min<size_t>(20, groups.size()))));
  json data = json::array();
  for (const PointResult& r : ok) {
    json row = point_row(r, ax);
    row["hbm_gbs"] = r.hbm_gbytes_per_s;
    row["per_mm2"] = r.area_mm2 > 0 ? r.throughput / r.area_mm2 : 0.0;
    data.push_back(row);
  }
  mark_front(data, "front_latency_energy", "latency_ms", false, "energy_mj", false);
  mark_front(data, "front_throughput_area", "area_mm2", false, "throughput", true);
  mark_front(data, "front_throughput_power", "power_w", false, "throughput", true);

  plots::Page page{title, {}};
  page.sections.push_back({"Points", fmt::format("{} points recorded, {} ran and meet every constraint (the charts show those). "
                                                 "Hover a dot for its configuration.",
                                                 rows.size(), ok.size()),
                           nullptr, status_table(rows)});
  if (ok.empty()) return page;
  page.sections.push_back({"Latency against energy",
                           "Each panel: every point (faint) and the Pareto front (joined): no other point is faster and "
                           "needs less energy per inference. Lower left is better.",
                           front_chart(data, ax, colours, "front_latency_energy", "latency_ms", "latency (ms)", "energy_mj",
                                       "energy per inference (mJ)"),
                           ""});
  page.sections.push_back({"Throughput against area",
                           "The front: no other point gives more inferences per second on less silicon (area estimate of "
                           "docs/sweeps.md). Upper left is better.",
                           front_chart(data, ax, colours, "front_throughput_area", "area_mm2", "area estimate (mm2)",
                                       "throughput", "inferences per second"),
                           ""});
  page.sections.push_back({"Throughput against power (performance per watt)",
                           "The front: no other point gives more inferences per second at lower average power. Upper left "
                           "is better.",
                           front_chart(data, ax, colours, "front_throughput_power", "power_w", "average power (W)",
                                       "throughput", "inferences per second"),
                           ""});
  if (!ax.names.empty())
    page.sections.push_back({"What each axis does",
                             "For each value of an axis, the geometric mean of throughput (top) and of energy per inference "
                             "(bottom) over the points with that value, divided by the geometric mean over all points: above 1 "
                             "that value raises the metric on average over the other axes.",
                             sensitivity_chart(ok, ax, colours), ""});
  if (json alone = alone_chart(ok, ax, colours); !alone.is_null())
    page.sections.push_back({"Each axis alone, from the base point",
                             "Performance (the base point's latency over the point's) when one axis moves and the others stay at "
                             "their most common value, the base config's in a one_at_a_time search; black: the geometric mean "
                             "over the models.",
                             alone, ""});
  page.sections.push_back({"Roofline of the best points",
                           "The points on any of the three fronts: achieved TOPS against MACs per byte of HBM traffic, each "
                           "under its own roof (dashed): min(peak TOPS, 2 x intensity x HBM bandwidth).",
                           roofline_chart(data, ax, colours), ""});
  page.sections.push_back({"Best points", "", nullptr, best_table(data, ax)});
  return page;
}

std::string sweep_report(const std::string& title, const std::vector<PointResult>& rows) {
  return plots::html_page(sweep_page(title, rows));
}

}  // namespace vtpu::sweep
