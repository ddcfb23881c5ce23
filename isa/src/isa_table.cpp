// THE definition of the vtpu instruction set. Everything that encodes, decodes, assembles,
// prints or documents instructions reads this table; change an encoding here and only here
// (and bump kFormatVersion in program.h when a change breaks existing binaries).
#include <algorithm>
#include <limits>
#include <mutex>
#include <set>
#include <string>

#include "vtpu/isa/isa.h"
#include "vtpu/support/error.h"

namespace vtpu::isa {
namespace {

constexpr std::string_view kDtypeNames[] = {"int8", "bf16", "int32", "fp32", "uint8", "int16"};
constexpr std::string_view kMemNames[] = {"ub", "acc"};
constexpr std::string_view kIciMemNames[] = {"ub", "hbm"};

int64_t umax(unsigned w) { return (int64_t{1} << w) - 1; }

FieldDef opcode_field(unsigned w) {
  return {"op", uint8_t(w), FieldKind::Opcode, 0, umax(w), nullptr, "operation code; 0 is nop"};
}
FieldDef reg(std::string_view name, std::string_view doc) {
  return {name, 5, FieldKind::Reg, 0, kNumScalarRegs - 1, nullptr, doc};
}
FieldDef uimm(std::string_view name, unsigned w, std::string_view doc, int64_t min = 0) {
  return {name, uint8_t(w), FieldKind::UImm, min, umax(w), nullptr, doc};
}
FieldDef simm(std::string_view name, unsigned w, std::string_view doc) {
  return {name, uint8_t(w), FieldKind::SImm, -(int64_t{1} << (w - 1)), (int64_t{1} << (w - 1)) - 1,
          nullptr, doc};
}
FieldDef flag(std::string_view name, std::string_view doc) {
  return {name, 6, FieldKind::Flag, 0, kNumFlags - 1, nullptr, doc};
}
FieldDef enumf(std::string_view name, unsigned w, const EnumDef& e, std::string_view doc) {
  return {name, uint8_t(w), FieldKind::Enum, 0, std::min<int64_t>(int64_t(e.values.size()) - 1, umax(w)), &e, doc};
}
FieldDef boolf(std::string_view name, std::string_view doc) {
  return {name, 1, FieldKind::Bool, 0, 1, nullptr, doc};
}
FieldDef typed(std::string_view name, unsigned w, FieldKind k, std::string_view doc) {
  return {name, uint8_t(w), k, 0, umax(w), nullptr, doc};
}

OperandDef F(std::string_view name) { return {name, OperandKind::Field, {name}, std::nullopt}; }
OperandDef Opt(std::string_view name, int64_t dflt) {
  return {name, OperandKind::Field, {name}, dflt};
}
// An operand whose keyword differs from the field it fills.
OperandDef As(std::string_view name, std::string_view field, std::optional<int64_t> dflt = {}) {
  return {name, OperandKind::Field, {field}, dflt};
}
OperandDef A(std::string_view name, std::string_view reg_field, std::string_view off_field) {
  return {name, OperandKind::Addr, {reg_field, off_field}, std::nullopt};
}
OperandDef M(std::string_view name, std::string_view prefix) {
  // prefix "dst" -> fields dst_mem, dst_reg, dst_off (names are interned below)
  static std::set<std::string, std::less<>> interned;
  auto keep = [](std::string s) -> std::string_view { return *interned.insert(std::move(s)).first; };
  std::string p(prefix);
  return {name, OperandKind::MemAddr, {keep(p + "_mem"), keep(p + "_reg"), keep(p + "_off")},
          std::nullopt};
}

IsaTable build() {
  IsaTable t;
  const EnumDef& dt = kDtypeEnum;
  const EnumDef& mem = kMemSpaceEnum;
  const EnumDef& xmem = kIciMemEnum;

  t.slots = {
      {SlotId::S0, SlotClass::Scalar, "s0",
       {opcode_field(6), reg("rd", "destination register"), reg("rs1", "first source register"),
        reg("rs2", "second source register"), simm("imm", 32, "32-bit signed immediate")},
       0, 0, "scalar slot 0: integer ALU on 32-bit registers, address arithmetic"},
      {SlotId::S1, SlotClass::Scalar, "s1",
       {opcode_field(6), reg("rd", "destination register"), reg("rs1", "first source register"),
        reg("rs2", "second source register"), simm("imm", 32, "32-bit signed immediate")},
       0, 0, "scalar slot 1: same operations as s0"},
      {SlotId::Dma, SlotClass::Dma, "dma",
       {opcode_field(4), typed("desc", kDmaDescBits, FieldKind::Desc, "DMA descriptor index"),
        reg("src", "register holding the source base address (bytes)"),
        reg("dst", "register holding the destination base address (bytes)"),
        flag("flag", "sync flag incremented when the whole transfer has landed"),
        uimm("unit", kMxuIndexBits, "target MXU (dma.wfifo) or ICI link (dma.send)")},
       0, 0, "DMA engine: strided multi-dimensional copies between HBM, unified buffer, "
             "weight FIFOs and neighbouring chips; runs asynchronously"},
      {SlotId::MxuWeight, SlotClass::MxuWeight, "mxw",
       {opcode_field(2), uimm("mxu", kMxuIndexBits, "MXU index")},
       0, 0, "MXU weight path: moves the next weight tile from an MXU's weight FIFO into its "
             "shadow weight registers"},
      {SlotId::MxuMatmul, SlotClass::MxuMatmul, "mxm",
       {opcode_field(2), uimm("mxu", kMxuIndexBits, "MXU index"),
        reg("src_reg", "register added to src_off"),
        uimm("src_off", 24, "unified-buffer byte address of the first input row"),
        reg("dst_reg", "register added to dst_off"),
        uimm("dst_off", 16, "first accumulator row"),
        uimm("rows", 16, "number of input rows streamed (B)", 1),
        uimm("stride", 16, "bytes between input rows; 0 means rows are packed"),
        enumf("dtype", 1, dt, "input and weight data type"),
        boolf("acc", "1 adds into the accumulators, 0 overwrites them"),
        boolf("swap", "1 switches to the shadow weights before the first row"),
        flag("flag", "sync flag incremented when the last result row is written")},
       0, 0, "MXU data path: streams unified-buffer rows through the systolic array into "
             "accumulator rows"},
      {SlotId::Vector, SlotClass::Vector, "vec",
       {opcode_field(6),
        enumf("dst_mem", 1, mem, "destination memory"), reg("dst_reg", "register added to dst_off"),
        uimm("dst_off", 24, "destination address: UB bytes or accumulator row"),
        enumf("a_mem", 1, mem, "first source memory"), reg("a_reg", "register added to a_off"),
        uimm("a_off", 24, "first source address"),
        enumf("b_mem", 1, mem, "second source memory"), reg("b_reg", "register added to b_off"),
        uimm("b_off", 24, "second source address"),
        uimm("rows", 16, "number of rows processed", 1),
        enumf("dt", 3, dt, "source data type"), enumf("odt", 3, dt, "result data type"),
        boolf("bcast", "1 reuses the first row of b for every row"),
        typed("param", kVecParamBits, FieldKind::Param, "vector parameter table index"),
        flag("flag", "sync flag incremented when the last row is written")},
       0, 0, "vector unit: elementwise arithmetic, requantization, conversions, activation "
             "functions, pooling windows and row reductions over whole rows"},
      {SlotId::Control, SlotClass::Control, "ctl",
       {opcode_field(5), reg("rs1", "first compared register / loop counter"),
        reg("rs2", "second compared register"), flag("flag", "sync flag"),
        uimm("count", 16, "flag amount", 0), uimm("barrier", 8, "barrier id"),
        typed("target", kBranchTargetBits, FieldKind::Target, "absolute bundle index of the branch target")},
       0, 0, "sequencer control: sync-flag waits and signals, cross-chip barriers, branches, "
             "loops, halt"},
      // Added after the other slots had settled: it lives in what were padding bits, so
      // programs without ICI operations encode exactly as before.
      {SlotId::Ici, SlotClass::Ici, "ici",
       {opcode_field(2), typed("desc", 12, FieldKind::Desc, "DMA descriptor index (shape of the transfer)"),
        reg("src", "register holding the source base address (bytes) on this chip"),
        reg("dst", "register holding the destination base address (bytes) on the destination chip"),
        reg("chip", "register holding the destination chip's id (docs/microarch.md, \"Chips and links\")"),
        enumf("src_mem", 1, xmem, "memory the transfer reads on this chip"),
        enumf("dst_mem", 1, xmem, "memory the transfer writes on the destination chip"),
        flag("flag", "sync flag incremented on the destination chip when the data has landed"),
        flag("sflag", "sync flag incremented on this chip when the destination has acknowledged the transfer")},
       0, 0, "ICI engine: sends data and flag signals to other chips over the inter-chip links; "
             "runs asynchronously"},
  };

  using SC = SlotClass;
  using OC = OpClass;
  auto rrr = [](std::string_view m, uint8_t code, OC c, std::string_view s) {
    return OpDef{m, SC::Scalar, code, c, {F("rd"), F("rs1"), F("rs2")}, s};
  };
  auto rri = [](std::string_view m, uint8_t code, OC c, std::string_view s) {
    return OpDef{m, SC::Scalar, code, c, {F("rd"), F("rs1"), F("imm")}, s};
  };
  auto branch = [](std::string_view m, uint8_t code, std::string_view s) {
    return OpDef{m, SC::Control, code, OC::Branch, {F("rs1"), F("rs2"), F("target")}, s};
  };
  auto vbin = [](std::string_view m, uint8_t code, OC c, std::string_view s) {
    return OpDef{m, SC::Vector, code, c,
                 {M("dst", "dst"), M("a", "a"), M("b", "b"), F("rows"), F("dt"), Opt("bcast", 0),
                  Opt("flag", 0)},
                 s};
  };
  auto vun = [](std::string_view m, uint8_t code, OC c, std::string_view s) {
    return OpDef{m, SC::Vector, code, c,
                 {M("dst", "dst"), M("a", "a"), F("rows"), F("dt"), Opt("flag", 0)}, s};
  };
  auto vpar = [](std::string_view m, uint8_t code, OC c, std::string_view s) {
    return OpDef{m, SC::Vector, code, c,
                 {M("dst", "dst"), M("a", "a"), F("rows"), F("dt"), F("param"), Opt("flag", 0)}, s};
  };
  auto dma = [](std::string_view m, uint8_t code, std::vector<OperandDef> ops, std::string_view s) {
    return OpDef{m, SC::Dma, code, OC::Dma, std::move(ops), s};
  };

  t.ops = {
      // scalar
      rrr("add", 1, OC::ScalarAlu, "rd = rs1 + rs2 (wrapping)"),
      rrr("sub", 2, OC::ScalarAlu, "rd = rs1 - rs2 (wrapping)"),
      rrr("mul", 3, OC::ScalarMul, "rd = low 32 bits of rs1 * rs2"),
      rrr("and", 4, OC::ScalarAlu, "rd = rs1 & rs2"),
      rrr("or", 5, OC::ScalarAlu, "rd = rs1 | rs2"),
      rrr("xor", 6, OC::ScalarAlu, "rd = rs1 ^ rs2"),
      rrr("shl", 7, OC::ScalarAlu, "rd = rs1 << (rs2 & 31)"),
      rrr("shr", 8, OC::ScalarAlu, "rd = rs1 >> (rs2 & 31), logical"),
      rrr("sra", 9, OC::ScalarAlu, "rd = rs1 >> (rs2 & 31), arithmetic"),
      rrr("slt", 10, OC::ScalarAlu, "rd = (rs1 < rs2) signed ? 1 : 0"),
      rrr("sltu", 11, OC::ScalarAlu, "rd = (rs1 < rs2) unsigned ? 1 : 0"),
      rrr("seq", 12, OC::ScalarAlu, "rd = rs1 == rs2 ? 1 : 0"),
      rrr("sne", 13, OC::ScalarAlu, "rd = rs1 != rs2 ? 1 : 0"),
      rrr("min", 14, OC::ScalarAlu, "rd = signed minimum of rs1, rs2"),
      rrr("max", 15, OC::ScalarAlu, "rd = signed maximum of rs1, rs2"),
      rri("addi", 16, OC::ScalarAlu, "rd = rs1 + imm (wrapping)"),
      rri("muli", 17, OC::ScalarMul, "rd = low 32 bits of rs1 * imm"),
      rri("andi", 18, OC::ScalarAlu, "rd = rs1 & imm"),
      rri("ori", 19, OC::ScalarAlu, "rd = rs1 | imm"),
      rri("xori", 20, OC::ScalarAlu, "rd = rs1 ^ imm"),
      rri("shli", 21, OC::ScalarAlu, "rd = rs1 << (imm & 31)"),
      rri("shri", 22, OC::ScalarAlu, "rd = rs1 >> (imm & 31), logical"),
      rri("srai", 23, OC::ScalarAlu, "rd = rs1 >> (imm & 31), arithmetic"),
      rri("slti", 24, OC::ScalarAlu, "rd = (rs1 < imm) signed ? 1 : 0"),
      OpDef{"li", SC::Scalar, 25, OC::ScalarAlu, {F("rd"), F("imm")}, "rd = imm"},

      // DMA
      dma("dma.load", 1, {F("desc"), F("src"), F("dst"), Opt("flag", 0)},
          "HBM (at src + descriptor offset) to unified buffer (at dst + offset)"),
      dma("dma.store", 2, {F("desc"), F("src"), F("dst"), Opt("flag", 0)},
          "unified buffer to HBM"),
      dma("dma.wfifo", 3, {F("desc"), F("src"), As("mxu", "unit"), Opt("flag", 0)},
          "HBM to the weight FIFO of an MXU, one weight tile (rows x cols of the descriptor)"),
      dma("dma.copy", 4, {F("desc"), F("src"), F("dst"), Opt("flag", 0)},
          "unified buffer to unified buffer"),
      dma("dma.send", 5, {F("desc"), F("src"), F("dst"), As("link", "unit"), Opt("flag", 0)},
          "unified buffer to the unified buffer of the chip across an ICI link; the flag is "
          "incremented on the receiving chip"),

      // ICI
      OpDef{"ici.send", SC::Ici, 1, OC::IciSend,
            {F("desc"), F("src"), F("dst"), F("chip"), Opt("src_mem", 0), Opt("dst_mem", 0), Opt("flag", 0),
             Opt("sflag", 0)},
            "copy the descriptor's rows from src (src_mem of this chip) to dst (dst_mem of chip `chip`), routed "
            "over the ICI links; flag counts on the destination, sflag here"},
      OpDef{"ici.signal", SC::Ici, 2, OC::IciSignal, {F("chip"), F("flag")},
            "add 1 to flag on chip `chip` (a packet without payload, routed like a send)"},

      // MXU
      OpDef{"mxu.wload", SC::MxuWeight, 1, OC::WeightLoad, {F("mxu")},
            "pop the next tile from the MXU's weight FIFO and shift it into the shadow weights"},
      OpDef{"mxu.matmul", SC::MxuMatmul, 1, OC::Matmul,
            {F("mxu"), A("src", "src_reg", "src_off"), A("dst", "dst_reg", "dst_off"), F("rows"),
             F("dtype"), Opt("stride", 0), Opt("acc", 0), Opt("swap", 0), Opt("flag", 0)},
            "stream rows input rows through the array; result row i goes to accumulator dst+i"},

      // vector
      vbin("vec.add", 1, OC::VecAlu, "dst = a + b"),
      vbin("vec.sub", 2, OC::VecAlu, "dst = a - b"),
      vbin("vec.mul", 3, OC::VecMul, "dst = a * b"),
      vbin("vec.max", 4, OC::VecAlu, "dst = max(a, b)"),
      vbin("vec.min", 5, OC::VecAlu, "dst = min(a, b)"),
      vun("vec.copy", 8, OC::VecMove, "dst = a"),
      vun("vec.relu", 9, OC::VecAlu, "dst = max(a, 0)"),
      vpar("vec.clamp", 10, OC::VecAlu, "dst = min(max(a, param.min), param.max)"),
      vpar("vec.affine", 11, OC::VecMul, "dst = a * param.scale[lane] + param.bias[lane]"),
      OpDef{"vec.rescale", SC::Vector, 12, OC::VecRescale,
            {M("dst", "dst"), M("a", "a"), F("rows"), F("param"), Opt("dt", 2), Opt("odt", 0),
             Opt("flag", 0)},
            "TOSA RESCALE of int32 (dt) to odt with param's multipliers, shifts and zero points"},
      OpDef{"vec.addrescale", SC::Vector, 14, OC::VecRescale,
            {M("dst", "dst"), M("a", "a"), M("b", "b"), F("rows"), F("param"), Opt("dt", 2), Opt("odt", 0),
             Opt("bcast", 0), Opt("flag", 0)},
            "TOSA RESCALE of a + b (int32, the sum modulo 2^32) to odt with param's multipliers, shifts and zero "
            "points: an INT8 epilogue's bias add and rescale in one pass"},
      OpDef{"vec.cvt", SC::Vector, 13, OC::VecConvert,
            {M("dst", "dst"), M("a", "a"), F("rows"), F("dt"), F("odt"), Opt("flag", 0)},
            "convert each element from dt to odt (round to nearest even, saturate)"},
      vun("vec.exp", 16, OC::VecTranscendental, "dst = exp(a)"),
      vun("vec.tanh", 17, OC::VecTranscendental, "dst = tanh(a)"),
      vun("vec.sigmoid", 18, OC::VecTranscendental, "dst = 1 / (1 + exp(-a))"),
      vun("vec.gelu", 19, OC::VecTranscendental, "dst = a * Phi(a)"),
      vun("vec.erf", 20, OC::VecTranscendental, "dst = erf(a)"),
      vun("vec.recip", 21, OC::VecTranscendental, "dst = 1 / a"),
      vun("vec.rsqrt", 22, OC::VecTranscendental, "dst = 1 / sqrt(a)"),
      vun("vec.log", 23, OC::VecTranscendental, "dst = ln(a)"),
      vpar("vec.maxpool", 24, OC::VecPool, "dst row i = max over param.window of a rows"),
      vpar("vec.avgpool", 25, OC::VecPool, "dst row i = sum over param.window of a rows * param.scale"),
      OpDef{"vec.rsum", SC::Vector, 28, OC::VecReduce,
            {M("dst", "dst"), M("a", "a"), F("rows"), F("dt"), F("odt"), Opt("flag", 0)},
            "every lane of dst row i = sum of the lanes of a row i"},
      OpDef{"vec.rmax", SC::Vector, 29, OC::VecReduce,
            {M("dst", "dst"), M("a", "a"), F("rows"), F("dt"), Opt("flag", 0)},
            "every lane of dst row i = maximum of the lanes of a row i"},

      // control
      OpDef{"halt", SC::Control, 1, OC::Halt, {}, "stop once every unit has drained"},
      OpDef{"wait", SC::Control, 2, OC::Sync, {F("flag"), Opt("count", 1)},
            "stall until flag >= count, then subtract count"},
      OpDef{"signal", SC::Control, 3, OC::Sync, {F("flag"), Opt("count", 1)},
            "add count to flag"},
      OpDef{"barrier", SC::Control, 4, OC::Sync, {F("barrier")},
            "stall until every chip has reached the barrier with this id"},
      OpDef{"jmp", SC::Control, 5, OC::Branch, {F("target")}, "continue at target"},
      branch("beq", 6, "branch to target when rs1 == rs2"),
      branch("bne", 7, "branch to target when rs1 != rs2"),
      branch("blt", 8, "branch to target when rs1 < rs2 (signed)"),
      branch("bge", 9, "branch to target when rs1 >= rs2 (signed)"),
      OpDef{"loop", SC::Control, 10, OC::Branch, {F("rs1"), F("target")},
            "rs1 = rs1 - 1; branch to target when the new rs1 != 0"},
  };

  // Lay out the bundle: tag first, then each slot, LSB first.
  unsigned pos = 0;
  t.tag_lsb = pos;
  pos += kTagBits;
  for (SlotDef& s : t.slots) {
    s.lsb = pos;
    unsigned off = 0;
    for (FieldDef& f : s.fields) {
      f.lsb = off;
      off += f.width;
    }
    s.width = off;
    pos += off;
  }
  t.used_bits = pos;
  t.enums = {&kDtypeEnum, &kMemSpaceEnum, &kIciMemEnum};

  // Self-checks that keep the table honest.
  auto fail = [](const std::string& m) { throw InternalError("ISA table: " + m); };
  if (t.used_bits > kBundleBits) fail("slots do not fit the bundle");
  for (size_t i = 0; i < t.slots.size(); ++i)
    if (size_t(t.slots[i].id) != i) fail("slots out of SlotId order");
  for (const SlotDef& s : t.slots)  // an Operation stores its fields in 32 bits (bundle.h)
    for (const FieldDef& f : s.fields)
      if (f.min < std::numeric_limits<int32_t>::min() || f.max > std::numeric_limits<int32_t>::max()) fail("field " + std::string(f.name) + " of slot " + std::string(s.name) + " needs more than 32 bits");
  std::set<std::string_view> mnemonics;
  std::set<std::pair<int, int>> codes;
  for (const OpDef& op : t.ops) {
    if (!mnemonics.insert(op.mnemonic).second) fail("duplicate mnemonic " + std::string(op.mnemonic));
    if (op.opcode == 0) fail("opcode 0 is reserved for nop: " + std::string(op.mnemonic));
    if (!codes.insert({int(op.slot_class), op.opcode}).second)
      fail("duplicate opcode for " + std::string(op.mnemonic));
    const SlotDef* sd = nullptr;
    for (const SlotDef& s : t.slots)
      if (s.slot_class == op.slot_class) { sd = &s; break; }
    if (op.opcode > umax(sd->fields[0].width)) fail("opcode too wide: " + std::string(op.mnemonic));
    std::set<std::string_view> used;
    for (const OperandDef& o : op.operands) {
      unsigned n = o.kind == OperandKind::Field ? 1 : o.kind == OperandKind::Addr ? 2 : 3;
      for (unsigned k = 0; k < n; ++k) {
        if (sd->field_index(o.fields[k]) <= 0)
          fail(std::string(op.mnemonic) + ": unknown field " + std::string(o.fields[k]));
        if (!used.insert(o.fields[k]).second)
          fail(std::string(op.mnemonic) + ": field used twice " + std::string(o.fields[k]));
      }
    }
  }
  return t;
}

}  // namespace

const EnumDef kDtypeEnum{"dtype", kDtypeNames};
const EnumDef kMemSpaceEnum{"mem", kMemNames};
const EnumDef kIciMemEnum{"xmem", kIciMemNames};

int SlotDef::field_index(std::string_view field_name) const {
  for (size_t i = 0; i < fields.size(); ++i)
    if (fields[i].name == field_name) return int(i);
  return -1;
}

const IsaTable& table() {
  static const IsaTable t = build();
  return t;
}

const SlotDef& slot(SlotId id) { return table().slots[size_t(id)]; }

const OpDef* find_op(std::string_view mnemonic) {
  for (const OpDef& op : table().ops)
    if (op.mnemonic == mnemonic) return &op;
  return nullptr;
}

const OpDef* find_op(SlotClass slot_class, uint64_t opcode) {
  for (const OpDef& op : table().ops)
    if (op.slot_class == slot_class && op.opcode == opcode) return &op;
  return nullptr;
}

SlotClass slot_class_of(SlotId id) { return slot(id).slot_class; }

std::string_view field_kind_name(FieldKind k) {
  switch (k) {
    case FieldKind::Opcode: return "opcode";
    case FieldKind::Reg: return "register";
    case FieldKind::UImm: return "unsigned";
    case FieldKind::SImm: return "signed";
    case FieldKind::Flag: return "flag";
    case FieldKind::Enum: return "enum";
    case FieldKind::Bool: return "bool";
    case FieldKind::Target: return "label";
    case FieldKind::Desc: return "descriptor";
    case FieldKind::Param: return "param";
  }
  return "?";
}

std::string_view op_class_name(OpClass c) {
  switch (c) {
    case OpClass::Nop: return "nop";
    case OpClass::ScalarAlu: return "scalar-alu";
    case OpClass::ScalarMul: return "scalar-mul";
    case OpClass::Branch: return "branch";
    case OpClass::Sync: return "sync";
    case OpClass::Halt: return "halt";
    case OpClass::Dma: return "dma";
    case OpClass::WeightLoad: return "weight-load";
    case OpClass::Matmul: return "matmul";
    case OpClass::IciSend: return "ici-send";
    case OpClass::IciSignal: return "ici-signal";
    case OpClass::VecAlu: return "vector-alu";
    case OpClass::VecMul: return "vector-mul";
    case OpClass::VecTranscendental: return "vector-transcendental";
    case OpClass::VecReduce: return "vector-reduce";
    case OpClass::VecRescale: return "vector-rescale";
    case OpClass::VecConvert: return "vector-convert";
    case OpClass::VecPool: return "vector-pool";
    case OpClass::VecMove: return "vector-move";
  }
  return "?";
}

unsigned dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::Int8: case Dtype::Uint8: return 1;
    case Dtype::Bf16: case Dtype::Int16: return 2;
    case Dtype::Int32: case Dtype::Fp32: return 4;
  }
  return 0;
}

std::string_view dtype_name(Dtype d) { return kDtypeNames[size_t(d)]; }

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < std::size(kDtypeNames); ++i)
    if (kDtypeNames[i] == name) return Dtype(i);
  return std::nullopt;
}

}  // namespace vtpu::isa
