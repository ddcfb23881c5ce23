// vtpu_fp32_mul: fp32 x fp32 under docs/numerics.md §1 — DAZ on the inputs, canonical NaN
// (any NaN, 0 x inf), the exact 48-bit product of the significands rounded to 24 bits
// with ties to even and an unbounded exponent, then overflow to infinity and FTZ after
// rounding (a tiny result becomes the zero with the product's sign). Combinational.
module vtpu_fp32_mul (
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] y
);
  logic        sa, sb, s;
  logic [7:0]  ea, eb;
  logic        a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  assign sa = a[31];
  assign sb = b[31];
  assign s  = sa ^ sb;
  assign ea = a[30:23];
  assign eb = b[30:23];
  assign a_zero = (ea == 8'd0);  // zero or denormal (DAZ)
  assign b_zero = (eb == 8'd0);
  assign a_inf  = (ea == 8'hFF) && (a[22:0] == 23'd0);
  assign b_inf  = (eb == 8'hFF) && (b[22:0] == 23'd0);
  assign a_nan  = (ea == 8'hFF) && (a[22:0] != 23'd0);
  assign b_nan  = (eb == 8'hFF) && (b[22:0] != 23'd0);

  logic [47:0] prod;
  assign prod = {24'd0, 1'b1, a[22:0]} * {24'd0, 1'b1, b[22:0]};  // leading one at bit 46 or 47

  always_comb begin
    logic [31:0] sig;      // leading one at bit 30, 7 round bits, sticky in bit 0
    logic [6:0]  round_bits;
    logic        sticky;
    int          e;
    if (prod[47]) begin
      e = int'(ea) + int'(eb) - 126;
      sticky = prod[16:0] != 17'd0;
      sig = {1'b0, prod[47:17]} | {31'd0, sticky};
    end else begin
      e = int'(ea) + int'(eb) - 127;
      sticky = prod[15:0] != 16'd0;
      sig = {1'b0, prod[46:16]} | {31'd0, sticky};
    end
    round_bits = sig[6:0];
    sig = sig + 32'h40;
    if (sig[31]) begin  // rounding carried out: 2.0 -> 1.0 x 2
      sig = sig >> 1;
      e = e + 1;
    end
    sig = sig >> 7;
    if (round_bits == 7'h40) sig[0] = 1'b0;  // an exact tie goes to even
    if (a_nan || b_nan) y = 32'h7FC00000;
    else if (a_inf || b_inf) y = (a_zero || b_zero) ? 32'h7FC00000 : {s, 8'hFF, 23'd0};
    else if (a_zero || b_zero) y = {s, 31'd0};
    else if (e >= 255) y = {s, 8'hFF, 23'd0};
    else if (e <= 0) y = {s, 31'd0};
    else y = {s, e[7:0], sig[22:0]};
  end
endmodule
