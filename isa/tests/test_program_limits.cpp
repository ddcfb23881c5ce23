// Hostile containers (issue 19): every address and size is bounded (program.h,
// kMaxAddressBytes), so nothing downstream wraps around 2^64; names that listings refer to
// are unique; and what `vtpu disasm` writes assembles back to the same program.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "vtpu/isa/assembler.h"
#include "vtpu/isa/program.h"

namespace vtpu::isa {
namespace {

Program base() {
  return assemble(R"(
    .tensor x role=input dtype=int8 shape=[4, 4] addr=0x100
    .tensor y role=output dtype=int32 shape=[4] addr=0x200
    .desc d bytes=16 dim=[2, 32, 16]
    halt
  )", "base.s");
}

// serialize then read back: the reader's verdict on a container built by hand.
std::string read_back(const Program& p) {
  try {
    deserialize(serialize(p), "hostile.vtpu");
    return "ok";
  } catch (const ProgramFormatError& e) {
    return e.what();
  }
}

void expect_refused(const Program& p, std::initializer_list<const char*> parts) {
  std::string got = read_back(p);
  EXPECT_NE(got, "ok");
  for (const char* s : parts) EXPECT_NE(got.find(s), std::string::npos) << "missing '" << s << "' in: " << got;
}

TEST(ProgramLimits, ShortDescriptorNamesReadBack) {
  // The reader once required 30 bytes per descriptor; one without dims and a 1- to 3-letter
  // name takes 27 to 29.
  for (const char* name : {"", "x", "ab", "r1c"}) {
    Program p = base();
    p.descriptors = {DmaDescriptor{name, 0, 0, 8, {}, Dtype::Int8}};
    EXPECT_EQ(deserialize(serialize(p), "mem"), p) << "name '" << name << "'";
  }
}

TEST(ProgramLimits, RegisterLikeNamesSurviveDisassembly) {
  Program p = assemble(R"(
    .desc "r1" bytes=8
    .desc "f2" bytes=4
    .vparam "r3" mult=[1] shift=[2]
    .vparam "inf" mult=[1] shift=[2]
    .tensor a role=input dtype=int8 shape=[8] addr=0
      dma.load desc="r1" src=r0 dst=r0 flag=f1
      dma.load desc="f2" src=r0 dst=r0 flag=f1
      wait f1, 2
      halt
  )", "names.s");
  EXPECT_EQ(assemble(disassemble(p), "back.s"), p);
}

TEST(ProgramLimits, TagWithoutBundlesAssemblesBackToTheSameTable) {
  // `.tag requant` straight before `.tag conv` puts "requant" in the tag table though no
  // bundle carries it (the compiler's tag for a layer that made no code); the disassembly
  // once showed tags only where bundles start, so it assembled back to another table.
  // "late" is named before "conv" but first used after it; "tail" follows the last bundle.
  Program p = assemble(R"(
      .tag load
      nop
      .tag requant
      .tag late
      .tag conv
      nop
      .tag late
      nop
      halt
      .tag tail
  )", "tags.s");
  EXPECT_EQ(p.tags, (std::vector<std::string>{"", "load", "requant", "late", "conv", "tail"}));
  EXPECT_EQ(assemble(disassemble(p), "back.s"), p) << disassemble(p);
}

TEST(ProgramLimits, SymbolsThatCannotBeLabelsBecomeComments) {
  Program p = base();
  p.symbols = {{"r5", 0}, {"two words", 0}, {"ok", 0}, {"ok", 1}};
  std::string text = disassemble(p);
  EXPECT_NE(text.find("# symbol \"r5\" at bundle 0 cannot be a label"), std::string::npos) << text;
  Program back = assemble(text, "back.s");
  EXPECT_EQ(back.code, p.code);
  EXPECT_EQ(back.symbols, (std::vector<Symbol>{{"ok", 0}}));
}

TEST(ProgramLimits, TensorReachingPast2To48IsRefused) {
  for (uint64_t addr : {~uint64_t(0) - 7, uint64_t(1) << 63, kMaxAddressBytes - 8}) {
    Program p = base();
    p.tensors[0].hbm_addr = addr;  // 16 bytes from here wrap around 2^64 or pass 2^48
    expect_refused(p, {"tensor 'x'", "past 2^48"});
  }
}

TEST(ProgramLimits, ShapeWhoseSizeOverflowsIsRefused) {
  Program p = base();
  p.tensors[1].shape = {int64_t(1) << 33, int64_t(1) << 33};  // 2^66 elements: the product wraps to 0
  expect_refused(p, {"tensor 'y'", "past 2^48"});
  p.tensors[1].shape = {4, -1};
  expect_refused(p, {"tensor 'y'", "negative dimension"});
}

TEST(ProgramLimits, DuplicatedNamesAreRefused) {
  Program p = base();
  p.tensors[1].name = "x";
  expect_refused(p, {"tensor 'x' appears twice"});
  Program q = base();
  q.descriptors.push_back(q.descriptors[0]);
  expect_refused(q, {"two DMA descriptors are named 'd'"});
}

TEST(ProgramLimits, ConstantReachingPast2To48IsRefused) {
  Program p = base();
  p.constants = {ConstSegment{~uint64_t(0), {1, 2}}};
  expect_refused(p, {"constant segment 0", "past 2^48"});
}

TEST(ProgramLimits, DescriptorSizesAreBounded) {
  Program p = base();
  p.descriptors[0].src_offset = ~uint64_t(0);
  expect_refused(p, {"descriptor 'd'", "offset"});
  p = base();
  p.descriptors[0].dims = {{0xffffffffu, int64_t(1) << 40, 0}};  // 2^72 bytes of span
  expect_refused(p, {"descriptor 'd'", "stride"});
  p = base();
  p.descriptors[0].bytes = 0xffffffffu;
  p.descriptors[0].dims = {{0xffffffffu, 0, 0}, {0xffffffffu, 0, 0}};  // 2^96 bytes
  expect_refused(p, {"descriptor 'd'", "more than 2^48 bytes"});
  p.descriptors[0].dims = {{0, 0, 0}};
  expect_refused(p, {"descriptor 'd'", "count 0"});
  // 2^32 - 1 rows of 4 bytes is a legal descriptor (16 GiB).
  p.descriptors[0].bytes = 4;
  p.descriptors[0].dims = {{0xffffffffu, 4, 4}};
  EXPECT_EQ(read_back(p), "ok");
}

// The descriptor and vector parameter tables hold as many entries as their 14-bit fields
// name (they were 4,096 with 12-bit fields): the last entry is reachable from a bundle and
// survives encoding and the container; one more is refused where it is declared; the ICI
// slot's 12-bit descriptor field names only the first 4,096.
TEST(ProgramLimits, TablesHoldAsManyEntriesAsTheirFieldsName) {
  ASSERT_EQ(kMaxDescriptors, 16384u);
  ASSERT_EQ(kMaxVectorParams, 16384u);
  auto tables = [](unsigned descs, unsigned params) {
    std::string s = ".tensor x role=input dtype=fp32 shape=[1, 4] addr=0x0\n";
    for (unsigned i = 0; i < descs; ++i) s += fmt::format(".desc d{} bytes={}\n", i, 4 + 4 * (i % 4));
    for (unsigned i = 0; i < params; ++i) s += fmt::format(".vparam p{} scale=[{}]\n", i, i);
    return s;
  };
  std::string src = tables(kMaxDescriptors, kMaxVectorParams) +
                    "  dma.load desc=d16383 src=r0 dst=r0 flag=f1\n  wait f1\n"
                    "  vec.affine dst=ub[r0+0] a=ub[r0+0] rows=1 dt=fp32 param=p16383 flag=f2\n  wait f2\n  halt\n";
  Program p = assemble(src, "full_tables.s");
  ASSERT_EQ(p.descriptors.size(), size_t(kMaxDescriptors));
  ASSERT_EQ(p.params.size(), size_t(kMaxVectorParams));
  Program back = deserialize(serialize(p), "full_tables.vtpu");
  std::vector<Bundle> code = decode_program(back);
  EXPECT_EQ(field(code.at(0).at(SlotId::Dma), SlotId::Dma, "desc"), 16383);
  EXPECT_EQ(field(code.at(2).at(SlotId::Vector), SlotId::Vector, "param"), 16383);
  EXPECT_EQ(back.params.at(16383).scale, std::vector<float>{16383.0f});
  EXPECT_EQ(back.descriptors.at(16383).bytes, 16u);
  auto refused = [](const std::string& text) -> std::string {
    try {
      assemble(text, "over.s");
      return "assembled";
    } catch (const AsmError& e) {
      return e.what();
    }
  };
  EXPECT_NE(refused(tables(kMaxDescriptors + 1, 0) + "  halt\n").find("more than 16384 descriptors"), std::string::npos);
  EXPECT_NE(refused(tables(1, kMaxVectorParams + 1) + "  halt\n").find("more than 16384 vector params"), std::string::npos);
  std::string ici = tables(4097, 0) + "  ici.send desc=d4096 src=r0 dst=r0 chip=r0 flag=f1\n  halt\n";
  EXPECT_NE(refused(ici).find("field 'desc' = 4096 out of range [0, 4095]"), std::string::npos) << refused(ici);
  EXPECT_EQ(refused(tables(4096, 0) + "  ici.send desc=d4095 src=r0 dst=r0 chip=r0 flag=f1\n  halt\n"), "assembled");
}

}  // namespace
}  // namespace vtpu::isa
