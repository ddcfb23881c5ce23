// Program container: serialization round-trips, and damaged files give clear errors, never a crash.
#include <gtest/gtest.h>

#include <random>

#include "vtpu/isa/assembler.h"
#include "vtpu/isa/program.h"

namespace vtpu::isa {
namespace {

Program sample() {
  return assemble(R"(
    .config tiny-4x4
    .fingerprint 0x0123456789abcdef
    .desc d bytes=16 src_off=8 dst_off=4 dtype=bf16 dim=[2, 32, 16] dim=[3, 128, 64]
    .vparam q mult=[7, 9] shift=[10, 11] in_zp=1 out_zp=2 double_round=1 min=-1.5 max=2 scale=[0.5] bias=[0.25] window=[0, 4, 8]
    .tensor x role=input dtype=int8 shape=[4, 4] addr=0x100 scale=0.5 zp=3
    .data addr=0x800 hex="deadbeef"
    .tag conv
    start: dma.load desc=d src=r1 dst=r2 flag=f1 || wait f1
    halt
  )", "sample.s");
}

TEST(Program, SerializeRoundTrip) {
  Program p = sample();
  auto bytes = serialize(p);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 4), "VTPU");
  Program back = deserialize(bytes, "mem");
  EXPECT_EQ(back, p);
  EXPECT_EQ(back.config_fingerprint, 0x0123456789abcdefull);
  EXPECT_EQ(back.descriptors[0].dims.size(), 2u);
  EXPECT_EQ(back.params[0].window, (std::vector<int32_t>{0, 4, 8}));
  EXPECT_EQ(back.constants[0].data, (std::vector<uint8_t>{0xde, 0xad, 0xbe, 0xef}));
}

// A fingerprint is a 64-bit hash: one with the top bit set reads back whole (the listing of
// `vtpu disasm` prints it so).
TEST(Program, FingerprintWithTheTopBitSet) {
  Program p = assemble(".fingerprint 0xe47eb5fcde08e969\n  halt\n", "fp.s");
  EXPECT_EQ(p.config_fingerprint, 0xe47eb5fcde08e969ull);
  EXPECT_THROW(assemble(".fingerprint 1.5\n  halt\n", "fp.s"), AsmError);
}

TEST(Program, BadMagicAndVersion) {
  auto bytes = serialize(sample());
  auto bad = bytes;
  bad[0] = 'X';
  try {
    deserialize(bad, "f.vtpu");
    FAIL();
  } catch (const ProgramFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("f.vtpu"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("bad magic"), std::string::npos);
  }
  bad = bytes;
  bad[4] = 99;
  try {
    deserialize(bad, "f.vtpu");
    FAIL();
  } catch (const ProgramFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("format version 99"), std::string::npos);
  }
}

TEST(Program, EveryTruncationIsAnErrorNotACrash) {
  auto bytes = serialize(sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(n));
    EXPECT_THROW(deserialize(cut, "cut"), ProgramFormatError) << "length " << n;
  }
}

TEST(Program, RandomCorruptionNeverCrashes) {
  auto bytes = serialize(sample());
  std::mt19937 rng(1);
  int rejected = 0;
  for (int i = 0; i < 5000; ++i) {
    auto b = bytes;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] ^= uint8_t(1u << (rng() % 8));
    try {
      Program p = deserialize(b, "fuzz");
      decode_program(p);
    } catch (const UserError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

TEST(Program, DecodeChecksTableIndices) {
  Program p = sample();
  p.descriptors.clear();
  try {
    decode_program(p);
    FAIL();
  } catch (const DecodeError& e) {
    EXPECT_NE(std::string(e.what()).find("bundle 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("desc"), std::string::npos) << e.what();
  }
}

TEST(Program, FileIo) {
  auto path = std::filesystem::temp_directory_path() / "vtpu_program_test.vtpu";
  write_program(sample(), path);
  EXPECT_EQ(read_program(path), sample());
  std::filesystem::remove(path);
  EXPECT_THROW(read_program(path), UserError);
}

}  // namespace
}  // namespace vtpu::isa
