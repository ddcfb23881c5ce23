// vtpu_vec_table: the vector unit's table (transcendental) functions on one fp32 element,
// bit-exact with Algo in sim/numerics/src/transcendental.cpp (docs/numerics.md,
// "Transcendental functions"): the same fp32 operations (vtpu_fp32_pkg) in the same order,
// each rounded as there. func numbers them as numerics::Transcendental does (0 exp, 1 tanh,
// 2 sigmoid, 3 gelu, 4 erf, 5 recip, 6 rsqrt: the opcodes vec.exp..vec.rsqrt minus 16).
// Implemented: exp, tanh, sigmoid, recip, rsqrt; gelu and erf give 0 (the core refuses
// them). Combinational; the whole sequence sits under `en`, so a Verilated model skips it
// in the cycles no table function runs.
module vtpu_vec_table import vtpu_num_pkg::*, vtpu_fp32_pkg::*; (
  input  logic        en,
  input  logic [2:0]  func,
  input  logic [31:0] x,
  output logic [31:0] y
);
  localparam logic [2:0] FN_EXP = 3'd0, FN_TANH = 3'd1, FN_SIGMOID = 3'd2, FN_RECIP = 3'd5, FN_RSQRT = 3'd6;
  localparam logic [31:0] ONE = 32'h3F800000, TWO = 32'h40000000;
  localparam logic [31:0] SIGN = 32'h80000000;

  // exp
  localparam logic [31:0] EXP_HI = 32'h42B20000;      // 89.0: above, +inf
  localparam logic [31:0] EXP_LO = 32'hC2D00000;      // -104.0: below, +0
  localparam logic [31:0] LOG2E = 32'h3FB8AA3B;       // 1/ln 2
  localparam logic [31:0] ROUND_MAGIC = 32'h4B400000; // 1.5 * 2^23: x + M - M rounds x to an integer
  localparam logic [31:0] LN2_HI = 32'h3F318000;      // 10 significant bits: n * LN2_HI is exact
  localparam logic [31:0] LN2_LO = 32'hB95E8083;      // ln 2 - LN2_HI
  // 1/k! for k = 2..7 (element i in bits 32i..32i+31)
  localparam logic [32*6-1:0] EXP_C = {32'h39500D01, 32'h3AB60B61, 32'h3C088889,
                                        32'h3D2AAAAB, 32'h3E2AAAAB, 32'h3F000000};
  // tanh: below 0.5 the Taylor series, coefficients of x^3, x^5, ..., x^19
  localparam logic [31:0] TANH_SMALL = 32'h3F000000;
  localparam logic [32*9-1:0] TANH_C = {32'hB97ABEBC, 32'h3A1AAC12, 32'hBABED1B2, 32'h3B6B69E8,
                                         32'hBC11371B, 32'h3CB327A4, 32'hBD5D0DD1, 32'h3E088889,
                                         32'hBEAAAAAB};

  function automatic logic [31:0] f32_sub(input logic [31:0] a, input logic [31:0] b);
    return f32_add(a, b ^ SIGN);  // as sf::sub: a NaN stays a NaN
  endfunction

  // Horner: p = c[n-1], then p = p * s + c[i] for i = n-2 down to 0, each rounded.
  function automatic logic [31:0] horner(input logic [32*9-1:0] c, input int n, input logic [31:0] s);
    logic [31:0] p;
    p = c[32*(n-1) +: 32];
    for (int i = n - 2; i >= 0; i--) p = f32_add(f32_mul(p, s), c[32*i +: 32]);
    return p;
  endfunction

  function automatic logic [31:0] f32_exp(input logic [31:0] x0);
    logic [31:0] xv, t, nf, rr, q, p, m;
    int          n, e, sh;
    xv = f32_daz(x0);
    if (f32_nan(xv[30:0])) return 32'h7FC00000;
    if (xv[30:0] == 31'd0) return ONE;
    if (f32_key(EXP_HI) < f32_key(xv)) return 32'h7F800000;  // includes +inf
    if (f32_key(xv) < f32_key(EXP_LO)) return 32'd0;         // includes -inf
    // x = n ln2 + r (rr), |r| <= ln2/2 (Cody-Waite)
    t = f32_mul(xv, LOG2E);
    nf = f32_sub(f32_add(t, ROUND_MAGIC), ROUND_MAGIC);
    rr = f32_sub(xv, f32_mul(nf, LN2_HI));
    rr = f32_sub(rr, f32_mul(nf, LN2_LO));
    // exp(r) = 1 + (r + r^2 * (1/2 + r/6 + ... + r^5/7!))
    q = horner({96'd0, EXP_C}, 6, rr);
    p = f32_add(ONE, f32_add(rr, f32_mul(f32_mul(rr, rr), q)));
    // 2^n by adding n to the exponent field (n integral, |n| <= 151 here)
    sh = 23 - (int'(nf[30:23]) - 127);
    m = (sh >= 0 && sh <= 23) ? ({8'd0, 1'b1, nf[22:0]} >> sh) : 32'd0;
    n = nf[31] ? -int'(m) : int'(m);
    e = int'(p[30:23]) + n;
    if (e >= 255) return 32'h7F800000;
    if (e <= 0) return 32'd0;  // FTZ
    return {p[31], e[7:0], p[22:0]};
  endfunction

  function automatic logic [31:0] f32_tanh(input logic [31:0] x0);
    logic [31:0] xv, ax, x2;
    xv = f32_daz(x0);
    if (f32_nan(xv[30:0])) return 32'h7FC00000;
    if (xv[30:0] == 31'd0) return xv;
    ax = {1'b0, xv[30:0]};
    if (ax < TANH_SMALL) begin  // x + x * x^2 * P(x^2)
      x2 = f32_mul(xv, xv);
      return f32_add(xv, f32_mul(xv, f32_mul(x2, horner(TANH_C, 9, x2))));
    end
    // |tanh x| = 1 - 2 / (exp(2|x|) + 1); exp overflow gives exactly 1
    return f32_sub(ONE, f32_div(TWO, f32_add(f32_exp(f32_add(ax, ax)), ONE))) | {xv[31], 31'd0};
  endfunction

  function automatic logic [31:0] table_fn(input logic [2:0] f, input logic [31:0] x0);
    logic [31:0] xv;
    case (f)
      FN_EXP: return f32_exp(x0);
      FN_TANH: return f32_tanh(x0);
      FN_SIGMOID: begin
        xv = f32_daz(x0);
        if (f32_nan(xv[30:0])) return 32'h7FC00000;
        return f32_div(ONE, f32_add(ONE, f32_exp(xv ^ SIGN)));
      end
      FN_RECIP: return f32_div(ONE, x0);
      FN_RSQRT: return f32_div(ONE, f32_sqrt(x0));
      default: return 32'd0;
    endcase
  endfunction

  always_comb begin
    if (en) y = f32_canonical(table_fn(func, x));
    else y = 32'd0;
  end
endmodule
