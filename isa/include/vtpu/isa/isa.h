#pragma once
// The vtpu instruction set, defined once.
//
// A program is a sequence of fixed-width VLIW bundles. A bundle holds a tag (which the
// compiler uses to name the ONNX node an instruction belongs to) and one slot per unit;
// each slot carries at most one operation per cycle. The table in isa_table.cpp lists
// every slot's bit fields and every operation's opcode and operands. The encoder,
// decoder, assembler, disassembler, docs/isa.md and the RTL's decode package are all
// driven by that table; nothing else restates an encoding.
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace vtpu::isa {

inline constexpr unsigned kBundleBits = 512;
inline constexpr unsigned kBundleWords = kBundleBits / 64;
inline constexpr unsigned kBundleBytes = kBundleBits / 8;
inline constexpr unsigned kTagBits = 16;
inline constexpr unsigned kNumScalarRegs = 32;  // r0 reads as zero, writes to it are dropped
inline constexpr unsigned kNumFlags = 64;       // f0 means "no flag"
inline constexpr unsigned kMaxDmaDims = 3;      // outer dimensions of a DMA descriptor
inline constexpr unsigned kMxuIndexBits = 3;    // the mxu fields: a config may have up to 8 MXUs
inline constexpr unsigned kMaxMxus = 1u << kMxuIndexBits;
// The tables a program declares (.desc, .vparam) hold as many entries as the fields that
// index them can name: 16384 each. Both fields were 12 bits (4096 entries) until a model's
// step-wise requantization and a small buffer's bands needed more; they took 4 of the 5
// padding bits. The ICI slot's descriptor field keeps 12 bits: its transfers name one of the
// table's first 4096 descriptors.
inline constexpr unsigned kDmaDescBits = 14;
inline constexpr unsigned kVecParamBits = 14;
inline constexpr unsigned kMaxDescriptors = 1u << kDmaDescBits;
inline constexpr unsigned kMaxVectorParams = 1u << kVecParamBits;
// Branch targets are 24-bit bundle indices: a program has fewer than 2^24 bundles.
inline constexpr unsigned kBranchTargetBits = 24;
inline constexpr uint32_t kMaxBundles = (1u << kBranchTargetBits) - 1;

// Ici is last: it was added in bits that were padding, so older programs encode the same.
enum class SlotId : uint8_t { S0, S1, Dma, MxuWeight, MxuMatmul, Vector, Control, Ici };
inline constexpr unsigned kNumSlots = 8;

// Which slots an operation may occupy. Scalar operations go to s0 or s1.
enum class SlotClass : uint8_t { Scalar, Dma, MxuWeight, MxuMatmul, Vector, Control, Ici };

enum class FieldKind : uint8_t {
  Opcode,
  Reg,     // scalar register r0..r31
  UImm,    // unsigned immediate
  SImm,    // two's-complement immediate
  Flag,    // sync flag f0..f63 (f0 = none)
  Enum,    // symbolic value from an EnumDef
  Bool,    // 0 or 1
  Target,  // absolute bundle index (a label in assembly)
  Desc,    // index into the program's DMA descriptor table
  Param,   // index into the program's vector parameter table
};

struct EnumDef {
  std::string_view name;
  std::span<const std::string_view> values;  // value i is encoded as i
};

struct FieldDef {
  std::string_view name;
  uint8_t width;
  FieldKind kind;
  int64_t min;  // allowed range of the field's value (not of its raw bits)
  int64_t max;
  const EnumDef* enum_def;  // for FieldKind::Enum
  std::string_view doc;
  unsigned lsb = 0;  // bit offset inside the slot, assigned when the table is built
};

struct SlotDef {
  SlotId id;
  SlotClass slot_class;
  std::string_view name;       // "s0", "dma", ...
  std::vector<FieldDef> fields;  // fields[0] is the opcode; opcode 0 is always nop
  unsigned width = 0;            // sum of field widths
  unsigned lsb = 0;              // offset of the slot inside the bundle
  std::string_view doc;

  int field_index(std::string_view field_name) const;  // -1 when absent
};

// How an operand is written in assembly and which slot fields it fills.
enum class OperandKind : uint8_t {
  Field,    // one field: register, immediate, flag, enum, bool, label, descriptor, param
  Addr,     // "r3+16": a register field plus an offset field
  MemAddr,  // "ub[r3+16]" or "acc[r3+16]": memory-space field, register field, offset field
};

struct OperandDef {
  std::string_view name;  // keyword used in assembly (name=value)
  OperandKind kind;
  std::array<std::string_view, 3> fields;  // field names: value | reg,off | mem,reg,off
  std::optional<int64_t> default_value;    // optional operand when set (Field kind only)
};

// What a unit does with an operation; the simulator keys latency and energy on it.
enum class OpClass : uint8_t {
  Nop, ScalarAlu, ScalarMul, Branch, Sync, Halt,
  Dma, WeightLoad, Matmul, IciSend, IciSignal,
  VecAlu, VecMul, VecTranscendental, VecReduce, VecRescale, VecConvert, VecPool, VecMove,
};

struct OpDef {
  std::string_view mnemonic;
  SlotClass slot_class;
  uint8_t opcode;
  OpClass op_class;
  std::vector<OperandDef> operands;
  std::string_view summary;
};

struct IsaTable {
  std::vector<SlotDef> slots;  // indexed by SlotId
  std::vector<OpDef> ops;
  std::vector<const EnumDef*> enums;
  unsigned tag_lsb = 0;
  unsigned used_bits = 0;  // bits before the zero padding up to kBundleBits
};

// The one table, validated and laid out on first use.
const IsaTable& table();

const SlotDef& slot(SlotId id);
const OpDef* find_op(std::string_view mnemonic);
const OpDef* find_op(SlotClass slot_class, uint64_t opcode);
SlotClass slot_class_of(SlotId id);
std::string_view field_kind_name(FieldKind k);
std::string_view op_class_name(OpClass c);

// Data types, shared by matmul, vector, DMA descriptors and tensor metadata.
enum class Dtype : uint8_t { Int8 = 0, Bf16 = 1, Int32 = 2, Fp32 = 3, Uint8 = 4, Int16 = 5 };
extern const EnumDef kDtypeEnum;
extern const EnumDef kMemSpaceEnum;  // ub | acc
extern const EnumDef kIciMemEnum;    // ub | hbm: where an ICI transfer reads and writes
unsigned dtype_bytes(Dtype d);
std::string_view dtype_name(Dtype d);
std::optional<Dtype> parse_dtype(std::string_view name);

enum class MemSpace : uint8_t { UnifiedBuffer = 0, Accumulator = 1 };
enum class IciMem : uint8_t { UnifiedBuffer = 0, Hbm = 1 };

}  // namespace vtpu::isa
