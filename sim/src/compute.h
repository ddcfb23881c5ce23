#pragma once
// Internal: the arithmetic of the MXU and the vector unit over whole tiles and rows, on top
// of the bit-exact kernels in numerics/ (docs/numerics.md).
#include <cstddef>
#include <cstdint>
#include <string>

#include "vtpu/isa/isa.h"
#include "vtpu/isa/program.h"

namespace vtpu::sim::detail {

struct Tile;

// B input rows (row j at a + j * lda elements, K valid elements each) times the K x N tile,
// into accumulator rows of C words (ldacc words apart). Columns N..C-1 get a zero partial sum.
void matmul_compute(isa::Dtype dtype, const uint8_t* a, size_t lda, const Tile& w, uint32_t* acc,
                    size_t ldacc, size_t B, uint32_t C, bool accumulate);

// One vector operation over `rows` rows of W elements. Pointers address the first row of
// each operand; UB rows are W * size(dtype) bytes, accumulator rows W 32-bit words — both
// packed, so row i is at ptr + i * row_bytes. b may be null for unary operations.
struct VecOperand {
  uint8_t* ptr = nullptr;
  isa::Dtype dtype = isa::Dtype::Int8;
  size_t row_bytes = 0;
};

// Returns an empty string on success, else what is wrong with the operand types (the
// caller adds the bundle context).
std::string vector_check(const isa::OpDef& def, isa::Dtype dt, isa::Dtype odt,
                         const isa::VectorParams* param, uint32_t W);

void vector_compute(const isa::OpDef& def, const VecOperand& dst, const VecOperand& a,
                    const VecOperand& b, bool bcast, size_t rows, uint32_t W,
                    const isa::VectorParams* param);

}  // namespace vtpu::sim::detail
