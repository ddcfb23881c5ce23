// Pages of Vega-Lite charts: self-contained, safe against hostile text, and really drawn by
// a browser (Debian's headless Chromium), which also reports a spec Vega-Lite rejects.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "vtpu/plots/headless.h"
#include "vtpu/plots/page.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace vtpu::plots;

json bar_chart(const std::string& hostile) {
  return {{"data", {{"values", {{{"unit", "mxu"}, {"uj", 3.5}}, {{"unit", hostile}, {"uj", 1.25}}}}}},
          {"mark", {{"type", "bar"}, {"tooltip", true}}},
          {"encoding",
           {{"y", {{"field", "unit"}, {"type", "nominal"}, {"title", "unit"}}},
            {"x", {{"field", "uj"}, {"type", "quantitative"}, {"title", "energy per inference (uJ)"}}},
            {"color", {{"field", "unit"}, {"type", "nominal"}, {"scale", colour_scale({"mxu", hostile})}}}}}};
}

fs::path write(const std::string& name, const std::string& html) {
  fs::path p = fs::temp_directory_path() / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << html;
  return p;
}

TEST(Plots, PageIsSelfContainedAndEscapesText) {
  const std::string hostile = "</script><b>x</b> & \"y\"";
  Page page{"title " + hostile, {{"heading " + hostile, "text " + hostile, bar_chart(hostile), "<table></table>"}}};
  std::string html = html_page(page);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("vegaEmbed"), std::string::npos);  // the library is inline
  // Nothing loaded from anywhere: outside the inline scripts' code, no element that fetches.
  std::string markup;
  for (size_t at = 0; at < html.size();) {
    size_t open = html.find("<script", at);
    markup += html.substr(at, open == std::string::npos ? std::string::npos : open - at);
    if (open == std::string::npos) break;
    std::string tag = html.substr(open, html.find('>', open) - open + 1);
    EXPECT_TRUE(tag == "<script>" || tag == "<script type=\"application/json\" id=\"vtpu-chart-specs\">") << tag;
    at = html.find("</script>", open) + 9;
  }
  for (const char* load : {"<link", "<img", "<iframe", "@import", "src=", "href="})
    EXPECT_EQ(markup.find(load), std::string::npos) << load;
  EXPECT_EQ(html.find("<b>x</b>"), std::string::npos);    // text escaped everywhere, data included
  EXPECT_NE(html.find("<h2>heading &lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("<table></table>"), std::string::npos);  // raw HTML kept as given
  size_t scripts = 0;
  for (size_t at = html.find("</script>"); at != std::string::npos; at = html.find("</script>", at + 1)) ++scripts;
  EXPECT_EQ(scripts, 5u);  // vega, vega-lite, vega-embed, the specs, the renderer: no early end
}

TEST(Plots, ColourScaleGivesEachNameItsOwnColour) {
  json s = colour_scale({"a", "b", "c"});
  EXPECT_EQ(s["domain"], json({"a", "b", "c"}));
  ASSERT_EQ(s["range"].size(), 3u);
  EXPECT_NE(s["range"][0], s["range"][1]);
  EXPECT_NE(s["range"][1], s["range"][2]);
}

TEST(Plots, ChartsRenderInHeadlessChromium) {
  if (!have_chromium()) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
  const std::string hostile = "</script><b>x</b>";
  Page page{"two charts", {{"energy", "", bar_chart(hostile), ""}, {"again", "", bar_chart("vector"), ""}}};
  fs::path html = write("plots_ok.html", html_page(page)), png = html;
  png.replace_extension(".png");
  Rendered r = render_headless(html, png, 900, 900);
  ASSERT_TRUE(r.ran) << r.log;
  EXPECT_EQ(r.charts_rendered, 2) << r.charts_error << "\n" << r.log;
  // Both charts are SVG with bars, axis titles and the hostile name as a label.
  size_t svgs = 0;
  for (size_t at = r.dom.find("<svg"); at != std::string::npos; at = r.dom.find("<svg", at + 1)) ++svgs;
  EXPECT_GE(svgs, 2u);
  EXPECT_NE(r.dom.find("mark-rect"), std::string::npos);
  EXPECT_NE(r.dom.find("energy per inference (uJ)"), std::string::npos);
  EXPECT_NE(r.dom.find("&lt;/script&gt;&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_TRUE(fs::exists(png) && fs::file_size(png) > 10000) << png;
  fs::remove(html);
  fs::remove(png);
}

TEST(Plots, ABrokenSpecIsReportedNotSilentlyBlank) {
  if (!have_chromium()) GTEST_SKIP() << "chromium not installed (scripts/install-deps.sh installs it)";
  json broken = {{"data", {{"values", json::array()}}}, {"mark", "no-such-mark"}};
  fs::path html = write("plots_broken.html", html_page({"broken", {{"", "", broken, ""}}}));
  Rendered r = render_headless(html);
  ASSERT_TRUE(r.ran) << r.log;
  EXPECT_EQ(r.charts_rendered, -1);
  EXPECT_FALSE(r.charts_error.empty());
  EXPECT_NE(r.dom.find("The charts could not be drawn: "), std::string::npos);  // said on the page too
  fs::remove(html);
}

}  // namespace
