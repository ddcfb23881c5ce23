// vtpu_fp32_div: fp32 / fp32 under docs/numerics.md §1, as sim/numerics sf::div: DAZ on
// the inputs, canonical NaN (any NaN, 0/0, inf/inf), x/0 = signed infinity, the quotient of
// the significands to 30 bits plus a sticky bit, rounded to 24 bits with ties to even and
// an unbounded exponent, then overflow to infinity and FTZ after rounding. Combinational.
module vtpu_fp32_div (
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] y
);
  logic        s;
  logic [7:0]  ea, eb;
  logic        a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  assign s  = a[31] ^ b[31];
  assign ea = a[30:23];
  assign eb = b[30:23];
  assign a_zero = (ea == 8'd0);  // zero or denormal (DAZ)
  assign b_zero = (eb == 8'd0);
  assign a_inf  = (ea == 8'hFF) && (a[22:0] == 23'd0);
  assign b_inf  = (eb == 8'hFF) && (b[22:0] == 23'd0);
  assign a_nan  = (ea == 8'hFF) && (a[22:0] != 23'd0);
  assign b_nan  = (eb == 8'hFF) && (b[22:0] != 23'd0);

  logic [55:0] num;  // the dividend significand (shifted so the quotient is in [1, 2)) * 2^30
  logic [23:0] mb;
  logic [31:0] q;    // leading one at bit 30
  logic        rem_nz;
  int          e0;
  always_comb begin
    mb = {1'b1, b[22:0]};
    if ({1'b1, a[22:0]} < mb) begin
      num = 56'({1'b1, a[22:0]}) << 31;  // 2 ma * 2^30
      e0 = int'(ea) - int'(eb) + 126;
    end else begin
      num = 56'({1'b1, a[22:0]}) << 30;
      e0 = int'(ea) - int'(eb) + 127;
    end
    q = 32'(num / 56'(mb));
    rem_nz = (num % 56'(mb)) != 56'd0;
  end

  always_comb begin
    logic [31:0] sig;  // leading one at bit 30, 7 round bits, sticky in bit 0
    logic [6:0]  round_bits;
    int          e;
    e = e0;
    sig = q | {31'd0, rem_nz};
    round_bits = sig[6:0];
    sig = sig + 32'h40;
    if (sig[31]) begin  // rounding carried out: 2.0 -> 1.0 x 2
      sig = sig >> 1;
      e = e + 1;
    end
    sig = sig >> 7;
    if (round_bits == 7'h40) sig[0] = 1'b0;  // an exact tie goes to even
    if (a_nan || b_nan) y = 32'h7FC00000;
    else if (a_inf) y = b_inf ? 32'h7FC00000 : {s, 8'hFF, 23'd0};
    else if (b_inf) y = {s, 31'd0};
    else if (b_zero) y = a_zero ? 32'h7FC00000 : {s, 8'hFF, 23'd0};
    else if (a_zero) y = {s, 31'd0};
    else if (e >= 255) y = {s, 8'hFF, 23'd0};
    else if (e <= 0) y = {s, 31'd0};
    else y = {s, e[7:0], sig[22:0]};
  end
endmodule
