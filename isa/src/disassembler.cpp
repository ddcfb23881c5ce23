// Disassembler: Program -> canonical assembly text that assembles back to an equal Program.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "vtpu/isa/assembler.h"

namespace vtpu::isa {
namespace {

// A name the assembler reads back as a register (r3) or a flag (f3) rather than a name.
bool looks_like_register(const std::string& s) {
  return s.size() >= 2 && (s[0] == 'r' || s[0] == 'f') &&
         std::all_of(s.begin() + 1, s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// An identifier the assembler reads back as itself.
bool plain_name(const std::string& s) {
  bool plain = !s.empty() && !std::isdigit(static_cast<unsigned char>(s[0])) && s[0] != '.';
  for (char c : s) plain &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  return plain && s != "inf" && s != "nan" && !looks_like_register(s);
}

// A symbol the assembly can carry as a label (the first of its name).
bool label_ok(const Program& p, const Symbol& s) {
  if (!plain_name(s.name)) return false;
  for (const Symbol& t : p.symbols)
    if (t.name == s.name) return &t == &s;
  return false;
}

std::string quote_if_needed(const std::string& s) { return plain_name(s) ? s : quote(s); }

std::string format_field(const FieldDef& f, int64_t v, const Program* p) {
  switch (f.kind) {
    case FieldKind::Reg: return fmt::format("r{}", v);
    case FieldKind::Flag: return fmt::format("f{}", v);
    case FieldKind::Enum: return std::string(f.enum_def->values[size_t(v)]);
    case FieldKind::Target:
      if (p)
        for (const Symbol& s : p->symbols)
          if (s.bundle == uint64_t(v) && label_ok(*p, s)) return s.name;
      return std::to_string(v);
    case FieldKind::Desc:
      if (p && size_t(v) < p->descriptors.size() && !p->descriptors[size_t(v)].name.empty())
        return quote_if_needed(p->descriptors[size_t(v)].name);
      return std::to_string(v);
    case FieldKind::Param:
      if (p && size_t(v) < p->params.size() && !p->params[size_t(v)].name.empty())
        return quote_if_needed(p->params[size_t(v)].name);
      return std::to_string(v);
    default: return std::to_string(v);
  }
}

template <typename T>
std::string list(const std::vector<T>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

std::string num(double d) { return fmt::format("{}", d); }
std::string numf(float f) { return fmt::format("{}", f); }

}  // namespace

std::string format_operation(const Operation& op, SlotId s, const Program* p) {
  if (op.is_nop()) return "nop";
  const SlotDef& sd = slot(s);
  const OpDef& def = *op.def;
  bool positional = def.slot_class == SlotClass::Scalar || def.slot_class == SlotClass::Control;
  auto fv = [&](std::string_view name) { return op.fields[size_t(sd.field_index(name))]; };
  auto fd = [&](std::string_view name) -> const FieldDef& { return sd.fields[size_t(sd.field_index(name))]; };

  std::vector<std::string> parts;
  for (const OperandDef& od : def.operands) {
    std::string text;
    if (od.kind == OperandKind::Field) {
      int64_t v = fv(od.fields[0]);
      if (od.default_value && v == *od.default_value) {
        parts.emplace_back();  // omitted; kept as a hole so positional trailing omissions work
        continue;
      }
      text = format_field(fd(od.fields[0]), v, p);
    } else if (od.kind == OperandKind::Addr) {
      text = fmt::format("r{}+{}", fv(od.fields[0]), fv(od.fields[1]));
    } else {
      text = fmt::format("{}[r{}+{}]", fd(od.fields[0]).enum_def->values[size_t(fv(od.fields[0]))],
                         fv(od.fields[1]), fv(od.fields[2]));
    }
    parts.push_back(positional ? text : fmt::format("{}={}", od.name, text));
  }
  std::string out(def.mnemonic);
  if (positional) {
    // Positional operands cannot skip a hole: after the first omitted one, use name=value.
    bool sep = false, hole = false;
    for (size_t i = 0; i < parts.size(); ++i) {
      if (parts[i].empty()) {
        hole = true;
        continue;
      }
      out += sep ? ", " : " ";
      if (hole) out += fmt::format("{}=", def.operands[i].name);
      out += parts[i];
      sep = true;
    }
  } else {
    for (const auto& s2 : parts)
      if (!s2.empty()) out += " " + s2;
  }
  return out;
}

std::string format_bundle(const Bundle& b, const Program* p) {
  std::string out;
  for (const SlotDef& sd : table().slots) {
    const Operation& op = b.at(sd.id);
    if (op.is_nop()) continue;
    if (!out.empty()) out += " || ";
    out += format_operation(op, sd.id, p);
  }
  return out.empty() ? "nop" : out;
}

std::string disassemble(const Program& p) {
  std::string out;
  out += fmt::format("# vtpu program: {} bundles, container format {}\n", p.code.size(), kFormatVersion);
  if (!p.config_name.empty()) out += fmt::format(".config {}\n", quote_if_needed(p.config_name));
  if (p.config_fingerprint) out += fmt::format(".fingerprint 0x{:016x}\n", p.config_fingerprint);
  for (const DmaDescriptor& d : p.descriptors) {
    out += fmt::format(".desc {} bytes={}", quote_if_needed(d.name), d.bytes);
    if (d.src_offset) out += fmt::format(" src_off={}", d.src_offset);
    if (d.dst_offset) out += fmt::format(" dst_off={}", d.dst_offset);
    if (d.dtype != Dtype::Int8) out += fmt::format(" dtype={}", dtype_name(d.dtype));
    for (const DmaDim& dim : d.dims) out += fmt::format(" dim=[{}, {}, {}]", dim.count, dim.src_stride, dim.dst_stride);
    out += '\n';
  }
  for (const VectorParams& v : p.params) {
    VectorParams dflt;
    out += fmt::format(".vparam {}", quote_if_needed(v.name));
    if (!v.multiplier.empty()) out += " mult=" + list(v.multiplier);
    if (!v.shift.empty()) out += " shift=" + list(v.shift);
    if (v.input_zp) out += fmt::format(" in_zp={}", v.input_zp);
    if (v.output_zp) out += fmt::format(" out_zp={}", v.output_zp);
    if (v.double_round) out += " double_round=1";
    if (v.min != dflt.min) out += " min=" + num(v.min);
    if (v.max != dflt.max) out += " max=" + num(v.max);
    if (!v.scale.empty()) {
      std::vector<std::string> s;
      for (float f : v.scale) s.push_back(numf(f));
      out += " scale=" + list(s);
    }
    if (!v.bias.empty()) {
      std::vector<std::string> s;
      for (float f : v.bias) s.push_back(numf(f));
      out += " bias=" + list(s);
    }
    if (!v.window.empty()) out += " window=" + list(v.window);
    if (v.pool_stride) out += fmt::format(" pool_stride={}", v.pool_stride);
    out += '\n';
  }
  for (const TensorInfo& t : p.tensors) {
    out += fmt::format(".tensor {} role={} dtype={} shape={} addr=0x{:x}", quote_if_needed(t.name),
                       tensor_role_name(t.role), dtype_name(t.dtype), list(t.shape), t.hbm_addr);
    if (t.quant_scale != 0.0) out += " scale=" + num(t.quant_scale);
    if (t.zero_point) out += fmt::format(" zp={}", t.zero_point);
    if (t.nhwc) out += " layout=nhwc";
    if (!t.model_type.empty()) out += " model_type=" + t.model_type;
    out += '\n';
  }
  for (const ConstSegment& c : p.constants) {
    if (c.elided())
      throw InternalError("a program read without its constant bytes (isa::ReadOptions) cannot be disassembled");
    out += fmt::format(".data addr=0x{:x} hex=\"", c.hbm_addr);
    for (uint8_t b : c.data) out += fmt::format("{:02x}", b);
    out += "\"\n";
  }

  std::multimap<uint32_t, std::string> labels;
  for (const Symbol& s : p.symbols)
    if (label_ok(p, s)) labels.emplace(s.bundle, s.name);
    else out += fmt::format("# symbol {} at bundle {} cannot be a label\n", quote_if_needed(s.name), s.bundle);
  // The assembler adds a tag to the table where a `.tag` line first names it, so tags are
  // written in table order: one no bundle starts (a layer that made no code) gets its line
  // before the next tag's, and those after the last bundle's at the end.
  auto tag_line = [&](size_t t) {
    return t < p.tags.size() ? (p.tags[t].empty() ? std::string("  .tag\n") : fmt::format("  .tag {}\n", quote_if_needed(p.tags[t])))
                             : fmt::format("  # tag {} out of range\n", t);
  };
  uint16_t tag = 0;
  size_t named = 0;  // tags 1..named have had their line
  for (size_t i = 0; i < p.code.size(); ++i) {
    Bundle b = decode(p.code[i], i);
    auto [lo, hi] = labels.equal_range(uint32_t(i));
    for (auto it = lo; it != hi; ++it) out += it->second + ":\n";
    if (b.tag != tag) {
      tag = b.tag;
      for (; named + 1 < std::min<size_t>(tag, p.tags.size()); ++named) out += tag_line(named + 1);
      named = std::max<size_t>(named, std::min<size_t>(tag, p.tags.size() - 1));
      out += tag_line(tag);
    }
    out += "  " + format_bundle(b, &p) + "\n";
  }
  for (; named + 1 < p.tags.size(); ++named) out += tag_line(named + 1);
  // Labels that point one past the last bundle.
  for (const Symbol& s : p.symbols)
    if (s.bundle >= p.code.size() && label_ok(p, s)) out += s.name + ":\n";
  return out;
}

}  // namespace vtpu::isa
