#pragma once
// Element types of the vector unit and the MXU. The numeric values equal the ISA's `dtype`
// enumeration (docs/isa.md), so a decoded field converts with a static_cast.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace vtpu::numerics {

enum class NumType : uint8_t { Int8 = 0, Bf16 = 1, Int32 = 2, Fp32 = 3, Uint8 = 4, Int16 = 5 };

constexpr size_t num_type_size(NumType t) {
  switch (t) {
    case NumType::Int8:
    case NumType::Uint8: return 1;
    case NumType::Bf16:
    case NumType::Int16: return 2;
    case NumType::Int32:
    case NumType::Fp32: return 4;
  }
  return 0;
}

constexpr bool is_float_type(NumType t) { return t == NumType::Bf16 || t == NumType::Fp32; }

std::string_view num_type_name(NumType t);

}  // namespace vtpu::numerics
