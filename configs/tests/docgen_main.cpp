// Rewrites the generated key reference in docs/config.md from the schema:
//   vtpu_config_docgen docs/config.md
// Test-only helper; DocsTest.GeneratedReferenceIsCurrent fails until it has been run.
#include <fstream>
#include <iostream>
#include <sstream>

#include "docs_markers.h"
#include "vtpu/config/schema.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: vtpu_config_docgen docs/config.md\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  const size_t begin = text.find(vtpu::config::testing::kBeginMarker);
  const size_t end = text.find(vtpu::config::testing::kEndMarker);
  if (!in || begin == std::string::npos || end == std::string::npos || end < begin) {
    std::cerr << argv[1] << ": cannot read it or find the generated-section markers\n";
    return 1;
  }
  const size_t from = begin + vtpu::config::testing::kBeginMarker.size();
  std::string generated = "\n";
  generated += vtpu::config::schema_reference_markdown();
  generated += "\n";
  text.replace(from, end - from, generated);
  std::ofstream(argv[1], std::ios::binary) << text;
  return 0;
}
