#pragma once
// Self-contained HTML pages of Vega-Lite charts (docs/plots.md). A chart is a Vega-Lite spec
// built with nlohmann-json; the page carries Vega, Vega-Lite and vega-embed inline (embedded
// into this library when it is built, from the npm packages scripts/install-deps.sh
// installs), so it opens offline and fetches nothing. Charts are drawn as SVG, with the
// tooltips, legends and axes the specs ask for.
//
//   plots::Page page{"mlp0 on tpu-v1"};
//   page.sections.push_back({"Energy per inference by unit", "", spec, ""});
//   std::string html = plots::html_page(page);
//
// When the page has drawn every chart it sets data-charts-rendered="N" on <body> (N charts);
// on a failure it sets data-charts-error to the message and shows it on the page. Tests and
// scripts use these to know a page really rendered.
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace vtpu::plots {

// One part of a page, shown in order: a heading, a paragraph, a chart, then raw HTML. Any
// of them may be empty (a null or empty chart draws nothing).
struct Section {
  std::string heading;   // plain text, shown as <h2>
  std::string text;      // plain text, shown as a paragraph
  nlohmann::json chart;  // a Vega-Lite spec ($schema is filled in when absent)
  std::string html;      // HTML inserted as is (tables); the caller escapes its text
};

struct Page {
  std::string title;
  std::vector<Section> sections;
};

// The page as one HTML document. Throws vtpu::UserError when this build has no Vega
// JavaScript (scripts/install-deps.sh was not run before building).
std::string html_page(const Page& page);

// Whether this build embedded Vega, Vega-Lite and vega-embed.
bool have_vega();

// Text made safe for HTML element content and attribute values.
std::string html_escape(std::string_view text);

// A Vega-Lite "scale" object {"domain": names, "range": colours} giving the i-th name the
// i-th colour of a fixed palette (Tableau 10, then 10 more). Pass the same full list to
// every chart of a page and each name has one colour on the whole page. Up to 20 names.
nlohmann::json colour_scale(const std::vector<std::string>& names);

}  // namespace vtpu::plots
