// The per-layer table (text, columns sized to their content) and its CSV form (RFC 4180,
// written through Debian's libcsv). docs/runtime.md, "The per-layer table", names the columns.
#include <csv.h>
#include <fmt/format.h>

#include <algorithm>

#include "vtpu/runtime/runtime.h"

#include "text_table.h"

namespace vtpu::runtime {
namespace {

using detail::TextTable;

// A name as one printable line: control characters (a newline in an ONNX node name) are
// shown escaped, so every row of the table stays one row.
std::string printable(const std::string& s) {
  std::string o;
  for (unsigned char c : s) {
    if (c == '\n') o += "\\n";
    else if (c == '\r') o += "\\r";
    else if (c == '\t') o += "\\t";
    else if (c < 0x20 || c == 0x7f) o += fmt::format("\\x{:02x}", c);
    else o += char(c);
  }
  return o;
}

// One CSV field: as is when it needs no quoting, else quoted by libcsv (quotes doubled).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string o(csv_write(nullptr, 0, s.data(), s.size()), '\0');
  csv_write(o.data(), o.size(), s.data(), s.size());
  return o;
}

std::string csv_row(const std::vector<std::string>& fields) {
  std::string o;
  for (size_t i = 0; i < fields.size(); ++i) o += (i ? "," : "") + csv_field(fields[i]);
  return o + "\r\n";
}

}  // namespace

std::string layer_table(const ModelRun& run) {
  TextTable t;
  t.header = {"layer", "op", "output shape", "cycles", "roofline", "ratio", "MXU%", "top stall (cycles)", "energy uJ", "bound"};
  t.right = {false, false, false, true, true, true, true, false, true, false};
  for (const LayerRow& r : run.layers)
    t.rows.push_back({printable(r.layer), r.op.empty() ? "-" : r.op, r.shape.empty() ? "-" : r.shape,
                      std::to_string(r.cycles), r.bound_cycles ? std::to_string(r.bound_cycles) : "-",
                      r.bound_cycles ? fmt::format("{:.2f}", double(r.cycles) / double(r.bound_cycles)) : "-",
                      fmt::format("{:.1f}%", 100 * r.mxu_utilization),
                      r.top_stall.empty() ? "-" : fmt::format("{} {}", r.top_stall, r.top_stall_cycles),
                      fmt::format("{:.3f}", r.energy_uj), r.bound_by});
  return t.render();
}

std::string layers_csv(const ModelRun& run) {
  std::string o = csv_row({"layer", "first_cycle", "last_cycle", "cycles", "roofline_cycles", "compute_cycles", "memory_cycles",
                           "macs", "mxu_utilization", "top_stall", "top_stall_cycles", "stall_cycles", "energy_uj", "bound_by",
                           "op", "output_shape"});
  for (const LayerRow& r : run.layers)
    o += csv_row({r.layer, std::to_string(r.first_cycle), std::to_string(r.last_cycle), std::to_string(r.cycles),
                  std::to_string(r.bound_cycles), std::to_string(r.compute_cycles), std::to_string(r.memory_cycles),
                  std::to_string(r.macs), fmt::format("{:.6f}", r.mxu_utilization), r.top_stall,
                  std::to_string(r.top_stall_cycles), std::to_string(r.stall_cycles), fmt::format("{:.6f}", r.energy_uj),
                  r.bound_by, r.op, r.shape});
  return o;
}

}  // namespace vtpu::runtime
