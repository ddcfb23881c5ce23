// vtpu_mxu: the matrix unit — a vtpu_systolic_array, its accumulator memory, and the
// command logic that gives the cycle behaviour of docs/microarch.md, section "MXU"
// (the mapping is in docs/rtl.md). Parameters mirror core.mxu.* of a vtpu config:
//   ROWS, COLS   core.mxu.rows / cols
//   IN_LAT       core.mxu.input_latency_cycles  (`in`)
//   OUT_LAT      core.mxu.output_latency_cycles (`out`)
//   SHIFT        core.mxu.weight_shift_cycles   (must be >= ROWS: one tile row per cycle)
//   ACC_ROWS     core.accumulators.rows
//
// A "cycle" is one clock period; an event "at cycle c" is visible on the ports during c and
// takes effect at the rising edge that ends c.
//
// mxu.matmul: accepted at cycle T when mm_valid && mm_ready (mm_ready = the data path is
// free and, for swap=1, the shadow tile has finished shifting). With S = T + IN_LAT:
//   - input row j is requested on in_req/in_req_row at T + j and must be on in_data in that
//     same cycle (the unified buffer's read issue; the IN_LAT cycles model the path to the
//     array);
//   - row j enters the array at S + j; result row j is written to accumulator row dst + j
//     at S + j + ROWS + COLS - 2 + OUT_LAT (visible on acc_we/acc_waddr/acc_wdata);
//   - done pulses at D = S + B + ROWS + COLS - 2 + OUT_LAT.
// The next matmul can be accepted at T + B (no bubble).
//
// mxu.wload: accepted when wl_valid && wl_ready (the weight path is free: the previous
// load's shift has ended). The shift starts at the first cycle >= T at which the shadow
// buffer is free (no unswapped tile in it, and at least the S of the matmul that swapped
// the last one) and the weight FIFO has the tile (wf_avail); at that cycle wf_pop pulses
// and the tile's K x N come from wf_k / wf_n. Tile rows are read on wf_rd/wf_row/wf_data
// one per cycle, ROWS-1 first, and the shadow is ready for a swap SHIFT cycles after the
// start. Elements of rows >= K or columns >= N are marked invalid and take no part in any
// MAC; their columns receive a +0 partial sum.
module vtpu_mxu #(
  parameter int ROWS     = 8,
  parameter int COLS     = 8,
  parameter int IN_LAT   = 2,
  parameter int OUT_LAT  = 2,
  parameter int SHIFT    = ROWS,
  parameter int ACC_ROWS = 512,
  parameter bit BF16     = 1'b1,
  localparam int AW = (ACC_ROWS > 1) ? $clog2(ACC_ROWS) : 1,
  localparam int KW = $clog2(ROWS + 1),
  localparam int NW = $clog2(COLS + 1),
  localparam int RW = (ROWS > 1) ? $clog2(ROWS) : 1
) (
  input  logic                 clk,
  input  logic                 rst_n,
  // ---- mxu.matmul ----
  input  logic                 mm_valid,
  output logic                 mm_ready,
  input  logic [15:0]          mm_rows,   // B >= 1
  input  logic [AW-1:0]        mm_dst,
  input  logic                 mm_acc,
  input  logic                 mm_swap,
  input  logic                 mm_bf16,   // dtype: 0 int8, 1 bf16 (the ISA's encoding)
  output logic                 mm_data_free,     // status: the data path is free
  output logic                 mm_shadow_ready,  // status: a shifted tile waits in the shadow
  output logic                 done,             // one pulse per matmul, at D
  // ---- input rows (the unified buffer) ----
  output logic                 in_req,
  output logic [15:0]          in_req_row,
  input  logic [ROWS*16-1:0]   in_data,   // lane k: bf16 bits, or int8 in bits 7..0
  // ---- mxu.wload ----
  input  logic                 wl_valid,
  output logic                 wl_ready,
  // ---- weight FIFO ----
  input  logic                 wf_avail,  // the oldest tile not yet loaded is complete
  input  logic [KW-1:0]        wf_k,      // its valid rows (1..ROWS)
  input  logic [NW-1:0]        wf_n,      // its valid columns (1..COLS)
  output logic                 wf_pop,    // the tile starts shifting (leaves the FIFO)
  output logic                 wf_pop_pending, // wf_pop of an already accepted wload, from
                                               // registers and wf_avail only (no path from
                                               // this cycle's mm/wl valids)
  output logic                 wf_rd,
  output logic [RW-1:0]        wf_row,
  input  logic [COLS*16-1:0]   wf_data,   // tile row wf_row, same cycle
  // ---- accumulators ----
  output logic                 acc_we,    // the MXU's write this cycle
  output logic [AW-1:0]        acc_waddr,
  output logic [COLS*32-1:0]   acc_wdata,
  input  logic [AW-1:0]        acc_rd_addr,  // read port (vector unit, testbench)
  output logic [COLS*32-1:0]   acc_rd_data,
  input  logic [AW-1:0]        acc_rd2_addr, // second read port (a binary vector op's b)
  output logic [COLS*32-1:0]   acc_rd2_data,
  input  logic                 acc_ext_we,   // write port (preload; the MXU wins a tie)
  input  logic [AW-1:0]        acc_ext_addr,
  input  logic [COLS*32-1:0]   acc_ext_data
);
  localparam int L_TOK = IN_LAT + ROWS + COLS - 2 + OUT_LAT;  // row request -> write
  localparam int SW = $clog2(SHIFT + 1);
  localparam int FW = (IN_LAT > 0) ? $clog2(IN_LAT + 1) : 1;

  // =====================================================================================
  // matmul: one input row request per cycle
  // =====================================================================================
  logic [15:0]   rows_left;  // rows still to request after the current cycle's
  logic [15:0]   cur_row;
  logic [AW-1:0] cur_addr;
  logic          cur_acc, cur_bf16;
  logic          shadow_full;  // a tile is (being) shifted into the shadow, not swapped yet
  logic [SW-1:0] shift_cnt;    // shift cycles left after the current one

  assign mm_data_free    = (rows_left == 16'd0);
  assign mm_shadow_ready = shadow_full && (shift_cnt == '0);
  assign mm_ready        = mm_data_free && (!mm_swap || mm_shadow_ready);

  logic mm_fire;
  assign mm_fire = mm_valid && mm_ready;

  assign in_req     = mm_fire || !mm_data_free;
  assign in_req_row = mm_fire ? 16'd0 : cur_row;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      rows_left <= '0;
      cur_row   <= '0;
    end else if (mm_fire) begin
      rows_left <= mm_rows - 16'd1;
      cur_row   <= 16'd1;
    end else if (!mm_data_free) begin
      rows_left <= rows_left - 16'd1;
      cur_row   <= cur_row + 16'd1;
    end
  end
  always_ff @(posedge clk) begin
    if (mm_fire) begin
      cur_addr <= mm_dst + AW'(1);
      cur_acc  <= mm_acc;
      cur_bf16 <= mm_bf16;
    end else begin
      cur_addr <= cur_addr + AW'(1);
    end
  end

  // The row token travels alongside the data and becomes the accumulator write.
  logic          tok_valid, tok_last, tok_acc, tok_bf16;
  logic [AW-1:0] tok_addr;
  logic          w_valid, w_last, w_acc, w_bf16;  // at the write stage
  logic [AW-1:0] w_addr;
  assign tok_valid = in_req;
  assign tok_last  = mm_fire ? (mm_rows == 16'd1) : (rows_left == 16'd1);
  assign tok_acc   = mm_fire ? mm_acc : cur_acc;
  assign tok_bf16  = mm_fire ? mm_bf16 : cur_bf16;
  assign tok_addr  = mm_fire ? mm_dst : cur_addr;

  vtpu_delay #(.WIDTH(2), .DEPTH(L_TOK), .RESET(1'b1)) u_tok_ctl (
    .clk(clk), .rst_n(rst_n), .d({tok_valid, tok_valid && tok_last}), .q({w_valid, w_last}));
  vtpu_delay #(.WIDTH(2 + AW), .DEPTH(L_TOK)) u_tok_data (
    .clk(clk), .rst_n(rst_n), .d({tok_acc, tok_bf16, tok_addr}), .q({w_acc, w_bf16, w_addr}));

  // Input rows: IN_LAT cycles from the request to the array.
  logic [ROWS*16-1:0] x_data;
  logic               x_bf16, x_swap;
  vtpu_delay #(.WIDTH(ROWS * 16), .DEPTH(IN_LAT)) u_in_data (
    .clk(clk), .rst_n(rst_n), .d(in_data), .q(x_data));
  vtpu_delay #(.WIDTH(2), .DEPTH(IN_LAT), .RESET(1'b1)) u_in_ctl (
    .clk(clk), .rst_n(rst_n), .d({tok_bf16, mm_fire && mm_swap}), .q({x_bf16, x_swap}));

  // =====================================================================================
  // wload: shadow buffer bookkeeping and the row pushes
  // =====================================================================================
  logic          wl_pend;     // accepted, waiting for the shadow buffer or the FIFO
  logic [KW-1:0] push_left;   // rows still to push after the current cycle's
  logic [RW-1:0] push_row;
  logic [KW-1:0] tile_k, cur_k;
  logic [NW-1:0] tile_n, cur_n;

  assign wl_ready = !wl_pend && (shift_cnt == '0);
  logic wl_fire, swap_now, wl_want, free_now, w_start;
  assign wl_fire  = wl_valid && wl_ready;
  assign swap_now = mm_fire && mm_swap;
  assign wl_want  = wl_pend || wl_fire;
  // A swap accepted this cycle frees the shadow at S = T + IN_LAT (it acts before a load
  // in the same cycle).
  logic free_reg;  // free_now without this cycle's swap
  if (IN_LAT > 0) begin : g_free
    logic [FW-1:0] free_cnt;  // cycles until the shadow is free after a swap
    assign free_reg = (free_cnt == '0);
    assign free_now = !swap_now && free_reg;
    always_ff @(posedge clk) begin
      if (!rst_n) free_cnt <= '0;
      else if (swap_now) free_cnt <= FW'(IN_LAT - 1);
      else if (free_cnt != '0) free_cnt <= free_cnt - FW'(1);
    end
  end else begin : g_free0
    assign free_reg = 1'b1;
    assign free_now = 1'b1;
  end
  assign w_start = wl_want && free_now && (!shadow_full || swap_now) && wf_avail;
  assign wf_pop  = w_start;
  // A pending load starts this cycle. A swap cannot happen in the same cycle: it needs a
  // shifted tile in the shadow, and a load only waits (wl_pend) while the shadow is empty.
  assign wf_pop_pending = wl_pend && free_reg && !shadow_full && wf_avail;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wl_pend     <= 1'b0;
      shadow_full <= 1'b0;
      shift_cnt   <= '0;
      push_left   <= '0;
    end else begin
      wl_pend <= wl_want && !w_start;
      if (w_start) shadow_full <= 1'b1;
      else if (swap_now) shadow_full <= 1'b0;
      if (w_start) shift_cnt <= SW'(SHIFT - 1);
      else if (shift_cnt != '0) shift_cnt <= shift_cnt - SW'(1);
      if (w_start) push_left <= KW'(ROWS - 1);
      else if (push_left != '0) push_left <= push_left - KW'(1);
    end
  end
  always_ff @(posedge clk) begin
    if (w_start) begin
      tile_k   <= wf_k;
      tile_n   <= wf_n;
      push_row <= RW'(ROWS - 2);  // ROWS = 1: the single push is the start cycle's
    end else begin
      push_row <= push_row - RW'(1);
    end
  end

  assign wf_rd  = w_start || (push_left != '0);
  assign wf_row = w_start ? RW'(ROWS - 1) : push_row;
  assign cur_k  = w_start ? wf_k : tile_k;
  assign cur_n  = w_start ? wf_n : tile_n;

  logic [COLS-1:0] w_valid_row;
  always_comb begin
    for (int n = 0; n < COLS; n++)
      w_valid_row[n] = (32'(wf_row) < 32'(cur_k)) && (n < 32'(cur_n));
  end

  // =====================================================================================
  // the array
  // =====================================================================================
  logic [COLS*32-1:0] y_psum, p_row;
  vtpu_systolic_array #(.ROWS(ROWS), .COLS(COLS), .BF16(BF16)) u_array (
    .clk(clk), .rst_n(rst_n),
    .x_data(x_data), .x_bf16(x_bf16), .x_swap(x_swap),
    .w_push(wf_rd), .w_first(w_start), .w_data(wf_data), .w_valid(w_valid_row),
    .y_psum(y_psum));
  vtpu_delay #(.WIDTH(COLS * 32), .DEPTH(OUT_LAT)) u_out (
    .clk(clk), .rst_n(rst_n), .d(y_psum), .q(p_row));

  // =====================================================================================
  // accumulators: read-modify-write in the write cycle
  // =====================================================================================
  logic [COLS*32-1:0] acc_mem [ACC_ROWS];
  logic [COLS*32-1:0] old_row;
  assign old_row     = acc_mem[w_addr];
  assign acc_rd_data = acc_mem[acc_rd_addr];
  assign acc_rd2_data = acc_mem[acc_rd2_addr];

  for (genvar n = 0; n < COLS; n++) begin : g_acc
    logic [31:0] p, old, sum_i, sum_f;
    assign p     = p_row[n*32 +: 32];
    assign old   = old_row[n*32 +: 32];
    assign sum_i = old + p;
    if (BF16) begin : g_fp
      vtpu_fp32_add u_add (.a(old), .b(p), .y(sum_f));
    end else begin : g_nofp
      assign sum_f = sum_i;
    end
    assign acc_wdata[n*32 +: 32] = !w_acc ? p : (w_bf16 ? sum_f : sum_i);
  end

  assign acc_we    = w_valid;
  assign acc_waddr = w_addr;

  always_ff @(posedge clk) begin
    if (acc_ext_we) acc_mem[acc_ext_addr] <= acc_ext_data;
    if (acc_we) acc_mem[acc_waddr] <= acc_wdata;
  end

  always_ff @(posedge clk) begin
    if (!rst_n) done <= 1'b0;
    else done <= w_valid && w_last;
  end
endmodule
