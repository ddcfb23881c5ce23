// Every file in configs/tests/bad/ is a malformed config. Its header states the
// intended error and what the loader must report:
//   # expect-key: core.mxu.rows        (empty when the error has no key)
//   # expect-line: 12
//   # expect-phrase: value 0 out of range [1, 4096]
// Adding a file adds a test.
#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"
#include "vtpu/config/config.h"

namespace vtpu::config {
namespace {

namespace fs = std::filesystem;

struct Expectation {
  std::string key;
  int line = -1;
  std::string phrase;
};

std::string header_value(const std::string& text, const std::string& tag, bool* found) {
  const std::string marker = "# " + tag + ":";
  const size_t at = text.find(marker);
  *found = at != std::string::npos;
  if (!*found) return "";
  size_t start = at + marker.size();
  const size_t end = text.find('\n', start);
  std::string value = text.substr(start, end - start);
  value.erase(0, value.find_first_not_of(' '));
  value.erase(value.find_last_not_of(" \r") + 1);
  return value;
}

std::vector<std::string> bad_files() {
  std::vector<std::string> names;
  for (const auto& entry :
       fs::directory_iterator(testing::source_dir() / "configs" / "tests" / "bad")) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class BadConfig : public ::testing::TestWithParam<std::string> {};

TEST_P(BadConfig, ReportsTheIntendedError) {
  const fs::path path = testing::source_dir() / "configs" / "tests" / "bad" / GetParam();
  const std::string text = testing::read_text(path);
  bool has_key = false, has_line = false, has_phrase = false;
  Expectation want;
  want.key = header_value(text, "expect-key", &has_key);
  const std::string line_text = header_value(text, "expect-line", &has_line);
  want.line = has_line ? std::stoi(line_text) : -1;
  want.phrase = header_value(text, "expect-phrase", &has_phrase);
  ASSERT_TRUE(has_key && has_line && has_phrase)
      << GetParam() << " needs '# expect-key:', '# expect-line:' and '# expect-phrase:' lines";
  ASSERT_TRUE(text.find("# Intended error:") != std::string::npos)
      << GetParam() << " must state its intended error";

  try {
    load_file(path);
    FAIL() << GetParam() << " loaded without error";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.file(), path.string());
    EXPECT_EQ(e.key(), want.key) << what;
    EXPECT_EQ(e.line(), want.line) << what;
    EXPECT_NE(what.find(want.phrase), std::string::npos) << what;
    EXPECT_EQ(what.rfind(path.string() + ":" + std::to_string(want.line) + ":", 0), 0u) << what;
    EXPECT_NE(what.find("\n  hint: "), std::string::npos) << "no hint in: " << what;
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param.substr(0, info.param.rfind('.'));
  std::replace_if(
      name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); },
      '_');
  return name;
}

INSTANTIATE_TEST_SUITE_P(Files, BadConfig, ::testing::ValuesIn(bad_files()), test_name);

TEST(BadConfigs, ThereAreAtLeastTwenty) { EXPECT_GE(bad_files().size(), 20u); }

}  // namespace
}  // namespace vtpu::config
