#pragma once
// Environment switches the cross-check tests share: VTPU_COSIM_FULL=1 runs ten times more
// cases; other VTPU_COSIM_* variables pick one case to reproduce.
#include <cstdlib>
#include <string>

namespace vtpu::rtl {

// A set, non-empty environment variable, or nullptr.
inline const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

inline bool full_run() {
  const char* v = env("VTPU_COSIM_FULL");
  return v && std::string(v) != "0";
}

}  // namespace vtpu::rtl
