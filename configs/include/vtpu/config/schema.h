#pragma once
// The config schema as data: every key the loader accepts, with its type, unit, default,
// range and meaning. The loader validates against this list, to_yaml walks it and the
// reference in docs/config.md is generated from it, so the schema is written once.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vtpu::config {

enum class KeyType : uint8_t {
  kString,
  kInt,        // unsigned integer
  kNumber,     // real number, no unit suffix
  kBool,       // true or false
  kBytes,      // integer or size with binary unit: 24MiB, 4 KiB, 512B
  kBandwidth,  // GB/s as a number, or with unit: 1.2TB/s, 34 GB/s, 512MiB/s
  kTime,       // ns as a number, or with unit: 15ns, 1.5us, 800ps
  kFrequency,  // MHz as a number, or with unit: 700MHz, 1.05GHz
  kPower,      // W as a number, or with unit: 28W, 350mW
  kEnergy,     // pJ as a number, or with unit: 0.3pJ, 1.3nJ, 30fJ
  kEnum,       // one of `allowed`
  kEnumList,   // list of distinct members of `allowed`
  kIntList,    // list of integers, each in [min, max]
  kSramTable,  // list of {bytes: SIZE, pj: ENERGY} maps; `allowed` names the item keys
};

std::string_view type_name(KeyType type);

struct KeyInfo {
  std::string_view path;  // dotted, e.g. "core.mxu.rows"
  KeyType type;
  std::string_view unit;  // unit of the stored value ("" if none)
  bool required;
  std::string_view default_text;  // as written in YAML, or how it is derived
  double min;                     // numeric range (per element for lists); inclusive
  double max;
  std::vector<std::string_view> allowed;  // enum names or table item keys
  uint32_t min_items;                     // list length limits (lists only)
  uint32_t max_items;
  std::string_view doc;  // one-line meaning
};

// Parses a quantity in the unit grammar of docs/config.md ("24MiB", "1.2TB/s", "15ns") as
// `type` into the type's base unit; returns what is wrong, or "" on success.
std::string parse_quantity(std::string_view text, KeyType type, double& out);

// Every accepted key in canonical (to_yaml) order.
const std::vector<KeyInfo>& schema_keys();

// The generated part of docs/config.md: one table per section plus the tables of
// node- and memory-kind-dependent defaults.
std::string schema_reference_markdown();

}  // namespace vtpu::config
