// vtpu_fp32_exp: exp(x) in fp32 as the fixed operation sequence of Algo::exp in
// sim/numerics/src/transcendental.cpp (docs/numerics.md, "Transcendental functions"):
// DAZ; NaN -> canonical NaN, +-0 -> 1, x > 89 -> +inf, x < -104 -> +0; otherwise the
// Cody-Waite reduction x = n ln2 + r, a degree-7 Taylor polynomial of exp(r), and 2^n
// applied by adding n to the exponent field (overflow -> +inf, FTZ). Combinational.
module vtpu_fp32_exp import vtpu_num_pkg::*; (
  input  logic [31:0] x,
  output logic [31:0] y
);
  localparam logic [31:0] ONE = 32'h3F800000;
  localparam logic [31:0] EXP_HI = 32'h42B20000;      // 89.0
  localparam logic [31:0] EXP_LO = 32'hC2D00000;      // -104.0
  localparam logic [31:0] LOG2E = 32'h3FB8AA3B;       // 1/ln 2
  localparam logic [31:0] ROUND_MAGIC = 32'h4B400000; // 1.5 * 2^23: x + M - M rounds to an integer
  localparam logic [31:0] LN2_HI = 32'h3F318000;      // 10 significant bits: n * LN2_HI is exact
  localparam logic [31:0] LN2_LO = 32'hB95E8083;      // ln 2 - LN2_HI
  // 1/k! for k = 2..7, C[0] = 1/2 in the low bits
  localparam logic [32*6-1:0] EXP_C = {32'h39500D01, 32'h3AB60B61, 32'h3C088889,
                                        32'h3D2AAAAB, 32'h3E2AAAAB, 32'h3F000000};

  logic [31:0] xd, t, tm, nf, nh, r0, nl, r, q, rr, rrq, s, p;
  assign xd = f32_daz(x);
  // x = n ln2 + r, |r| <= ln2/2
  vtpu_fp32_mul u_t   (.a(xd), .b(LOG2E), .y(t));
  vtpu_fp32_add u_tm  (.a(t), .b(ROUND_MAGIC), .y(tm));
  vtpu_fp32_add u_nf  (.a(tm), .b({~ROUND_MAGIC[31], ROUND_MAGIC[30:0]}), .y(nf));
  vtpu_fp32_mul u_nh  (.a(nf), .b(LN2_HI), .y(nh));
  vtpu_fp32_add u_r0  (.a(xd), .b({~nh[31], nh[30:0]}), .y(r0));
  vtpu_fp32_mul u_nl  (.a(nf), .b(LN2_LO), .y(nl));
  vtpu_fp32_add u_r   (.a(r0), .b({~nl[31], nl[30:0]}), .y(r));
  // exp(r) = 1 + (r + r^2 * (1/2 + r/6 + ... + r^5/7!))
  vtpu_fp32_horner #(.N(6), .C(EXP_C)) u_q (.s(r), .y(q));
  vtpu_fp32_mul u_rr  (.a(r), .b(r), .y(rr));
  vtpu_fp32_mul u_rrq (.a(rr), .b(q), .y(rrq));
  vtpu_fp32_add u_s   (.a(r), .b(rrq), .y(s));
  vtpu_fp32_add u_p   (.a(ONE), .b(s), .y(p));

  // n as an integer: nf is integral with |nf| <= 151 whenever it is used
  int n, e;
  always_comb begin
    int ne, sh;
    logic [31:0] m;
    ne = int'(nf[30:23]) - 127;
    sh = 23 - ne;
    m = (sh >= 0 && sh <= 31) ? ({8'd0, 1'b1, nf[22:0]} >> sh) : 32'd0;
    if (nf[30:0] == 31'd0) n = 0;
    else n = nf[31] ? -int'(m) : int'(m);
    e = int'(p[30:23]) + n;
  end

  always_comb begin
    if (f32_nan(xd[30:0])) y = 32'h7FC00000;
    else if (xd[30:0] == 31'd0) y = ONE;
    else if (f32_key(EXP_HI) < f32_key(xd)) y = 32'h7F800000;  // includes +inf
    else if (f32_key(xd) < f32_key(EXP_LO)) y = 32'd0;         // includes -inf
    else if (e >= 255) y = 32'h7F800000;
    else if (e <= 0) y = 32'd0;                                 // FTZ
    else y = {p[31], e[7:0], p[22:0]};
  end
endmodule
