#pragma once
// Presets compiled into the library; the definition is generated at build time from
// configs/presets/*.yaml by cmake/embed_presets.cmake.
#include <cstddef>
#include <string_view>

namespace vtpu::config::detail {

struct EmbeddedPreset {
  std::string_view name;  // file name without .yaml
  std::string_view yaml;
};

extern const EmbeddedPreset kEmbeddedPresets[];  // sorted by name
extern const std::size_t kEmbeddedPresetCount;

}  // namespace vtpu::config::detail
