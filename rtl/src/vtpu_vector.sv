// vtpu_vector: the vector unit (docs/microarch.md, "Vector unit"), for the operations of
// docs/rtl.md's subset: vec.add, vec.sub, vec.mul, vec.max, vec.min, vec.relu, vec.clamp,
// vec.affine and vec.copy on every type, vec.rescale (TOSA RESCALE between integer types),
// vec.cvt between any two types, the row reductions vec.rsum and vec.rmax, and the pooling
// windows vec.maxpool and vec.avgpool (one window row per cycle, from the unified buffer),
// with the arithmetic of docs/numerics.md. One operation at a time occupies the issue stage for the sum over
// its rows of max(LANE_PASSES, the row's bank cycles); row i is read, computed and written
// in its first cycle. The flag increment comes LAT cycles after the last row (done D =
// T + occ + lat), from a small table so later operations can overlap the latency.
module vtpu_vector import vtpu_isa_pkg::*; #(
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
  input  logic [11:0]        param,
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
  assign unused_param = ^param[11:PW];
  assign e_aacc  = fire ? a_acc : v_aacc;
  assign e_bacc  = fire ? b_acc : v_bacc;
  assign e_dacc  = fire ? d_acc : v_dacc;
  assign e_bcast = fire ? bcast : v_bcast;
  assign e_a     = fire ? a_addr : cur_a;
  assign e_b     = fire ? b_addr : cur_b;
  assign e_d     = fire ? d_addr : cur_d;

  function automatic int esz(input logic [2:0] t);
    case (32'(t))
      DTYPE_INT8, DTYPE_UINT8: return 1;
      DTYPE_BF16, DTYPE_INT16: return 2;
      default: return 4;
    endcase
  endfunction
  int row_bytes, drow_bytes;  // source rows (dt), destination rows (odt)
  assign row_bytes  = COLS * esz(e_dt);
  assign drow_bytes = COLS * esz(e_odt);

  logic binary, b_every_row;
  assign binary = (32'(e_op) == OP_VEC_VEC_ADD) || (32'(e_op) == OP_VEC_VEC_SUB) ||
                  (32'(e_op) == OP_VEC_VEC_MAX) || (32'(e_op) == OP_VEC_VEC_MIN) ||
                  (32'(e_op) == OP_VEC_VEC_MUL);
  logic is_float_dt, is_pool;
  assign is_float_dt = 32'(e_dt) == DTYPE_FP32 || 32'(e_dt) == DTYPE_BF16;
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
    if (binary && !e_bacc && (b_every_row || e_row == 16'd0)) begin
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
  assign acc_a_addr = AW'(e_a);
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

  function automatic logic [31:0] f32_daz(input logic [31:0] x);
    return (x[30:23] == 8'd0) ? {x[31], 31'd0} : x;
  endfunction
  function automatic logic f32_nan(input logic [30:0] x);  // the sign does not matter
    return x[30:23] == 8'hFF && x[22:0] != 23'd0;
  endfunction
  // Total order on non-NaN values with -0 < +0, as sign-magnitude integers.
  function automatic logic signed [32:0] f32_key(input logic [31:0] x);
    return x[31] ? -$signed({2'b00, x[30:0]}) - 33'sd1 : $signed({1'b0, x});
  endfunction
  // IEEE 754-2019 maximum (max = 1) / minimum (max = 0) after DAZ (docs/numerics.md)
  function automatic logic [31:0] f32_maxmin(input logic [31:0] a0, input logic [31:0] b0, input logic max);
    logic [31:0] a, b;
    a = f32_daz(a0);
    b = f32_daz(b0);
    if (f32_nan(a[30:0]) || f32_nan(b[30:0])) return 32'h7FC00000;
    if (max) return (f32_key(a) >= f32_key(b)) ? a : b;
    return (f32_key(a) <= f32_key(b)) ? a : b;
  endfunction

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

  // ---------------------------------------------------------------- element arithmetic
  function automatic logic is_int(input logic [2:0] t);
    return 32'(t) != DTYPE_BF16 && 32'(t) != DTYPE_FP32;
  endfunction
  function automatic logic signed [47:0] tmin(input logic [2:0] t);
    case (32'(t))
      DTYPE_INT8: return -48'sd128;
      DTYPE_UINT8: return 48'sd0;
      DTYPE_INT16: return -48'sd32768;
      default: return -48'sd2147483648;
    endcase
  endfunction
  function automatic logic signed [47:0] tmax(input logic [2:0] t);
    case (32'(t))
      DTYPE_INT8: return 48'sd127;
      DTYPE_UINT8: return 48'sd255;
      DTYPE_INT16: return 48'sd32767;
      default: return 48'sd2147483647;
    endcase
  endfunction
  function automatic logic signed [47:0] sat(input logic signed [47:0] v, input logic signed [47:0] lo,
                                              input logic signed [47:0] hi);
    if (v < lo) return lo;
    if (v > hi) return hi;
    return v;
  endfunction
  // The policy for a stored fp32 value: denormal -> signed zero, NaN -> canonical NaN.
  function automatic logic [31:0] f32_canonical(input logic [31:0] x);
    return f32_nan(x[30:0]) ? 32'h7FC00000 : f32_daz(x);
  endfunction
  function automatic logic [15:0] f32_to_bf16(input logic [31:0] x0);
    logic [31:0] x;
    x = f32_daz(x0);
    if (f32_nan(x[30:0])) return 16'h7FC0;
    return 16'((x + 32'h7FFF + 32'(x[16])) >> 16);
  endfunction
  // An integer as fp32 rounded to P significant bits (24: fp32, 8: bf16), ties to even.
  function automatic logic [31:0] int_to_f32(input logic signed [47:0] v, input int P);
    logic [47:0] mag, rem, half;
    int lead, sh;
    logic sign;
    if (v == 48'sd0) return 32'd0;
    sign = v < 0;
    mag = sign ? 48'(-v) : 48'(v);
    lead = 0;
    for (int i = 0; i < 48; i++) if (mag[i]) lead = i;
    if (lead >= P) begin
      sh = lead - (P - 1);
      rem = mag & ((48'd1 << sh) - 48'd1);
      half = 48'd1 << (sh - 1);
      mag = mag >> sh;
      if (rem > half || (rem == half && mag[0])) mag = mag + 48'd1;
      if ((mag >> P) != 48'd0) begin
        mag = mag >> 1;
        lead = lead + 1;
        sh = sh + 1;
      end
      mag = mag << sh;
    end
    mag = (lead >= 23) ? (mag >> (lead - 23)) : (mag << (23 - lead));
    return {sign, 8'(lead + 127), mag[22:0]};
  endfunction
  // fp32 to an integer, ties to even, saturated to [lo, hi]; NaN gives 0.
  function automatic logic signed [47:0] f32_to_int(input logic [31:0] x0, input logic signed [47:0] lo,
                                                     input logic signed [47:0] hi);
    logic [31:0] x;
    logic [47:0] m, q, rem, half;
    logic signed [47:0] mag;
    int e, sh;
    x = f32_daz(x0);
    if (f32_nan(x[30:0])) return 48'sd0;
    e = int'(x[30:23]) - 127;
    if (x[30:0] == 31'd0) mag = 48'sd0;
    else if (e >= 40) mag = 48'sd1 <<< 40;
    else begin
      m = {24'd0, 1'b1, x[22:0]};
      if (e >= 23) mag = $signed(m << (e - 23));
      else begin
        sh = 23 - e;
        if (sh > 24) mag = 48'sd0;
        else begin
          q = m >> sh;
          rem = m & ((48'd1 << sh) - 48'd1);
          half = 48'd1 << (sh - 1);
          if (rem > half || (rem == half && q[0])) q = q + 48'd1;
          mag = $signed(q);
        end
      end
    end
    return sat(x[31] ? -mag : mag, lo, hi);
  endfunction
  // TOSA RESCALE (scale32) of one value: ((v - in_zp) * mult + round) >> shift, + out_zp,
  // clamped; 96-bit intermediate so no input can overflow it.
  function automatic logic signed [47:0] rescale(input logic signed [47:0] v, input logic [31:0] mult,
                                                  input logic [5:0] shift, input logic signed [47:0] lo,
                                                  input logic signed [47:0] hi);
    logic signed [95:0] value, prod, rnd;
    logic signed [95:0] r;
    value = 96'(v) - 96'(p_in_zp);
    rnd = 96'sd1 <<< (shift - 6'd1);
    if (p_dround && shift > 6'd31) rnd = rnd + ((value >= 0) ? (96'sd1 <<< 30) : -(96'sd1 <<< 30));
    prod = value * $signed({64'd0, mult}) + rnd;
    r = (prod >>> shift) + 96'(p_out_zp);
    if (r < 96'(lo)) return lo;
    if (r > 96'(hi)) return hi;
    return 48'(r);
  endfunction

  // vec.cvt of one element (docs/numerics.md): an integer value vi or a canonical fp32 vf.
  function automatic logic [31:0] convert(input logic from_int, input logic signed [47:0] vi, input logic [31:0] vf,
                                          input logic [2:0] to);
    if (from_int) begin
      if (is_int(to)) return 32'(sat(vi, tmin(to), tmax(to)));
      if (32'(to) == DTYPE_BF16) return {16'd0, 16'(int_to_f32(vi, 8) >> 16)};
      return f32_canonical(int_to_f32(vi, 24));
    end
    if (is_int(to)) return 32'(f32_to_int(vf, tmin(to), tmax(to)));
    if (32'(to) == DTYPE_BF16) return {16'd0, f32_to_bf16(vf)};
    return f32_canonical(vf);
  endfunction

  // Row reductions over the lanes, in lane order (vec.rsum adds lane 0, then 1, ...).
  logic [31:0]        lane_afr [COLS];  // each lane's a as fp32 bits (raw)
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
    logic [31:0] a_raw, b_raw, a_f, a_fr, b_fr, b_neg, sum_f, mul_in_a, mul_in_b, prod_f, aff_f, r, rf;
    logic [31:0] pacc, pool_f, pool_sum_i, add_a, add_b, psum_f;  // pooling: running value, this cycle's
    logic signed [47:0] a_i, b_i, ri;
    logic signed [47:0] prod_i;  // mod 2^48: exact for 16-bit operands, right low 32 bits for int32
    // elements n of a and b as stored in rows of type dt
    always_comb begin
      case (esz(e_dt))
        1: begin a_raw = {24'd0, xa[n*8 +: 8]};  b_raw = {24'd0, xb[n*8 +: 8]};  end
        2: begin a_raw = {16'd0, xa[n*16 +: 16]}; b_raw = {16'd0, xb[n*16 +: 16]}; end
        default: begin a_raw = xa[n*32 +: 32]; b_raw = xb[n*32 +: 32]; end
      endcase
      case (32'(e_dt))
        DTYPE_INT8:  begin a_i = 48'($signed(a_raw[7:0]));   b_i = 48'($signed(b_raw[7:0]));   end
        DTYPE_INT16: begin a_i = 48'($signed(a_raw[15:0]));  b_i = 48'($signed(b_raw[15:0]));  end
        DTYPE_UINT8: begin a_i = 48'(a_raw[7:0]);            b_i = 48'(b_raw[7:0]);            end
        default:     begin a_i = 48'($signed(a_raw));        b_i = 48'($signed(b_raw));        end
      endcase
      // floats as fp32 bits: raw for arithmetic (which applies DAZ itself), canonical for vec.cvt
      a_fr = (32'(e_dt) == DTYPE_BF16) ? {a_raw[15:0], 16'd0} : a_raw;
      b_fr = (32'(e_dt) == DTYPE_BF16) ? {b_raw[15:0], 16'd0} : b_raw;
      a_f  = f32_canonical(a_fr);
    end
    assign b_neg = (32'(e_op) == OP_VEC_VEC_SUB) ? {~b_fr[31], b_fr[30:0]} : b_fr;  // a - b = a + (-b)
    // vec.affine: a * scale + bias in fp32 (integers converted to fp32 first, back after);
    // vec.avgpool: the window sum (fp32 in window order, or int32 modulo 2^32) * scale
    assign pool_sum_i = pool_first ? a_i[31:0] : pacc + a_i[31:0];
    always_comb begin  // multiplier operands
      if (32'(e_op) == OP_VEC_VEC_AFFINE) begin
        mul_in_a = is_float_dt ? a_fr : int_to_f32(a_i, 24);
        mul_in_b = prm[38*COLS + 225 + 64*n +: 32];
      end else if (32'(e_op) == OP_VEC_VEC_AVGPOOL) begin
        mul_in_a = is_float_dt ? pool_f : int_to_f32(48'($signed(pool_sum_i)), 24);
        mul_in_b = prm[38*COLS + 225 + 64*n +: 32];
      end else begin
        mul_in_a = a_fr;
        mul_in_b = b_fr;
      end
    end
    // adder operands (a separate block: the affine add takes the product)
    assign add_a = (32'(e_op) == OP_VEC_VEC_AFFINE) ? prod_f : a_fr;
    assign add_b = (32'(e_op) == OP_VEC_VEC_AFFINE) ? prm[38*COLS + 257 + 64*n +: 32] : b_neg;
    vtpu_fp32_mul u_mul (.a(mul_in_a), .b(mul_in_b), .y(prod_f));
    vtpu_fp32_add u_add (.a(add_a), .b(add_b), .y(sum_f));
    vtpu_fp32_add u_padd (.a(pacc), .b(a_fr), .y(psum_f));  // the window sum (its own adder: it feeds the multiplier)
    // the pooled value including this cycle's window row
    always_comb begin
      if (32'(e_op) == OP_VEC_VEC_MAXPOOL)
        pool_f = pool_first ? f32_canonical(a_fr) : f32_maxmin(pacc, a_fr, 1'b1);
      else
        pool_f = pool_first ? a_fr : psum_f;
    end
    always_ff @(posedge clk) begin
      if (pool_read) begin
        if (32'(e_op) == OP_VEC_VEC_MAXPOOL)
          pacc <= is_float_dt ? pool_f : ((pool_first || $signed(a_i) > $signed(48'($signed(pacc)))) ? a_i[31:0] : pacc);
        else
          pacc <= is_float_dt ? pool_f : pool_sum_i;
      end
    end
    assign aff_f = sum_f;
    assign prod_i = a_i * b_i;
    // the float operations (fp32 and bf16 rows), as fp32
    always_comb begin
      case (32'(e_op))
        OP_VEC_VEC_ADD, OP_VEC_VEC_SUB: rf = sum_f;
        OP_VEC_VEC_MUL: rf = prod_f;
        OP_VEC_VEC_MAX: rf = f32_maxmin(a_fr, b_fr, 1'b1);
        OP_VEC_VEC_MIN: rf = f32_maxmin(a_fr, b_fr, 1'b0);
        OP_VEC_VEC_RELU: rf = f32_maxmin(a_fr, 32'd0, 1'b1);
        OP_VEC_VEC_CLAMP: rf = f32_maxmin(f32_maxmin(a_fr, p_fmin, 1'b1), p_fmax, 1'b0);
        OP_VEC_VEC_MAXPOOL: rf = pool_f;
        OP_VEC_VEC_AVGPOOL: rf = prod_f;
        default: rf = aff_f;  // vec.affine
      endcase
    end
    // the integer operations: int32 wraps, narrower types saturate
    always_comb begin
      case (32'(e_op))
        OP_VEC_VEC_ADD: ri = a_i + b_i;
        OP_VEC_VEC_SUB: ri = a_i - b_i;
        OP_VEC_VEC_MUL: ri = (32'(e_dt) == DTYPE_INT32) ? 48'($signed(prod_i[31:0])) : prod_i[47:0];
        OP_VEC_VEC_MAX: ri = (a_i > b_i) ? a_i : b_i;
        OP_VEC_VEC_MIN: ri = (a_i < b_i) ? a_i : b_i;
        OP_VEC_VEC_RELU: ri = (a_i > 0) ? a_i : 48'sd0;
        OP_VEC_VEC_CLAMP: ri = sat(a_i, lo_t, hi_t);
        OP_VEC_VEC_MAXPOOL: ri = (pool_first || a_i > 48'($signed(pacc))) ? a_i : 48'($signed(pacc));
        OP_VEC_VEC_AVGPOOL: ri = f32_to_int(prod_f, tmin(e_dt), tmax(e_dt));
        default: ri = f32_to_int(aff_f, tmin(e_dt), tmax(e_dt));  // vec.affine
      endcase
      if (32'(e_dt) != DTYPE_INT32) ri = sat(ri, tmin(e_dt), tmax(e_dt));
    end
    always_comb begin
      case (32'(e_op))
        OP_VEC_VEC_RESCALE: r = 32'(rescale(a_i, prm[38*n +: 32], prm[38*n + 32 +: 6], lo_t, hi_t));
        OP_VEC_VEC_CVT: r = convert(is_int(e_dt), a_i, a_f, e_odt);
        // every lane gets the row's sum (as int32 or fp32, converted to odt) or maximum
        OP_VEC_VEC_RSUM: r = convert(is_int(e_dt), 48'($signed(rsum_i)), f32_canonical(rsum_f[COLS-1]), e_odt);
        OP_VEC_VEC_RMAX: r = !is_float_dt ? 32'(rmax_i)
                           : (32'(e_dt) == DTYPE_BF16) ? {16'd0, f32_to_bf16(rmax_f)} : f32_canonical(rmax_f);
        default: begin
          if (!is_float_dt) r = 32'(ri);
          else if (32'(e_dt) == DTYPE_BF16) r = {16'd0, f32_to_bf16(rf)};
          else r = f32_canonical(rf);
        end
      endcase
    end
    assign lane_y[n]   = r;
    assign lane_afr[n] = a_fr;
    assign lane_ai[n]  = a_i;
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
      OP_VEC_VEC_RESCALE: lat = 32'(LAT_RESCALE);
      OP_VEC_VEC_CVT: lat = 32'(LAT_CONVERT);
      OP_VEC_VEC_RSUM, OP_VEC_VEC_RMAX: lat = 32'(LAT_REDUCE);
      OP_VEC_VEC_MAXPOOL, OP_VEC_VEC_AVGPOOL: lat = 32'(LAT_POOL);
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
            cur_a <= e_aacc ? e_a + 32'd1 : e_a + (is_pool ? pool_step : 32'(row_bytes));
            if (b_every_row) cur_b <= e_bacc ? e_b + 32'd1 : e_b + 32'(row_bytes);
            cur_d <= e_dacc ? e_d + 32'd1 : e_d + 32'(drow_bytes);
          end
        end
      end
    end
  end
endmodule
