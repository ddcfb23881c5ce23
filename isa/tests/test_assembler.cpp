// Assembler and disassembler: text -> binary -> text is the identity on canonical text,
// hand-written sources encode the fields they say, and malformed sources give their error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "vtpu/isa/assembler.h"

namespace vtpu::isa {
namespace {

std::vector<size_t> used(const SlotDef& sd, const OpDef& op) {
  std::vector<size_t> out;
  for (const OperandDef& o : op.operands) {
    unsigned n = o.kind == OperandKind::Field ? 1 : o.kind == OperandKind::Addr ? 2 : 3;
    for (unsigned k = 0; k < n; ++k) out.push_back(size_t(sd.field_index(o.fields[k])));
  }
  return out;
}

// A program with the full descriptor and param tables, so their index fields can reach max.
Program big_tables_program() {
  Program p;
  p.config_name = "tiny-4x4";
  for (int i = 0; i < 4096; ++i) {
    DmaDescriptor d;
    d.name = "d" + std::to_string(i);
    d.bytes = uint32_t(i + 1);
    if (i % 3 == 1) d.dims.push_back({uint32_t(i), -i, 2 * i});
    p.descriptors.push_back(d);
    VectorParams v;
    v.name = "p" + std::to_string(i);
    if (i % 5 == 0) v.multiplier = {i, -i};
    p.params.push_back(v);
  }
  return p;
}

// Compares member by member so a failure says which part differs.
void expect_same(const Program& a, const Program& b) {
  EXPECT_EQ(a.config_name, b.config_name);
  EXPECT_EQ(a.config_fingerprint, b.config_fingerprint);
  EXPECT_EQ(a.tags, b.tags);
  EXPECT_TRUE(a.descriptors == b.descriptors);
  EXPECT_TRUE(a.params == b.params);
  EXPECT_TRUE(a.tensors == b.tensors);
  EXPECT_TRUE(a.constants == b.constants);
  EXPECT_TRUE(a.symbols == b.symbols);
  ASSERT_EQ(a.code.size(), b.code.size());
  for (size_t i = 0; i < a.code.size(); ++i)
    ASSERT_TRUE(a.code[i] == b.code[i]) << "bundle " << i << ": " << format_bundle(decode(a.code[i], i), &a)
                                        << " vs " << format_bundle(decode(b.code[i], i), &b);
}

int64_t clamp_for_program(const FieldDef& f, int64_t v, const Program& p, size_t code_size) {
  if (f.kind == FieldKind::Target) return std::min<int64_t>(v, int64_t(code_size) - 1);
  if (f.kind == FieldKind::Desc) return std::min<int64_t>(v, int64_t(p.descriptors.size()) - 1);
  if (f.kind == FieldKind::Param) return std::min<int64_t>(v, int64_t(p.params.size()) - 1);
  return v;
}

TEST(Assembler, EveryOpcodeAndFieldExtremeRoundTripsThroughText) {
  Program p = big_tables_program();
  // First collect the operations, so branch targets can reach the last bundle.
  std::vector<std::pair<SlotId, Operation>> ops;
  for (const OpDef& def : table().ops) {
    for (const SlotDef& sd : table().slots) {
      if (sd.slot_class != def.slot_class) continue;
      auto fields = used(sd, def);
      for (size_t i : fields)
        for (int64_t v : {sd.fields[i].min, sd.fields[i].max}) {
          Operation op = make_op(def);
          for (size_t j : fields) op.fields[j] = sd.fields[j].min;
          op.fields[i] = v;
          ops.emplace_back(sd.id, op);
        }
      if (fields.empty()) ops.emplace_back(sd.id, make_op(def));
    }
  }
  ops.emplace_back(SlotId::Control, make_op(*find_op("halt")));
  p.symbols.push_back({"start", 0});
  p.symbols.push_back({"last", uint32_t(ops.size() - 1)});
  for (auto& [s, op] : ops) {
    const SlotDef& sd = slot(s);
    for (size_t i = 1; i < sd.fields.size(); ++i)
      op.fields[i] = clamp_for_program(sd.fields[i], op.fields[i], p, ops.size());
    Bundle b;
    b.at(s) = op;
    // Text fills s0 before s1, so an s1 operation is written after one in s0.
    if (s == SlotId::S1) b.at(SlotId::S0) = make_op(*find_op("add"));
    p.code.push_back(encode(b));
  }
  std::string text = disassemble(p);
  Program back = assemble(text, "roundtrip.s");
  expect_same(back, p);
  EXPECT_EQ(disassemble(back), text);
  // Spot-check the canonical text of a few extremes.
  EXPECT_NE(text.find("li r0, 2147483647"), std::string::npos);
  EXPECT_NE(text.find("li r31, -2147483648"), std::string::npos);
  EXPECT_NE(text.find("dma.load desc=d4095 src=r0 dst=r0"), std::string::npos);
  EXPECT_NE(text.find("mxu.matmul mxu=0 src=r0+16777215 dst=r0+0 rows=1 dtype=int8"), std::string::npos);
  EXPECT_NE(text.find("jmp last"), std::string::npos);
  EXPECT_NE(text.find("vec.add dst=acc[r0+0]"), std::string::npos);
}

TEST(Assembler, HandWrittenSourceEncodesTheStatedFields) {
  const char* src = R"(
    # a comment
    .equ TILE, 64
    .desc tile bytes=TILE dim=[4, 256, 64]
    .vparam rq mult=[1073741824] shift=[31] out_zp=-3 min=-128 max=127
    .tag "layer one"
    top:  li r1, 0x10 || addi r2, r1, -7 // second scalar op goes to s1
          dma.load desc=tile src=r2 dst=r1 flag=f3 || wait f1, 2
          mxu.matmul mxu=1 src=r4+TILE dst=r5+3 rows=8 dtype=bf16 acc=1 swap=1 flag=f2
          vec.rescale dst=ub[r6+128] a=acc[r7+0] rows=8 param=rq || loop r9, top
    .tag
          halt
  )";
  Program p = assemble(src, "hand.s");
  ASSERT_EQ(p.code.size(), 5u);
  auto bundles = decode_program(p);
  const Bundle& b0 = bundles[0];
  EXPECT_EQ(b0.tag, 1);
  EXPECT_EQ(p.tags[1], "layer one");
  EXPECT_EQ(b0.at(SlotId::S0).def->mnemonic, "li");
  EXPECT_EQ(field(b0.at(SlotId::S0), SlotId::S0, "imm"), 16);
  EXPECT_EQ(b0.at(SlotId::S1).def->mnemonic, "addi");
  EXPECT_EQ(field(b0.at(SlotId::S1), SlotId::S1, "imm"), -7);
  const Bundle& b1 = bundles[1];
  EXPECT_EQ(field(b1.at(SlotId::Dma), SlotId::Dma, "flag"), 3);
  EXPECT_EQ(field(b1.at(SlotId::Dma), SlotId::Dma, "src"), 2);
  EXPECT_EQ(field(b1.at(SlotId::Control), SlotId::Control, "count"), 2);
  const Operation& mm = bundles[2].at(SlotId::MxuMatmul);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "mxu"), 1);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "src_reg"), 4);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "src_off"), 64);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "dst_off"), 3);
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "dtype"), int64_t(Dtype::Bf16));
  EXPECT_EQ(field(mm, SlotId::MxuMatmul, "swap"), 1);
  const Operation& rs = bundles[3].at(SlotId::Vector);
  EXPECT_EQ(field(rs, SlotId::Vector, "dst_mem"), 0);
  EXPECT_EQ(field(rs, SlotId::Vector, "a_mem"), 1);
  EXPECT_EQ(field(rs, SlotId::Vector, "dst_off"), 128);
  EXPECT_EQ(field(rs, SlotId::Vector, "dt"), int64_t(Dtype::Int32));  // default
  EXPECT_EQ(field(rs, SlotId::Vector, "odt"), int64_t(Dtype::Int8));  // default
  EXPECT_EQ(field(bundles[3].at(SlotId::Control), SlotId::Control, "target"), 0);
  EXPECT_EQ(bundles[4].tag, 0);
  ASSERT_EQ(p.descriptors.size(), 1u);
  EXPECT_EQ(p.descriptors[0].bytes, 64u);
  EXPECT_EQ(p.descriptors[0].total_bytes(), 256u);
  EXPECT_EQ(p.params[0].output_zp, -3);
  EXPECT_EQ(p.params[0].max, 127.0);
  // The canonical text assembles back to the same binary.
  EXPECT_EQ(assemble(disassemble(p), "again.s"), p);
}

// Bundles are bound as they are parsed only when no later line can change them: an .equ
// defined again later, a label or descriptor defined later and a branch forward all take
// their values at the end of the file, as they always did.
TEST(Assembler, LaterDefinitionsAreSeenByEarlierBundles) {
  const char* src = R"(
    .equ N, 5
          li r1, N
    back: loop r2, ahead
          dma.load desc=later src=r1 dst=r1 flag=f1 || li r3, 9
          loop r4, back
    .equ N, 7
    .desc later bytes=64
    ahead: halt
  )";
  Program p = assemble(src, "later.s");
  auto bundles = decode_program(p);
  ASSERT_EQ(bundles.size(), 5u);
  EXPECT_EQ(field(bundles[0].at(SlotId::S0), SlotId::S0, "imm"), 7);
  EXPECT_EQ(field(bundles[1].at(SlotId::Control), SlotId::Control, "target"), 4);
  EXPECT_EQ(field(bundles[2].at(SlotId::Dma), SlotId::Dma, "desc"), 0);
  EXPECT_EQ(field(bundles[2].at(SlotId::S0), SlotId::S0, "imm"), 9);
  EXPECT_EQ(field(bundles[3].at(SlotId::Control), SlotId::Control, "target"), 1);
  // An error in a bundle bound late is still reported at its line.
  try {
    assemble(".equ N, 5\n  li r1, N\n.equ N, 99999999999\n  halt\n", "bad.s");
    FAIL() << "an .equ out of li's range should be refused";
  } catch (const AsmError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.s:2"), std::string::npos) << e.what();
  }
}

TEST(Assembler, PositionalOperandsAfterAnOmittedDefaultUseNames) {
  Program p = assemble("wait f1 count=1\nwait f2, 5\nsignal f3\n", "t.s");
  std::string text = disassemble(p);
  EXPECT_NE(text.find("  wait f1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  wait f2, 5\n"), std::string::npos) << text;
}

TEST(Assembler, ConstantsAndTensorsRoundTrip) {
  const char* src = R"(
    .tensor x role=input dtype=int8 shape=[2, 3] addr=0x1000 scale=0.25 zp=-1
    .const w dtype=bf16 shape=[2] addr=0x2000 values=[1.0, -2.5]
    .const b dtype=int32 shape=[2] addr=0x3000 values=[-2147483648, 2147483647]
    .tensor y role=output dtype=fp32 shape=[1] addr=0x4000
    halt
  )";
  Program p = assemble(src, "t.s");
  ASSERT_EQ(p.tensors.size(), 4u);
  EXPECT_EQ(p.tensors[0].bytes(), 6u);
  ASSERT_EQ(p.constants.size(), 2u);
  // bf16 1.0 = 0x3f80, -2.5 = 0xc020, little-endian.
  EXPECT_EQ(p.constants[0].data, (std::vector<uint8_t>{0x80, 0x3f, 0x20, 0xc0}));
  EXPECT_EQ(p.constants[1].data, (std::vector<uint8_t>{0, 0, 0, 0x80, 0xff, 0xff, 0xff, 0x7f}));
  EXPECT_EQ(assemble(disassemble(p), "again.s"), p);
}

// A name may hold anything ONNX allows: a line break, a tab, quotes, backslashes. Written
// with the escapes docs/isa.md lists, it stays on its line and reads back as it was.
TEST(Assembler, StringEscapesKeepLineBreaksQuotesAndBackslashes) {
  Program p = assemble(".tag \"a\\nb \\\"q\\\" c\\\\d\\te\\rf\"\nhalt\n", "t.s");
  ASSERT_EQ(p.tags.size(), 2u);
  EXPECT_EQ(p.tags[1], "a\nb \"q\" c\\d\te\rf");
  EXPECT_EQ(assemble(disassemble(p), "again.s"), p);
  for (std::string name : {"two\nlines", "\n", "tab\there", "quote\" and \\", "back\\n is not a break", "\r\n"}) {
    std::string text = quote(name);
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    Program q = assemble(".tensor " + text + " role=input dtype=int8 shape=[1] addr=0\n.tag " + text + "\nhalt\n", "t.s");
    ASSERT_EQ(q.tags.size(), 2u) << text;
    EXPECT_EQ(q.tags[1], name);
    EXPECT_EQ(q.tensors.at(0).name, name);
    EXPECT_EQ(assemble(disassemble(q), "again.s"), q) << disassemble(q);
  }
}

// A model's empty input or output (a 0 dimension) is a tensor of no bytes; it round-trips.
TEST(Assembler, EmptyTensorsHaveNoBytes) {
  Program p = assemble(".tensor e role=output dtype=bf16 shape=[3, 0] addr=0\nhalt\n", "t.s");
  ASSERT_EQ(p.tensors.size(), 1u);
  EXPECT_EQ(p.tensors[0].shape, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(p.tensors[0].bytes(), 0u);
  EXPECT_EQ(assemble(disassemble(p), "again.s"), p);
}

TEST(Assembler, RandomProgramsRoundTrip) {
  std::mt19937_64 rng(7);
  for (int iter = 0; iter < 200; ++iter) {
    Program p;
    int ndesc = 1 + int(rng() % 5), npar = 1 + int(rng() % 5), ncode = 1 + int(rng() % 40);
    for (int i = 0; i < ndesc; ++i) p.descriptors.push_back({"d" + std::to_string(i), rng() % 1000, rng() % 1000, uint32_t(1 + rng() % 4096), {}, Dtype(rng() % 6)});
    for (int i = 0; i < npar; ++i) {
      VectorParams v;
      v.name = "p" + std::to_string(i);
      v.scale = {float(int(rng() % 1000)) / 7.0f};
      v.min = -double(rng() % 100);
      p.params.push_back(v);
    }
    p.tags.push_back("t" + std::to_string(iter));
    for (int n = 0; n < ncode; ++n) {
      Bundle b;
      b.tag = uint16_t(rng() % 2);
      for (const SlotDef& sd : table().slots) {
        std::vector<const OpDef*> cands;
        for (const OpDef& op : table().ops)
          if (op.slot_class == sd.slot_class) cands.push_back(&op);
        size_t pick = rng() % (cands.size() + 2);
        if (pick >= cands.size()) continue;
        Operation op = make_op(*cands[pick]);
        for (size_t i : used(sd, *cands[pick])) {
          const FieldDef& f = sd.fields[i];
          std::uniform_int_distribution<int64_t> d(f.min, f.max);
          op.fields[i] = clamp_for_program(f, d(rng), p, size_t(ncode));
          if (f.kind == FieldKind::Reg && (f.name == "rd" || (cands[pick]->mnemonic == "loop" && f.name == "rs1")))
            op.fields[i] = sd.id == SlotId::S0 ? 1 : sd.id == SlotId::S1 ? 2 : 3;  // no double writes
        }
        b.at(sd.id) = op;
      }
      if (b.at(SlotId::S0).is_nop()) std::swap(b.at(SlotId::S0), b.at(SlotId::S1));
      p.code.push_back(encode(b));
    }
    // Keep the tag table in first-use order, as the assembler builds it.
    bool tag_used = false;
    for (auto& e : p.code) tag_used |= decode(e, 0).tag == 1;
    if (!tag_used) p.tags.pop_back();
    std::string text = disassemble(p);
    Program back = assemble(text, "random.s");
    expect_same(back, p);
    if (::testing::Test::HasFailure()) {
      ADD_FAILURE() << text;
      return;
    }
  }
}

// Each file in bad/ starts with "# expect: LINE:COL: text" naming its first error.
// ONNX node names are tags: '-', '/', ':' and '.' unquoted, the rest of the line as written;
// they print quoted and assemble back to the same program.
TEST(Assembler, UnquotedTagsTakeOnnxNodeNames) {
  Program p = assemble(
      ".tag conv1-relu\n  halt\n.tag /layer1/conv-2/Conv   # a comment\n  halt\n.tag onnx::Add_12\n  halt\n"
      ".tag conv1-relu\n  halt\n.tag \"quoted name\"\n  halt\n",
      "tags.s");
  ASSERT_EQ(p.tags.size(), 5u);
  EXPECT_EQ(p.tags[1], "conv1-relu");
  EXPECT_EQ(p.tags[2], "/layer1/conv-2/Conv");
  EXPECT_EQ(p.tags[3], "onnx::Add_12");
  EXPECT_EQ(p.tags[4], "quoted name");
  auto bundles = decode_program(p);
  EXPECT_EQ(bundles[0].tag, 1);
  EXPECT_EQ(bundles[3].tag, 1);
  EXPECT_EQ(bundles[4].tag, 4);
  EXPECT_EQ(assemble(disassemble(p), "again.s"), p);
  try {
    assemble("  nop\n.tag two words\n  halt\n", "spaces.s");
    ADD_FAILURE() << "a tag of two words assembled";
  } catch (const AsmError& e) {
    const Diagnostic& d = e.diagnostics().at(0);
    EXPECT_EQ(d.line, 2);
    EXPECT_EQ(d.column, 9);
    EXPECT_NE(d.message.find("quote a name with spaces"), std::string::npos) << d.message;
  }
}

// is_bundle_line is how a generator counts bundles before assembling: every kind of line
// (labels alone and before a bundle, comments, directives, strings with comment characters,
// blank lines) counted line by line gives the assembled program's bundle count.
TEST(Assembler, BundleLinesCountTheAssembledBundles) {
  const std::string src =
      "# a comment\n"
      ".config tiny-4x4\n"
      "start:\n"
      "   \n"
      "  li r1, 3   // trailing\n"
      "a: b: nop\n"
      ".tag \"x # y\"\n"
      "  li r2, 1 || li r3, 2\n"
      ".desc d0 bytes=64\n"
      "c:   # only a label\n"
      "  dma.load desc=d0 src=r1 dst=r2 flag=f1\n"
      ".tag conv-1\n"
      "  loop r1, start\n"
      "  halt";
  size_t counted = 0, at = 0;
  for (size_t nl; at <= src.size(); at = nl + 1) {
    nl = src.find('\n', at);
    if (nl == std::string::npos) nl = src.size();
    counted += is_bundle_line(std::string_view(src).substr(at, nl - at));
  }
  Program p = assemble(src, "count.s");
  EXPECT_EQ(counted, p.code.size());
  EXPECT_EQ(counted, 6u);
  EXPECT_FALSE(is_bundle_line("label:"));
  EXPECT_FALSE(is_bundle_line("  .equ N, 4"));
  EXPECT_TRUE(is_bundle_line("x: halt # done"));
}

TEST(Assembler, MalformedSourcesGiveTheirError) {
  std::filesystem::path dir = std::filesystem::path(VTPU_SOURCE_DIR) / "isa/tests/bad";
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".s") continue;
    std::ifstream f(entry.path());
    std::stringstream ss;
    ss << f.rdbuf();
    std::string src = ss.str();
    std::smatch m;
    ASSERT_TRUE(std::regex_search(src, m, std::regex("# expect: (\\d+):(\\d+): ([^\\n]+)")))
        << entry.path() << " lacks an '# expect:' line";
    ++n;
    try {
      assemble(src, entry.path().filename().string());
      ADD_FAILURE() << entry.path() << " assembled without error";
    } catch (const AsmError& e) {
      const Diagnostic& d = e.diagnostics().at(0);
      EXPECT_EQ(d.line, std::stoi(m[1])) << entry.path() << ": " << d.str();
      EXPECT_EQ(d.column, std::stoi(m[2])) << entry.path() << ": " << d.str();
      EXPECT_NE(d.message.find(m[3]), std::string::npos)
          << entry.path() << ": got '" << d.message << "', expected it to contain '" << m[3] << "'";
      EXPECT_NE(std::string(e.what()).find(entry.path().filename().string() + ":"), std::string::npos);
    }
  }
  EXPECT_GE(n, 20);
}

TEST(Assembler, ReportsSeveralErrorsAtOnce) {
  try {
    assemble("foo r1\nadd r1, r2\nli r40, 1\n", "multi.s");
    FAIL();
  } catch (const AsmError& e) {
    ASSERT_EQ(e.diagnostics().size(), 3u);
    EXPECT_EQ(e.diagnostics()[2].line, 3);
  }
}

}  // namespace
}  // namespace vtpu::isa
