// vtpu_fp32_pkg: fp32 add, multiply, divide and square root under docs/numerics.md §1
// (DAZ on the inputs, round to nearest even with an unbounded exponent, then overflow to
// infinity and FTZ after rounding, canonical NaN), bit-exact with vtpu::numerics::sf, as
// functions. vtpu_fp32_div and vtpu_fp32_sqrt wrap f32_div and f32_sqrt; f32_add and
// f32_mul restate vtpu_fp32_add and vtpu_fp32_mul step for step (those modules stay as
// they are: rtl/synth/area.sh synthesizes them with yosys 0.23, which does not parse these
// functions), and the Fpu add and fp32 multiply tests check every operand pair on both.
// The vector lanes' table functions call them so that the whole sequence sits under one
// condition (a Verilated model then skips it in the cycles that do not need it).
package vtpu_fp32_pkg;
  localparam logic [31:0] F32_QNAN = 32'h7FC0_0000;

  // sig: leading one at bit 30 (or 31 after a carry, handled here), 7 round bits, sticky in
  // bit 0; e: the biased exponent of sig / 2^30, unbounded. Ties to even, then the range.
  function automatic logic [31:0] f32_round_pack(input logic s, input int e0, input logic [31:0] sig0);
    logic [31:0] sig;
    logic [6:0]  round_bits;
    int          e;
    e = e0;
    sig = sig0;
    round_bits = sig[6:0];
    sig = sig + 32'h40;
    if (sig[31]) begin  // rounding carried out: 2.0 -> 1.0 x 2
      sig = sig >> 1;
      e = e + 1;
    end
    sig = sig >> 7;
    if (round_bits == 7'h40) sig[0] = 1'b0;  // an exact tie goes to even
    if (e >= 255) return {s, 8'hFF, 23'd0};
    if (e <= 0) return {s, 31'd0};
    return {s, e[7:0], sig[22:0]};
  endfunction

  // a + b. Datapath (finite, nonzero operands): order by magnitude, align the smaller
  // significand with a right shift that ORs the lost bits into bit 0 ("jamming"), add or
  // subtract, normalize, round. Significands are 31 bits wide (leading one at bit 30, 7
  // round bits), the internal form of the C++ reference, so every intermediate agrees.
  // x + (-x) = +0, (-0) + (-0) = -0, inf - inf = NaN.
  function automatic logic [31:0] f32_add(input logic [31:0] a, input logic [31:0] b);
    logic        sa, sb, swap, s_big, sticky, eff_add, found;
    logic [7:0]  ea, eb, e_big, e_small, dexp;
    logic [30:0] m_big, m_small, m_al, diff, sig;
    logic [31:0] sum;
    logic [4:0]  lz;
    logic signed [9:0] exp_n, exp_r;
    logic [6:0]  rbits;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [31:0] rsum;  // bits 6..0 only feed the carry
    /* verilator lint_on UNUSEDSIGNAL */
    logic [22:0] mant;
    logic        a_zero, b_zero, a_inf, b_inf;
    sa = a[31];
    sb = b[31];
    ea = a[30:23];
    eb = b[30:23];
    a_zero = (ea == 8'd0);  // zero or denormal (DAZ)
    b_zero = (eb == 8'd0);
    a_inf = (ea == 8'hFF) && (a[22:0] == 23'd0);
    b_inf = (eb == 8'hFF) && (b[22:0] == 23'd0);
    if ((ea == 8'hFF && a[22:0] != 23'd0) || (eb == 8'hFF && b[22:0] != 23'd0)) return F32_QNAN;
    if (a_inf && b_inf && sa != sb) return F32_QNAN;
    if (a_inf) return a;
    if (b_inf) return b;
    if (a_zero && b_zero) return {sa & sb, 31'd0};
    if (a_zero) return b;
    if (b_zero) return a;
    eff_add = (sa == sb);
    if (!eff_add && a[30:0] == b[30:0]) return 32'd0;  // exact cancellation gives +0
    swap    = b[30:0] > a[30:0];
    s_big   = swap ? sb : sa;
    e_big   = swap ? eb : ea;
    e_small = swap ? ea : eb;
    m_big   = {1'b1, (swap ? b[22:0] : a[22:0]), 7'd0};
    m_small = {1'b1, (swap ? a[22:0] : b[22:0]), 7'd0};
    dexp    = e_big - e_small;
    if (dexp >= 8'd31) begin
      m_al = 31'd1;  // everything shifted out; m_small is never 0
    end else begin
      sticky = |(m_small & ((31'd1 << dexp[4:0]) - 31'd1));
      m_al   = (m_small >> dexp[4:0]) | {30'd0, sticky};
    end
    sum  = {1'b0, m_big} + {1'b0, m_al};
    diff = m_big - m_al;
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
    if (exp_r >= 10'sd255) return {s_big, 8'hFF, 23'd0};  // overflow: infinity
    if (exp_r <= 10'sd0) return {s_big, 31'd0};           // FTZ after rounding
    return {s_big, exp_r[7:0], mant};
  endfunction

  // a * b: the exact 48-bit product of the significands, rounded; 0 x inf = NaN.
  function automatic logic [31:0] f32_mul(input logic [31:0] a, input logic [31:0] b);
    logic        s, a_zero, b_zero, a_inf, b_inf;
    logic [47:0] prod;
    s = a[31] ^ b[31];
    a_zero = (a[30:23] == 8'd0);
    b_zero = (b[30:23] == 8'd0);
    a_inf = (a[30:23] == 8'hFF) && (a[22:0] == 23'd0);
    b_inf = (b[30:23] == 8'hFF) && (b[22:0] == 23'd0);
    if ((a[30:23] == 8'hFF && !a_inf) || (b[30:23] == 8'hFF && !b_inf)) return F32_QNAN;
    if (a_inf || b_inf) return (a_zero || b_zero) ? F32_QNAN : {s, 8'hFF, 23'd0};
    if (a_zero || b_zero) return {s, 31'd0};
    prod = {24'd0, 1'b1, a[22:0]} * {24'd0, 1'b1, b[22:0]};  // leading one at bit 46 or 47
    if (prod[47])
      return f32_round_pack(s, int'(a[30:23]) + int'(b[30:23]) - 126, {1'b0, prod[47:17]} | {31'd0, prod[16:0] != 17'd0});
    return f32_round_pack(s, int'(a[30:23]) + int'(b[30:23]) - 127, {1'b0, prod[46:16]} | {31'd0, prod[15:0] != 16'd0});
  endfunction

  // a / b: the quotient of the significands (the dividend doubled when smaller, so the
  // quotient is in [1, 2)) to 30 fraction bits plus a sticky bit for a nonzero remainder.
  // 0/0 and inf/inf are NaN, x/0 the signed infinity.
  function automatic logic [31:0] f32_div(input logic [31:0] a, input logic [31:0] b);
    logic        s, a_zero, b_zero, a_inf, b_inf;
    logic [55:0] num;
    logic [23:0] mb;
    logic [31:0] q;
    int          e;
    s = a[31] ^ b[31];
    a_zero = (a[30:23] == 8'd0);
    b_zero = (b[30:23] == 8'd0);
    a_inf = (a[30:23] == 8'hFF) && (a[22:0] == 23'd0);
    b_inf = (b[30:23] == 8'hFF) && (b[22:0] == 23'd0);
    if ((a[30:23] == 8'hFF && !a_inf) || (b[30:23] == 8'hFF && !b_inf)) return F32_QNAN;
    if (a_inf) return b_inf ? F32_QNAN : {s, 8'hFF, 23'd0};
    if (b_inf) return {s, 31'd0};
    if (b_zero) return a_zero ? F32_QNAN : {s, 8'hFF, 23'd0};
    if (a_zero) return {s, 31'd0};
    mb = {1'b1, b[22:0]};
    e = int'(a[30:23]) - int'(b[30:23]) + 127;
    num = 56'({1'b1, a[22:0]}) << 30;
    if ({1'b1, a[22:0]} < mb) begin
      num = num << 1;
      e = e - 1;
    end
    q = 32'(num / 56'(mb));  // leading one at bit 30
    return f32_round_pack(s, e, q | {31'd0, (num % 56'(mb)) != 56'd0});
  endfunction

  // sqrt(a): sqrt(+-0) = +-0, negative or NaN -> NaN, sqrt(+inf) = +inf; otherwise the
  // bit-by-bit integer root of the significand (exponent made even) to 31 bits, sticky bit
  // for a nonzero remainder (never out of range).
  function automatic logic [31:0] f32_sqrt(input logic [31:0] a);
    logic [63:0] n, root, rem, bit_;
    int          e;
    if (a[30:23] == 8'hFF && a[22:0] != 23'd0) return F32_QNAN;
    if (a[30:23] == 8'd0) return {a[31], 31'd0};  // +-0 or a denormal (DAZ)
    if (a[31]) return F32_QNAN;
    if (a[30:23] == 8'hFF) return a;              // +inf
    e = int'(a[30:23]) - 127;
    n = {40'd0, 1'b1, a[22:0]};
    if (e[0]) begin  // make the exponent even
      n = n << 1;
      e = e - 1;
    end
    n = n << 37;     // floor(sqrt(m / 2^23) * 2^30) = isqrt(m * 2^37)
    root = 64'd0;
    rem = n;
    for (int i = 31; i >= 0; i--) begin
      bit_ = 64'd1 << (2 * i);
      if (rem >= root + bit_) begin
        rem = rem - (root + bit_);
        root = (root >> 1) + bit_;
      end else begin
        root = root >> 1;
      end
    end
    return f32_round_pack(1'b0, e / 2 + 127, root[31:0] | {31'd0, rem != 64'd0});
  endfunction
endpackage
