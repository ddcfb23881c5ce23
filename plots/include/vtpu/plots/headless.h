#pragma once
// Opening a page the way a person would, in Debian's headless Chromium, for tests and
// scripts that must know the charts of a page (vtpu/plots/page.h) really drew.
#include <filesystem>
#include <string>

namespace vtpu::plots {

struct Rendered {
  bool ran = false;          // chromium started and exited normally
  std::string dom;           // the document after scripts ran (--dump-dom)
  int charts_rendered = -1;  // <body data-charts-rendered>, -1 when absent
  std::string charts_error;  // <body data-charts-error>, "" when absent
  std::string log;           // chromium's stderr, for failure messages
};

// Loads `html` in /usr/bin/chromium (headless, no sandbox, GPU, network services or first-run
// work; a fresh profile) and lets its scripts run for up to `budget_ms` of virtual time.
// With `screenshot` set, also writes a PNG of the page `width` x `height` pixels there.
Rendered render_headless(const std::filesystem::path& html, const std::filesystem::path& screenshot = {},
                         int width = 1100, int height = 2400, int budget_ms = 20000);

// Whether /usr/bin/chromium exists (scripts/install-deps.sh installs it).
bool have_chromium();

}  // namespace vtpu::plots
