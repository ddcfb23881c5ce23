// Any byte string given to the program reader either loads or is rejected with a
// UserError; loaded programs decode or are rejected, and disassemble without crashing.
#include <cstddef>
#include <cstdint>

#include "vtpu/isa/assembler.h"
#include "vtpu/isa/program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vtpu::isa;
  try {
    Program p = deserialize({data, size}, "fuzz");
    decode_program(p);
    (void)disassemble(p);
  } catch (const vtpu::UserError&) {
  }
  // Raw bundle decoding: every 64-byte window is either legal or a DecodeError.
  if (size >= kBundleBytes) {
    EncodedBundle b;
    for (unsigned i = 0; i < kBundleWords; ++i) {
      uint64_t w = 0;
      for (unsigned k = 0; k < 8; ++k) w |= uint64_t(data[i * 8 + k]) << (8 * k);
      b[i] = w;
    }
    try {
      Bundle d = decode(b, 0);
      if (encode(d) != b) __builtin_trap();  // a legal encoding must re-encode identically
    } catch (const DecodeError&) {
    }
  }
  return 0;
}
