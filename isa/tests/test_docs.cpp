// The committed docs/isa.md and rtl/generated/vtpu_isa_pkg.sv must be what the table generates.
// Regenerate with: build/bin/vtpu-isa-gen --doc docs/isa.md --sv rtl/generated/vtpu_isa_pkg.sv
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "vtpu/isa/docs.h"
#include "vtpu/isa/isa.h"

namespace vtpu::isa {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::filesystem::path kRoot = VTPU_SOURCE_DIR;

TEST(Docs, IsaMarkdownIsUpToDate) {
  std::string doc = slurp(kRoot / "docs/isa.md");
  ASSERT_FALSE(doc.empty());
  EXPECT_EQ(splice_generated(doc, generate_markdown_reference()), doc)
      << "docs/isa.md is stale; run vtpu-isa-gen --doc docs/isa.md";
}

TEST(Docs, SvPackageIsUpToDate) {
  EXPECT_EQ(slurp(kRoot / "rtl/generated/vtpu_isa_pkg.sv"), generate_sv_package())
      << "rtl/generated/vtpu_isa_pkg.sv is stale; run vtpu-isa-gen --sv";
}

TEST(Docs, EveryMnemonicIsDocumented) {
  std::string doc = slurp(kRoot / "docs/isa.md");
  for (const OpDef& op : table().ops)
    EXPECT_NE(doc.find("`" + std::string(op.mnemonic) + "`"), std::string::npos) << op.mnemonic;
}

}  // namespace
}  // namespace vtpu::isa
