#include "vtpu/isa/bundle.h"

#include <fmt/format.h>

namespace vtpu::isa {

uint64_t get_bits(const EncodedBundle& bits, unsigned lsb, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; ++i) {
    unsigned b = lsb + i;
    v |= ((bits[b / 64] >> (b % 64)) & 1u) << i;
  }
  return v;
}

void put_bits(EncodedBundle& bits, unsigned lsb, unsigned width, uint64_t value) {
  for (unsigned i = 0; i < width; ++i) {
    unsigned b = lsb + i;
    uint64_t mask = uint64_t{1} << (b % 64);
    if ((value >> i) & 1u)
      bits[b / 64] |= mask;
    else
      bits[b / 64] &= ~mask;
  }
}

int64_t field(const Operation& op, SlotId s, std::string_view name) {
  int i = slot(s).field_index(name);
  if (i < 0) throw InternalError(fmt::format("slot {} has no field '{}'", slot(s).name, name));
  return op.fields[size_t(i)];
}

void set_field(Operation& op, SlotId s, std::string_view name, int64_t value) {
  int i = slot(s).field_index(name);
  if (i < 0) throw InternalError(fmt::format("slot {} has no field '{}'", slot(s).name, name));
  // Stored in 32 bits (every field's range fits them); a value that does not is out of range
  // for any field, which encode() would refuse too.
  if (value != int64_t(int32_t(value)))
    throw InternalError(fmt::format("field '{}' of slot {}: {} does not fit the field", name, slot(s).name, value));
  op.fields[size_t(i)] = int32_t(value);
}

Operation make_op(const OpDef& def) {
  Operation op;
  op.def = &def;
  op.fields[0] = def.opcode;
  return op;
}

bool slot_accepts(SlotId s, const OpDef& def) { return slot_class_of(s) == def.slot_class; }

EncodedBundle encode(const Bundle& b) {
  const IsaTable& t = table();
  EncodedBundle bits{};
  put_bits(bits, t.tag_lsb, kTagBits, b.tag);
  for (const SlotDef& sd : t.slots) {
    const Operation& op = b.at(sd.id);
    if (op.is_nop()) continue;
    if (!slot_accepts(sd.id, *op.def))
      throw InternalError(fmt::format("{} placed in slot {}", op.def->mnemonic, sd.name));
    for (size_t i = 0; i < sd.fields.size(); ++i) {
      const FieldDef& f = sd.fields[i];
      int64_t v = i == 0 ? op.def->opcode : op.fields[i];
      if (v < f.min || v > f.max)
        throw InternalError(fmt::format("{}: field {} = {} outside [{}, {}]", op.def->mnemonic,
                                        f.name, v, f.min, f.max));
      uint64_t raw = uint64_t(v) & (f.width == 64 ? ~uint64_t{0} : ((uint64_t{1} << f.width) - 1));
      put_bits(bits, sd.lsb + f.lsb, f.width, raw);
    }
  }
  return bits;
}

namespace {
// Fields an operation uses, as a bitmask over the slot's field indices.
uint32_t used_fields(const SlotDef& sd, const OpDef& def) {
  uint32_t mask = 1;  // opcode
  for (const OperandDef& o : def.operands) {
    unsigned n = o.kind == OperandKind::Field ? 1 : o.kind == OperandKind::Addr ? 2 : 3;
    for (unsigned k = 0; k < n; ++k) mask |= 1u << sd.field_index(o.fields[k]);
  }
  return mask;
}
}  // namespace

Bundle decode(const EncodedBundle& bits, size_t bundle_index) {
  const IsaTable& t = table();
  Bundle b;
  b.tag = uint16_t(get_bits(bits, t.tag_lsb, kTagBits));
  for (const SlotDef& sd : t.slots) {
    uint64_t opcode = get_bits(bits, sd.lsb + sd.fields[0].lsb, sd.fields[0].width);
    Operation& op = b.at(sd.id);
    if (opcode == 0) {
      for (size_t i = 1; i < sd.fields.size(); ++i)
        if (get_bits(bits, sd.lsb + sd.fields[i].lsb, sd.fields[i].width) != 0)
          throw DecodeError(fmt::format(
              "bundle {}: illegal encoding in slot {}: nop with non-zero field '{}'", bundle_index,
              sd.name, sd.fields[i].name));
      continue;
    }
    const OpDef* def = find_op(sd.slot_class, opcode);
    if (!def)
      throw DecodeError(fmt::format("bundle {}: illegal encoding in slot {}: unknown opcode {}",
                                    bundle_index, sd.name, opcode));
    op.def = def;
    uint32_t used = used_fields(sd, *def);
    for (size_t i = 0; i < sd.fields.size(); ++i) {
      const FieldDef& f = sd.fields[i];
      uint64_t raw = get_bits(bits, sd.lsb + f.lsb, f.width);
      if (!(used >> i & 1u)) {
        if (raw != 0)
          throw DecodeError(fmt::format(
              "bundle {}: illegal encoding in slot {}: {} does not use field '{}' but it holds {}",
              bundle_index, sd.name, def->mnemonic, f.name, raw));
        continue;
      }
      int64_t v = int64_t(raw);
      if (f.kind == FieldKind::SImm && f.width < 64 && (raw >> (f.width - 1)) & 1u)
        v = int64_t(raw | ~((uint64_t{1} << f.width) - 1));
      if (v < f.min || v > f.max)
        throw DecodeError(fmt::format(
            "bundle {}: illegal encoding in slot {}: {} field '{}' = {} outside [{}, {}]",
            bundle_index, sd.name, def->mnemonic, f.name, v, f.min, f.max));
      op.fields[i] = v;
    }
  }
  for (unsigned bit = t.used_bits; bit < kBundleBits; bit += 64) {
    unsigned w = std::min(64u, kBundleBits - bit);
    if (get_bits(bits, bit, w) != 0)
      throw DecodeError(fmt::format(
          "bundle {}: illegal encoding: padding bits {}..{} must be zero", bundle_index,
          t.used_bits, kBundleBits - 1));
  }
  return b;
}

}  // namespace vtpu::isa
