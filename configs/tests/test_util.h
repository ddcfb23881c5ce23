#pragma once
// Shared helpers for the config tests.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "vtpu/config/config.h"

namespace vtpu::config::testing {

inline std::filesystem::path source_dir() { return VTPU_SOURCE_DIR; }

inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The smallest valid config: only the required keys.
inline constexpr const char* kMinimalYaml = R"(name: minimal
clock_mhz: 1000
core:
  mxu:
    rows: 32
    cols: 16
    dtypes: [int8, bf16]
  unified_buffer:
    bytes: 256KiB
  accumulators:
    rows: 512
memory:
  kind: hbm2
  bytes: 1GiB
  channels: 4
  bandwidth_gbytes_per_s: 100
)";

// Loads `yaml` and returns the error it raises; fails the test if it loads.
inline ConfigError load_error(const std::string& yaml, const std::string& source = "t.yaml") {
  try {
    load_string(yaml, source);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "expected a ConfigError for:\n" << yaml;
  return ConfigError(ConfigError::Details{});
}

}  // namespace vtpu::config::testing
