// vtpu_vector: the vector unit (docs/microarch.md, "Vector unit"), for the operations of
// docs/rtl.md's subset: vec.add, vec.sub, vec.mul, vec.max, vec.min, vec.relu, vec.clamp,
// vec.affine and vec.copy on every type, vec.rescale (TOSA RESCALE between integer types) and
// vec.addrescale (of the int32 sum of a and b),
// vec.cvt between any two types, the row reductions vec.rsum and vec.rmax, and the pooling
// windows vec.maxpool and vec.avgpool (one window row per cycle, from the unified buffer or
// the accumulators, where offsets and stride are whole rows of COLS * 4 bytes),
// with the arithmetic of docs/numerics.md. One operation at a time occupies the issue stage for the sum over
// its rows of max(LANE_PASSES, the row's bank cycles); row i is read, computed and written
// in its first cycle. The flag increment comes LAT cycles after the last row (done D =
// T + occ + lat), from a small table so later operations can overlap the latency.
module vtpu_vector import vtpu_isa_pkg::*, vtpu_num_pkg::*, vtpu_vec_table_pkg::*; #(
  parameter int COLS         = 4,
  parameter int UB_BYTES     = 65536,
  parameter int PB           = 64,  // UB port bytes (>= COLS * 4)
  parameter int ACC_ROWS     = 256,
  parameter int UB_ROW_BYTES = 8,
  parameter int UB_BANKS     = 2,
  parameter int UB_RD_PORTS  = 1,
  parameter int UB_WR_PORTS  = 1,
  parameter int LANE_PASSES  = 1,   // ceil(COLS / core.vector.lanes)
  parameter int LAT_ALU      = 2,   // core.vector.latency_cycles.alu (also vec.copy)
  parameter int LAT_MUL      = 4,   // .multiply
  parameter int LAT_RESCALE  = 4,   // .rescale
  parameter int LAT_CONVERT  = 2,   // .convert
  parameter int LAT_REDUCE   = 8,   // .reduce
  parameter int LAT_POOL     = 2,   // .pool
  parameter int LAT_TRANS    = 12,  // .transcendental
  parameter int PARAM_ENTRIES = 16,
  parameter int NPEND        = 8,
  localparam int UAW = $clog2(UB_BYTES),
  localparam int ULW = $clog2(PB + 1),
  localparam int AW  = (ACC_ROWS > 1) ? $clog2(ACC_ROWS) : 1,
  localparam int MAXBLK = PB / UB_ROW_BYTES + 1,
  // Parameter RAM entry: per lane n, multiplier [38n +: 32] and shift [38n+32 +: 6]; then
  // input_zp, output_zp (32 each), double_round, the integer clamp bounds ceil(min) and
  // floor(max) saturated to 48 bits, the fp32 clamp bounds (f64_to_f32 of min, max), then
  // per lane n the vec.affine / vec.avgpool scale and vec.affine bias as fp32 at
  // [38C + 225 + 64n +: 32] / [+32 +: 32]; then the pooling window: its size (8 bits),
  // pool_stride (32), and up to WMAX signed byte offsets (32 each).
  localparam int WMAX = 16,
  localparam int PWIN = 102 * COLS + 225,
  localparam int PARAM_BITS = PWIN + 40 + 32 * WMAX,
  localparam int PW = $clog2(PARAM_ENTRIES)
) (
  input  logic               clk,
  input  logic               rst_n,
  input  logic [31:0]        now,
  // parameter RAM (.vparam records), written by the loader
  input  logic                  param_we,
  input  logic [PW-1:0]         param_waddr,
  input  logic [PARAM_BITS-1:0] param_wdata,
  // issue
  input  logic               fire,
  output logic               ready,
  input  logic [5:0]         op,
  input  logic [2:0]         dt,
  input  logic [2:0]         odt,     // result type (vec.rescale, vec.cvt; else dt)
  input  logic [VEC_PARAM_WIDTH-1:0] param,
  input  logic               a_acc,
  input  logic [31:0]        a_addr,
  input  logic               b_acc,
  input  logic [31:0]        b_addr,
  input  logic               d_acc,
  input  logic [31:0]        d_addr,
  input  logic [15:0]        rows,
  input  logic               bcast,
  input  logic [5:0]         flag,
  input  logic [23:0]        pc,
  // unified buffer
  output logic [UAW-1:0]     ua_addr,
  input  logic [PB*8-1:0]    ua_data,
  output logic [UAW-1:0]     ubb_addr,
  input  logic [PB*8-1:0]    ubb_data,
  output logic               uw_en,
  output logic [UAW-1:0]     uw_addr,
  output logic [ULW-1:0]     uw_len,
  output logic [PB*8-1:0]    uw_data,
  // accumulators (vtpu_mxu's second and first read ports, its external write port)
  output logic [AW-1:0]      acc_a_addr,
  input  logic [COLS*32-1:0] acc_a_data,
  output logic [AW-1:0]      acc_b_addr,
  input  logic [COLS*32-1:0] acc_b_data,
  output logic               acc_we,
  output logic [AW-1:0]      acc_waddr,
  output logic [COLS*32-1:0] acc_wdata,
  // flag increments at this cycle
  output logic [NPEND-1:0]   inc_valid,
  output logic [5:0]         inc_flag [NPEND],
  output logic               idle,      // nothing with D > now
  // the issue stage was occupied [ev_t, now + 1) by bundle ev_pc
  output logic               ev_valid,
  output logic [23:0]        ev_pc,
  output logic [31:0]        ev_t,
  output logic               err_pend
);
  // ---------------------------------------------------------------- operation state
  logic        busy, first;
  logic [31:0] wait_cnt;
  logic [15:0] row, v_rows;
  logic [5:0]  v_op, v_flag;
  logic [2:0]  v_dt, v_odt;
  logic [PW-1:0] v_param;
  logic        v_aacc, v_bacc, v_dacc, v_bcast;
  logic [31:0] cur_a, cur_b, cur_d, v_t;
  logic [23:0] v_pc;

  assign ready = !busy;

  // The issue cycle T is already row 0's first cycle (occupancy [T, T + occ)): the datapath
  // works on the incoming operation when fire, on the latched one otherwise.
  logic        e_busy, e_first, e_aacc, e_bacc, e_dacc, e_bcast;
  logic [15:0] e_row, e_rows;
  logic [5:0]  e_op;
  logic [2:0]  e_dt, e_odt;
  logic [PW-1:0] e_param;
  logic [31:0] e_a, e_b, e_d;
  assign e_busy  = busy || fire;
  assign e_first = fire || first;
  assign e_row   = fire ? 16'd0 : row;
  assign e_rows  = fire ? rows : v_rows;
  assign e_op    = fire ? op : v_op;
  assign e_dt    = fire ? dt : v_dt;
  assign e_odt   = fire ? odt : v_odt;
  assign e_param = fire ? PW'(param) : v_param;
  logic unused_param;  // indices past the RAM are refused by the core
  assign unused_param = ^param[VEC_PARAM_WIDTH-1:PW];
  assign e_aacc  = fire ? a_acc : v_aacc;
  assign e_bacc  = fire ? b_acc : v_bacc;
  assign e_dacc  = fire ? d_acc : v_dacc;
  assign e_bcast = fire ? bcast : v_bcast;
  assign e_a     = fire ? a_addr : cur_a;
  assign e_b     = fire ? b_addr : cur_b;
  assign e_d     = fire ? d_addr : cur_d;


  int row_bytes, drow_bytes;  // source rows (dt), destination rows (odt)
  assign row_bytes  = COLS * esz(e_dt);
  assign drow_bytes = COLS * esz(e_odt);

  logic binary, b_every_row;
  assign binary = (32'(e_op) == OP_VEC_VEC_ADD) || (32'(e_op) == OP_VEC_VEC_SUB) ||
                  (32'(e_op) == OP_VEC_VEC_MAX) || (32'(e_op) == OP_VEC_VEC_MIN) ||
                  (32'(e_op) == OP_VEC_VEC_ADDRESCALE) ||
                  (32'(e_op) == OP_VEC_VEC_MUL);
  logic is_pool;
  assign is_pool = (32'(e_op) == OP_VEC_VEC_MAXPOOL) || (32'(e_op) == OP_VEC_VEC_AVGPOOL);
  // pooling: output row i reads window rows at a + i * step + offset[w], one per cycle
  logic [31:0] cyc_in_row, e_cyc, pool_step;
  logic [7:0]  pool_w;  // window rows
  logic [31:0] win_idx;
  assign e_cyc     = e_first ? 32'd0 : cyc_in_row;
  assign win_idx   = e_cyc / 32'(LANE_PASSES);
  assign pool_w    = prm[PWIN +: 8];
  assign pool_step = (prm[PWIN + 8 +: 32] != 32'd0) ? prm[PWIN + 8 +: 32] : 32'(row_bytes);
  logic [31:0] win_off;
  always_comb begin
    win_off = 32'd0;
    for (int w = 0; w < WMAX; w++) if (win_idx == 32'(w)) win_off = prm[PWIN + 40 + 32*w +: 32];
  end
  logic pool_read, pool_first, pool_last;  // this cycle reads window row win_idx (first / last)
  assign pool_read  = is_pool && (e_cyc % 32'(LANE_PASSES) == 32'd0);
  assign pool_first = pool_read && win_idx == 32'd0;
  assign pool_last  = pool_read && win_idx == 32'(pool_w) - 32'd1;
  assign b_every_row = binary && !e_bcast;

  // ---------------------------------------------------------------- bank cycles of a row
  int row_cycles;
  always_comb begin
    int rd_hits [UB_BANKS];
    int wr_hits [UB_BANKS];
    int worst, f, l;
    f = 0;
    l = 0;
    for (int k = 0; k < UB_BANKS; k++) begin
      rd_hits[k] = 0;
      wr_hits[k] = 0;
    end
    if (!e_aacc) begin
      f = int'(e_a) / UB_ROW_BYTES;
      l = (int'(e_a) + row_bytes - 1) / UB_ROW_BYTES;
      for (int j = 0; j < MAXBLK; j++) if (f + j <= l) rd_hits[(f + j) % UB_BANKS]++;
    end
    // b reading the very bytes a reads (x * x) is the same access
    if (binary && !e_bacc && (b_every_row || e_row == 16'd0) && !(b_every_row && !e_aacc && e_b == e_a)) begin
      f = int'(e_b) / UB_ROW_BYTES;
      l = (int'(e_b) + row_bytes - 1) / UB_ROW_BYTES;
      for (int j = 0; j < MAXBLK; j++) if (f + j <= l) rd_hits[(f + j) % UB_BANKS]++;
    end
    if (!e_dacc) begin
      f = int'(e_d) / UB_ROW_BYTES;
      l = (int'(e_d) + drow_bytes - 1) / UB_ROW_BYTES;
      for (int j = 0; j < MAXBLK; j++) if (f + j <= l) wr_hits[(f + j) % UB_BANKS]++;
    end
    worst = LANE_PASSES;
    for (int k = 0; k < UB_BANKS; k++) begin
      if ((rd_hits[k] + UB_RD_PORTS - 1) / UB_RD_PORTS > worst) worst = (rd_hits[k] + UB_RD_PORTS - 1) / UB_RD_PORTS;
      if ((wr_hits[k] + UB_WR_PORTS - 1) / UB_WR_PORTS > worst) worst = (wr_hits[k] + UB_WR_PORTS - 1) / UB_WR_PORTS;
    end
    row_cycles = is_pool ? 32'(pool_w) * LANE_PASSES : worst;
  end

  // ---------------------------------------------------------------- operands and result
  assign ua_addr    = UAW'(is_pool ? e_a + win_off : e_a);
  assign ubb_addr   = UAW'(e_b);
  // pooling from the accumulators: byte offsets of whole rows
  assign acc_a_addr = AW'(is_pool ? e_a + 32'($signed(win_off) / $signed(COLS * 4)) : e_a);
  assign acc_b_addr = AW'(e_b);

  logic [PB*8-1:0] xa, xb, y, acc_a_wide, acc_b_wide;
  if (PB > COLS * 4) begin : g_widen
    assign acc_a_wide = {{(PB*8 - COLS*32){1'b0}}, acc_a_data};
    assign acc_b_wide = {{(PB*8 - COLS*32){1'b0}}, acc_b_data};
  end else begin : g_same
    assign acc_a_wide = acc_a_data;
    assign acc_b_wide = acc_b_data;
  end
  assign xa = e_aacc ? acc_a_wide : ua_data;
  assign xb = e_bacc ? acc_b_wide : ubb_data;
  if (PB > COLS * 4) begin : g_xb_tail
    logic unused_xb;
    assign unused_xb = ^xb[PB*8-1:COLS*32];
  end






  // ---------------------------------------------------------------- parameters
  logic [PARAM_BITS-1:0] pmem [PARAM_ENTRIES];
  always_ff @(posedge clk) if (param_we) pmem[param_waddr] <= param_wdata;
  logic [PARAM_BITS-1:0] prm;
  assign prm = pmem[e_param];
  localparam int PB0 = 38 * COLS;
  logic signed [31:0] p_in_zp, p_out_zp;
  logic               p_dround;
  logic signed [47:0] p_lo, p_hi;
  logic [31:0]        p_fmin, p_fmax;
  assign p_in_zp  = prm[PB0 +: 32];
  assign p_out_zp = prm[PB0 + 32 +: 32];
  assign p_dround = prm[PB0 + 64];
  assign p_lo     = prm[PB0 + 65 +: 48];
  assign p_hi     = prm[PB0 + 113 +: 48];
  assign p_fmin   = prm[PB0 + 161 +: 32];
  assign p_fmax   = prm[PB0 + 193 +: 32];













  // Row reductions over the lanes, in lane order (vec.rsum adds lane 0, then 1, ...).
  logic [31:0]        lane_afr [COLS];  // each lane's a as fp32 bits (raw)
  // The table functions (vec.exp .. vec.log, opcodes 16..23 in numerics::Transcendental
  // order) of every lane's a, in one loop under one condition (see vtpu_vec_table_pkg).
  logic [31:0]        lane_tab [COLS];
  always_comb begin
    for (int n = 0; n < COLS; n++) lane_tab[n] = 32'd0;
    if (32'(e_op) >= OP_VEC_VEC_EXP && 32'(e_op) <= OP_VEC_VEC_LOG)
      for (int n = 0; n < COLS; n++) lane_tab[n] = vec_table(e_op[2:0] - 3'(OP_VEC_VEC_EXP), lane_afr[n]);
  end
  logic signed [47:0] lane_ai  [COLS];  // ... as an integer
  logic [31:0]        rsum_f   [COLS];  // running fp32 sum
  assign rsum_f[0] = lane_afr[0];
  for (genvar k = 1; k < COLS; k++) begin : g_rsum
    vtpu_fp32_add u_rsum (.a(rsum_f[k-1]), .b(lane_afr[k]), .y(rsum_f[k]));
  end
  logic [31:0]        rsum_i, rmax_f;
  logic signed [47:0] rmax_i;
  always_comb begin
    rsum_i = 32'd0;  // modulo 2^32
    rmax_f = f32_canonical(lane_afr[0]);
    rmax_i = lane_ai[0];
    for (int k = 0; k < COLS; k++) begin
      rsum_i = rsum_i + lane_ai[k][31:0];
      if (k > 0) rmax_f = f32_maxmin(rmax_f, lane_afr[k], 1'b1);
      if (k > 0 && lane_ai[k] > rmax_i) rmax_i = lane_ai[k];
    end
  end

  logic signed [47:0] lo_t, hi_t;  // clamp bounds for the result type
  assign lo_t = (p_lo > tmin(e_odt)) ? ((p_lo > tmax(e_odt)) ? tmax(e_odt) : p_lo) : tmin(e_odt);
  assign hi_t = (p_hi < tmax(e_odt)) ? ((p_hi < tmin(e_odt)) ? tmin(e_odt) : p_hi) : tmax(e_odt);
  logic [31:0] lane_y [COLS];  // each lane's result, in the low esz(odt) bytes
  for (genvar n = 0; n < COLS; n++) begin : g_lane
    logic [31:0] a_raw, b_raw;
    // elements n of a and b as stored in rows of type dt
    always_comb begin
      case (esz(e_dt))
        1: begin a_raw = {24'd0, xa[n*8 +: 8]};  b_raw = {24'd0, xb[n*8 +: 8]};  end
        2: begin a_raw = {16'd0, xa[n*16 +: 16]}; b_raw = {16'd0, xb[n*16 +: 16]}; end
        default: begin a_raw = xa[n*32 +: 32]; b_raw = xb[n*32 +: 32]; end
      endcase
    end
    vtpu_vec_lane u_lane (
      .clk(clk), .op(e_op), .dt(e_dt), .odt(e_odt), .a_raw(a_raw), .b_raw(b_raw),
      .pool_read(pool_read), .pool_first(pool_first),
      .mult(prm[38*n +: 32]), .shift(prm[38*n + 32 +: 6]),
      .scale(prm[38*COLS + 225 + 64*n +: 32]), .bias(prm[38*COLS + 257 + 64*n +: 32]),
      .in_zp(p_in_zp), .out_zp(p_out_zp), .dround(p_dround), .lo_t(lo_t), .hi_t(hi_t),
      .fmin(p_fmin), .fmax(p_fmax),
      .rsum_i(rsum_i), .rsum_f(rsum_f[COLS-1]), .rmax_i(rmax_i[31:0]), .rmax_f(rmax_f), .tab_y(lane_tab[n]),
      .a_fr(lane_afr[n]), .a_i(lane_ai[n]), .y(lane_y[n]));
  end
  always_comb begin
    y = xa;  // vec.copy: the row's bytes as they are
    if (32'(e_op) != OP_VEC_VEC_COPY)
      for (int n = 0; n < COLS; n++)
        case (esz(e_odt))
          1: y[n*8 +: 8] = lane_y[n][7:0];
          2: y[n*16 +: 16] = lane_y[n][15:0];
          default: y[n*32 +: 32] = lane_y[n];
        endcase
  end

  logic doing;  // this cycle reads, computes and writes a row
  assign doing     = e_busy && (is_pool ? pool_last : e_first);
  assign uw_en     = doing && !e_dacc;
  assign uw_addr   = UAW'(e_d);
  assign uw_len    = ULW'(drow_bytes);
  assign uw_data   = y;
  assign acc_we    = doing && e_dacc;
  assign acc_waddr = AW'(e_d);
  assign acc_wdata = y[COLS*32-1:0];

  // ---------------------------------------------------------------- timing
  logic [31:0] lat;  // the operation class's latency
  always_comb begin
    case (32'(e_op))
      OP_VEC_VEC_MUL, OP_VEC_VEC_AFFINE: lat = 32'(LAT_MUL);
      OP_VEC_VEC_RESCALE, OP_VEC_VEC_ADDRESCALE: lat = 32'(LAT_RESCALE);
      OP_VEC_VEC_CVT: lat = 32'(LAT_CONVERT);
      OP_VEC_VEC_RSUM, OP_VEC_VEC_RMAX: lat = 32'(LAT_REDUCE);
      OP_VEC_VEC_MAXPOOL, OP_VEC_VEC_AVGPOOL: lat = 32'(LAT_POOL);
      OP_VEC_VEC_EXP, OP_VEC_VEC_TANH, OP_VEC_VEC_SIGMOID, OP_VEC_VEC_GELU, OP_VEC_VEC_ERF, OP_VEC_VEC_RECIP,
      OP_VEC_VEC_RSQRT, OP_VEC_VEC_LOG: lat = 32'(LAT_TRANS);
      default: lat = 32'(LAT_ALU);
    endcase
  end
  logic row_end, op_end;
  assign row_end = e_busy && (e_first ? (row_cycles == 1) : (wait_cnt == 32'd1));
  assign op_end  = row_end && (e_row == e_rows - 16'd1);

  assign ev_valid = op_end;
  assign ev_pc    = fire ? pc : v_pc;
  assign ev_t     = fire ? now : v_t;

  logic        p_valid [NPEND];
  logic [31:0] p_done  [NPEND];
  logic [5:0]  p_flag  [NPEND];
  logic [$clog2(NPEND+1)-1:0] p_free;
  logic any_busy;
  always_comb begin
    p_free = NPEND[$clog2(NPEND+1)-1:0];
    any_busy = 1'b0;
    for (int i = NPEND - 1; i >= 0; i--) begin
      inc_valid[i] = p_valid[i] && p_done[i] == now && p_flag[i] != 6'd0;
      inc_flag[i]  = p_flag[i];
      if (p_valid[i] && p_done[i] > now) any_busy = 1'b1;
      else p_free = ($clog2(NPEND+1))'(i);
    end
  end
  assign idle = !busy && !any_busy;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      busy <= 1'b0;
      err_pend <= 1'b0;
      for (int i = 0; i < NPEND; i++) p_valid[i] <= 1'b0;
    end else begin
      if (fire) begin
        v_rows  <= rows;
        v_op    <= op;
        v_dt    <= dt;
        v_odt   <= odt;
        v_param <= PW'(param);
        v_aacc  <= a_acc;
        v_bacc  <= b_acc;
        v_dacc  <= d_acc;
        v_bcast <= bcast;
        v_flag  <= flag;
        v_pc    <= pc;
        v_t     <= now;
      end
      if (e_busy) begin
        busy  <= 1'b1;
        first <= 1'b0;
        row   <= e_row;
        cur_a <= e_a;
        cur_b <= e_b;
        cur_d <= e_d;
        cyc_in_row <= e_cyc + 32'd1;
        if (e_first && !row_end) wait_cnt <= 32'(row_cycles) - 32'd1;
        else if (!row_end) wait_cnt <= wait_cnt - 32'd1;
        if (row_end) begin
          if (op_end) begin
            busy <= 1'b0;
            if (p_free == NPEND[$clog2(NPEND+1)-1:0]) err_pend <= 1'b1;
            else begin
              p_valid[p_free[$clog2(NPEND)-1:0]] <= 1'b1;
              p_done[p_free[$clog2(NPEND)-1:0]]  <= now + 32'd1 + lat;
              p_flag[p_free[$clog2(NPEND)-1:0]]  <= fire ? flag : v_flag;
            end
          end else begin
            row   <= e_row + 16'd1;
            first <= 1'b1;
            if (is_pool) cur_a <= e_a + (e_aacc ? 32'($signed(pool_step) / $signed(COLS * 4)) : pool_step);
            else cur_a <= e_aacc ? e_a + 32'd1 : e_a + 32'(row_bytes);
            if (b_every_row) cur_b <= e_bacc ? e_b + 32'd1 : e_b + 32'(row_bytes);
            cur_d <= e_dacc ? e_d + 32'd1 : e_d + 32'(drow_bytes);
          end
        end
      end
    end
  end
endmodule
