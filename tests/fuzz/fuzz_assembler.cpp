// Any text either assembles or gives AsmError. What assembles must survive
// disassemble -> assemble unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vtpu/isa/assembler.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vtpu::isa;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  Program p;
  try {
    p = assemble(text, "fuzz.s");
  } catch (const vtpu::UserError&) {
    return 0;
  }
  std::string canon = disassemble(p);
  Program again = assemble(canon, "canon.s");
  if (disassemble(again) != canon) __builtin_trap();
  return 0;
}
