#pragma once
// Decoded bundles and their fixed-width binary encoding.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "vtpu/isa/isa.h"
#include "vtpu/support/error.h"

namespace vtpu::isa {

inline constexpr unsigned kMaxSlotFields = 20;

// One slot's operation. def == nullptr is a nop (all fields zero). Every field's range fits
// 32 bits (the ISA table checks it), so a field is stored in 32: a program of millions of
// bundles (a large model in row bands on a small array) takes half the memory.
struct Operation {
  const OpDef* def = nullptr;
  std::array<int32_t, kMaxSlotFields> fields{};  // by the slot's field index; [0] = opcode

  bool is_nop() const { return def == nullptr; }
  bool operator==(const Operation& o) const { return def == o.def && fields == o.fields; }
};

struct Bundle {
  uint16_t tag = 0;  // index into Program::tags; 0 = untagged
  std::array<Operation, kNumSlots> slots{};

  Operation& at(SlotId s) { return slots[size_t(s)]; }
  const Operation& at(SlotId s) const { return slots[size_t(s)]; }
  bool operator==(const Bundle& o) const { return tag == o.tag && slots == o.slots; }
};

using EncodedBundle = std::array<uint64_t, kBundleWords>;

// Reads a field of an operation by name; throws InternalError for a name the slot lacks.
int64_t field(const Operation& op, SlotId s, std::string_view name);
void set_field(Operation& op, SlotId s, std::string_view name, int64_t value);

// Makes an operation with every field zero except the opcode.
Operation make_op(const OpDef& def);

// Encodes a bundle. Throws InternalError when a field is outside its range: callers
// (the assembler, the compiler) must check operands first and report them properly.
EncodedBundle encode(const Bundle& b);

// An encoding the hardware would reject: unknown opcode, a field out of range, a field the
// operation does not use that is not zero, non-zero padding.
class DecodeError : public UserError {
 public:
  using UserError::UserError;
};

// Decodes one bundle; bundle_index only serves the error message.
Bundle decode(const EncodedBundle& bits, size_t bundle_index);

// Raw access to a bit range of an encoded bundle, for the RTL cross-check and tests.
uint64_t get_bits(const EncodedBundle& bits, unsigned lsb, unsigned width);
void put_bits(EncodedBundle& bits, unsigned lsb, unsigned width, uint64_t value);

// Which slots an operation of this class may occupy (scalar: s0 or s1).
bool slot_accepts(SlotId s, const OpDef& def);

}  // namespace vtpu::isa
