// vtpu_vec_table_pkg: the vector unit's table (transcendental) functions on one fp32 element,
// bit-exact with Algo in numerics/src/transcendental.cpp (docs/numerics.md,
// "Transcendental functions"): the same fp32 operations (vtpu_fp32_pkg) in the same order,
// each rounded as there. func numbers them as numerics::Transcendental does (0 exp, 1 tanh,
// 2 sigmoid, 3 gelu, 4 erf, 5 recip, 6 rsqrt, 7 log: the opcodes vec.exp..vec.log minus 16).
// vtpu_vector evaluates vec_table for every lane in one loop under the condition that a
// table operation runs: a Verilated model then skips it in every other cycle, and the loop
// (too large to unroll) holds one copy of the code whatever the number of lanes.
package vtpu_vec_table_pkg;
  import vtpu_num_pkg::*;
  import vtpu_fp32_pkg::*;

  localparam logic [2:0] FN_EXP = 3'd0, FN_TANH = 3'd1, FN_SIGMOID = 3'd2, FN_GELU = 3'd3, FN_ERF = 3'd4,
                         FN_RECIP = 3'd5, FN_RSQRT = 3'd6, FN_LOG = 3'd7;
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
  function automatic logic [31:0] horner(input logic [32*12-1:0] c, input int n, input logic [31:0] s);
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
    q = horner({192'd0, EXP_C}, 6, rr);
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


  // erf for |u| < 1: u * sum c_n u^2n, n = 0..11
  localparam logic [32*12-1:0] ERF_C = {32'hB0A8EB8C, 32'h327E62B9, 32'hB42FBA17, 32'h35DCF365,
                                         32'hB77A692E, 32'h38FCD193, 32'hBA6016DA, 32'h3BAB2DE7,
                                         32'hBCDC1672, 32'h3DE71791, 32'hBEC093A3, 32'h3F906EBB};
  // erfc(y) = exp(-y^2) * G(1/y) / y, G a polynomial in s = 1/y - mid on three intervals of 1/y
  localparam logic [31:0] ERF_MAX_X = 32'h40800000;    // 4.0: erf rounds to +-1 beyond
  localparam logic [31:0] GELU_TAIL_U = 32'h3ECCCCCD;  // 0.4: gelu(x < 0) uses the erfc form from here
  localparam logic [31:0] GELU_MAX_U = 32'h41180000;   // 9.5: beyond, Phi rounds to 0 or 1
  localparam logic [31:0] VELTKAMP = 32'h45800800;     // 2^12 + 1: splits 24 bits into 12 + 12
  localparam logic [31:0] HALF = 32'h3F000000;
  localparam logic [31:0] INV_SQRT2 = 32'h3F3504F3;
  localparam logic [31:0] G_MID_INNER = 32'h3FE00000;  // 1/y in [1, 2.5]
  localparam logic [32*12-1:0] G_INNER = {64'd0, 32'h38A879DF, 32'hB94DFBEB, 32'h39A3B49D, 32'hBA0A8CDA,
                                          32'h3A29994B, 32'h39C71B51, 32'hBBCA7376, 32'h3CE9A3AC,
                                          32'hBDD2E2FB, 32'h3EA9EED2};
  localparam logic [31:0] G_MID_NEAR = 32'h3F400000;   // 1/y in [0.5, 1]
  localparam logic [32*12-1:0] G_NEAR = {128'd0, 32'hBAE20798, 32'hBC87915C, 32'h3D1AC86A, 32'hBD4EF7CF,
                                         32'h3D2508E1, 32'h3C9E8120, 32'hBE2D2390, 32'h3EEFB53C};
  localparam logic [31:0] G_MID_FAR = 32'h3E9AE148;    // 1/y in [0.105, 0.5]
  localparam logic [32*12-1:0] G_FAR = {128'd0, 32'hBE490A28, 32'h3EA36A4B, 32'hBE1F3360, 32'hBDAA0BE4,
                                        32'h3E543E64, 32'hBE093F33, 32'hBE0A858E, 32'h3F0A925E};

  // log: x = 2^k m, m in (sqrt(1/2), sqrt 2], f = m - 1, s = f / (2 + f),
  // log(1 + f) = f - (hfsq - (s (hfsq + R(s^2)) + k ln2_lo)), hfsq = f^2 / 2, then + k ln2_hi
  localparam logic [31:0] SQRT2 = 32'h3FB504F3;        // mantissas above it are halved
  localparam logic [32*12-1:0] LOG_C = {224'd0, 32'h3E3A2E8C, 32'h3E638E39, 32'h3E924925, 32'h3ECCCCCD,
                                        32'h3F2AAAAB};  // 2/3, 2/5, 2/7, 2/9, 2/11

  // An integer k with |k| < 2^24 as fp32 (exact)
  function automatic logic [31:0] int_to_f32(input int k);
    logic [31:0] a;
    int          e;
    if (k == 0) return 32'd0;
    a = (k < 0) ? 32'(-k) : 32'(k);
    e = 0;
    for (int i = 0; i < 24; i++) if (a[i]) e = i;
    return {k < 0, 8'(127 + e), 23'((a << (23 - e)) & 32'h007FFFFF)};
  endfunction

  function automatic logic less(input logic [31:0] a, input logic [31:0] b);  // non-NaN a < b
    return f32_key(a) < f32_key(b);
  endfunction

  function automatic logic [31:0] erf_small(input logic [31:0] u);
    return f32_mul(u, horner(ERF_C, 12, f32_mul(u, u)));
  endfunction


  // v * v = hi + lo exactly (Dekker's product with Veltkamp's split; v >= 1, no overflow)
  function automatic void square(input logic [31:0] v, output logic [31:0] hi, output logic [31:0] lo);
    logic [31:0] c, yh, yl;
    c = f32_mul(v, VELTKAMP);
    yh = f32_sub(c, f32_sub(c, v));
    yl = f32_sub(v, yh);
    hi = f32_mul(v, v);
    lo = f32_add(f32_add(f32_sub(f32_mul(yh, yh), hi), f32_mul(f32_add(yh, yh), yl)), f32_mul(yl, yl));
  endfunction



  // Every function in one pass in which each costly piece (the exact square, exp, the erf
  // series, tanh's series, the erfc tail polynomial, the final division) appears once and
  // takes the operands of the function at hand, so the generated code holds one copy of
  // each; then each function's cases in the order of Algo (the result before the stored
  // form). gelu(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)).
  function automatic logic [31:0] table_fn(input logic [2:0] f, input logic [31:0] x0);
    logic [31:0] xv, ax, sgn, u, v, hi, lo, e_arg, ex, es, x2, t_small, t, gc_mid, g, tail, num, den, q;
    logic [31:0] lm, lf, lz, lr, hfsq, kf, llo;
    int          lk;
    logic [32*12-1:0] gc;
    int          gn;
    logic        neg, gelu;
    xv = f32_daz(x0);
    ax = {1'b0, xv[30:0]};
    sgn = {xv[31], 31'd0};
    neg = xv[31];
    gelu = (f == FN_GELU);
    // erf, gelu: the tail variable v (|x|, or u = |x| / sqrt 2) and v^2 = hi + lo exactly
    u = f32_mul(ax, INV_SQRT2);
    v = gelu ? u : ax;
    square(ax, hi, lo);
    if (gelu) begin  // u^2 = x^2 / 2: halve both parts
      hi = f32_mul(hi, HALF);
      lo = f32_mul(lo, HALF);
    end
    // the one exp: of x (exp), 2|x| (tanh), -x (sigmoid), -hi (erf, gelu)
    case (f)
      FN_TANH: e_arg = f32_add(ax, ax);
      FN_SIGMOID: e_arg = xv ^ SIGN;
      FN_ERF, FN_GELU: e_arg = hi ^ SIGN;
      default: e_arg = x0;
    endcase
    ex = f32_exp(e_arg);
    es = erf_small(gelu ? u : xv);  // erf below 1, of x (erf) or u (gelu)
    // tanh below 0.5: x + x * x^2 * P(x^2)
    x2 = f32_mul(xv, xv);
    t_small = f32_add(xv, f32_mul(xv, f32_mul(x2, horner({96'd0, TANH_C}, 9, x2))));
    // v erfc(v) = exp(-hi) (1 - lo) G(1/v), G on the interval of 1/v (|lo| < 2^-18)
    t = f32_div(ONE, v);
    if (!less(t, ONE)) begin
      gc = G_INNER; gn = 10; gc_mid = G_MID_INNER;
    end else if (!less(t, HALF)) begin
      gc = G_NEAR; gn = 8; gc_mid = G_MID_NEAR;
    end else begin
      gc = G_FAR; gn = 8; gc_mid = G_MID_FAR;
    end
    g = horner(gc, gn, f32_sub(t, gc_mid));
    tail = f32_mul(f32_mul(ex, f32_sub(ONE, lo)), g);
    // log: the reduced mantissa (exponent field 127, or 126 above sqrt 2) and f = m - 1 (exact)
    lk = int'(xv[30:23]) - 127;
    lm = {9'h07F, xv[22:0]};
    if (lm > SQRT2) begin
      lm = {9'h07E, xv[22:0]};
      lk = lk + 1;
    end
    lf = f32_sub(lm, ONE);
    // the one final division: 2 / (e + 1), 1 / (1 + e), tail / v, 1 / x, 1 / sqrt(x), f / (2 + f)
    num = ONE;
    case (f)
      FN_TANH, FN_SIGMOID: begin
        num = (f == FN_TANH) ? TWO : ONE;
        den = f32_add(ONE, ex);  // the adder is commutative: also exp(2|x|) + 1
      end
      FN_ERF, FN_GELU: begin
        num = tail;
        den = v;
      end
      FN_RECIP: den = x0;
      FN_RSQRT: den = f32_sqrt(x0);
      FN_LOG: begin
        num = lf;
        den = f32_add(TWO, lf);
      end
      default: den = ONE;
    endcase
    q = f32_div(num, den);
    // log(1 + f) from s = q
    lz = f32_mul(q, q);
    lr = f32_mul(lz, horner(LOG_C, 5, lz));
    hfsq = f32_mul(HALF, f32_mul(lf, lf));
    kf = int_to_f32(lk);
    llo = f32_add(f32_mul(q, f32_add(hfsq, lr)), f32_mul(kf, LN2_LO));

    if (f == FN_RECIP || f == FN_RSQRT) return q;  // NaN in: NaN from the divider
    if (f32_nan(xv[30:0])) return 32'h7FC00000;
    case (f)
      FN_EXP: return ex;
      FN_TANH: begin
        if (xv[30:0] == 31'd0) return xv;
        if (ax < TANH_SMALL) return t_small;
        return f32_sub(ONE, q) | sgn;  // exp overflow gives exactly 1
      end
      FN_SIGMOID: return q;
      FN_ERF: begin
        if (ax < ONE) return es;
        if (less(ERF_MAX_X, ax)) return ONE | sgn;  // erfc(4) < 2^-25: erf rounds to +-1
        return f32_sub(ONE, q) | sgn;
      end
      FN_GELU: begin
        if (xv == 32'hFF800000) return SIGN;  // the limit: -0
        if (u < (neg ? GELU_TAIL_U : ONE))    // 1 - erf(u) >= 0.57 here: no harmful cancellation
          return f32_mul(xv, f32_mul(HALF, neg ? f32_sub(ONE, es) : f32_add(ONE, es)));
        if (less(GELU_MAX_U, u)) return neg ? SIGN : xv;  // Phi rounds to 0 or 1
        // x < 0: x * erfc(u) / 2 = -tail / sqrt 2 (no division, no early underflow)
        if (neg) return f32_mul(tail, INV_SQRT2) | SIGN;
        return f32_mul(xv, f32_sub(ONE, f32_mul(HALF, q)));
      end
      FN_LOG: begin
        if (xv[30:0] == 31'd0) return 32'hFF800000;  // denormals read as 0
        if (xv[31]) return 32'h7FC00000;
        if (xv == 32'h7F800000) return xv;
        return f32_add(f32_mul(kf, LN2_HI), f32_sub(lf, f32_sub(hfsq, llo)));
      end
      default: return 32'd0;
    endcase
  endfunction

  // The stored result of function f (numbered as above) of x.
  function automatic logic [31:0] vec_table(input logic [2:0] f, input logic [31:0] x);
    return f32_canonical(table_fn(f, x));
  endfunction
endpackage
