// Bundle encoding: fields land where docs/isa.md says, every field round-trips at its
// extremes, random bundles round-trip, and illegal encodings are rejected.
#include <gtest/gtest.h>

#include <random>

#include "vtpu/isa/bundle.h"

namespace vtpu::isa {
namespace {

// The fields an operation uses, by slot field index.
std::vector<size_t> used(const SlotDef& sd, const OpDef& op) {
  std::vector<size_t> out;
  for (const OperandDef& o : op.operands) {
    unsigned n = o.kind == OperandKind::Field ? 1 : o.kind == OperandKind::Addr ? 2 : 3;
    for (unsigned k = 0; k < n; ++k) out.push_back(size_t(sd.field_index(o.fields[k])));
  }
  return out;
}

SlotId first_slot(const OpDef& op) {
  for (const SlotDef& sd : table().slots)
    if (sd.slot_class == op.slot_class) return sd.id;
  ADD_FAILURE() << "no slot for " << op.mnemonic;
  return SlotId::S0;
}

Operation random_op(const OpDef& def, SlotId s, std::mt19937_64& rng) {
  Operation op = make_op(def);
  const SlotDef& sd = slot(s);
  for (size_t i : used(sd, def)) {
    std::uniform_int_distribution<int64_t> d(sd.fields[i].min, sd.fields[i].max);
    op.fields[i] = d(rng);
  }
  return op;
}

TEST(Encoding, TableFitsBundleAndSlotsAreContiguous) {
  const IsaTable& t = table();
  EXPECT_LE(t.used_bits, kBundleBits);
  unsigned pos = kTagBits;
  for (const SlotDef& s : t.slots) {
    EXPECT_EQ(s.lsb, pos) << s.name;
    pos += s.width;
  }
  EXPECT_EQ(pos, t.used_bits);
}

// Positions computed by hand from the layout rules (tag 16 bits, then s0 = op6 rd5 rs1 5 rs2 5 imm32).
TEST(Encoding, GoldenScalarLayout) {
  Bundle b;
  b.tag = 0xBEEF;
  Operation li = make_op(*find_op("li"));
  set_field(li, SlotId::S0, "rd", 5);
  set_field(li, SlotId::S0, "imm", -1);
  b.at(SlotId::S0) = li;
  EncodedBundle e = encode(b);
  EXPECT_EQ(get_bits(e, 0, 16), 0xBEEFu);
  EXPECT_EQ(get_bits(e, 16, 6), 25u);          // li opcode
  EXPECT_EQ(get_bits(e, 22, 5), 5u);           // rd
  EXPECT_EQ(get_bits(e, 27, 10), 0u);          // rs1, rs2 unused
  EXPECT_EQ(get_bits(e, 37, 32), 0xFFFFFFFFu); // imm, two's complement
  EXPECT_EQ(get_bits(e, 69, kBundleBits - 69 > 64 ? 64 : kBundleBits - 69), 0u);
  // s1 starts right after s0 (16 + 53 = 69).
  EXPECT_EQ(slot(SlotId::S1).lsb, 69u);
  EXPECT_EQ(decode(e, 0), b);
}

TEST(Encoding, EveryOpcodeEveryFieldAtItsExtremes) {
  size_t checked = 0;
  for (const OpDef& def : table().ops) {
    SlotId s = first_slot(def);
    const SlotDef& sd = slot(s);
    for (size_t i : used(sd, def)) {
      for (int64_t v : {sd.fields[i].min, sd.fields[i].max}) {
        Operation op = make_op(def);
        for (size_t j : used(sd, def)) op.fields[j] = sd.fields[j].min;
        op.fields[i] = v;
        Bundle b;
        b.at(s) = op;
        Bundle back = decode(encode(b), 0);
        EXPECT_EQ(back.at(s), op) << def.mnemonic << " field " << sd.fields[i].name << " = " << v;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 400u);
}

TEST(Encoding, ScalarOpsWorkInBothScalarSlots) {
  Bundle b;
  b.at(SlotId::S0) = make_op(*find_op("add"));
  b.at(SlotId::S1) = make_op(*find_op("sub"));
  set_field(b.at(SlotId::S1), SlotId::S1, "rd", 31);
  EXPECT_EQ(decode(encode(b), 0), b);
}

TEST(Encoding, RandomBundlesRoundTrip) {
  std::mt19937_64 rng(12345);
  for (int n = 0; n < 20000; ++n) {
    Bundle b;
    b.tag = uint16_t(rng());
    for (const SlotDef& sd : table().slots) {
      std::vector<const OpDef*> cands;
      for (const OpDef& op : table().ops)
        if (op.slot_class == sd.slot_class) cands.push_back(&op);
      size_t pick = rng() % (cands.size() + 1);
      if (pick == cands.size()) continue;  // nop
      b.at(sd.id) = random_op(*cands[pick], sd.id, rng);
    }
    ASSERT_EQ(decode(encode(b), size_t(n)), b) << "iteration " << n;
  }
}

TEST(Encoding, RejectsUnknownOpcode) {
  EncodedBundle e{};
  const SlotDef& sd = slot(SlotId::MxuWeight);
  put_bits(e, sd.lsb, sd.fields[0].width, 3);  // mxw has only opcode 1
  try {
    decode(e, 7);
    FAIL() << "expected DecodeError";
  } catch (const DecodeError& err) {
    EXPECT_NE(std::string(err.what()).find("bundle 7"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("mxw"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("unknown opcode 3"), std::string::npos) << err.what();
  }
}

TEST(Encoding, RejectsUnusedFieldsAndPadding) {
  Bundle b;
  b.at(SlotId::Control) = make_op(*find_op("halt"));
  EncodedBundle e = encode(b);
  const SlotDef& sd = slot(SlotId::Control);
  EncodedBundle bad = e;
  put_bits(bad, sd.lsb + sd.fields[size_t(sd.field_index("rs1"))].lsb, 5, 3);
  EXPECT_THROW(decode(bad, 0), DecodeError);
  EncodedBundle pad = e;
  put_bits(pad, kBundleBits - 1, 1, 1);
  EXPECT_THROW(decode(pad, 0), DecodeError);
  EncodedBundle nop_junk{};
  put_bits(nop_junk, slot(SlotId::Dma).lsb + 10, 1, 1);
  EXPECT_THROW(decode(nop_junk, 0), DecodeError);
}

TEST(Encoding, RejectsOutOfRangeField) {
  // rows has min 1: an encoded 0 is illegal for matmul.
  Operation mm = make_op(*find_op("mxu.matmul"));
  set_field(mm, SlotId::MxuMatmul, "rows", 1);
  Bundle b;
  b.at(SlotId::MxuMatmul) = mm;
  EncodedBundle e = encode(b);
  const SlotDef& sd = slot(SlotId::MxuMatmul);
  const FieldDef& rows = sd.fields[size_t(sd.field_index("rows"))];
  put_bits(e, sd.lsb + rows.lsb, rows.width, 0);
  EXPECT_THROW(decode(e, 0), DecodeError);
  // The encoder refuses too: the assembler must catch it first.
  set_field(mm, SlotId::MxuMatmul, "rows", 0);
  b.at(SlotId::MxuMatmul) = mm;
  EXPECT_THROW(encode(b), InternalError);
}

TEST(Encoding, EncoderRejectsOpInWrongSlot) {
  Bundle b;
  b.at(SlotId::Dma) = make_op(*find_op("add"));
  EXPECT_THROW(encode(b), InternalError);
}

}  // namespace
}  // namespace vtpu::isa
