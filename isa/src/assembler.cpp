// Assembler: text -> Program. Two passes: the first parses every line and records labels,
// descriptors, params and constants; the second resolves symbolic operands, checks every
// field against its range from the ISA table and encodes the bundles.
#include "vtpu/isa/assembler.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <variant>

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

namespace {

constexpr size_t kMaxErrors = 20;

struct Loc {
  int line = 0;
  int col = 0;
};

// Thrown inside a line; caught per line so one bad line does not hide the next ones.
struct LineError {
  Loc loc;
  std::string msg;
};

enum class Tok { Ident, Number, String, Punct, End };

struct Token {
  Tok kind = Tok::End;
  std::string text;
  Loc loc;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$'; }

std::vector<Token> lex(std::string_view s, int line, int col0) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    Loc loc{line, col0 + int(i)};
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (c == '"') {
      size_t j = i + 1;
      std::string v;
      while (j < s.size() && s[j] != '"') {
        if (s[j] == '\\' && j + 1 < s.size()) {
          char e = s[++j];  // \n \r \t name control characters; any other escaped character is itself
          v += e == 'n' ? '\n' : e == 'r' ? '\r' : e == 't' ? '\t' : e;
          ++j;
          continue;
        }
        v += s[j++];
      }
      if (j >= s.size()) throw LineError{loc, "unterminated string"};
      out.push_back({Tok::String, v, loc});
      i = j + 1;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' || s[j] == '_' ||
                              ((s[j] == '+' || s[j] == '-') && j > i && (s[j - 1] == 'e' || s[j - 1] == 'E') &&
                               !(s.substr(i, 2) == "0x" || s.substr(i, 2) == "0X"))))
        ++j;
      out.push_back({Tok::Number, std::string(s.substr(i, j - i)), loc});
      i = j;
    } else if (ident_start(c)) {
      size_t j = i;
      while (j < s.size() && ident_char(s[j])) ++j;
      out.push_back({Tok::Ident, std::string(s.substr(i, j - i)), loc});
      i = j;
    } else if (std::strchr("=[]+-,:", c)) {
      out.push_back({Tok::Punct, std::string(1, c), loc});
      ++i;
    } else {
      throw LineError{loc, fmt::format("unexpected character '{}'", c)};
    }
  }
  out.push_back({Tok::End, "", {line, col0 + int(s.size())}});
  return out;
}

// A parsed operand value before it is bound to a field.
struct Value {
  enum Kind { Int, Float, Ident, Reg, Flag, String, Addr, Mem, List } kind = Int;
  int64_t i = 0;
  double f = 0;
  std::string text;  // Ident, String, Mem space name
  std::optional<int64_t> reg;  // Addr / Mem
  int64_t off = 0;             // Addr / Mem
  std::string off_sym;         // Addr / Mem offset given by name (.equ)
  std::vector<Value> list;
  Loc loc;
};

std::optional<uint64_t> parse_u64(std::string_view t) {
  std::string s;
  for (char c : t)
    if (c != '_') s += c;
  int base = 10;
  std::string_view v = s;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) base = 16, v.remove_prefix(2);
  else if (v.size() > 2 && v[0] == '0' && (v[1] == 'b' || v[1] == 'B')) base = 2, v.remove_prefix(2);
  uint64_t u = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), u, base);
  if (ec != std::errc() || p != v.data() + v.size()) return std::nullopt;
  return u;
}

std::optional<int64_t> parse_int(std::string_view t) {
  auto u = parse_u64(t);
  if (!u || *u > uint64_t(INT64_MAX)) return std::nullopt;
  return int64_t(*u);
}

std::optional<double> parse_float(std::string_view t) {
  std::string s(t);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

std::optional<int64_t> reg_name(std::string_view t, char prefix, int64_t n) {
  if (t.size() < 2 || t[0] != prefix) return std::nullopt;
  int64_t v = 0;
  for (char c : t.substr(1)) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    v = v * 10 + (c - '0');
    if (v > 1000) break;
  }
  if (t.size() > 2 && t[1] == '0') return std::nullopt;
  (void)n;
  return v;
}

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  const Token& peek(size_t k = 0) const { return t_[std::min(p_ + k, t_.size() - 1)]; }
  Token next() { return t_[std::min(p_++, t_.size() - 1)]; }
  bool at_end() const { return peek().kind == Tok::End; }
  bool is_punct(const char* s, size_t k = 0) const {
    return peek(k).kind == Tok::Punct && peek(k).text == s;
  }
  void expect_punct(const char* s) {
    if (!is_punct(s)) throw LineError{peek().loc, fmt::format("expected '{}' but found '{}'", s, describe(peek()))};
    next();
  }
  static std::string describe(const Token& t) { return t.kind == Tok::End ? "end of line" : t.text; }

  // name=value or value; commas between operands are optional.
  std::vector<std::pair<std::optional<Token>, Value>> operands() {
    std::vector<std::pair<std::optional<Token>, Value>> out;
    while (!at_end()) {
      std::optional<Token> key;
      if (peek().kind == Tok::Ident && is_punct("=", 1)) {
        key = next();
        next();
      }
      out.emplace_back(key, value());
      if (is_punct(",")) next();
    }
    return out;
  }

  // Values nest (lists in lists, '-' before '-'): a line nested deeper than any program
  // needs is refused, before the recursion could overflow the stack.
  static constexpr int kMostNesting = 32;
  Value value() {
    Token t = peek();
    struct Depth {
      int& d;
      ~Depth() { --d; }
    } depth{++depth_};
    if (depth_ > kMostNesting)
      throw LineError{t.loc, fmt::format("values nested more than {} deep (lists in lists, or '-' repeated)", kMostNesting)};
    Value v;
    v.loc = t.loc;
    if (is_punct("[")) {
      next();
      // A list [a, b, c] or a bracketed address [r1+4].
      if (peek().kind == Tok::Ident && reg_name(peek().text, 'r', 0) &&
          (is_punct("+", 1) || is_punct("-", 1) || is_punct("]", 1))) {
        v = addr_expr();
        v.loc = t.loc;
        expect_punct("]");
        return v;
      }
      v.kind = Value::List;
      while (!is_punct("]")) {
        if (at_end()) throw LineError{peek().loc, "unterminated list: expected ']'"};
        v.list.push_back(value());
        if (is_punct(",")) next();
      }
      next();
      return v;
    }
    if (is_punct("-")) {
      next();
      Value inner = value();
      if (inner.kind == Value::Int) inner.i = -inner.i;
      else if (inner.kind == Value::Float) inner.f = -inner.f;
      else if (inner.kind == Value::Ident && (inner.text == "inf")) {
        inner.kind = Value::Float;
        inner.f = -INFINITY;
      } else
        throw LineError{t.loc, "'-' must precede a number"};
      inner.loc = t.loc;
      return inner;
    }
    if (t.kind == Tok::Number) {
      next();
      if (auto i = parse_int(t.text)) {
        v.kind = Value::Int;
        v.i = *i;
        v.f = double(*i);
      } else if (auto f = parse_float(t.text)) {
        v.kind = Value::Float;
        v.f = *f;
      } else {
        throw LineError{t.loc, fmt::format("malformed number '{}'", t.text)};
      }
      return v;
    }
    if (t.kind == Tok::String) {
      next();
      v.kind = Value::String;
      v.text = t.text;
      return v;
    }
    if (t.kind == Tok::Ident) {
      if ((t.text == "ub" || t.text == "acc") && is_punct("[", 1)) {
        next();
        next();
        Value a = addr_expr();
        expect_punct("]");
        a.kind = Value::Mem;
        a.text = t.text;
        a.loc = t.loc;
        return a;
      }
      if (reg_name(t.text, 'r', 0) && (is_punct("+", 1) || is_punct("-", 1))) {
        v = addr_expr();
        v.loc = t.loc;
        return v;
      }
      next();
      if (auto r = reg_name(t.text, 'r', 0)) {
        if (*r >= kNumScalarRegs)
          throw LineError{t.loc, fmt::format("register {} does not exist; registers are r0..r{}", t.text, kNumScalarRegs - 1)};
        v.kind = Value::Reg;
        v.i = *r;
      } else if (auto f = reg_name(t.text, 'f', 0)) {
        if (*f >= kNumFlags)
          throw LineError{t.loc, fmt::format("flag {} does not exist; flags are f0..f{}", t.text, kNumFlags - 1)};
        v.kind = Value::Flag;
        v.i = *f;
      } else if (t.text == "inf" || t.text == "nan") {
        v.kind = Value::Float;
        v.f = t.text == "inf" ? INFINITY : NAN;
      } else {
        v.kind = Value::Ident;
        v.text = t.text;
      }
      return v;
    }
    throw LineError{t.loc, fmt::format("expected an operand but found '{}'", describe(t))};
  }

  // r3, r3+16, r3-0, 16, NAME
  Value addr_expr() {
    Value v;
    v.kind = Value::Addr;
    v.loc = peek().loc;
    Token t = next();
    auto offset = [&](Token o, bool negative) {
      if (o.kind == Tok::Number) {
        auto i = parse_int(o.text);
        if (!i) throw LineError{o.loc, fmt::format("malformed offset '{}'", o.text)};
        v.off = negative ? -*i : *i;
      } else if (o.kind == Tok::Ident) {
        if (negative) throw LineError{o.loc, "a named offset cannot be negated"};
        v.off_sym = o.text;
      } else {
        throw LineError{o.loc, fmt::format("expected an offset but found '{}'", describe(o))};
      }
    };
    if (t.kind == Tok::Ident && reg_name(t.text, 'r', 0)) {
      v.reg = *reg_name(t.text, 'r', 0);
      if (*v.reg >= kNumScalarRegs)
        throw LineError{t.loc, fmt::format("register {} does not exist; registers are r0..r{}", t.text, kNumScalarRegs - 1)};
      if (is_punct("+") || is_punct("-")) {
        bool neg = next().text == "-";
        offset(next(), neg);
      }
    } else {
      offset(t, false);
    }
    return v;
  }

 private:
  std::vector<Token> t_;
  size_t p_ = 0;
  int depth_ = 0;  // value()'s nesting
};

// A bundle waiting for the second pass.
struct PendingOp {
  const OpDef* def;
  SlotId slot;
  std::vector<std::pair<const OperandDef*, Value>> bound;
  Loc loc;
};
struct PendingBundle {
  uint16_t tag;
  std::vector<PendingOp> ops;
  Loc loc;
  std::optional<EncodedBundle> done;  // bound when parsed (Assembler::bind_now); ops then empty
};

class Assembler {
 public:
  explicit Assembler(std::string file) : file_(std::move(file)) {}

  Program run(std::string_view text) {
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

 private:
  void error(Loc loc, std::string msg) {
    if (errors_.size() < kMaxErrors) errors_.push_back({file_, loc.line, loc.col, std::move(msg)});
  }

  static std::string_view strip_comment(std::string_view line) {
    bool in_str = false;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (c == '"') in_str = !in_str;
      if (in_str) continue;
      if (c == '#' || (c == '/' && i + 1 < line.size() && line[i + 1] == '/')) return line.substr(0, i);
    }
    return line;
  }

  void do_line(std::string_view raw, int line_no) {
    std::string_view line = strip_comment(raw);
    size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    // Labels: NAME: at the start of the line.
    while (true) {
      size_t j = start;
      if (j < line.size() && ident_start(line[j]) && line[j] != '.') {
        while (j < line.size() && ident_char(line[j])) ++j;
        if (j < line.size() && line[j] == ':') {
          define_label(std::string(line.substr(start, j - start)), {line_no, int(start) + 1});
          start = j + 1;
          while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
          continue;
        }
      }
      break;
    }
    std::string_view rest = line.substr(start);
    while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.back()))) rest.remove_suffix(1);
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
  bool unquoted_tag(std::string_view rest, int line_no, int col0) {
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

  void define_label(std::string name, Loc loc) {
    if (reg_name(name, 'r', 0) || reg_name(name, 'f', 0))
      throw LineError{loc, fmt::format("label '{}' looks like a register or flag name; rename it", name)};
    if (labels_.count(name))
      throw LineError{loc, fmt::format("label '{}' is already defined at line {}", name, labels_[name].second.line)};
    labels_[name] = {uint32_t(pending_.size()), loc};
    prog_.symbols.push_back({name, uint32_t(pending_.size())});
  }

  void bundle(std::string_view text, int line_no, int col0) {
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

  static std::string unknown_mnemonic(const std::string& m) {
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

  static size_t edit_distance(std::string_view a, std::string_view b) {
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

  SlotId place(const OpDef& def, bool* used, Loc loc) {
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

  std::vector<std::pair<const OperandDef*, Value>> bind(
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

  void check_register_writes(const PendingBundle& pb) {
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

  // ---- directives ----
  void directive(std::vector<Token> toks, int line_no) {
    Parser ps(toks);
    Token d = ps.next();
    const std::string& name = d.text;
    auto need_name = [&](const char* what) {
      Token n = ps.next();
      if (n.kind != Tok::Ident && n.kind != Tok::String)
        throw LineError{n.loc, fmt::format("{} needs a name", what)};
      return n;
    };
    if (name == ".tag") {
      if (ps.at_end()) {
        current_tag_ = 0;
        return;
      }
      Token n = ps.next();
      if (n.kind != Tok::Ident && n.kind != Tok::String)
        throw LineError{n.loc, ".tag needs a name (an identifier or a \"string\")"};
      if (!ps.at_end()) throw LineError{ps.peek().loc, ".tag takes one name"};
      current_tag_ = intern_tag(n.text, n.loc);
    } else if (name == ".config") {
      // Preset names contain '-' (tiny-8x8): take the rest of the line as written.
      std::string n;
      while (!ps.at_end()) n += ps.next().text;
      if (n.empty()) throw LineError{d.loc, ".config needs a preset name or a config file path"};
      prog_.config_name = n;
    } else if (name == ".fingerprint") {
      // A 64-bit hash: all of it, the top bit too (vtpu disasm prints it in hex).
      if (ps.at_end()) throw LineError{d.loc, ".fingerprint needs an integer"};
      Token t = ps.next();
      auto u = t.kind == Tok::Number ? parse_u64(t.text) : std::nullopt;
      if (!u) throw LineError{t.loc, ".fingerprint needs an integer"};
      prog_.config_fingerprint = *u;
    } else if (name == ".equ") {
      Token n = need_name(".equ");
      if (ps.is_punct(",")) ps.next();
      Value v = ps.value();
      equs_[n.text] = int_of(v, "an .equ value", INT64_MIN, INT64_MAX);
    } else if (name == ".desc") {
      Token n = need_name(".desc");
      desc_directive(n, ps.operands());
    } else if (name == ".vparam") {
      Token n = need_name(".vparam");
      vparam_directive(n, ps.operands());
    } else if (name == ".tensor" || name == ".const") {
      Token n = need_name(name.c_str());
      tensor_directive(n, ps.operands(), name == ".const");
    } else if (name == ".data") {
      data_directive(d, ps.operands());
    } else {
      throw LineError{d.loc, fmt::format("unknown directive '{}'; known: .tag .config .fingerprint "
                                         ".equ .desc .vparam .tensor .const .data",
                                         name)};
    }
    (void)line_no;
  }

  uint16_t intern_tag(const std::string& t, Loc loc) {
    if (t.empty()) return 0;
    for (size_t i = 0; i < prog_.tags.size(); ++i)
      if (prog_.tags[i] == t) return uint16_t(i);
    if (prog_.tags.size() >= (1u << kTagBits))
      throw LineError{loc, fmt::format("more than {} distinct tags", (1u << kTagBits) - 1)};
    prog_.tags.push_back(t);
    return uint16_t(prog_.tags.size() - 1);
  }

  int64_t int_of(const Value& v, const std::string& what, int64_t lo, int64_t hi) {
    int64_t x;
    if (v.kind == Value::Int) x = v.i;
    else if (v.kind == Value::Ident && equs_.count(v.text)) x = equs_[v.text];
    else throw LineError{v.loc, fmt::format("{} must be an integer", what)};
    if (x < lo || x > hi) throw LineError{v.loc, fmt::format("{} = {} out of range [{}, {}]", what, x, lo, hi)};
    return x;
  }

  double float_of(const Value& v, const std::string& what) {
    if (v.kind == Value::Int) return double(v.i);
    if (v.kind == Value::Float) return v.f;
    if (v.kind == Value::Ident && equs_.count(v.text)) return double(equs_[v.text]);
    throw LineError{v.loc, fmt::format("{} must be a number", what)};
  }

  const std::vector<Value>& list_of(const Value& v, const std::string& what) {
    if (v.kind != Value::List) throw LineError{v.loc, fmt::format("{} must be a list like [1, 2, 3]", what)};
    return v.list;
  }

  Dtype dtype_of(const Value& v) {
    if (v.kind == Value::Ident)
      if (auto d = parse_dtype(v.text)) return *d;
    throw LineError{v.loc, "dtype must be one of int8, bf16, int32, fp32, uint8, int16"};
  }

  template <typename F>
  void each_key(const std::vector<std::pair<std::optional<Token>, Value>>& args, const char* dir,
                const std::vector<const char*>& allowed, F&& f) {
    std::map<std::string, int> seen;
    for (auto& [k, v] : args) {
      if (!k) throw LineError{v.loc, fmt::format("{} takes name=value pairs", dir)};
      bool ok = false;
      for (const char* a : allowed) ok |= k->text == a;
      if (!ok) {
        std::string names;
        for (const char* a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
        throw LineError{k->loc, fmt::format("{} has no key '{}'; its keys are: {}", dir, k->text, names)};
      }
      if (seen[k->text]++ && k->text != "dim")
        throw LineError{k->loc, fmt::format("key '{}' given twice", k->text)};
      f(k->text, v);
    }
  }

  void check_new_symbol(std::map<std::string, uint32_t>& table, const Token& n, const char* what) {
    if (table.count(n.text)) throw LineError{n.loc, fmt::format("{} '{}' is already defined", what, n.text)};
  }

  void desc_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args) {
    check_new_symbol(descs_, n, "descriptor");
    DmaDescriptor d;
    d.name = n.text;
    bool has_bytes = false;
    each_key(args, ".desc", {"bytes", "src_off", "dst_off", "dtype", "dim"}, [&](const std::string& k, const Value& v) {
      if (k == "bytes") d.bytes = uint32_t(int_of(v, "bytes", 1, UINT32_MAX)), has_bytes = true;
      else if (k == "src_off") d.src_offset = uint64_t(int_of(v, "src_off", 0, INT64_MAX));
      else if (k == "dst_off") d.dst_offset = uint64_t(int_of(v, "dst_off", 0, INT64_MAX));
      else if (k == "dtype") d.dtype = dtype_of(v);
      else if (k == "dim") {
        const auto& l = list_of(v, "dim");
        if (l.size() != 3) throw LineError{v.loc, "dim must be [count, src_stride, dst_stride]"};
        if (d.dims.size() >= kMaxDmaDims)
          throw LineError{v.loc, fmt::format("a descriptor has at most {} dims", kMaxDmaDims)};
        d.dims.push_back({uint32_t(int_of(l[0], "dim count", 1, UINT32_MAX)),
                          int_of(l[1], "dim src_stride", INT32_MIN, INT32_MAX),
                          int_of(l[2], "dim dst_stride", INT32_MIN, INT32_MAX)});
      }
    });
    if (!has_bytes) throw LineError{n.loc, fmt::format(".desc {} needs bytes=N (contiguous bytes per row)", n.text)};
    if (prog_.descriptors.size() >= (1u << 12)) throw LineError{n.loc, "more than 4096 descriptors"};
    descs_[n.text] = uint32_t(prog_.descriptors.size());
    prog_.descriptors.push_back(std::move(d));
  }

  void vparam_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args) {
    check_new_symbol(params_, n, "vector param");
    VectorParams p;
    p.name = n.text;
    auto ints = [&](const Value& v, const char* what, int64_t lo, int64_t hi) {
      std::vector<int32_t> out;
      if (v.kind == Value::List)
        for (const Value& x : v.list) out.push_back(int32_t(int_of(x, what, lo, hi)));
      else
        out.push_back(int32_t(int_of(v, what, lo, hi)));
      return out;
    };
    auto floats = [&](const Value& v, const char* what) {
      std::vector<float> out;
      if (v.kind == Value::List)
        for (const Value& x : v.list) out.push_back(float(float_of(x, what)));
      else
        out.push_back(float(float_of(v, what)));
      return out;
    };
    each_key(args, ".vparam", {"mult", "shift", "in_zp", "out_zp", "double_round", "min", "max", "scale", "bias", "window", "pool_stride"},
             [&](const std::string& k, const Value& v) {
               if (k == "mult") p.multiplier = ints(v, "mult", INT32_MIN, INT32_MAX);
               else if (k == "shift") p.shift = ints(v, "shift", 2, 62);
               else if (k == "in_zp") p.input_zp = int32_t(int_of(v, "in_zp", INT32_MIN, INT32_MAX));
               else if (k == "out_zp") p.output_zp = int32_t(int_of(v, "out_zp", INT32_MIN, INT32_MAX));
               else if (k == "double_round") p.double_round = int_of(v, "double_round", 0, 1) != 0;
               else if (k == "min") p.min = float_of(v, "min");
               else if (k == "max") p.max = float_of(v, "max");
               else if (k == "scale") p.scale = floats(v, "scale");
               else if (k == "bias") p.bias = floats(v, "bias");
               else if (k == "window") p.window = ints(v, "window", INT32_MIN, INT32_MAX);
               else if (k == "pool_stride") p.pool_stride = int32_t(int_of(v, "pool_stride", 0, INT32_MAX));
             });
    if (p.min > p.max) throw LineError{n.loc, fmt::format(".vparam {}: min {} is greater than max {}", n.text, p.min, p.max)};
    if (prog_.params.size() >= (1u << 12)) throw LineError{n.loc, "more than 4096 vector params"};
    params_[n.text] = uint32_t(prog_.params.size());
    prog_.params.push_back(std::move(p));
  }

  static std::optional<TensorRole> parse_role(std::string_view s) {
    for (auto r : {TensorRole::Input, TensorRole::Output, TensorRole::Constant, TensorRole::Scratch})
      if (tensor_role_name(r) == s) return r;
    return std::nullopt;
  }

  std::vector<uint8_t> encode_values(const Value& v, Dtype dt, bool bits);

  void tensor_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args, bool is_const) {
    for (const auto& t : prog_.tensors)
      if (t.name == n.text) throw LineError{n.loc, fmt::format("tensor '{}' is already defined", n.text)};
    TensorInfo t;
    t.name = n.text;
    t.role = is_const ? TensorRole::Constant : TensorRole::Input;
    bool has_addr = false, has_shape = false, has_role = is_const;
    const Value* values = nullptr;
    bool bits = false;
    static const std::vector<const char*> kConstKeys{"dtype", "shape", "addr", "scale", "zp", "values", "bits"};
    static const std::vector<const char*> kTensorKeys{"role", "dtype", "shape", "addr", "scale", "zp", "layout", "model_type"};
    const auto& keys = is_const ? kConstKeys : kTensorKeys;
    each_key(args, is_const ? ".const" : ".tensor", keys, [&](const std::string& k, const Value& v) {
      if (k == "role") {
        auto r = v.kind == Value::Ident ? parse_role(v.text) : std::nullopt;
        if (!r) throw LineError{v.loc, "role must be one of input, output, const, scratch"};
        t.role = *r;
        has_role = true;
      } else if (k == "dtype") t.dtype = dtype_of(v);
      else if (k == "shape") {
        // A model's empty input or output may have a 0 dimension (no bytes); constants may not.
        for (const Value& x : list_of(v, "shape")) t.shape.push_back(int_of(x, "shape dimension", is_const ? 1 : 0, INT32_MAX));
        has_shape = true;
      } else if (k == "addr") t.hbm_addr = uint64_t(int_of(v, "addr", 0, INT64_MAX)), has_addr = true;
      else if (k == "scale") t.quant_scale = float_of(v, "scale");
      else if (k == "zp") t.zero_point = int32_t(int_of(v, "zp", INT32_MIN, INT32_MAX));
      else if (k == "layout") {
        if (v.kind != Value::Ident || (v.text != "nhwc" && v.text != "rowmajor"))
          throw LineError{v.loc, "layout must be rowmajor or nhwc"};
        t.nhwc = v.text == "nhwc";
      } else if (k == "model_type") {
        const auto& known = model_types();
        if (v.kind != Value::Ident || std::find(known.begin(), known.end(), v.text) == known.end())
          throw LineError{v.loc, fmt::format("model_type must be one of {}", fmt::join(known, ", "))};
        t.model_type = v.text;
      }
      else if (k == "values" || k == "bits") {
        if (values) throw LineError{v.loc, "give either values= or bits=, not both"};
        values = &v;
        bits = k == "bits";
      }
    });
    const char* dir = is_const ? ".const" : ".tensor";
    if (!has_role) throw LineError{n.loc, fmt::format("{} {} needs role=input|output|const|scratch", dir, n.text)};
    if (!has_shape) throw LineError{n.loc, fmt::format("{} {} needs shape=[...]", dir, n.text)};
    if (!has_addr) throw LineError{n.loc, fmt::format("{} {} needs addr=N (its HBM byte address)", dir, n.text)};
    if (is_const) {
      if (!values) throw LineError{n.loc, fmt::format(".const {} needs values=[...] or bits=[...]", n.text)};
      auto data = encode_values(*values, t.dtype, bits);
      if (data.size() != t.bytes())
        throw LineError{values->loc, fmt::format(".const {}: shape holds {} bytes of {} but {} were given", n.text,
                                                 t.bytes(), dtype_name(t.dtype), data.size())};
      prog_.constants.push_back({t.hbm_addr, std::move(data)});
    }
    prog_.tensors.push_back(std::move(t));
  }

  void data_directive(const Token& d, const std::vector<std::pair<std::optional<Token>, Value>>& args) {
    ConstSegment seg;
    bool has_addr = false, has_hex = false;
    each_key(args, ".data", {"addr", "hex"}, [&](const std::string& k, const Value& v) {
      if (k == "addr") seg.hbm_addr = uint64_t(int_of(v, "addr", 0, INT64_MAX)), has_addr = true;
      else {
        if (v.kind != Value::String) throw LineError{v.loc, "hex must be a \"string\" of hex digits"};
        if (v.text.size() % 2) throw LineError{v.loc, "hex string has an odd number of digits"};
        for (size_t i = 0; i < v.text.size(); i += 2) {
          auto b = parse_int("0x" + v.text.substr(i, 2));
          if (!b) throw LineError{v.loc, fmt::format("'{}' is not a hex byte", v.text.substr(i, 2))};
          seg.data.push_back(uint8_t(*b));
        }
        has_hex = true;
      }
    });
    if (!has_addr || !has_hex) throw LineError{d.loc, ".data needs addr=N and hex=\"...\""};
    prog_.constants.push_back(std::move(seg));
  }

  // ---- second pass ----
  void second_pass() {
    if (pending_.size() >= (size_t(1) << 24)) {
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

  EncodedBundle bind_bundle(const PendingBundle& pb) {
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
  std::optional<EncodedBundle> bind_now(const PendingBundle& pb) {
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

  void check_range(const OpDef& def, const FieldDef& f, int64_t v, Loc loc) {
    if (v < f.min || v > f.max)
      throw LineError{loc, fmt::format("{}: field '{}' = {} out of range [{}, {}]", def.mnemonic, f.name, v, f.min, f.max)};
  }

  int64_t symbol(const std::map<std::string, uint32_t>& m, const Value& v, const char* what) {
    auto it = m.find(v.text);
    if (it == m.end()) throw LineError{v.loc, fmt::format("unknown {} '{}'", what, v.text)};
    return it->second;
  }

  void bind_value(Operation& op, const SlotDef& sd, const OpDef& def, const OperandDef& od, const Value& v) {
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

  std::string file_;
  Program prog_;
  std::vector<Diagnostic> errors_;
  std::vector<PendingBundle> pending_;
  bool equ_read_ = false;  // bind_value consulted .equ names (bind_now)
  std::map<std::string, std::pair<uint32_t, Loc>> labels_;
  std::map<std::string, uint32_t> descs_, params_;
  std::map<std::string, int64_t> equs_;
  uint16_t current_tag_ = 0;
};

uint16_t float_to_bf16_rne(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return uint16_t((u >> 16) | 0x40);  // keep it a quiet NaN
  uint32_t lsb = (u >> 16) & 1;
  u += 0x7fff + lsb;
  return uint16_t(u >> 16);
}

std::vector<uint8_t> Assembler::encode_values(const Value& v, Dtype dt, bool bits) {
  const auto& l = list_of(v, bits ? "bits" : "values");
  std::vector<uint8_t> out;
  auto put = [&](uint64_t x, unsigned n) {
    for (unsigned i = 0; i < n; ++i) out.push_back(uint8_t(x >> (8 * i)));
  };
  unsigned n = dtype_bytes(dt);
  for (const Value& x : l) {
    if (bits) {
      int64_t hi = n == 8 ? INT64_MAX : (int64_t{1} << (8 * n)) - 1;
      put(uint64_t(int_of(x, "bits element", 0, hi)), n);
      continue;
    }
    switch (dt) {
      case Dtype::Int8: put(uint64_t(int_of(x, "int8 value", -128, 127)), 1); break;
      case Dtype::Uint8: put(uint64_t(int_of(x, "uint8 value", 0, 255)), 1); break;
      case Dtype::Int16: put(uint64_t(int_of(x, "int16 value", INT16_MIN, INT16_MAX)), 2); break;
      case Dtype::Int32: put(uint64_t(int_of(x, "int32 value", INT32_MIN, INT32_MAX)), 4); break;
      case Dtype::Fp32: {
        float f = float(float_of(x, "fp32 value"));
        uint32_t u;
        std::memcpy(&u, &f, 4);
        put(u, 4);
        break;
      }
      case Dtype::Bf16: put(float_to_bf16_rne(float(float_of(x, "bf16 value"))), 2); break;
    }
  }
  return out;
}

}  // namespace

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
  return Assembler(std::string(file_name)).run(text);
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
