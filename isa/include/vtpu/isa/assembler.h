#pragma once
// Text form of vtpu programs. docs/isa.md describes the syntax; in short:
//
//   # comment            // comment
//   .desc tile bytes=64 dim=[4, 256, 64]      a DMA descriptor
//   loop_top:                                 a label
//     li r1, 16 || dma.load desc=tile src=r2 dst=r3 flag=f1 || wait f2
//
// One bundle per line, operations separated by "||". Scalar and control operations take
// positional operands; every operation also accepts name=value operands.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "vtpu/isa/program.h"

namespace vtpu::isa {

struct Diagnostic {
  std::string file;
  int line = 0;
  int column = 0;
  std::string message;
  std::string str() const;  // "file:line:col: error: message"
};

// Every error found in one assembly run (up to a limit), each with its location.
class AsmError : public UserError {
 public:
  explicit AsmError(std::vector<Diagnostic> diags);
  const std::vector<Diagnostic>& diagnostics() const { return diags_; }

 private:
  std::vector<Diagnostic> diags_;
};

Program assemble(std::string_view text, std::string_view file_name);

// Whether an assembly line holds a bundle (after its labels and comment), as the assembler
// reads it: a generator can count its program's bundles before assembling it.
bool is_bundle_line(std::string_view line);
Program assemble_file(const std::filesystem::path& path);

// `s` as an assembly string literal, as the lexer reads it back: in double quotes, with `"`
// and `\` escaped by a backslash and a newline, carriage return or tab written `\n`, `\r`,
// `\t` (so a name with a line break stays on its line).
std::string quote(std::string_view s);

// Canonical text of a program; assembling it gives back an equal Program.
std::string disassemble(const Program& p);

// One operation in canonical form ("add r1, r2, r3"); names descriptors, params and labels
// from the program when given.
std::string format_operation(const Operation& op, SlotId s, const Program* p = nullptr);
std::string format_bundle(const Bundle& b, const Program* p = nullptr);

}  // namespace vtpu::isa
