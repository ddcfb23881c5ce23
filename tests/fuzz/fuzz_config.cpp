// Any YAML text either loads as a config or gives a ConfigError (a UserError); a loaded
// config prints and reloads to the same fingerprint.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vtpu/config/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vtpu::config;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    Config c = load_string(text, "fuzz.yaml");
    Config again = load_string(to_yaml(c), "again.yaml");
    if (fingerprint(again) != fingerprint(c)) __builtin_trap();
  } catch (const vtpu::UserError&) {
  }
  return 0;
}
