// vtpu_fp32_div: fp32 / fp32 under docs/numerics.md §1, as numerics/ sf::div: DAZ on
// the inputs, canonical NaN (any NaN, 0/0, inf/inf), x/0 = signed infinity, the quotient of
// the significands to 30 bits plus a sticky bit, rounded to 24 bits with ties to even and
// an unbounded exponent, then overflow to infinity and FTZ after rounding. Combinational.
module vtpu_fp32_div import vtpu_fp32_pkg::*; (
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] y
);
  assign y = f32_div(a, b);  // the datapath: vtpu_fp32_pkg
endmodule
