// The metric table: one row per figure a point records, with its unit and direction.
#include "vtpu/sweep/results.h"

#include <nlohmann/json.hpp>

namespace vtpu::sweep {

const std::vector<MetricInfo>& metric_table() {
  using R = const PointResult&;
  static const std::vector<MetricInfo> table = {
      {"cycles", "cycles", "total cycles of one batch", false, [](R r) { return double(r.cycles); }},
      {"latency_s", "s", "cycles / clock", false, [](R r) { return r.latency_s; }},
      {"throughput", "inferences/s", "batch / latency", true, [](R r) { return r.throughput; }},
      {"tops", "TOPS", "achieved: 2 x MACs / latency", true, [](R r) { return r.tops; }},
      {"peak_tops", "TOPS", "2 x MXUs x rows x cols x clock", true, [](R r) { return r.peak_tops; }},
      {"mxu_utilization", "", "MACs / (cycles x MXUs x rows x cols)", true, [](R r) { return r.mxu_utilization; }},
      {"energy_per_inference_j", "J", "energy of the batch / batch", false, [](R r) { return r.energy_per_inference_j; }},
      {"average_power_w", "W", "energy / latency", false, [](R r) { return r.average_power_w; }},
      {"area_mm2", "mm2", "area estimate (docs/sweeps.md)", false, [](R r) { return r.area_mm2; }},
      {"onchip_bytes", "bytes", "unified buffer + accumulators + weight FIFOs, all cores", false,
       [](R r) { return double(r.onchip_bytes); }},
      {"throughput_per_mm2", "inferences/s/mm2", "throughput / area", true,
       [](R r) { return r.area_mm2 > 0 ? r.throughput / r.area_mm2 : 0.0; }},
      {"tops_per_w", "TOPS/W", "achieved TOPS / average power", true,
       [](R r) { return r.average_power_w > 0 ? r.tops / r.average_power_w : 0.0; }},
      {"macs", "", "useful multiply-accumulates of the batch", true, [](R r) { return double(r.macs); }},
      {"hbm_bytes", "bytes", "off-chip bytes read and written", false, [](R r) { return double(r.hbm_bytes); }},
      {"bound_compute", "", "share of the layers' cycles in layers bound by the MXUs", false,
       [](R r) { return r.bound_compute; }},
      {"bound_memory", "", "share in layers bound by DMA (memory)", false, [](R r) { return r.bound_memory; }},
      {"bound_vector", "", "share in layers bound by the vector unit", false, [](R r) { return r.bound_vector; }},
  };
  return table;
}

const MetricInfo* find_metric(std::string_view name) {
  for (const MetricInfo& m : metric_table())
    if (m.name == name) return &m;
  return nullptr;
}

std::vector<std::string> metric_names() {
  std::vector<std::string> n;
  for (const MetricInfo& m : metric_table()) n.emplace_back(m.name);
  return n;
}

const std::vector<ResultField>& result_fields() {
  using P = PointResult;
  static const std::vector<ResultField> f = {
      {"key", &P::key}, {"grid_index", &P::index}, {"round", &P::round}, {"model", &P::model}, {"dtype", &P::dtype},
      {"batch", &P::batch}, {"params", &P::params}, {"config_fingerprint", &P::config_fingerprint},
      {"status", &P::status}, {"message", &P::message}, {"cycles", &P::cycles}, {"clock_mhz", &P::clock_mhz},
      {"hbm_gbytes_per_s", &P::hbm_gbytes_per_s},
      {"latency_s", &P::latency_s}, {"throughput", &P::throughput}, {"tops", &P::tops}, {"peak_tops", &P::peak_tops},
      {"mxu_utilization", &P::mxu_utilization}, {"energy_per_inference_j", &P::energy_per_inference_j},
      {"average_power_w", &P::average_power_w}, {"area_mm2", &P::area_mm2}, {"onchip_bytes", &P::onchip_bytes},
      {"macs", &P::macs}, {"hbm_bytes", &P::hbm_bytes}, {"bound_compute", &P::bound_compute},
      {"bound_memory", &P::bound_memory}, {"bound_vector", &P::bound_vector}, {"layers", &P::layers},
      {"dnf_buffer", &P::dnf_buffer}, {"dnf_needed", &P::dnf_needed}, {"dnf_available", &P::dnf_available},
      {"dnf_short", &P::dnf_short}, {"feasible", &P::feasible}, {"violations", &P::violations},
      {"compile_cpu_s", &P::compile_cpu_s}, {"simulate_cpu_s", &P::simulate_cpu_s},
      {"program_cached", &P::program_cached}, {"tool", &P::tool},
  };
  return f;
}

std::string to_json(const PointResult& r) {
  nlohmann::ordered_json j;
  for (const ResultField& f : result_fields()) {
    std::visit(
        [&](auto ptr) {
          using T = std::decay_t<decltype(r.*ptr)>;
          if constexpr (std::is_same_v<T, std::vector<LayerBound>>) {
            j[std::string(f.name)] = nlohmann::ordered_json::parse(layers_json(r.*ptr));
          } else if (f.name == "params") {  // axes in the sweep file's order
            j["params"] = r.params.empty() ? nlohmann::ordered_json::object() : nlohmann::ordered_json::parse(r.params);
          } else {
            j[std::string(f.name)] = r.*ptr;
          }
        },
        f.ptr);
  }
  return j.dump();
}

PointResult result_from_json(const std::string& json) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(json);
  PointResult r;
  for (const ResultField& f : result_fields()) {
    auto it = j.find(std::string(f.name));
    if (it == j.end()) continue;
    std::visit(
        [&](auto ptr) {
          using T = std::decay_t<decltype(r.*ptr)>;
          if constexpr (std::is_same_v<T, std::vector<LayerBound>>) {
            r.*ptr = layers_from_json(it->dump());
          } else if constexpr (std::is_same_v<T, std::string>) {
            r.*ptr = it->is_string() ? it->template get<std::string>() : it->dump();
          } else {
            r.*ptr = it->template get<T>();
          }
        },
        f.ptr);
  }
  return r;
}

std::string layers_json(const std::vector<LayerBound>& layers) {
  nlohmann::json j = nlohmann::json::array();
  for (const LayerBound& l : layers) j.push_back({l.layer, l.cycles, l.bound_by});
  return j.dump();
}

std::vector<LayerBound> layers_from_json(const std::string& json) {
  std::vector<LayerBound> out;
  if (json.empty()) return out;
  for (const auto& e : nlohmann::json::parse(json)) out.push_back({e[0].get<std::string>(), e[1].get<uint64_t>(), e[2].get<std::string>()});
  return out;
}

}  // namespace vtpu::sweep
