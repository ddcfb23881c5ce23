#pragma once
// The assembler's pieces shared by its files: the lexer's tokens, parsed operand values, the
// line parser, bundles waiting for the second pass and the Assembler class itself (its first
// pass in assembler.cpp, its directives in asm_directives.cpp, its second pass in
// asm_binding.cpp; the lexer and parser in asm_lexer.cpp). Internal to vtpu_isa.
#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "vtpu/isa/assembler.h"

namespace vtpu::isa::asm_detail {

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

bool ident_start(char c);
bool ident_char(char c);

std::vector<Token> lex(std::string_view s, int line, int col0);

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

std::optional<uint64_t> parse_u64(std::string_view t);
std::optional<int64_t> parse_int(std::string_view t);
std::optional<double> parse_float(std::string_view t);
std::optional<int64_t> reg_name(std::string_view t, char prefix, int64_t n);

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
  std::vector<std::pair<std::optional<Token>, Value>> operands();

  // Values nest (lists in lists, '-' before '-'): a line nested deeper than any program
  // needs is refused, before the recursion could overflow the stack.
  static constexpr int kMostNesting = 32;
  Value value();

  // r3, r3+16, r3-0, 16, NAME
  Value addr_expr();

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

  Program run(std::string_view text);
  // `line` without its comment (`#` or `//` outside a string).
  static std::string_view strip_comment(std::string_view line);

 private:
  // ---- first pass (assembler.cpp) ----
  void error(Loc loc, std::string msg);
  void do_line(std::string_view raw, int line_no);
  bool unquoted_tag(std::string_view rest, int line_no, int col0);
  void define_label(std::string name, Loc loc);
  void bundle(std::string_view text, int line_no, int col0);
  static std::string unknown_mnemonic(const std::string& m);
  static size_t edit_distance(std::string_view a, std::string_view b);
  SlotId place(const OpDef& def, bool* used, Loc loc);
  std::vector<std::pair<const OperandDef*, Value>> bind(
      const OpDef& def, std::vector<std::pair<std::optional<Token>, Value>> args, Loc loc);
  void check_register_writes(const PendingBundle& pb);

  // ---- directives (asm_directives.cpp) ----
  void directive(std::vector<Token> toks, int line_no);
  uint16_t intern_tag(const std::string& t, Loc loc);
  int64_t int_of(const Value& v, const std::string& what, int64_t lo, int64_t hi);
  double float_of(const Value& v, const std::string& what);
  const std::vector<Value>& list_of(const Value& v, const std::string& what);
  Dtype dtype_of(const Value& v);
  template <typename F>
  void each_key(const std::vector<std::pair<std::optional<Token>, Value>>& args, const char* dir,
                const std::vector<const char*>& allowed, F&& f);
  void check_new_symbol(std::map<std::string, uint32_t>& table, const Token& n, const char* what);
  void desc_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args);
  void vparam_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args);
  static std::optional<TensorRole> parse_role(std::string_view s);
  std::vector<uint8_t> encode_values(const Value& v, Dtype dt, bool bits);
  void tensor_directive(const Token& n, const std::vector<std::pair<std::optional<Token>, Value>>& args, bool is_const);
  void data_directive(const Token& d, const std::vector<std::pair<std::optional<Token>, Value>>& args);

  // ---- second pass (asm_binding.cpp) ----
  void second_pass();
  EncodedBundle bind_bundle(const PendingBundle& pb);
  std::optional<EncodedBundle> bind_now(const PendingBundle& pb);
  void check_range(const OpDef& def, const FieldDef& f, int64_t v, Loc loc);
  int64_t symbol(const std::map<std::string, uint32_t>& m, const Value& v, const char* what);
  void bind_value(Operation& op, const SlotDef& sd, const OpDef& def, const OperandDef& od, const Value& v);

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

}  // namespace vtpu::isa::asm_detail
