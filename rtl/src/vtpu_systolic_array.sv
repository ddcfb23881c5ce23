// vtpu_systolic_array: a ROWS x COLS weight-stationary array of vtpu_pe (docs/rtl.md).
//
// Input side. One input row per cycle arrives unskewed on x_data (element k for PE row k)
// with its dtype and swap bits; element k is delayed k cycles (the diagonal skew), so an
// input row presented at cycle t has element k at PE(k, n) at cycle t + k + n.
//
// Output side. The partial sum of column n leaves the bottom PE at cycle t + ROWS - 1 + n;
// column n is delayed COLS - 1 - n more cycles (the de-skew), so y_psum carries the whole
// result row of the input row presented at t at cycle t + ROWS + COLS - 2 (column COLS - 1
// straight from the bottom PE's adder, the others from registers).
//
// Weight side. A tile is pushed one row per cycle for ROWS cycles (w_push; w_first marks
// the first push), bottom row first: push i (0-based) carries tile row ROWS-1-i for every
// column, with a valid bit per element. Column n sees the pushes n cycles late (the same
// column skew as the data). During a load the shadow registers of PE row k shift (take the
// value of the row above) on pushes k .. ROWS-1 only, so after the last push row k holds
// tile row k, and row k's shadow is first overwritten k + n cycles after the load starts.
// That is what lets a load start on the very cycle a swap enters the array: the swap
// reaches PE(k, n) k + n cycles after it enters, just before the load overwrites it.
module vtpu_systolic_array #(
  parameter int ROWS = 4,
  parameter int COLS = 4,
  parameter bit BF16 = 1'b1
) (
  input  logic                 clk,
  input  logic                 rst_n,
  // input rows, unskewed
  input  logic [ROWS*16-1:0]   x_data,
  input  logic                 x_bf16,
  input  logic                 x_swap,
  // weight pushes, unskewed
  input  logic                 w_push,
  input  logic                 w_first,
  input  logic [COLS*16-1:0]   w_data,
  input  logic [COLS-1:0]      w_valid,
  // result rows, de-skewed (ROWS + COLS - 2 cycles after the input row)
  output logic [COLS*32-1:0]   y_psum
);
  localparam int IW = (ROWS > 1) ? $clog2(ROWS) : 1;  // push index width

  // Buses between PEs, flattened (index helpers below). Horizontal buses have COLS + 1
  // taps per row, vertical ones ROWS + 1 taps per column.
  logic [ROWS*(COLS+1)*16-1:0] a_bus;
  logic [ROWS*(COLS+1)-1:0]    bf16_bus, swap_bus;
  logic [(ROWS+1)*COLS*32-1:0] p_bus;
  logic [(ROWS+1)*COLS*16-1:0] w_bus;
  logic [(ROWS+1)*COLS-1:0]    wv_bus;
  logic [COLS*32-1:0]          p_last_comb;  // p_next of the bottom row

  // ---- input skew: element k is delayed k cycles ----
  for (genvar k = 0; k < ROWS; k++) begin : g_skew_in
    vtpu_delay #(.WIDTH(16), .DEPTH(k)) u_data (
      .clk(clk), .rst_n(rst_n), .d(x_data[k*16 +: 16]), .q(a_bus[(k*(COLS+1))*16 +: 16]));
    vtpu_delay #(.WIDTH(2), .DEPTH(k), .RESET(1'b1)) u_ctl (
      .clk(clk), .rst_n(rst_n), .d({x_bf16, x_swap}),
      .q({bf16_bus[k*(COLS+1)], swap_bus[k*(COLS+1)]}));
  end

  // ---- weight pushes: index within the tile, column skew, per-row shift enables ----
  logic [IW-1:0] w_cnt, w_idx0;
  assign w_idx0 = w_first ? '0 : w_cnt;
  always_ff @(posedge clk) begin
    if (!rst_n) w_cnt <= '0;
    else if (w_push) w_cnt <= w_idx0 + IW'(1);
  end

  logic [COLS-1:0]    col_push;  // push seen by column n (n cycles late)
  logic [COLS*IW-1:0] col_idx;
  for (genvar n = 0; n < COLS; n++) begin : g_skew_w
    vtpu_delay #(.WIDTH(1 + IW), .DEPTH(n), .RESET(1'b1)) u_ctl (
      .clk(clk), .rst_n(rst_n), .d({w_push, w_idx0}), .q({col_push[n], col_idx[n*IW +: IW]}));
    vtpu_delay #(.WIDTH(17), .DEPTH(n)) u_data (
      .clk(clk), .rst_n(rst_n), .d({w_valid[n], w_data[n*16 +: 16]}),
      .q({wv_bus[n], w_bus[n*16 +: 16]}));
    // The top of every column gets a +0 partial sum (int8 0 and fp32 +0 are both 0).
    assign p_bus[n*32 +: 32] = 32'd0;
  end

  // ---- the PE grid ----
  for (genvar k = 0; k < ROWS; k++) begin : g_row
    for (genvar n = 0; n < COLS; n++) begin : g_col
      localparam int H  = k * (COLS + 1) + n;  // horizontal tap feeding PE(k, n)
      localparam int VI = k * COLS + n;        // vertical tap above PE(k, n)
      localparam int VO = (k + 1) * COLS + n;  // vertical tap below PE(k, n)
      // Row k shifts on pushes k .. ROWS-1 of a tile.
      logic shift_en;
      if (k == 0) begin : g_en0
        assign shift_en = col_push[n];
      end else begin : g_enk
        assign shift_en = col_push[n] && (32'(col_idx[n*IW +: IW]) >= k);
      end
      logic [31:0] p_comb;
      vtpu_pe #(.BF16(BF16)) u_pe (
        .clk(clk), .rst_n(rst_n),
        .a_in(a_bus[H*16 +: 16]), .a_bf16_in(bf16_bus[H]), .a_swap_in(swap_bus[H]),
        .a_out(a_bus[(H+1)*16 +: 16]), .a_bf16_out(bf16_bus[H+1]), .a_swap_out(swap_bus[H+1]),
        .p_in(p_bus[VI*32 +: 32]), .p_next(p_comb), .p_out(p_bus[VO*32 +: 32]),
        .w_shift(shift_en), .w_in(w_bus[VI*16 +: 16]), .w_valid_in(wv_bus[VI]),
        .w_out(w_bus[VO*16 +: 16]), .w_valid_out(wv_bus[VO]));
      if (k == ROWS - 1) begin : g_bottom
        assign p_last_comb[n*32 +: 32] = p_comb;
      end else begin : g_inner
        logic [31:0] unused_p_comb;
        assign unused_p_comb = p_comb;
      end
    end
  end

  // ---- output de-skew ----
  for (genvar n = 0; n < COLS; n++) begin : g_deskew
    if (n == COLS - 1) begin : g_comb
      assign y_psum[n*32 +: 32] = p_last_comb[n*32 +: 32];
      logic [31:0] unused_p_reg;
      assign unused_p_reg = p_bus[(ROWS*COLS+n)*32 +: 32];
    end else begin : g_reg
      vtpu_delay #(.WIDTH(32), .DEPTH(COLS - 2 - n)) u_d (
        .clk(clk), .rst_n(rst_n), .d(p_bus[(ROWS*COLS+n)*32 +: 32]), .q(y_psum[n*32 +: 32]));
      logic [31:0] unused_p_comb;
      assign unused_p_comb = p_last_comb[n*32 +: 32];
    end
  end

  // The right edge of the data buses and the bottom of the weight chains are not used.
  logic unused_edges;
  always_comb begin
    unused_edges = 1'b0;
    for (int k = 0; k < ROWS; k++)
      unused_edges = unused_edges ^ (^a_bus[(k*(COLS+1)+COLS)*16 +: 16])
                     ^ bf16_bus[k*(COLS+1)+COLS] ^ swap_bus[k*(COLS+1)+COLS];
    unused_edges = unused_edges ^ (^col_idx);  // row 0 needs no index
    unused_edges = unused_edges ^ (^w_bus[ROWS*COLS*16 +: COLS*16]) ^ (^wv_bus[ROWS*COLS +: COLS]);
  end
endmodule
