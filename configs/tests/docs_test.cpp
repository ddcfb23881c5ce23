// docs/config.md documents every key the loader accepts (from schema_keys(), the same
// list the loader validates against) and every preset.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "docs_markers.h"
#include "test_util.h"
#include "vtpu/config/config.h"
#include "vtpu/config/schema.h"

namespace vtpu::config {
namespace {

std::string docs() { return testing::read_text(testing::source_dir() / "docs" / "config.md"); }

TEST(Docs, MentionEveryKeyAndAllowedName) {
  const std::string text = docs();
  ASSERT_FALSE(text.empty()) << "docs/config.md is missing";
  std::string missing;
  for (const KeyInfo& k : schema_keys()) {
    if (text.find(fmt::format("`{}`", k.path)) == std::string::npos) {
      missing.append(" ").append(k.path);
    }
    for (std::string_view name : k.allowed) {
      if (text.find(name) == std::string::npos) missing.append(" ").append(name);
    }
  }
  EXPECT_EQ(missing, "") << "docs/config.md does not mention these keys or values";
}

TEST(Docs, GeneratedReferenceIsCurrent) {
  const std::string text = docs();
  const size_t begin = text.find(testing::kBeginMarker);
  const size_t end = text.find(testing::kEndMarker);
  ASSERT_NE(begin, std::string::npos);
  ASSERT_NE(end, std::string::npos);
  const size_t from = begin + testing::kBeginMarker.size();
  EXPECT_EQ(text.substr(from, end - from), fmt::format("\n{}\n", schema_reference_markdown()))
      << "the schema changed: run build/tests/vtpu_config_docgen docs/config.md";
}

TEST(Docs, DescribeEveryPreset) {
  const std::string text = docs();
  for (const std::string& name : preset_names()) {
    EXPECT_NE(text.find(fmt::format("`{}`", name)), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace vtpu::config
