#pragma once
// The unit grammar of config values (docs/config.md, "Values and units"):
//   QUANTITY := NUMBER [whitespace] [UNIT]      e.g. 24MiB, 4 KiB, 1.2TB/s, 15ns
// A bare number is in the key's own unit (bytes, GB/s, ns, MHz, W, pJ).
#include <cstdint>
#include <string>
#include <string_view>

#include "vtpu/config/schema.h"

namespace vtpu::config::detail {

// Parses `text` as a quantity of `type` (kBytes, kBandwidth, kTime, kFrequency, kPower,
// kEnergy or kNumber) into the key's base unit. On failure returns what is wrong
// ("unknown unit 'MiBs' for a size") and leaves `out` alone; returns "" on success.
std::string parse_quantity(std::string_view text, KeyType type, double& out);

// Parses a plain (optionally signed) decimal integer; returns "" or what is wrong.
std::string parse_integer(std::string_view text, int64_t& out);

// The units accepted for `type`, for hints ("B, KiB, MiB, GiB, TiB").
std::string_view unit_list(KeyType type);

// Canonical spellings used by to_yaml: shortest round-trip decimal for numbers, the
// largest binary unit that divides a size exactly ("24MiB", "1000B" -> "1000").
std::string format_number(double value);
std::string format_bytes(uint64_t bytes);

}  // namespace vtpu::config::detail
