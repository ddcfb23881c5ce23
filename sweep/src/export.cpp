#include "vtpu/sweep/export.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace vtpu::sweep {
namespace {

// RFC 4180: quote fields holding a comma, quote or line break; double the quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string number(double v) { return fmt::format("{:.9g}", v); }

}  // namespace

std::string export_csv(const std::vector<PointResult>& rows, const std::vector<std::string>& metrics) {
  std::vector<std::string> axes;  // params keys in order of first appearance
  for (const PointResult& r : rows) {
    if (r.params.empty()) continue;
    nlohmann::ordered_json p = nlohmann::ordered_json::parse(r.params);
    for (const auto& [k, v] : p.items())
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
  }
  std::vector<std::string> ms = metrics.empty() ? metric_names() : metrics;
  std::vector<std::string> head{"grid_index", "model", "dtype", "batch"};
  head.insert(head.end(), axes.begin(), axes.end());
  head.push_back("status");
  head.insert(head.end(), ms.begin(), ms.end());
  for (const char* c : {"dnf_buffer", "dnf_needed", "dnf_available", "dnf_short", "feasible", "violations", "layer_bounds",
                        "message", "round", "config_fingerprint", "key", "compile_cpu_s", "simulate_cpu_s", "program_cached",
                        "tool"})
    head.push_back(c);
  std::string out;
  for (size_t i = 0; i < head.size(); ++i) out += (i ? "," : "") + csv_field(head[i]);
  out += "\n";
  for (const PointResult& r : rows) {
    std::vector<std::string> f{std::to_string(r.index), r.model, r.dtype, std::to_string(r.batch)};
    nlohmann::ordered_json p = r.params.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(r.params);
    for (const std::string& a : axes) f.push_back(p.contains(a) ? p[a].get<std::string>() : "");
    f.push_back(r.status);
    bool ok = r.status == "ok";
    for (const std::string& m : ms) {
      const MetricInfo* info = find_metric(m);
      bool always = m == "area_mm2" || m == "onchip_bytes";  // known without running
      f.push_back(ok || (always && !r.config_fingerprint.empty()) ? number(info->get(r)) : "");
    }
    std::string bounds;
    for (const LayerBound& l : r.layers) bounds += fmt::format("{}{}:{}:{}", bounds.empty() ? "" : ";", l.layer, l.bound_by, l.cycles);
    bool dnf = r.status == "does_not_fit";
    for (const std::string& s :
         {r.dnf_buffer, dnf ? std::to_string(r.dnf_needed) : "", dnf ? std::to_string(r.dnf_available) : "",
          dnf ? std::to_string(r.dnf_short) : "", std::string(r.feasible ? "1" : "0"), r.violations, bounds, r.message,
          std::to_string(r.round), r.config_fingerprint, r.key, number(r.compile_cpu_s), number(r.simulate_cpu_s),
          std::string(r.program_cached ? "1" : "0"), r.tool})
      f.push_back(s);
    for (size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + csv_field(f[i]);
    out += "\n";
  }
  return out;
}

std::string export_jsonl(const std::vector<PointResult>& rows) {
  std::string out;
  for (const PointResult& r : rows) out += to_json(r) + "\n";
  return out;
}

}  // namespace vtpu::sweep
