// Program container: serialization round-trips, and damaged files give clear errors, never a crash.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <fstream>
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
// An output's model type (TensorInfo::model_type) reads back from the container and from
// the listing; the section that holds it names tensors by index, each once, with a known type.
TEST(Program, ModelTypesRoundTripAndAreChecked) {
  Program p = assemble(R"(
    .tensor x role=input dtype=bf16 shape=[4] addr=0x100
    .tensor i role=output dtype=int32 shape=[4] addr=0x200 model_type=int64
    .tensor b role=output dtype=int32 shape=[4] addr=0x300 model_type=bool
    halt
  )", "types.s");
  ASSERT_EQ(p.tensors.size(), 3u);
  EXPECT_EQ(p.tensors[0].model_type, "");
  EXPECT_EQ(p.tensors[1].model_type, "int64");
  EXPECT_EQ(p.tensors[2].model_type, "bool");
  auto bytes = serialize(p);
  EXPECT_EQ(deserialize(bytes, "mem"), p);
  EXPECT_EQ(assemble(disassemble(p), "listing.s").tensors, p.tensors);
  // Without model types a program has no such section: its bytes are as before the section existed.
  Program plain = p;
  for (auto& t : plain.tensors) t.model_type.clear();
  EXPECT_EQ(serialize(plain).size() + 4 + 8 + 4 + 2 * (4 + 4) + 5 + 4, bytes.size());
  auto with = [&](size_t at, const std::string& text) {
    auto b = bytes;
    std::copy(text.begin(), text.end(), b.begin() + std::ptrdiff_t(at));
    try {
      deserialize(b, "mem");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  std::string text(bytes.begin(), bytes.end());
  size_t bool_at = text.rfind("bool"), int_at = text.rfind("int64");
  ASSERT_NE(bool_at, std::string::npos);
  ASSERT_NE(int_at, std::string::npos);
  EXPECT_NE(with(int_at, "int65").find("unknown model type 'int65'"), std::string::npos);
  // The index before a type's length: tensor 7 of 3, then tensor 1 twice.
  EXPECT_NE(with(bool_at - 8, std::string("\x07\0\0\0", 4)).find("names tensor 7 of 3"), std::string::npos);
  EXPECT_NE(with(bool_at - 8, std::string("\x01\0\0\0", 4)).find("names tensor 'i' twice"), std::string::npos);
  EXPECT_THROW(assemble(".tensor y role=output dtype=int32 shape=[1] addr=0 model_type=float32\n  halt\n", "t.s"), AsmError);
}

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

// Read without its constant bytes (for timing-only runs): everything else equal, each segment's
// size kept; such a program cannot be written back; a damaged file gives the error a full
// read gives, for every truncation and for bit flips in the framing.
TEST(Program, ReadWithoutConstantBytes) {
  Program p = assemble(R"(
    .tensor x role=input dtype=int8 shape=[4, 4] addr=0x100
    .data addr=0x800 hex="deadbeef"
    .data addr=0x900 hex="01"
    .data addr=0xa00 hex="0102030405060708090a"
    halt
  )", "three.s");
  auto path = std::filesystem::temp_directory_path() / fmt::format("vtpu_program_elided_{}.vtpu", ::getpid());
  write_program(p, path);
  Program q = read_program(path, {.constant_bytes = false});
  ASSERT_EQ(q.constants.size(), 3u);
  std::vector<uint64_t> sizes = {4, 1, 10};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(q.constants[i].data.empty());
    EXPECT_EQ(q.constants[i].bytes(), sizes[i]);
    EXPECT_EQ(q.constants[i].bytes(), p.constants[i].bytes());
    EXPECT_EQ(q.constants[i].hbm_addr, p.constants[i].hbm_addr);
  }
  Program without = p;
  without.constants.clear();
  q.constants.clear();
  EXPECT_EQ(q, without);
  EXPECT_THROW(serialize(read_program(path, {.constant_bytes = false})), InternalError);

  auto bytes = serialize(p);
  auto outcome = [&](const std::vector<uint8_t>& b, bool constant_bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()), long(b.size()));
    try {
      Program r = read_program(path, {.constant_bytes = constant_bytes});
      std::string s = fmt::format("ok {} bundles, {} tensors:", r.code.size(), r.tensors.size());
      for (const ConstSegment& c : r.constants) s += fmt::format(" {} bytes at 0x{:x}", c.bytes(), c.hbm_addr);
      return s;
    } catch (const ProgramFormatError& e) {
      return std::string(e.what());
    }
  };
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(n));
    EXPECT_EQ(outcome(cut, false), outcome(cut, true)) << "length " << n;
  }
  std::mt19937 rng(2);
  for (int i = 0; i < 2000; ++i) {
    auto b = bytes;
    b[rng() % b.size()] ^= uint8_t(1u << (rng() % 8));
    EXPECT_EQ(outcome(b, false), outcome(b, true)) << "flip " << i;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace vtpu::isa
