// Assembler, second pass: each bundle's operands bound to their fields (labels,
// descriptors, params and .equ names resolved), every field checked against its range from
// the ISA table, and the bundle encoded.
#include <fmt/format.h>

#include <map>

#include "asm_internal.h"

namespace vtpu::isa::asm_detail {

void Assembler::second_pass() {
  if (pending_.size() > kMaxBundles) {
    error({1, 1}, "program has more than 2^24 bundles");
    return;
  }
  prog_.code.reserve(pending_.size());
  for (const PendingBundle& pb : pending_) {
    if (pb.done) {
      prog_.code.push_back(*pb.done);
      continue;
    }
    try {
      prog_.code.push_back(bind_bundle(pb));
    } catch (const LineError& e) {
      error(e.loc, e.msg);
      if (errors_.size() >= kMaxErrors) return;
    }
  }
}

EncodedBundle Assembler::bind_bundle(const PendingBundle& pb) {
  Bundle b;
  b.tag = pb.tag;
  for (const PendingOp& po : pb.ops) {
    Operation op = make_op(*po.def);
    const SlotDef& sd = slot(po.slot);
    for (const OperandDef& od : po.def->operands)
      if (od.default_value) op.fields[size_t(sd.field_index(od.fields[0]))] = int32_t(*od.default_value);
    for (auto& [od, v] : po.bound) bind_value(op, sd, *po.def, *od, v);
    b.at(po.slot) = op;
  }
  return encode(b);
}

// A bundle's operands bound as it is parsed when nothing in them can change by the end of
// the file: no label not yet defined, no .equ (a later line may define it again), no
// descriptor or parameter not yet defined. It is then kept encoded (64 bytes) rather than as
// parsed operands (about 1.4 KB), which bounds a long program's memory (a model in row bands
// on a small array: millions of bundles). Anything else waits for the second pass, which
// binds it (or reports it) as before.
std::optional<EncodedBundle> Assembler::bind_now(const PendingBundle& pb) {
  equ_read_ = false;
  try {
    EncodedBundle e = bind_bundle(pb);
    if (equ_read_) return std::nullopt;
    return e;
  } catch (const LineError&) {
    return std::nullopt;
  } catch (const InternalError&) {
    return std::nullopt;
  }
}

void Assembler::check_range(const OpDef& def, const FieldDef& f, int64_t v, Loc loc) {
  if (v < f.min || v > f.max)
    throw LineError{loc, fmt::format("{}: field '{}' = {} out of range [{}, {}]", def.mnemonic, f.name, v, f.min, f.max)};
}

int64_t Assembler::symbol(const std::map<std::string, uint32_t>& m, const Value& v, const char* what) {
  auto it = m.find(v.text);
  if (it == m.end()) throw LineError{v.loc, fmt::format("unknown {} '{}'", what, v.text)};
  return it->second;
}

void Assembler::bind_value(Operation& op, const SlotDef& sd, const OpDef& def, const OperandDef& od, const Value& v) {
  auto fidx = [&](int k) { return size_t(sd.field_index(od.fields[size_t(k)])); };
  if (od.kind == OperandKind::Addr || od.kind == OperandKind::MemAddr) {
    Value a = v;
    if (od.kind == OperandKind::MemAddr) {
      if (v.kind != Value::Mem)
        throw LineError{v.loc, fmt::format("{}: operand '{}' must be a memory address like ub[r1+64] or acc[r2+0]",
                                           def.mnemonic, od.name)};
      op.fields[fidx(0)] = v.text == "ub" ? 0 : 1;
    } else {
      if (v.kind == Value::Int) a.kind = Value::Addr, a.off = v.i;
      else if (v.kind == Value::Reg) a.kind = Value::Addr, a.reg = v.i, a.off = 0;
      else if (v.kind == Value::Ident) a.kind = Value::Addr, a.off_sym = v.text;
      else if (v.kind != Value::Addr)
        throw LineError{v.loc, fmt::format("{}: operand '{}' must be an address like r1+64", def.mnemonic, od.name)};
    }
    int base = od.kind == OperandKind::MemAddr ? 1 : 0;
    int64_t r = a.reg.value_or(0);
    int64_t off = a.off;
    if (!a.off_sym.empty()) {
      equ_read_ = true;
      auto it = equs_.find(a.off_sym);
      if (it == equs_.end()) throw LineError{v.loc, fmt::format("unknown constant '{}' (define it with .equ)", a.off_sym)};
      off = it->second;
    }
    check_range(def, sd.fields[fidx(base)], r, v.loc);
    check_range(def, sd.fields[fidx(base + 1)], off, v.loc);
    op.fields[fidx(base)] = r;
    op.fields[fidx(base + 1)] = off;
    return;
  }
  const FieldDef& f = sd.fields[fidx(0)];
  int64_t x = 0;
  auto wrong = [&](const char* expected) {
    return LineError{v.loc, fmt::format("{}: operand '{}' must be {}", def.mnemonic, od.name, expected)};
  };
  switch (f.kind) {
    case FieldKind::Reg:
      if (v.kind != Value::Reg) throw wrong("a register r0..r31");
      x = v.i;
      break;
    case FieldKind::Flag:
      if (v.kind == Value::Flag || v.kind == Value::Int) x = v.i;
      else throw wrong("a flag f0..f63");
      break;
    case FieldKind::Enum: {
      if (v.kind == Value::Int) {
        x = v.i;
        break;
      }
      if (v.kind != Value::Ident) throw wrong("a name");
      bool found = false;
      for (size_t i = 0; i < f.enum_def->values.size(); ++i)
        if (f.enum_def->values[i] == v.text) x = int64_t(i), found = true;
      if (!found || x > f.max) {
        std::string names;
        for (int64_t i = f.min; i <= f.max; ++i) names += (names.empty() ? "" : ", ") + std::string(f.enum_def->values[size_t(i)]);
        throw LineError{v.loc, fmt::format("{}: operand '{}' = {} is not allowed; allowed: {}", def.mnemonic, od.name, v.text, names)};
      }
      break;
    }
    case FieldKind::Bool:
      if (v.kind == Value::Int) x = v.i;
      else if (v.kind == Value::Ident && (v.text == "true" || v.text == "false")) x = v.text == "true";
      else throw wrong("0 or 1");
      break;
    case FieldKind::Target:
      if (v.kind == Value::Int) x = v.i;
      else if (v.kind == Value::Ident) {
        auto it = labels_.find(v.text);
        if (it == labels_.end()) throw LineError{v.loc, fmt::format("unknown label '{}'", v.text)};
        x = it->second.first;
      } else throw wrong("a label");
      if (x >= int64_t(pending_.size()))
        throw LineError{v.loc, fmt::format("{}: branch target {} is past the last bundle ({})", def.mnemonic, x, pending_.size() - 1)};
      break;
    case FieldKind::Desc:
      if (v.kind == Value::Int) x = v.i;
      else if (v.kind == Value::Ident || v.kind == Value::String) x = symbol(descs_, v, "DMA descriptor (define it with .desc)");
      else throw wrong("a descriptor name (a name like a register is written in quotes: desc=\"r1\")");
      if (x >= int64_t(prog_.descriptors.size()))
        throw LineError{v.loc, fmt::format("{}: descriptor {} does not exist ({} defined)", def.mnemonic, x, prog_.descriptors.size())};
      break;
    case FieldKind::Param:
      if (v.kind == Value::Int) x = v.i;
      else if (v.kind == Value::Ident || v.kind == Value::String) x = symbol(params_, v, "vector param (define it with .vparam)");
      else throw wrong("a vector param name (a name like a register is written in quotes: param=\"r1\")");
      if (x >= int64_t(prog_.params.size()))
        throw LineError{v.loc, fmt::format("{}: vector param {} does not exist ({} defined)", def.mnemonic, x, prog_.params.size())};
      break;
    case FieldKind::UImm:
    case FieldKind::SImm:
    case FieldKind::Opcode:
      equ_read_ |= v.kind == Value::Ident;
      if (v.kind == Value::Int) x = v.i;
      else if (v.kind == Value::Ident && equs_.count(v.text)) x = equs_[v.text];
      else if (v.kind == Value::Ident) throw LineError{v.loc, fmt::format("unknown constant '{}' (define it with .equ)", v.text)};
      else throw wrong("an integer");
      break;
  }
  check_range(def, f, x, v.loc);
  op.fields[fidx(0)] = x;
}

}  // namespace vtpu::isa::asm_detail
