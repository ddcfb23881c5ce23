// vtpu_fp32_sqrt: fp32 square root under docs/numerics.md §1, as numerics/ sf::sqrt:
// DAZ, sqrt(+-0) = +-0, negative or NaN -> canonical NaN, sqrt(+inf) = +inf; otherwise the
// bit-by-bit integer root of the significand (exponent made even) to 31 bits with a sticky
// bit for a nonzero remainder, rounded to 24 bits with ties to even (never out of range).
// Combinational.
module vtpu_fp32_sqrt import vtpu_fp32_pkg::*; (
  input  logic [31:0] a,
  output logic [31:0] y
);
  assign y = f32_sqrt(a);  // the datapath: vtpu_fp32_pkg
endmodule
