// Assembler: text -> Program. Two passes: the first parses every line and records labels,
// descriptors, params and constants; the second resolves symbolic operands, checks every
// field against its range from the ISA table and encodes the bundles. This file holds the
// entry points and the first pass (lines, labels, bundles, slot placement); asm_lexer.cpp
// the lexer and parser, asm_directives.cpp the directives, asm_binding.cpp the second pass.
#include "vtpu/isa/assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "asm_internal.h"
#include "vtpu/support/files.h"

namespace vtpu::isa {

std::string Diagnostic::str() const {
  return fmt::format("{}:{}:{}: error: {}", file, line, column, message);
}

namespace {
std::string join_diags(const std::vector<Diagnostic>& d) {
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += '\n';
    s += d[i].str();
  }
  return s;
}
}  // namespace

AsmError::AsmError(std::vector<Diagnostic> diags)
    : UserError(join_diags(diags)), diags_(std::move(diags)) {}

namespace asm_detail {

Program Assembler::run(std::string_view text) {
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    ++line_no;
    try {
      do_line(line, line_no);
    } catch (const LineError& e) {
      error(e.loc, e.msg);
    }
    if (errors_.size() >= kMaxErrors) break;
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  if (errors_.empty()) second_pass();
  if (!errors_.empty()) throw AsmError(errors_);
  return std::move(prog_);
}

void Assembler::error(Loc loc, std::string msg) {
  if (errors_.size() < kMaxErrors) errors_.push_back({file_, loc.line, loc.col, std::move(msg)});
}

std::string_view Assembler::strip_comment(std::string_view line) {
  bool in_str = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '"') in_str = !in_str;
    if (in_str) continue;
    if (c == '#' || (c == '/' && i + 1 < line.size() && line[i + 1] == '/')) return line.substr(0, i);
  }
  return line;
}

// A comment-free line's text after its leading labels (`NAME:`), trimmed; `on_label(name,
// column)` is called for each label. `start` ends as the text's offset in the line.
template <class OnLabel>
std::string_view after_labels(std::string_view line, size_t& start, OnLabel on_label) {
  start = 0;
  while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
  while (true) {
    size_t j = start;
    if (j < line.size() && ident_start(line[j]) && line[j] != '.') {
      while (j < line.size() && ident_char(line[j])) ++j;
      if (j < line.size() && line[j] == ':') {
        on_label(line.substr(start, j - start), int(start) + 1);
        start = j + 1;
        while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
        continue;
      }
    }
    break;
  }
  std::string_view rest = line.substr(start);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
  return rest;
}

void Assembler::do_line(std::string_view raw, int line_no) {
  size_t start;
  std::string_view rest = after_labels(strip_comment(raw), start, [&](std::string_view name, int col) {
    define_label(std::string(name), {line_no, col});
  });
  if (rest.empty()) return;
  int col0 = int(start) + 1;
  if (rest[0] == '.') {
    if (unquoted_tag(rest, line_no, col0)) return;
    directive(lex(rest, line_no, col0), line_no);
    return;
  }
  bundle(rest, line_no, col0);
}

// `.tag NAME` with an unquoted NAME: ONNX node names (conv1-relu, /layer1/Conv,
// onnx::Add_12) are tags, so the name is the rest of the line as written, any characters
// but white space and quotes. False when the line is another directive or a quoted tag.
bool Assembler::unquoted_tag(std::string_view rest, int line_no, int col0) {
  if (rest.substr(0, 4) != ".tag" || rest.size() < 5 || !std::isspace(static_cast<unsigned char>(rest[4])))
    return false;
  size_t i = 4;
  while (std::isspace(static_cast<unsigned char>(rest[i]))) ++i;  // rest has no trailing space
  if (rest[i] == '"') return false;
  std::string_view name = rest.substr(i);
  for (size_t k = 0; k < name.size(); ++k)
    if (std::isspace(static_cast<unsigned char>(name[k])) || name[k] == '"')
      throw LineError{{line_no, col0 + int(i + k)},
                      fmt::format(".tag takes one name; quote a name with spaces or quotes: .tag \"{}\"", name)};
  current_tag_ = intern_tag(std::string(name), {line_no, col0 + int(i)});
  return true;
}

void Assembler::define_label(std::string name, Loc loc) {
  if (reg_name(name, 'r', 0) || reg_name(name, 'f', 0))
    throw LineError{loc, fmt::format("label '{}' looks like a register or flag name; rename it", name)};
  if (labels_.count(name))
    throw LineError{loc, fmt::format("label '{}' is already defined at line {}", name, labels_[name].second.line)};
  labels_[name] = {uint32_t(pending_.size()), loc};
  prog_.symbols.push_back({name, uint32_t(pending_.size())});
}

void Assembler::bundle(std::string_view text, int line_no, int col0) {
  PendingBundle pb{current_tag_, {}, {line_no, col0}};
  bool slot_used[kNumSlots] = {};
  size_t pos = 0;
  while (true) {
    size_t bar = text.find("||", pos);
    std::string_view part = text.substr(pos, bar == std::string_view::npos ? std::string_view::npos : bar - pos);
    int pcol = col0 + int(pos);
    auto toks = lex(part, line_no, pcol);
    Parser ps(toks);
    if (ps.at_end()) throw LineError{{line_no, pcol}, "empty operation between '||'"};
    Token m = ps.next();
    if (m.kind != Tok::Ident) throw LineError{m.loc, fmt::format("expected a mnemonic but found '{}'", m.text)};
    if (m.text == "nop") {
      if (!ps.at_end()) throw LineError{ps.peek().loc, "nop takes no operands"};
    } else {
      const OpDef* def = find_op(m.text);
      if (!def) throw LineError{m.loc, unknown_mnemonic(m.text)};
      SlotId s = place(*def, slot_used, m.loc);
      PendingOp op{def, s, bind(*def, ps.operands(), m.loc), m.loc};
      pb.ops.push_back(std::move(op));
    }
    if (bar == std::string_view::npos) break;
    pos = bar + 2;
  }
  check_register_writes(pb);
  if (auto e = bind_now(pb)) {
    pb.done = *e;
    pb.ops = {};
  }
  pending_.push_back(std::move(pb));
}

std::string Assembler::unknown_mnemonic(const std::string& m) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const OpDef& op : table().ops) {
    size_t d = edit_distance(m, op.mnemonic);
    if (d < best_d) best_d = d, best = std::string(op.mnemonic);
  }
  std::string msg = fmt::format("unknown operation '{}'", m);
  if (best_d <= 3) msg += fmt::format("; did you mean '{}'?", best);
  return msg + " (docs/isa.md lists every operation)";
}

size_t Assembler::edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> d(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = d[0];
    d[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = d[j];
      d[j] = std::min({d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return d[b.size()];
}

SlotId Assembler::place(const OpDef& def, bool* used, Loc loc) {
  for (const SlotDef& sd : table().slots) {
    if (sd.slot_class != def.slot_class || used[size_t(sd.id)]) continue;
    used[size_t(sd.id)] = true;
    return sd.id;
  }
  std::string_view cls = def.slot_class == SlotClass::Scalar ? "scalar (s0 and s1)" : "";
  std::string name;
  for (const SlotDef& sd : table().slots)
    if (sd.slot_class == def.slot_class) name = std::string(sd.name);
  throw LineError{loc, fmt::format("{} needs the {} slot, which this bundle already uses; "
                                   "move it to another bundle",
                                   def.mnemonic, cls.empty() ? name : std::string(cls))};
}

std::vector<std::pair<const OperandDef*, Value>> Assembler::bind(
    const OpDef& def, std::vector<std::pair<std::optional<Token>, Value>> args, Loc loc) {
  std::vector<std::pair<const OperandDef*, Value>> out;
  std::vector<bool> given(def.operands.size(), false);
  size_t positional = 0;
  bool seen_keyword = false;
  for (auto& [key, v] : args) {
    size_t idx;
    if (key) {
      seen_keyword = true;
      idx = def.operands.size();
      for (size_t k = 0; k < def.operands.size(); ++k)
        if (def.operands[k].name == key->text) idx = k;
      if (idx == def.operands.size()) {
        std::string names;
        for (const auto& o : def.operands) names += (names.empty() ? "" : ", ") + std::string(o.name);
        throw LineError{key->loc, fmt::format("{} has no operand '{}'; its operands are: {}",
                                              def.mnemonic, key->text, names.empty() ? "none" : names)};
      }
    } else {
      if (seen_keyword)
        throw LineError{v.loc, "positional operands must come before name=value operands"};
      if (positional >= def.operands.size())
        throw LineError{v.loc, fmt::format("{} takes at most {} operand(s)", def.mnemonic, def.operands.size())};
      idx = positional++;
    }
    if (given[idx])
      throw LineError{v.loc, fmt::format("operand '{}' given twice", def.operands[idx].name)};
    given[idx] = true;
    out.emplace_back(&def.operands[idx], std::move(v));
  }
  for (size_t k = 0; k < def.operands.size(); ++k)
    if (!given[k] && !def.operands[k].default_value)
      throw LineError{loc, fmt::format("{} is missing operand '{}'", def.mnemonic, def.operands[k].name)};
  return out;
}

void Assembler::check_register_writes(const PendingBundle& pb) {
  std::map<int64_t, std::string_view> writes;
  for (const PendingOp& op : pb.ops) {
    std::string_view wfield = op.def->slot_class == SlotClass::Scalar ? "rd"
                              : op.def->mnemonic == "loop"           ? "rs1"
                                                                     : "";
    if (wfield.empty()) continue;
    for (auto& [od, v] : op.bound)
      if (od->fields[0] == wfield && v.kind == Value::Reg && v.i != 0) {
        if (writes.count(v.i))
          throw LineError{v.loc, fmt::format("{} and {} both write r{} in one bundle",
                                             writes[v.i], op.def->mnemonic, v.i)};
        writes[v.i] = op.def->mnemonic;
      }
  }
}

}  // namespace asm_detail

bool is_bundle_line(std::string_view line) {
  size_t start;
  std::string_view rest = asm_detail::after_labels(asm_detail::Assembler::strip_comment(line), start, [](auto, int) {});
  return !rest.empty() && rest[0] != '.';
}

std::string quote(std::string_view s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '\n' || c == '\r' || c == '\t') {
      q += c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t";
      continue;
    }
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

Program assemble(std::string_view text, std::string_view file_name) {
  return asm_detail::Assembler(std::string(file_name)).run(text);
}

Program assemble_file(const std::filesystem::path& path) {
  require_readable_file(path, "assembly source");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError(fmt::format("{}: cannot open (does the file exist?)", path.string()));
  std::stringstream ss;
  ss << f.rdbuf();
  return assemble(ss.str(), path.string());
}

}  // namespace vtpu::isa
