// Renders the schema as the Markdown reference embedded in docs/config.md, and the
// range text shared by error messages and docs.
#include <fmt/format.h>

#include "schema_internal.h"
#include "units.h"

namespace vtpu::config {
namespace detail {

namespace {

std::string bound(const KeyInfo& k, double v) {
  if (k.type == KeyType::kBytes) return format_bytes(static_cast<uint64_t>(v));
  return format_number(v);
}

std::string join(const std::vector<std::string_view>& items, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) s += sep;
    s += items[i];
  }
  return s;
}

}  // namespace

std::string range_text(const KeyInfo& k) {
  switch (k.type) {
    case KeyType::kString:
      return fmt::format("{} to {} characters", bound(k, k.min), bound(k, k.max));
    case KeyType::kBool: return "true or false";
    case KeyType::kEnum: return "one of: " + join(k.allowed, ", ");
    case KeyType::kEnumList:
      return fmt::format("{} to {} distinct items of: {}", k.min_items, k.max_items,
                         join(k.allowed, ", "));
    case KeyType::kIntList:
      return fmt::format("{} to {} items, each in [{}, {}]", k.min_items, k.max_items,
                         bound(k, k.min), bound(k, k.max));
    case KeyType::kSramTable:
      return fmt::format("{} to {} items {{bytes: SIZE > 0, pj: [{}, {}]}}, bytes ascending",
                         k.min_items, k.max_items, format_number(k.min), format_number(k.max));
    default: return fmt::format("[{}, {}]", bound(k, k.min), bound(k, k.max));
  }
}

}  // namespace detail

namespace {

// "core.mxu.rows" -> "core.mxu"; "memory.kind" -> "memory"; "name" -> "".
std::string group_of(std::string_view path) {
  const size_t first = path.find('.');
  if (first == std::string_view::npos) return "";
  if (path.substr(0, first) == "core") {
    const size_t second = path.find('.', first + 1);
    if (second != std::string_view::npos) return std::string(path.substr(0, second));
  }
  return std::string(path.substr(0, first));
}

std::string default_cell(const KeyInfo& k) {
  if (k.required) return "**required**";
  if (!k.default_text.empty() && (k.default_text.front() == '=' || k.default_text == "by kind" ||
                                  k.default_text == "by node")) {
    return std::string(k.default_text);
  }
  return fmt::format("`{}`", k.default_text);
}

std::string sram_cell(const std::vector<SramPoint>& table) {
  std::string s;
  for (const SramPoint& p : table) {
    if (!s.empty()) s += ", ";
    s += fmt::format("{}: {}", detail::format_bytes(p.bytes), detail::format_number(p.pj));
  }
  return s;
}

}  // namespace

std::string schema_reference_markdown() {
  std::string out;
  std::string group = "-";
  for (const KeyInfo& k : schema_keys()) {
    const std::string g = group_of(k.path);
    if (g != group) {
      group = g;
      out += fmt::format("\n#### {}\n\n", g.empty() ? "Top level" : "`" + g + "`");
      out += "| Key | Type | Unit | Default | Allowed | Meaning |\n";
      out += "|---|---|---|---|---|---|\n";
    }
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", k.path, type_name(k.type), k.unit,
                       default_cell(k), detail::range_text(k), k.doc);
  }

  // Defaults that depend on energy.node_nm, evaluated with the same code the loader runs.
  constexpr double kNodes[] = {45, 28, 16, 7};
  out += "\n#### Energy defaults by `energy.node_nm` (\"by node\")\n\n";
  out += "| Key | 45 nm | 28 nm | 16 nm | 7 nm |\n|---|---|---|---|---|\n";
  for (const detail::Field& f : detail::fields()) {
    if (f.derive == nullptr || f.info.default_text != "by node") continue;
    std::string row = fmt::format("| `{}` |", f.info.path);
    for (double node : kNodes) {
      Config c;
      c.energy.node_nm = node;
      f.derive(c);
      const detail::Slot slot = f.slot(c);
      if (const auto* d = std::get_if<double*>(&slot)) {
        row += fmt::format(" {} |", detail::format_number(**d));
      } else if (const auto* t = std::get_if<std::vector<SramPoint>*>(&slot)) {
        row += fmt::format(" {} |", sram_cell(**t));
      }
    }
    out += row + "\n";
  }

  out += "\n#### Memory defaults by `memory.kind` (\"by kind\")\n\n";
  out +=
      "| kind | burst_bytes | banks_per_channel | row_bytes | t_rcd_ns | t_rp_ns | t_cl_ns | "
      "dram_pj_per_bit |\n|---|---|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < std::size(detail::kMemoryKindNames); ++i) {
    const auto& d = detail::memory_kind_defaults(static_cast<MemoryKind>(i));
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} | {} |\n", detail::kMemoryKindNames[i],
                       detail::format_bytes(d.burst_bytes), d.banks_per_channel,
                       detail::format_bytes(d.row_bytes), detail::format_number(d.t_rcd_ns),
                       detail::format_number(d.t_rp_ns), detail::format_number(d.t_cl_ns),
                       detail::format_number(d.dram_pj_per_bit));
  }
  return out;
}

}  // namespace vtpu::config
