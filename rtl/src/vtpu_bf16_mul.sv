// vtpu_bf16_mul: the exact product of two bf16 values as an fp32 bit pattern, bit-exact with
// vtpu::numerics::sf::mul(bf16 << 16, bf16 << 16) (docs/numerics.md sections 1 and 2).
//
// The 8 x 8-bit significand product is an input (`sig_prod` = {1,a[6:0]} * {1,b[6:0]}) so a
// processing element can share one multiplier between its int8 and bf16 modes; the
// unit-test top (rtl/tb/vtpu_fpu_tb.sv) brings its own multiplier.
//
// A bf16 x bf16 product has at most 16 significant bits, so it is exact in fp32: no rounding
// happens. Only the range is checked: an exponent of 255 or more gives infinity, one of 0 or
// less gives the zero with the product's sign (FTZ; the exact value is the rounded value).
// DAZ: a bf16 with exponent field 0 reads as a signed zero. NaN in, or 0 x inf, gives
// 0x7FC00000.
module vtpu_bf16_mul (
  input  logic [15:0] a,
  input  logic [15:0] b,
  input  logic [15:0] sig_prod,
  output logic [31:0] y
);
  logic       sa, sb, sign;
  logic [7:0] ea, eb;
  logic [6:0] fa, fb;
  assign {sa, ea, fa} = a;
  assign {sb, eb, fb} = b;
  assign sign = sa ^ sb;

  logic a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  assign a_zero = (ea == 8'd0);
  assign b_zero = (eb == 8'd0);
  assign a_inf  = (ea == 8'hFF) && (fa == 7'd0);
  assign b_inf  = (eb == 8'hFF) && (fb == 7'd0);
  assign a_nan  = (ea == 8'hFF) && (fa != 7'd0);
  assign b_nan  = (eb == 8'hFF) && (fb != 7'd0);

  logic signed [9:0] exp_p;
  logic [22:0] frac_p;
  always_comb begin
    // value = sig_prod / 2^14 * 2^(ea + eb - 254); sig_prod is in [2^14, 2^16).
    if (sig_prod[15]) begin
      exp_p  = $signed({2'b00, ea}) + $signed({2'b00, eb}) - 10'sd126;
      frac_p = {sig_prod[14:0], 8'd0};
    end else begin
      exp_p  = $signed({2'b00, ea}) + $signed({2'b00, eb}) - 10'sd127;
      frac_p = {sig_prod[13:0], 9'd0};
    end
    if (a_nan || b_nan) y = 32'h7FC0_0000;
    else if (a_inf || b_inf) y = (a_zero || b_zero) ? 32'h7FC0_0000 : {sign, 8'hFF, 23'd0};
    else if (a_zero || b_zero) y = {sign, 31'd0};
    else if (exp_p >= 10'sd255) y = {sign, 8'hFF, 23'd0};
    else if (exp_p <= 10'sd0) y = {sign, 31'd0};
    else y = {sign, exp_p[7:0], frac_p};
  end
endmodule

