// A self-contained HTML report of a run: totals, per-layer cycles stacked by stall reason,
// energy by unit, and a roofline plot placing each layer. Charts are inline SVG; the page
// loads nothing from anywhere.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "vtpu/runtime/runtime.h"

namespace vtpu::runtime {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                         "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#8cd17d"};

// Per-layer bars: the layer's cycles split into issue (busy) and its stall reasons.
std::string cycles_chart(const ModelRun& run) {
  const auto& tags = run.sim.stats.per_tag;
  size_t n = tags.size();
  double W = 900, bar = 18, gap = 6, left = 190, H = 40 + double(n) * (bar + gap);
  uint64_t mx = 1;
  for (const auto& t : tags) mx = std::max<uint64_t>(mx, t.c.last_done > t.c.first_issue ? t.c.last_done - t.c.first_issue : 0);
  std::string o = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
                              "aria-label=\"cycles per layer\">\n",
                              W, H + 30);
  double y = 20;
  for (const auto& t : tags) {
    const sim::Counters& c = t.c;
    uint64_t span = c.last_done > c.first_issue ? c.last_done - c.first_issue : 0;
    double x = left, scale = (W - left - 20) / double(mx);
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n", left - 6, y + bar - 5,
                     esc(t.tag.empty() ? "(untagged)" : t.tag.substr(0, 28)));
    uint64_t stalls = 0;
    for (size_t r = 0; r < sim::kNumStallReasons; ++r) {
      if (!c.stall[r]) continue;
      double w = double(c.stall[r]) * scale;
      o += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}: {} stall cycles</title></rect>\n",
                       x, y, w, bar, kColors[(r + 1) % 11], sim::stall_reason_name(sim::StallReason(r)), c.stall[r]);
      x += w, stalls += c.stall[r];
    }
    uint64_t rest = span > stalls ? span - stalls : 0;
    o += fmt::format("<rect x=\"{:.1f}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>issuing / overlapped: {} cycles</title></rect>\n",
                     x, y, double(rest) * scale, bar, kColors[0], rest);
    y += bar + gap;
  }
  // Legend.
  double lx = left;
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">issuing</text>\n",
                   lx, y + 6, kColors[0], lx + 14, y + 15);
  lx += 70;
  for (size_t r = 0; r < sim::kNumStallReasons; ++r) {
    o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>\n",
                     lx, y + 6, kColors[(r + 1) % 11], lx + 14, y + 15, sim::stall_reason_name(sim::StallReason(r)));
    lx += 14 + 7.0 * double(sim::stall_reason_name(sim::StallReason(r)).size()) + 12;
    if (lx > W - 100) lx = left, y += 16;
  }
  return o + "</svg>\n";
}

std::string energy_chart(const ModelRun& run) {
  const auto& e = run.sim.stats.total.energy_pj;
  double mx = *std::max_element(e.begin(), e.end());
  if (mx <= 0) mx = 1;
  double W = 700, bar = 18, gap = 6, left = 130;
  std::string o = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
                              "aria-label=\"energy by unit\">\n",
                              W, 20 + double(sim::kNumUnits) * (bar + gap));
  double y = 10;
  for (size_t u = 0; u < sim::kNumUnits; ++u) {
    double w = e[u] / mx * (W - left - 120);
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>"
                     "<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"/>"
                     "<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\">{:.3f} uJ</text>\n",
                     left - 6, y + bar - 5, sim::unit_name(sim::Unit(u)), left, y, w, bar, kColors[u % 11], left + w + 6,
                     y + bar - 5, e[u] * 1e-6);
    y += bar + gap;
  }
  return o + "</svg>\n";
}

// Log-log roofline: x = MACs per HBM byte, y = MACs per cycle achieved by each layer.
std::string roofline_chart(const ModelRun& run) {
  const sim::Stats& s = run.sim.stats;
  double peak = double(s.mxu_count) * s.mxu_rows * s.mxu_cols;
  double bpc = run.config.memory.bandwidth_gbytes_per_s * 1e9 / (run.config.clock_mhz * 1e6);
  double W = 700, H = 420, L = 70, B = 50, T = 20, Rm = 20;
  double xmin = 0.1, xmax = 1e5, ymin = std::max(1e-3, peak / 1e6), ymax = peak * 2;
  auto X = [&](double v) { return L + (std::log10(v) - std::log10(xmin)) / (std::log10(xmax) - std::log10(xmin)) * (W - L - Rm); };
  auto Y = [&](double v) { return H - B - (std::log10(v) - std::log10(ymin)) / (std::log10(ymax) - std::log10(ymin)) * (H - B - T); };
  std::string o = fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\" "
                              "aria-label=\"roofline\">\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n",
                              W, H, L, T, W - L - Rm, H - B - T);
  // Roof: min(peak, bandwidth x intensity).
  std::string pts;
  for (double x = xmin; x <= xmax * 1.0001; x *= 1.25) {
    double yv = std::clamp(std::min(peak, bpc * x), ymin, ymax);
    pts += fmt::format("{:.1f},{:.1f} ", X(x), Y(yv));
  }
  o += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"#333\" stroke-width=\"2\"/>\n", pts);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">peak {:.0f} MACs/cycle; HBM {:.1f} B/cycle</text>\n",
                   L + 8, T + 14, peak, bpc);
  for (double d = std::pow(10, std::ceil(std::log10(xmin))); d <= xmax; d *= 10)
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{:g}</text>\n", X(d), H - B + 14, d);
  for (double d = std::pow(10, std::ceil(std::log10(ymin))); d <= ymax; d *= 10)
    o += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:g}</text>\n", L - 4, Y(d) + 3, d);
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">MACs per HBM byte</text>\n", (L + W) / 2, H - 12);
  o += fmt::format("<text x=\"14\" y=\"{}\" font-size=\"11\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">MACs per cycle</text>\n",
                   (T + H - B) / 2, (T + H - B) / 2);
  for (const LayerRow& r : run.layers) {
    if (!r.macs || !r.cycles) continue;
    double bytes = r.memory_cycles ? double(r.memory_cycles) * bpc : 0;
    if (bytes <= 0) continue;
    double xi = std::clamp(double(r.macs) / bytes, xmin, xmax), yi = std::clamp(double(r.macs) / double(r.cycles), ymin, ymax);
    o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.8\"><title>{}: {:.1f} MACs/cycle, "
                     "{:.1f} MACs/byte</title></circle>\n",
                     X(xi), Y(yi), r.bound_by == "compute" ? kColors[0] : r.bound_by == "memory" ? kColors[2] : kColors[4],
                     esc(r.layer), double(r.macs) / double(r.cycles), double(r.macs) / bytes);
  }
  return o + "</svg>\n";
}

}  // namespace

std::string html_report(const ModelRun& run, const std::string& title) {
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += fmt::format("<title>vtpu: {}</title>\n", esc(title));
  o += "<style>body{font-family:sans-serif;margin:24px;color:#222}table{border-collapse:collapse;font-size:12px}"
       "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td:first-child,th:first-child{text-align:left}"
       "h2{margin-top:28px}pre{background:#f5f5f5;padding:8px}</style>\n</head>\n<body>\n";
  o += fmt::format("<h1>{}</h1>\n<p>config <b>{}</b></p>\n<pre>{}</pre>\n", esc(title), esc(run.config.name), esc(totals_text(run)));
  o += "<h2>Cycles per layer, by stall reason</h2>\n" + cycles_chart(run);
  o += "<h2>Energy by unit</h2>\n" + energy_chart(run);
  o += "<h2>Roofline</h2>\n<p>Each dot is a layer (blue: compute-bound, red: memory-bound, green: vector-bound, as the "
       "simulation saw it); the line is the config's roof.</p>\n" + roofline_chart(run);
  o += "<h2>Layers</h2>\n<table>\n<tr><th>layer</th><th>cycles</th><th>roofline</th><th>MXU %</th><th>top stall</th>"
       "<th>stall cycles</th><th>energy uJ</th><th>bound</th></tr>\n";
  for (const LayerRow& r : run.layers)
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td></tr>\n",
                     esc(r.layer), r.cycles, r.bound_cycles, 100 * r.mxu_utilization, esc(r.top_stall), r.stall_cycles, r.energy_uj,
                     r.bound_by);
  o += "</table>\n</body>\n</html>\n";
  return o;
}

}  // namespace vtpu::runtime
