// Headless Chromium runs for page checks (vtpu/plots/headless.h).
#include "vtpu/plots/headless.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <regex>

namespace vtpu::plots {
namespace {

constexpr const char* kChromium = "/usr/bin/chromium";

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

// Runs chromium with `args` on `html` (stdout to `out`), in a fresh profile.
bool run_chromium(const std::string& args, const std::filesystem::path& html, const std::filesystem::path& out,
                  const std::filesystem::path& log, const std::filesystem::path& profile) {
  std::string cmd = fmt::format(
      "timeout 120 {} --headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update "
      "--disable-sync --no-first-run --user-data-dir='{}' {} 'file://{}' >'{}' 2>'{}'",
      kChromium, profile.string(), args, std::filesystem::absolute(html).string(), out.string(), log.string());
  int status = std::system(cmd.c_str());
  return status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

bool have_chromium() { return ::access(kChromium, X_OK) == 0; }

Rendered render_headless(const std::filesystem::path& html, const std::filesystem::path& screenshot, int width, int height,
                         int budget_ms) {
  namespace fs = std::filesystem;
  Rendered r;
  fs::path dir = fs::temp_directory_path() / fmt::format("vtpu_headless_{}_{}", ::getpid(), html.filename().string());
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string budget = fmt::format("--virtual-time-budget={}", budget_ms);
  r.ran = run_chromium(budget + " --dump-dom", html, dir / "dom.html", dir / "log.txt", dir / "profile");
  r.dom = slurp(dir / "dom.html");
  r.log = slurp(dir / "log.txt");
  std::smatch m;
  // Only the <body> tag's own attributes count, not text elsewhere on the page.
  size_t at = r.dom.find("<body", r.dom.rfind("</head>"));  // the element, not text in the scripts
  if (at != std::string::npos) {
    std::string body = r.dom.substr(at, r.dom.find('>', at) - at);
    if (std::regex_search(body, m, std::regex("data-charts-rendered=\"(\\d+)\""))) r.charts_rendered = std::stoi(m[1]);
    if (std::regex_search(body, m, std::regex("data-charts-error=\"([^\"]*)\""))) r.charts_error = m[1];
  }
  if (!screenshot.empty()) {
    fs::remove(screenshot);
    r.ran &= run_chromium(fmt::format("{} --hide-scrollbars --window-size={},{} --screenshot='{}'", budget, width, height,
                                      fs::absolute(screenshot).string()),
                          html, dir / "shot.txt", dir / "shot_log.txt", dir / "profile2");
  }
  fs::remove_all(dir);
  return r;
}

}  // namespace vtpu::plots
