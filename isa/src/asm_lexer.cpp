// Assembler, lexer and parser: one line's text -> tokens -> operand values (numbers,
// registers, flags, names, strings, lists and addresses), before they are bound to fields.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "asm_internal.h"

namespace vtpu::isa::asm_detail {

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

std::vector<std::pair<std::optional<Token>, Value>> Parser::operands() {
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

Value Parser::value() {
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

Value Parser::addr_expr() {
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

}  // namespace vtpu::isa::asm_detail
