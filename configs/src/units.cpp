#include "units.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>

namespace vtpu::config::detail {
namespace {

struct Unit {
  std::string_view name;
  double scale;  // multiplier to the key's base unit
};

// Sizes take binary units only: "MB" is 10^6 to some readers and 2^20 to others.
constexpr std::array kByteUnits{Unit{"B", 1.0}, Unit{"KiB", 1024.0}, Unit{"MiB", 1048576.0},
                                Unit{"GiB", 1073741824.0}, Unit{"TiB", 1099511627776.0}};
constexpr std::array kAmbiguousByteUnits{std::string_view{"kB"}, std::string_view{"KB"},
                                         std::string_view{"MB"}, std::string_view{"GB"},
                                         std::string_view{"TB"}};
// Bandwidths are published in decimal GB/s; binary spellings are accepted too.
constexpr std::array kBandwidthUnits{Unit{"B/s", 1e-9},
                                     Unit{"kB/s", 1e-6},
                                     Unit{"MB/s", 1e-3},
                                     Unit{"GB/s", 1.0},
                                     Unit{"TB/s", 1e3},
                                     Unit{"KiB/s", 1024e-9},
                                     Unit{"MiB/s", 1048576e-9},
                                     Unit{"GiB/s", 1073741824e-9},
                                     Unit{"TiB/s", 1099511627776e-9}};
constexpr std::array kTimeUnits{Unit{"ps", 1e-3}, Unit{"ns", 1.0}, Unit{"us", 1e3},
                                Unit{"ms", 1e6}};
constexpr std::array kFrequencyUnits{Unit{"kHz", 1e-3}, Unit{"MHz", 1.0}, Unit{"GHz", 1e3}};
constexpr std::array kPowerUnits{Unit{"uW", 1e-6}, Unit{"mW", 1e-3}, Unit{"W", 1.0}};
constexpr std::array kEnergyUnits{Unit{"fJ", 1e-3}, Unit{"pJ", 1.0}, Unit{"nJ", 1e3}};

template <size_t N>
const Unit* find_unit(const std::array<Unit, N>& units, std::string_view name) {
  for (const Unit& u : units) {
    if (u.name == name) return &u;
  }
  return nullptr;
}

const Unit* lookup(KeyType type, std::string_view name) {
  switch (type) {
    case KeyType::kBytes: return find_unit(kByteUnits, name);
    case KeyType::kBandwidth: return find_unit(kBandwidthUnits, name);
    case KeyType::kTime: return find_unit(kTimeUnits, name);
    case KeyType::kFrequency: return find_unit(kFrequencyUnits, name);
    case KeyType::kPower: return find_unit(kPowerUnits, name);
    case KeyType::kEnergy: return find_unit(kEnergyUnits, name);
    default: return nullptr;
  }
}

std::string_view quantity_noun(KeyType type) {
  switch (type) {
    case KeyType::kBytes: return "a size";
    case KeyType::kBandwidth: return "a bandwidth";
    case KeyType::kTime: return "a duration";
    case KeyType::kFrequency: return "a frequency";
    case KeyType::kPower: return "a power";
    case KeyType::kEnergy: return "an energy";
    default: return "a number";
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::string_view unit_list(KeyType type) {
  switch (type) {
    case KeyType::kBytes: return "B, KiB, MiB, GiB, TiB";
    case KeyType::kBandwidth: return "B/s, kB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s";
    case KeyType::kTime: return "ps, ns, us, ms";
    case KeyType::kFrequency: return "kHz, MHz, GHz";
    case KeyType::kPower: return "uW, mW, W";
    case KeyType::kEnergy: return "fJ, pJ, nJ";
    default: return "";
  }
}

std::string parse_quantity(std::string_view text, KeyType type, double& out) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  double number = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), number);
  if (ec != std::errc() || end == s.data() || !std::isfinite(number)) {
    return fmt::format("expected {}, got '{}'", quantity_noun(type), text);
  }
  std::string_view unit = trim(s.substr(static_cast<size_t>(end - s.data())));
  double scale = 1.0;
  if (!unit.empty()) {
    if (type == KeyType::kNumber) {
      return fmt::format("expected a plain number without a unit, got '{}'", text);
    }
    if (type == KeyType::kBytes) {
      for (std::string_view amb : kAmbiguousByteUnits) {
        if (unit == amb) {
          return fmt::format("ambiguous size unit '{}'; sizes use binary units ({})", unit,
                             unit_list(type));
        }
      }
    }
    const Unit* u = lookup(type, unit);
    if (u == nullptr) {
      return fmt::format("unknown unit '{}' for {}; use one of {}", unit, quantity_noun(type),
                         unit_list(type));
    }
    scale = u->scale;
  }
  double value = number * scale;
  if (type == KeyType::kBytes) {
    if (value < 0) return fmt::format("negative size '{}'", text);
    if (value != std::floor(value)) {
      return fmt::format("'{}' is not a whole number of bytes", text);
    }
    if (value > 9.0e18) return fmt::format("size '{}' is too large", text);
  }
  out = value;
  return "";
}

std::string parse_integer(std::string_view text, int64_t& out) {
  std::string_view s = trim(text);
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) return fmt::format("integer '{}' is too large", text);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    return fmt::format("expected an integer, got '{}'", text);
  }
  out = v;
  return "";
}

std::string format_number(double value) {
  if (value == 0) return "0";  // no "-0"
  return fmt::format("{}", value);
}

std::string format_bytes(uint64_t bytes) {
  if (bytes == 0) return "0";
  for (size_t i = kByteUnits.size() - 1; i > 0; --i) {
    const auto scale = static_cast<uint64_t>(kByteUnits[i].scale);
    if (bytes % scale == 0) return fmt::format("{}{}", bytes / scale, kByteUnits[i].name);
  }
  return fmt::format("{}", bytes);
}

}  // namespace vtpu::config::detail
