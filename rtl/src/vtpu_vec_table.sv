// vtpu_vec_table: the vector unit's table (transcendental) functions on one fp32 element,
// bit-exact with Algo in sim/numerics/src/transcendental.cpp (same operations in the same
// order, each rounded as there). func numbers them as numerics::Transcendental does
// (0 exp, 1 tanh, 2 sigmoid, 3 gelu, 4 erf, 5 recip, 6 rsqrt; the opcodes vec.exp..vec.rsqrt
// minus 16). Implemented: exp, tanh, sigmoid, recip, rsqrt; gelu and erf give 0 (the core
// refuses them). One exp, one divider and one square root serve every function.
// Combinational; not inlined, so Verilator emits its code once for all lanes.
module vtpu_vec_table import vtpu_num_pkg::*; (
  input  logic [2:0]  func,
  input  logic [31:0] x,
  output logic [31:0] y
);
  /*verilator no_inline_module*/
  localparam logic [2:0] FN_EXP = 3'd0, FN_TANH = 3'd1, FN_SIGMOID = 3'd2, FN_RECIP = 3'd5, FN_RSQRT = 3'd6;
  localparam logic [31:0] ONE = 32'h3F800000, TWO = 32'h40000000;
  localparam logic [31:0] TANH_SMALL = 32'h3F000000;  // 0.5: below, the Taylor series
  // Taylor coefficients of tanh: x^3, x^5, ..., x^19 (C[0], of x^3, in the low bits)
  localparam logic [32*9-1:0] TANH_C = {32'hB97ABEBC, 32'h3A1AAC12, 32'hBABED1B2, 32'h3B6B69E8,
                                         32'hBC11371B, 32'h3CB327A4, 32'hBD5D0DD1, 32'h3E088889,
                                         32'hBEAAAAAB};

  logic [31:0] xd, ax;
  assign xd = f32_daz(x);
  assign ax = {1'b0, xd[30:0]};

  // exp's argument: x (exp), 2|x| (tanh), -x (sigmoid)
  logic [31:0] ax2, e_in, e;
  vtpu_fp32_add u_ax2 (.a(ax), .b(ax), .y(ax2));
  always_comb begin
    case (func)
      FN_TANH: e_in = ax2;
      FN_SIGMOID: e_in = {~xd[31], xd[30:0]};
      default: e_in = x;
    endcase
  end
  vtpu_fp32_exp u_exp (.x(e_in), .y(e));

  // the one division: 1/x, 1/sqrt(x), 1/(1 + exp(-x)), 2/(exp(2|x|) + 1)
  logic [31:0] root, e1, num, den, q;
  vtpu_fp32_sqrt u_sqrt (.a(x), .y(root));
  vtpu_fp32_add  u_e1   (.a(ONE), .b(e), .y(e1));  // commutative, so also exp(2|x|) + 1
  always_comb begin
    num = (func == FN_TANH) ? TWO : ONE;
    case (func)
      FN_RECIP: den = x;
      FN_RSQRT: den = root;
      default: den = e1;
    endcase
  end
  vtpu_fp32_div u_div (.a(num), .b(den), .y(q));

  // tanh: |x| < 0.5: x + x * (x^2 * P(x^2)); else +-(1 - 2 / (exp(2|x|) + 1))
  logic [31:0] x2, ph, x2p, xx2p, t_small, t_big;
  vtpu_fp32_mul    u_x2   (.a(xd), .b(xd), .y(x2));
  vtpu_fp32_horner #(.N(9), .C(TANH_C)) u_ph (.s(x2), .y(ph));
  vtpu_fp32_mul    u_x2p  (.a(x2), .b(ph), .y(x2p));
  vtpu_fp32_mul    u_xx2p (.a(xd), .b(x2p), .y(xx2p));
  vtpu_fp32_add    u_tsm  (.a(xd), .b(xx2p), .y(t_small));
  vtpu_fp32_add    u_tbig (.a(ONE), .b({~q[31], q[30:0]}), .y(t_big));

  logic [31:0] r;
  always_comb begin
    case (func)
      FN_EXP: r = e;
      FN_TANH:
        if (f32_nan(xd[30:0])) r = 32'h7FC00000;
        else if (xd[30:0] == 31'd0) r = xd;
        else if (ax < TANH_SMALL) r = t_small;
        else r = t_big | {xd[31], 31'd0};
      FN_SIGMOID: r = f32_nan(xd[30:0]) ? 32'h7FC00000 : q;
      FN_RECIP, FN_RSQRT: r = q;
      default: r = 32'd0;
    endcase
  end
  assign y = f32_canonical(r);
endmodule
