// Canonical YAML, fingerprint, and the small derived quantities consumers share.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "schema_internal.h"
#include "units.h"

namespace vtpu::config {
namespace {

// YAML double-quoted scalar; escapes keep it one line and byte-exact on reload.
std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += fmt::format("\\x{:02x}", u);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

template <typename T, typename F>
std::string flow_list(const std::vector<T>& items, F&& format_item) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + format_item(items[i]);
  return s + "]";
}

// The value of one key as YAML text; tables are multi-line at `indent`.
std::string value_text(const detail::Field& f, Config& c, const std::string& indent) {
  const detail::Slot slot = f.slot(c);
  switch (f.info.type) {
    case KeyType::kString: return quote(*std::get<std::string*>(slot));
    case KeyType::kInt: return std::to_string(*std::get<uint32_t*>(slot));
    case KeyType::kBool: return *std::get<bool*>(slot) ? "true" : "false";
    case KeyType::kBytes: return detail::format_bytes(*std::get<uint64_t*>(slot));
    case KeyType::kEnum:
      if (auto* kind = std::get_if<MemoryKind*>(&slot)) return std::string(to_string(**kind));
      return std::string(to_string(*std::get<PagePolicy*>(slot)));
    case KeyType::kEnumList:
      return flow_list(*std::get<std::vector<DType>*>(slot),
                       [](DType d) { return std::string(to_string(d)); });
    case KeyType::kIntList:
      return flow_list(*std::get<std::vector<uint32_t>*>(slot),
                       [](uint32_t v) { return std::to_string(v); });
    case KeyType::kSramTable: {
      std::string s;
      for (const SramPoint& p : *std::get<std::vector<SramPoint>*>(slot)) {
        s += fmt::format("\n{}- {{bytes: {}, pj: {}}}", indent, detail::format_bytes(p.bytes),
                         detail::format_number(p.pj));
      }
      return s;
    }
    default: return detail::format_number(*std::get<double*>(slot));
  }
}

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t dot; (dot = path.find('.', start)) != std::string_view::npos; start = dot + 1) {
    parts.push_back(path.substr(start, dot - start));
  }
  parts.push_back(path.substr(start));
  return parts;
}

}  // namespace

std::string to_yaml(const Config& config) {
  Config c = config;  // slots hand out mutable pointers; read them from a copy
  std::string out;
  std::vector<std::string_view> open;  // currently open sections
  for (const detail::Field& f : detail::fields()) {
    std::vector<std::string_view> parts = split_path(f.info.path);
    const std::string_view leaf = parts.back();
    parts.pop_back();
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) {
      ++common;
    }
    open.resize(common);
    for (size_t i = common; i < parts.size(); ++i) {
      if (i == 0 && !out.empty()) out += "\n";  // blank line between top-level sections
      out += fmt::format("{:{}}{}:\n", "", 2 * i, parts[i]);
      open.push_back(parts[i]);
    }
    const std::string indent(2 * parts.size(), ' ');
    const std::string value = value_text(f, c, indent + "  ");
    out += fmt::format("{}{}:{}{}\n", indent, leaf, value.front() == '\n' ? "" : " ", value);
  }
  return out;
}

std::optional<double> numeric_value(const Config& config, std::string_view key) {
  Config c = config;
  for (const detail::Field& f : detail::fields()) {
    if (f.info.path != key) continue;
    const detail::Slot slot = f.slot(c);
    if (auto* p = std::get_if<uint32_t*>(&slot)) return double(**p);
    if (auto* p = std::get_if<uint64_t*>(&slot)) return double(**p);
    if (auto* p = std::get_if<double*>(&slot)) return **p;
    return std::nullopt;
  }
  return std::nullopt;
}

uint64_t fingerprint(const Config& config) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char ch : to_yaml(config)) {
    h ^= ch;
    h *= 1099511628211ull;  // FNV-1a 64 prime
  }
  return h;
}

std::string_view to_string(DType d) { return detail::kDTypeNames[static_cast<size_t>(d)]; }
std::string_view to_string(MemoryKind k) {
  return detail::kMemoryKindNames[static_cast<size_t>(k)];
}
std::string_view to_string(PagePolicy p) {
  return detail::kPagePolicyNames[static_cast<size_t>(p)];
}

uint32_t dtype_bytes(DType d) { return d == DType::kInt8 ? 1 : 2; }

bool supports(const Config& config, DType dtype) {
  const auto& d = config.core.mxu.dtypes;
  return std::find(d.begin(), d.end(), dtype) != d.end();
}

void require_dtype(const Config& config, DType dtype) {
  if (supports(config, dtype)) return;
  std::string have;
  for (DType d : config.core.mxu.dtypes)
    have += (have.empty() ? "" : ", ") + std::string(to_string(d));
  ConfigError::Details e;
  e.key = "core.mxu.dtypes";
  e.value = std::string(to_string(dtype));
  e.allowed = have;
  e.message = fmt::format("config '{}' does not support {} (its MXU supports: {})", config.name,
                          to_string(dtype), have);
  e.hint = fmt::format("run with one of: {}, or use a config whose core.mxu.dtypes lists {}", have,
                       to_string(dtype));
  throw ConfigError(std::move(e));
}

uint64_t weight_tile_bytes(const Config& config, DType dtype) {
  return uint64_t{config.core.mxu.rows} * config.core.mxu.cols * dtype_bytes(dtype);
}

uint64_t accumulator_bytes(const Config& config) {
  return uint64_t{config.core.accumulators.rows} * config.core.mxu.cols * 4;
}

double peak_ops_per_s_per_chip(const Config& config) {
  const auto& m = config.core.mxu;
  return 2.0 * m.count * m.rows * m.cols * config.system.cores_per_chip * config.clock_mhz * 1e6;
}

double mac_pj(const EnergyTable& energy, DType dtype) {
  return dtype == DType::kInt8 ? energy.mac_pj.int8 : energy.mac_pj.bf16;
}

double sram_pj_per_64b(const EnergyTable& energy, uint64_t macro_bytes) {
  const auto& t = energy.sram_pj_per_64b;
  if (t.empty() || macro_bytes == 0) {
    throw vtpu::InternalError("sram_pj_per_64b: empty table or zero-byte macro");
  }
  if (t.size() == 1) return t[0].pj;
  // Segment containing macro_bytes; the end segments also serve for extrapolation.
  size_t i = 0;
  while (i + 2 < t.size() && macro_bytes > t[i + 1].bytes) ++i;
  const double x0 = std::log(static_cast<double>(t[i].bytes));
  const double x1 = std::log(static_cast<double>(t[i + 1].bytes));
  const double y0 = std::log(t[i].pj);
  const double y1 = std::log(t[i + 1].pj);
  const double x = std::log(static_cast<double>(macro_bytes));
  return std::exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0));
}

uint64_t parse_size(std::string_view text, std::string_view what) {
  double v = 0;
  std::string err = detail::parse_quantity(text, KeyType::kBytes, v);
  if (err.empty() && (v < 0 || v != std::floor(v))) err = "not a whole number of bytes";
  if (!err.empty())
    throw UserError(fmt::format("{} '{}': {}; write a size such as 64MiB, 512KiB or 4096 ({})", what, text, err,
                                detail::unit_list(KeyType::kBytes)));
  return uint64_t(v);
}

std::string format_size(uint64_t bytes) { return detail::format_bytes(bytes); }

}  // namespace vtpu::config
