// HTML pages of Vega-Lite charts with the plotting library inline (vtpu/plots/page.h).
#include "vtpu/plots/page.h"

#include <fmt/format.h>

#include "vtpu/support/error.h"

namespace vtpu::plots {
namespace detail {
#if VTPU_PLOTS_HAVE_VEGA
extern const std::string_view kVegaJs, kVegaLiteJs, kVegaEmbedJs;
#endif
}  // namespace detail

namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
                                    "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                    "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// JSON placed inside <script type="application/json">: "</" written "<\/" (the same JSON
// string) so that no name in the data can end the element.
std::string script_safe_json(const nlohmann::json& j) {
  std::string s = j.dump(), o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    o += s[i];
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') o += '\\';
  }
  return o;
}

// Draws every chart, then marks <body> with the count (or the error) for whoever checks the page.
constexpr const char* kRenderScript = R"js(
(function () {
  const specs = JSON.parse(document.getElementById('vtpu-chart-specs').textContent);
  const opts = {renderer: 'svg', actions: {export: true, source: false, compiled: false, editor: false}};
  Promise.all(specs.map((spec, i) => vegaEmbed('#vtpu-chart-' + i, spec, opts)))
    .then(function (views) { document.body.dataset.chartsRendered = String(views.length); })
    .catch(function (e) {
      document.body.dataset.chartsError = String(e);
      const p = document.createElement('p');
      p.className = 'vtpu-error';
      p.textContent = 'The charts could not be drawn: ' + e;
      document.body.insertBefore(p, document.body.firstChild);
    });
})();
)js";

}  // namespace

bool have_vega() { return VTPU_PLOTS_HAVE_VEGA != 0; }

std::string html_escape(std::string_view text) {
  std::string o;
  o.reserve(text.size());
  for (char c : text) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else if (c == '\'') o += "&#39;";
    else o += c;
  }
  return o;
}

nlohmann::json colour_scale(const std::vector<std::string>& names) {
  constexpr size_t n = sizeof(kPalette) / sizeof(kPalette[0]);
  if (names.size() > n) throw InternalError(fmt::format("colour_scale: {} names, the palette has {}", names.size(), n));
  nlohmann::json range = nlohmann::json::array();
  for (size_t i = 0; i < names.size(); ++i) range.push_back(kPalette[i]);
  return {{"domain", names}, {"range", range}};
}

std::string html_page(const Page& page) {
  if (!have_vega())
    throw UserError("this vtpu was built without Vega-Lite's JavaScript, which HTML reports embed: run "
                    "scripts/install-deps.sh (it installs the npm packages vega, vega-lite and vega-embed), then "
                    "reconfigure and rebuild (cmake --preset release && cmake --build build)");
  std::string o = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  o += fmt::format("<title>{}</title>\n", html_escape(page.title));
  o += "<style>body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}"
       "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}"
       "td:first-child,th:first-child{text-align:left}h2{margin-top:28px}pre{background:#f5f5f5;padding:8px}"
       ".vtpu-error{color:#b00;font-weight:bold}</style>\n";
#if VTPU_PLOTS_HAVE_VEGA
  for (std::string_view js : {detail::kVegaJs, detail::kVegaLiteJs, detail::kVegaEmbedJs})
    o += "<script>" + std::string(js) + "</script>\n";
#endif
  o += "</head>\n<body>\n";
  o += fmt::format("<h1>{}</h1>\n", html_escape(page.title));
  nlohmann::json specs = nlohmann::json::array();
  for (const Section& s : page.sections) {
    if (!s.heading.empty()) o += fmt::format("<h2>{}</h2>\n", html_escape(s.heading));
    if (!s.text.empty()) o += fmt::format("<p>{}</p>\n", html_escape(s.text));
    if (!s.chart.is_null() && !s.chart.empty()) {
      nlohmann::json spec = s.chart;
      if (!spec.contains("$schema")) spec["$schema"] = "https://vega.github.io/schema/vega-lite/v6.json";
      o += fmt::format("<div id=\"vtpu-chart-{}\" class=\"vtpu-chart\"></div>\n", specs.size());
      specs.push_back(std::move(spec));
    }
    o += s.html;
  }
  o += "<script type=\"application/json\" id=\"vtpu-chart-specs\">" + script_safe_json(specs) + "</script>\n";
  o += std::string("<script>") + kRenderScript + "</script>\n</body>\n</html>\n";
  return o;
}

}  // namespace vtpu::plots
