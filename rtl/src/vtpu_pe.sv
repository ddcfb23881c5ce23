// vtpu_pe: one processing element of the weight-stationary systolic array (docs/rtl.md).
//
// Each cycle the PE takes an input element from its left neighbour (a_in, with the two
// control bits that travel with it: dtype and swap) and a partial sum from the PE above
// (p_in), and produces
//     p_next = !valid ? p_in
//            : int8 ? p_in + int8(a) * int8(w)                (int32, wrap-around)
//            :        add_f32(p_in, mul_exact(bf16 a, bf16 w))  (docs/numerics.md)
// registered into p_out for the PE below; a_in is registered into a_out for the PE to
// the right. `w`/`valid` are the active weight and its valid bit (0 for padding rows and
// columns of a partial tile: the PE then passes the partial sum through untouched, so a NaN
// in the padding cannot reach a result).
//
// Double-buffered weights: the shadow register shifts down the column (w_in from the PE
// above, w_out to the PE below) when w_shift is set; the active register is replaced by the
// shadow when an element with a_swap set passes, i.e. the first row of a matmul with
// swap=1. The element that carries the swap already multiplies with the new weight, so the
// swap sweeps the array on the same diagonal wavefront as the data.
//
// BF16 = 0 builds an int8-only PE (8-bit weight and input registers, no floating point);
// its dtype input is ignored.
module vtpu_pe #(
  parameter bit BF16 = 1'b1
) (
  input  logic        clk,
  input  logic        rst_n,
  // input element, from the left
  input  logic [15:0] a_in,
  input  logic        a_bf16_in,
  input  logic        a_swap_in,
  output logic [15:0] a_out,
  output logic        a_bf16_out,
  output logic        a_swap_out,
  // partial sum, from above
  input  logic [31:0] p_in,
  output logic [31:0] p_next,  // combinational (used by the last column of the bottom row)
  output logic [31:0] p_out,   // registered p_next
  // shadow weight shift chain, down the column
  input  logic        w_shift,
  input  logic [15:0] w_in,
  input  logic        w_valid_in,
  output logic [15:0] w_out,
  output logic        w_valid_out
);
  localparam int DW = BF16 ? 16 : 8;  // stored width of weights and inputs

  logic [DW-1:0] w_act, w_sh, a_q;
  logic          v_act, v_sh, swap_q;
  logic [DW-1:0] w_use;
  logic          v_use;
  assign w_use = a_swap_in ? w_sh : w_act;
  assign v_use = a_swap_in ? v_sh : v_act;

  logic [31:0] p_int;  // int8 MAC
  logic [31:0] p_mac;  // the MAC of the selected dtype

  if (BF16) begin : g_bf16
    // One 9 x 9 signed multiplier serves both modes: int8 operands sign-extended, bf16
    // significands {1, fraction} zero-extended. The bf16 product is < 2^16.
    logic signed [8:0]  ma, mb;
    logic signed [17:0] prod;
    logic [31:0]        prod_f, p_fp;
    assign ma   = a_bf16_in ? {2'b01, a_in[6:0]} : {a_in[7], a_in[7:0]};
    assign mb   = a_bf16_in ? {2'b01, w_use[6:0]} : {w_use[7], w_use[7:0]};
    assign prod = ma * mb;
    assign p_int = p_in + {{14{prod[17]}}, prod};
    vtpu_bf16_mul u_mul (.a(a_in), .b(w_use), .sig_prod(prod[15:0]), .y(prod_f));
    vtpu_fp32_add u_add (.a(p_in), .b(prod_f), .y(p_fp));
    assign p_mac = a_bf16_in ? p_fp : p_int;

    logic bf16_q;
    always_ff @(posedge clk) bf16_q <= a_bf16_in;
    assign a_bf16_out = bf16_q;
  end else begin : g_int8
    logic signed [15:0] prod;
    assign prod  = $signed(a_in[7:0]) * $signed(w_use[7:0]);
    assign p_int = p_in + {{16{prod[15]}}, prod};
    assign p_mac = p_int;
    assign a_bf16_out = 1'b0;
    logic unused_in;
    assign unused_in = ^{a_in[15:8], w_in[15:8], a_bf16_in};
  end

  assign p_next = v_use ? p_mac : p_in;

  always_ff @(posedge clk) begin
    p_out <= p_next;
    a_q   <= a_in[DW-1:0];
    if (a_swap_in) w_act <= w_sh;
    if (w_shift) w_sh <= w_in[DW-1:0];
  end

  // Control state is reset: no swap in flight, no valid weights.
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      swap_q <= 1'b0;
      v_act  <= 1'b0;
      v_sh   <= 1'b0;
    end else begin
      swap_q <= a_swap_in;
      if (a_swap_in) v_act <= v_sh;
      if (w_shift) v_sh <= w_valid_in;
    end
  end

  assign a_out       = 16'(a_q);
  assign a_swap_out  = swap_q;
  assign w_out       = 16'(w_sh);
  assign w_valid_out = v_sh;
endmodule
