// vtpu_fp32_add: combinational fp32 adder under vtpu's floating-point policy
// (docs/numerics.md section 1), bit-exact with vtpu::numerics::sf::add:
//   - DAZ: an input with exponent field 0 reads as the zero of its own sign;
//   - round to nearest, ties to even, with an unbounded exponent; then a rounded magnitude
//     of 2^128 or more is infinity and one below 2^-126 is the zero with the exact sign (FTZ);
//   - every NaN result is 0x7FC00000; inf - inf is NaN;
//   - x + (-x) = +0, (-0) + (-0) = -0, (+0) + (-0) = +0.
//
// Datapath (finite, nonzero operands): order the operands by magnitude, align the smaller
// significand with a right shift that ORs the lost bits into bit 0 ("jamming"), add or
// subtract, normalize, round. Significands are 31 bits wide: the leading one at bit 30,
// 23 fraction bits at 29..7 and 7 round bits at 6..0 (the same internal form as the C++
// reference, so every intermediate has the same value).
module vtpu_fp32_add (
  input  logic [31:0] a,
  input  logic [31:0] b,
  output logic [31:0] y
);
  localparam logic [31:0] QNAN = 32'h7FC0_0000;

  logic       sa, sb;
  logic [7:0] ea, eb;
  logic [22:0] fa, fb;
  assign sa = a[31];
  assign sb = b[31];
  assign ea = a[30:23];
  assign eb = b[30:23];
  assign fa = a[22:0];
  assign fb = b[22:0];

  logic a_zero, b_zero, a_inf, b_inf, a_nan, b_nan;
  assign a_zero = (ea == 8'd0);  // zero or denormal (DAZ)
  assign b_zero = (eb == 8'd0);
  assign a_inf  = (ea == 8'hFF) && (fa == 23'd0);
  assign b_inf  = (eb == 8'hFF) && (fb == 23'd0);
  assign a_nan  = (ea == 8'hFF) && (fa != 23'd0);
  assign b_nan  = (eb == 8'hFF) && (fb != 23'd0);

  // ---- finite nonzero path ----
  logic        swap;  // |b| > |a|
  logic        s_big;
  logic [7:0]  e_big, e_small, dexp;
  logic [30:0] m_big, m_small, m_al;
  logic        sticky;
  logic        eff_add;
  logic [31:0] sum;
  logic [30:0] diff;
  logic [4:0]  lz;
  logic        found;
  logic [30:0] sig;     // leading one at bit 30 before rounding
  logic signed [9:0] exp_n;  // biased exponent, unbounded (before the range check)
  logic [6:0]  rbits;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] rsum;  // bits 6..0 only feed the carry
  /* verilator lint_on UNUSEDSIGNAL */
  logic [22:0] mant;
  logic signed [9:0] exp_r;
  logic [31:0] finite;

  always_comb begin
    swap    = b[30:0] > a[30:0];
    s_big   = swap ? sb : sa;
    e_big   = swap ? eb : ea;
    e_small = swap ? ea : eb;
    m_big   = {1'b1, (swap ? fb : fa), 7'd0};
    m_small = {1'b1, (swap ? fa : fb), 7'd0};
    dexp    = e_big - e_small;
    // Align: shift right by dexp, jamming the lost bits into bit 0.
    sticky = 1'b0;
    if (dexp >= 8'd31) begin
      m_al = 31'd1;  // everything shifted out; m_small is never 0
    end else begin
      sticky = |(m_small & ((31'd1 << dexp[4:0]) - 31'd1));
      m_al   = (m_small >> dexp[4:0]) | {30'd0, sticky};
    end
    eff_add = (sa == sb);
    sum  = {1'b0, m_big} + {1'b0, m_al};
    diff = m_big - m_al;
    // Leading zeros of diff (diff is nonzero whenever it is used).
    lz = 5'd0;
    found = 1'b0;
    for (int i = 30; i >= 0; i--) begin
      if (!found && diff[i]) begin
        lz = 5'(30 - i);
        found = 1'b1;
      end
    end
    if (eff_add) begin
      if (sum[31]) begin
        sig   = sum[31:1] | {30'd0, sum[0]};
        exp_n = $signed({2'b00, e_big}) + 10'sd1;
      end else begin
        sig   = sum[30:0];
        exp_n = $signed({2'b00, e_big});
      end
    end else begin
      sig   = diff << lz;
      exp_n = $signed({2'b00, e_big}) - $signed({5'd0, lz});
    end
    // Round to nearest even at bit 7.
    rbits = sig[6:0];
    rsum  = {1'b0, sig} + 32'h40;
    if (rsum[31]) begin  // rounding carried out: 2.0 -> 1.0 x 2
      mant  = rsum[30:8];
      exp_r = exp_n + 10'sd1;
    end else begin
      mant  = rsum[29:7];
      exp_r = exp_n;
    end
    if (rbits == 7'h40) mant[0] = 1'b0;
    if (exp_r >= 10'sd255) finite = {s_big, 8'hFF, 23'd0};  // overflow: infinity
    else if (exp_r <= 10'sd0) finite = {s_big, 31'd0};      // FTZ after rounding
    else finite = {s_big, exp_r[7:0], mant};
    // Exact cancellation gives +0.
    if (!eff_add && a[30:0] == b[30:0]) finite = 32'd0;
  end

  // ---- special operands ----
  always_comb begin
    if (a_nan || b_nan) y = QNAN;
    else if (a_inf && b_inf && sa != sb) y = QNAN;
    else if (a_inf) y = a;
    else if (b_inf) y = b;
    else if (a_zero && b_zero) y = {sa & sb, 31'd0};
    else if (a_zero) y = b;
    else if (b_zero) y = a;
    else y = finite;
  end
endmodule
