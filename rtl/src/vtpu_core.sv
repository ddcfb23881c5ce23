// vtpu_core: one vtpu core — the sequencer that decodes the ISA's bundles (field positions
// and opcodes from the generated vtpu_isa_pkg), the scalar unit, the sync flags, the unified
// buffer, the DMA engine with one weight FIFO per MXU, MXUS MXUs (each its own weight path,
// data path, unified-buffer input port and accumulators) and the vector unit, which
// addresses MXU m's accumulator row r as m * ACC_ROWS + r. Timing follows docs/microarch.md rule for rule; docs/rtl.md lists the
// supported subset and how each rule is met. The off-chip memory is outside: the DMA
// engine's memory port (vtpu_dma) is answered by the testbench's memory model.
//
// Cycle 0 is the first cycle with rst_n high. Programs (bundles, DMA descriptors) are
// written through imem_* / desc_* while rst_n is low. The instruction memory holds the whole
// program; a program longer than the config's core.scalar.imem_bundles runs as from windows
// of imem_window bundles, each fetch taking imem_fetch_cycles, on demand or ahead of use with
// imem_prefetch (docs/microarch.md, "Instruction memory"; the inputs held while the core runs).
module vtpu_core import vtpu_isa_pkg::*; #(
  parameter int ROWS           = 4,
  parameter int COLS           = 4,
  parameter int IN_LAT         = 2,
  parameter int OUT_LAT        = 2,
  parameter int SHIFT          = ROWS,
  parameter int ACC_ROWS       = 256,
  parameter int MXUS           = 1,    // core.mxu.count
  parameter int UB_BYTES       = 65536,
  parameter int UB_ROW_BYTES   = 8,
  parameter int UB_BANKS       = 2,
  parameter int UB_RD_PORTS    = 1,
  parameter int UB_WR_PORTS    = 1,
  parameter int UB_RD_LAT      = 2,
  parameter int UB_WR_LAT      = 1,
  parameter int LANE_PASSES    = 1,
  parameter int VEC_LAT_ALU    = 2,
  parameter int VEC_LAT_MUL    = 4,
  parameter int VEC_LAT_RESCALE = 4,
  parameter int VEC_LAT_CONVERT = 2,
  parameter int VEC_LAT_REDUCE = 8,
  parameter int VEC_LAT_POOL   = 2,
  parameter int VEC_LAT_TRANS  = 12,
  parameter int PARAM_ENTRIES  = 16,
  parameter int BRANCH_PENALTY = 2,
  parameter int DMA_SETUP      = 16,
  parameter int DMA_INFLIGHT   = 4,
  parameter int WF_TILES       = 2,
  parameter int IMEM_BUNDLES   = 1024,
  parameter int DESC_ENTRIES   = 64,
  parameter int PB             = 64,   // UB port bytes: a DMA beat, the longest vector row
  localparam int IB   = CTL_LSB + CTL_WIDTH,  // bundle bits below the padding
  localparam int IW   = $clog2(IMEM_BUNDLES),
  localparam int DW   = $clog2(DESC_ENTRIES),
  localparam int UAW  = $clog2(UB_BYTES),
  localparam int ULW  = $clog2(PB + 1),
  localparam int AW   = (ACC_ROWS > 1) ? $clog2(ACC_ROWS) : 1,
  localparam int GAW  = (MXUS * ACC_ROWS > 1) ? $clog2(MXUS * ACC_ROWS) : 1,  // rows of all MXUs
  localparam int MW   = (MXUS > 1) ? $clog2(MXUS) : 1,
  localparam int MMQ  = 64,  // matmuls in flight (each >= 1 row): well above in+R+C+out
  localparam int PW   = $clog2(PARAM_ENTRIES),
  localparam int PARAM_BITS = 102 * COLS + 225 + 40 + 32 * 16  // vtpu_vector's parameter RAM entry
) (
  input  logic              clk,
  input  logic              rst_n,
  // program loading
  input  logic              imem_we,
  input  logic [IW-1:0]     imem_waddr,
  input  logic [IB-1:0]     imem_wdata,
  input  logic [23:0]       imem_window,        // config::imem_window_bundles
  input  logic [31:0]       imem_fetch_cycles,  // config::imem_fetch_cycles; 0: the program is resident
  input  logic              imem_prefetch,      // core.scalar.imem_prefetch
  input  logic [23:0]       imem_program,       // the program's bundles
  input  logic              desc_we,
  input  logic [DW-1:0]     desc_waddr,
  input  logic [322:0]      desc_wdata,
  input  logic              param_we,
  input  logic [PW-1:0]     param_waddr,
  input  logic [PARAM_BITS-1:0] param_wdata,
  // off-chip memory (answered in the same cycle)
  output logic              mem_req_valid,
  output logic              mem_req_write,
  output logic [31:0]       mem_req_addr,
  output logic [15:0]       mem_req_bytes,
  output logic [15:0]       mem_req_count,  // rows of mem_req_bytes, mem_req_stride apart
  output logic [31:0]       mem_req_stride,
  output logic              mem_req_first,
  output logic [15:0]       mem_req_offset,
  output logic [15:0]       mem_req_beat_bytes,
  output logic [31:0]       mem_req_ready,
  output logic [PB*8-1:0]   mem_req_wdata,
  output logic [23:0]       mem_req_pc,    // observation: the DMA bundle of the request
  input  logic [31:0]       mem_resp_done,
  input  logic [PB*8-1:0]   mem_resp_rdata,
  // observation
  output logic [31:0]       cycle,
  output logic              issue,         // bundle issue_pc issues at this cycle
  output logic [23:0]       issue_pc,
  output logic [MXUS-1:0]   wload_start,   // MXU m's weight shift starts (the tile leaves its FIFO)
  output logic              dma_ev,        // a DMA transfer's [t, done) became known
  output logic [23:0]       dma_ev_pc,
  output logic [31:0]       dma_ev_t,
  output logic [31:0]       dma_ev_done,
  output logic              vec_ev,        // a vector op leaves the issue stage after this cycle
  output logic [23:0]       vec_ev_pc,
  output logic [31:0]       vec_ev_t,
  output logic              finished,      // halted and every unit drained: total = cycle
  output logic [3:0]        error          // sticky: bit 0 unsupported operation, 1 DMA late,
                                           // 3 vector done table full (2: unused)
);
  // ================================================================ fetch and decode
  logic [IB-1:0] imem [IMEM_BUNDLES];
  always_ff @(posedge clk) if (imem_we) imem[imem_waddr] <= imem_wdata;

  logic [31:0] now;
  logic [23:0] pc;
  logic        halted, unsupported;
  logic        err_unsup, err_late, err_pend;
  assign error = {err_pend, 1'b0, err_late, err_unsup};
  logic [31:0] bubble;  // branch penalty and window fetch cycles left
  logic [23:0] next_pc;
  // The resident instruction windows (slot 1 only with prefetch; all ones: none), the cycle
  // each one's fetch ends, the window of the last bundle issued and the end of the last fetch.
  localparam logic [23:0] NO_WIN = '1;
  logic [23:0] slot_win [2];
  logic [31:0] slot_ready [2];
  logic [23:0] cur_win;
  logic [31:0] fetch_free;
  logic [IB-1:0] b;
  assign b = imem[IW'(pc)];
  assign cycle = now;

  logic [S0_OP_WIDTH-1:0]  s0_op, s1_op;
  logic [DMA_OP_WIDTH-1:0] dma_op;
  logic [MXW_OP_WIDTH-1:0] mxw_op;
  logic [MXM_OP_WIDTH-1:0] mxm_op;
  logic [VEC_OP_WIDTH-1:0] vec_op;
  logic [CTL_OP_WIDTH-1:0] ctl_op;
  assign s0_op  = b[S0_OP_LSB +: S0_OP_WIDTH];
  assign s1_op  = b[S1_OP_LSB +: S1_OP_WIDTH];
  assign dma_op = b[DMA_OP_LSB +: DMA_OP_WIDTH];
  assign mxw_op = b[MXW_OP_LSB +: MXW_OP_WIDTH];
  assign mxm_op = b[MXM_OP_LSB +: MXM_OP_WIDTH];
  assign vec_op = b[VEC_OP_LSB +: VEC_OP_WIDTH];
  assign ctl_op = b[CTL_OP_LSB +: CTL_OP_WIDTH];

  // ================================================================ scalar registers
  logic [31:0] regs [32];
  function automatic logic [31:0] rd_reg(input logic [4:0] r);
    return (r == 5'd0) ? 32'd0 : regs[r];
  endfunction

  function automatic logic [31:0] alu(input logic [5:0] op, input logic [31:0] a, input logic [31:0] r2,
                                      input logic [31:0] imm);
    logic [31:0] y;
    y = (32'(op) >= OP_SCALAR_ADDI) ? imm : r2;  // the immediate forms take imm as operand 2
    case (32'(op))
      OP_SCALAR_ADD, OP_SCALAR_ADDI: return a + y;
      OP_SCALAR_SUB: return a - y;
      OP_SCALAR_MUL, OP_SCALAR_MULI: return a * y;
      OP_SCALAR_AND, OP_SCALAR_ANDI: return a & y;
      OP_SCALAR_OR, OP_SCALAR_ORI: return a | y;
      OP_SCALAR_XOR, OP_SCALAR_XORI: return a ^ y;
      OP_SCALAR_SHL, OP_SCALAR_SHLI: return a << y[4:0];
      OP_SCALAR_SHR, OP_SCALAR_SHRI: return a >> y[4:0];
      OP_SCALAR_SRA, OP_SCALAR_SRAI: return $unsigned($signed(a) >>> y[4:0]);
      OP_SCALAR_SLT, OP_SCALAR_SLTI: return {31'd0, $signed(a) < $signed(y)};
      OP_SCALAR_SLTU: return {31'd0, a < y};
      OP_SCALAR_SEQ: return {31'd0, a == y};
      OP_SCALAR_SNE: return {31'd0, a != y};
      OP_SCALAR_MIN: return ($signed(a) < $signed(y)) ? a : y;
      OP_SCALAR_MAX: return ($signed(a) > $signed(y)) ? a : y;
      OP_SCALAR_LI: return imm;
      default: return 32'd0;
    endcase
  endfunction

  logic [31:0] s0_y, s1_y;
  assign s0_y = alu(s0_op, rd_reg(b[S0_RS1_LSB +: 5]), rd_reg(b[S0_RS2_LSB +: 5]), b[S0_IMM_LSB +: 32]);
  assign s1_y = alu(s1_op, rd_reg(b[S1_RS1_LSB +: 5]), rd_reg(b[S1_RS2_LSB +: 5]), b[S1_IMM_LSB +: 32]);

  // ================================================================ sync flags
  logic [31:0] flags [64];
  logic        sig_pend;        // a signal's increment, at its T + 1
  logic [5:0]  sig_flag;
  logic [15:0] sig_count;

  logic [DMA_INFLIGHT-1:0] dma_inc;
  logic [5:0]              dma_inc_flag [DMA_INFLIGHT];
  localparam int NVP = 8;
  logic [NVP-1:0]          vec_inc;
  logic [5:0]              vec_inc_flag [NVP];
  logic                    mm_done  [MXUS];
  logic [5:0]              mmq_flag [MXUS][MMQ];  // per MXU, in issue order (done pulses come in that order)
  logic [5:0]              mmq_head [MXUS];
  logic [5:0]              mmq_tail [MXUS];
  logic [6:0]              mm_out   [MXUS];  // matmuls issued whose done has not pulsed

  // increments realized at this cycle, per flag
  logic [31:0] inc [64];
  always_comb begin
    for (int f = 0; f < 64; f++) inc[f] = 32'd0;
    for (int i = 0; i < DMA_INFLIGHT; i++) if (dma_inc[i]) inc[dma_inc_flag[i]] += 32'd1;
    for (int i = 0; i < NVP; i++) if (vec_inc[i]) inc[vec_inc_flag[i]] += 32'd1;
    for (int m = 0; m < MXUS; m++)
      if (mm_done[m] && mmq_flag[m][mmq_head[m]] != 6'd0) inc[mmq_flag[m][mmq_head[m]]] += 32'd1;
    if (sig_pend) inc[sig_flag] += 32'(sig_count);
  end

  // ================================================================ issue
  logic [5:0]  w_flag;
  logic [15:0] w_count;
  assign w_flag  = b[CTL_FLAG_LSB +: 6];
  assign w_count = b[CTL_COUNT_LSB +: 16];

  logic is_wait, ok_wait, ok_dma, ok_wl, ok_mm, ok_vec;
  logic dma_can, wl_ready, mm_ready, vec_ready;
  assign is_wait = 32'(ctl_op) == OP_CTL_WAIT;
  assign ok_wait = !is_wait || (flags[w_flag] + inc[w_flag] >= 32'(w_count));
  assign ok_dma  = (dma_op == '0) || dma_can;
  assign ok_wl   = (mxw_op == '0) || wl_ready;
  assign ok_mm   = (mxm_op == '0) || mm_ready;
  assign ok_vec  = (vec_op == '0) || vec_ready;

  // What the RTL does not implement stops issue (docs/rtl.md, "Supported subset"); the
  // testbench rejects such programs before they run, this is the backstop.
  logic vec_ok_op;
  logic [2:0] v_dt_f, v_odt_f;
  assign v_dt_f  = b[VEC_DT_LSB +: 3];
  assign v_odt_f = b[VEC_ODT_LSB +: 3];
  function automatic logic int_type(input logic [2:0] t);
    return 32'(t) == DTYPE_INT8 || 32'(t) == DTYPE_UINT8 || 32'(t) == DTYPE_INT16 || 32'(t) == DTYPE_INT32;
  endfunction
  always_comb begin
    case (32'(vec_op))
      0, OP_VEC_VEC_COPY, OP_VEC_VEC_CVT, OP_VEC_VEC_ADD, OP_VEC_VEC_SUB, OP_VEC_VEC_MUL, OP_VEC_VEC_MAX,
      OP_VEC_VEC_MIN, OP_VEC_VEC_RELU, OP_VEC_VEC_CLAMP, OP_VEC_VEC_AFFINE, OP_VEC_VEC_RSUM, OP_VEC_VEC_RMAX,
      OP_VEC_VEC_MAXPOOL, OP_VEC_VEC_AVGPOOL:
        vec_ok_op = 32'(v_dt_f) <= DTYPE_INT16 && 32'(v_odt_f) <= DTYPE_INT16;
      OP_VEC_VEC_RESCALE: vec_ok_op = int_type(v_dt_f) && int_type(v_odt_f);
      OP_VEC_VEC_ADDRESCALE: vec_ok_op = 32'(v_dt_f) == DTYPE_INT32 && int_type(v_odt_f);
      // the table functions compute on fp32 or bf16 rows
      OP_VEC_VEC_EXP, OP_VEC_VEC_TANH, OP_VEC_VEC_SIGMOID, OP_VEC_VEC_GELU, OP_VEC_VEC_ERF, OP_VEC_VEC_RECIP,
      OP_VEC_VEC_RSQRT, OP_VEC_VEC_LOG:
        vec_ok_op = (32'(v_dt_f) == DTYPE_FP32 || 32'(v_dt_f) == DTYPE_BF16) && 32'(v_odt_f) <= DTYPE_INT16;
      default: vec_ok_op = 1'b0;
    endcase
    unsupported = !vec_ok_op || (32'(dma_op) == OP_DMA_DMA_SEND) || (32'(dma_op) > OP_DMA_DMA_SEND) ||
                  (mxw_op != '0 && 32'(b[MXW_MXU_LSB +: 3]) >= MXUS) || (mxm_op != '0 && 32'(b[MXM_MXU_LSB +: 3]) >= MXUS) ||
                  (dma_op != '0 && 32'(dma_op) == OP_DMA_DMA_WFIFO && 32'(b[DMA_UNIT_LSB +: 3]) >= MXUS) ||
                  (32'(ctl_op) > OP_CTL_LOOP) ||
                  (vec_op != '0 && 32'(b[VEC_PARAM_LSB +: VEC_PARAM_WIDTH]) >= PARAM_ENTRIES);
  end

  assign issue = rst_n && !halted && error == 4'd0 && !unsupported && bubble == 32'd0 &&
                 ok_wait && ok_dma && ok_wl && ok_mm && ok_vec;
  assign issue_pc = pc;

  // branches
  logic [31:0] c_a, c_b;
  logic taken;
  assign c_a = rd_reg(b[CTL_RS1_LSB +: 5]);
  assign c_b = rd_reg(b[CTL_RS2_LSB +: 5]);
  always_comb begin
    case (32'(ctl_op))
      OP_CTL_JMP:  taken = 1'b1;
      OP_CTL_BEQ:  taken = c_a == c_b;
      OP_CTL_BNE:  taken = c_a != c_b;
      OP_CTL_BLT:  taken = $signed(c_a) < $signed(c_b);
      OP_CTL_BGE:  taken = $signed(c_a) >= $signed(c_b);
      OP_CTL_LOOP: taken = (c_a - 32'd1) != 32'd0;
      default:     taken = 1'b0;
    endcase
  end
  assign next_pc = taken ? 24'(b[CTL_TARGET_LSB +: CTL_TARGET_WIDTH]) : pc + 24'd1;

  // Issuing the bundle at pc (window w) at cycle `now`: entering w starts, with prefetch, the
  // fetch of window w + 1 into the slot not holding w; then the next bundle's window is
  // resident (it waits for its fetch's end, if later than the branch penalty) or fetched on
  // demand into the slot not holding w, after the fetch under way. The simulator makes the
  // demand fetch when that bundle issues (machine_imem.cpp): nothing else moves the windows
  // in between, so the cycles are the same.
  logic [23:0] ns_win [2];
  logic [31:0] ns_ready [2];
  logic [31:0] ns_free, ns_bubble;
  always_comb begin
    logic [23:0] w, nw;
    logic [31:0] base, start;
    logic hit, victim;
    w = '0;
    nw = '0;
    start = '0;
    hit = 1'b0;
    victim = 1'b0;
    ns_win = slot_win;
    ns_ready = slot_ready;
    ns_free = fetch_free;
    base = taken ? 32'(BRANCH_PENALTY) : 32'd0;
    ns_bubble = base;
    if (imem_fetch_cycles != 32'd0) begin
      w = pc / imem_window;
      victim = imem_prefetch && ns_win[0] == w;
      if (imem_prefetch && w != cur_win && 25'(w + 24'd1) * 25'(imem_window) < 25'(imem_program) &&
          ns_win[0] != w + 24'd1 && ns_win[1] != w + 24'd1) begin
        start = (now > ns_free ? now : ns_free) + imem_fetch_cycles;
        ns_win[victim] = w + 24'd1;
        ns_ready[victim] = start;
        ns_free = start;
      end
      nw = next_pc / imem_window;
      for (int k = 0; k < 2; k++)
        if (ns_win[k] == nw) begin
          hit = 1'b1;
          if (ns_ready[k] > now + 32'd1 + base) ns_bubble = ns_ready[k] - now - 32'd1;
        end
      if (!hit) begin
        start = (now + 32'd1 + base > ns_free ? now + 32'd1 + base : ns_free) + imem_fetch_cycles;
        ns_win[victim] = nw;
        ns_ready[victim] = start;
        ns_free = start;
        ns_bubble = start - now - 32'd1;
      end
    end
  end

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      now <= '0;
      pc <= '0;
      halted <= 1'b0;
      bubble <= '0;
      slot_win[0] <= '0;
      slot_win[1] <= imem_prefetch && imem_fetch_cycles != 32'd0 ? 24'd1 : NO_WIN;
      slot_ready[0] <= '0;
      slot_ready[1] <= '0;
      cur_win <= NO_WIN;
      fetch_free <= '0;
      sig_pend <= 1'b0;
      for (int f = 0; f < 64; f++) flags[f] <= '0;
      for (int r = 0; r < 32; r++) regs[r] <= '0;
      err_unsup <= 1'b0;
    end else begin
      now <= now + 32'd1;
      if (!halted && unsupported) err_unsup <= 1'b1;
      for (int f = 0; f < 64; f++) flags[f] <= flags[f] + inc[f];
      sig_pend <= 1'b0;
      if (bubble != 32'd0) bubble <= bubble - 32'd1;
      if (issue) begin
        if (is_wait) flags[w_flag] <= flags[w_flag] + inc[w_flag] - 32'(w_count);
        if (32'(ctl_op) == OP_CTL_SIGNAL) begin
          sig_pend  <= 1'b1;
          sig_flag  <= w_flag;
          sig_count <= w_count;
        end
        if (32'(ctl_op) == OP_CTL_HALT) halted <= 1'b1;
        // scalar results (all reads above happened first; r0 stays 0)
        if (s0_op != '0) regs[b[S0_RD_LSB +: 5]] <= s0_y;
        if (s1_op != '0) regs[b[S1_RD_LSB +: 5]] <= s1_y;
        if (32'(ctl_op) == OP_CTL_LOOP) regs[b[CTL_RS1_LSB +: 5]] <= c_a - 32'd1;
        pc <= next_pc;
        slot_win <= ns_win;
        slot_ready <= ns_ready;
        fetch_free <= ns_free;
        if (imem_fetch_cycles != 32'd0) cur_win <= pc / imem_window;
        bubble <= ns_bubble;
      end
    end
  end

  // ================================================================ unified buffer
  logic [UAW-1:0]  ub_rd_addr [MXUS + 2];  // MXU m's input rows at m, the vector unit's a and b after them
  logic [PB*8-1:0] ub_rd_data [MXUS + 2];
  logic            ub_wr_en   [1];
  logic [UAW-1:0]  ub_wr_addr [1];
  logic [ULW-1:0]  ub_wr_len  [1];
  logic [PB*8-1:0] ub_wr_data [1];
  logic [UAW-1:0]  ub_gr_addr, ub_gw_addr;
  logic [ULW-1:0]  ub_gr_row, ub_gw_row, ub_gw_len;
  logic [31:0]     ub_gr_stride, ub_gw_stride;
  logic [PB*8-1:0] ub_gr_data, ub_gw_data;
  logic            ub_gw_en;
  vtpu_ub #(.BYTES(UB_BYTES), .PB(PB), .NR(MXUS + 2), .NW(1)) u_ub (
    .clk(clk), .rd_addr(ub_rd_addr), .rd_data(ub_rd_data),
    .wr_en(ub_wr_en), .wr_addr(ub_wr_addr), .wr_len(ub_wr_len), .wr_data(ub_wr_data),
    .gr_addr(ub_gr_addr), .gr_row(ub_gr_row), .gr_stride(ub_gr_stride), .gr_data(ub_gr_data),
    .gw_en(ub_gw_en), .gw_addr(ub_gw_addr), .gw_len(ub_gw_len), .gw_row(ub_gw_row), .gw_stride(ub_gw_stride),
    .gw_data(ub_gw_data));

  // ================================================================ MXUs
  logic [MW-1:0] mm_m, wl_m;  // the MXU of this bundle's matmul and weight load
  assign mm_m = MW'(b[MXM_MXU_LSB +: 3]);
  assign wl_m = MW'(b[MXW_MXU_LSB +: 3]);
  logic unused_mxu_fields;  // fields past MXUS are refused above
  assign unused_mxu_fields = ^{b[MXM_MXU_LSB +: 3], b[MXW_MXU_LSB +: 3]};
  logic        mm_bf16_now;
  logic [31:0] mm_src_now, mm_stride_now;
  logic [AW-1:0] mm_dst_now;  // the sequencer checks bounds (docs/rtl.md)
  assign mm_bf16_now   = b[MXM_DTYPE_LSB];
  assign mm_src_now    = rd_reg(b[MXM_SRC_REG_LSB +: 5]) + 32'(b[MXM_SRC_OFF_LSB +: MXM_SRC_OFF_WIDTH]);
  assign mm_dst_now    = AW'(rd_reg(b[MXM_DST_REG_LSB +: 5]) + 32'(b[MXM_DST_OFF_LSB +: MXM_DST_OFF_WIDTH]));
  // stride 0: packed rows of ROWS elements
  assign mm_stride_now = (b[MXM_STRIDE_LSB +: 16] != 16'd0) ? 32'(b[MXM_STRIDE_LSB +: 16])
                                                              : (mm_bf16_now ? 32'(ROWS * 2) : 32'(ROWS));

  logic              wf_avail       [MXUS];
  logic              wf_pop         [MXUS];
  logic              wf_pop_pending [MXUS];
  logic [$clog2(ROWS+1)-1:0] wf_k   [MXUS];
  logic [$clog2(COLS+1)-1:0] wf_n   [MXUS];
  logic [((ROWS > 1) ? $clog2(ROWS) : 1)-1:0] wf_row [MXUS];
  logic [COLS*16-1:0] wf_data       [MXUS];
  logic               mm_ready_m    [MXUS];
  logic               wl_ready_m    [MXUS];
  // the vector unit's accumulator ports: rows of all MXUs (m * ACC_ROWS + r)
  logic [GAW-1:0]     vacc_a_addr, vacc_b_addr, vacc_waddr;
  logic [COLS*32-1:0] vacc_a_data, vacc_b_data, vacc_wdata;
  logic               vacc_we;
  logic [COLS*32-1:0] acc_a_m [MXUS];
  logic [COLS*32-1:0] acc_b_m [MXUS];
  function automatic logic [MW-1:0] mxu_of(input logic [GAW-1:0] row);
    return MW'(32'(row) / ACC_ROWS);
  endfunction
  assign vacc_a_data = acc_a_m[mxu_of(vacc_a_addr)];
  assign vacc_b_data = acc_b_m[mxu_of(vacc_b_addr)];
  assign mm_ready = mm_ready_m[mm_m];
  assign wl_ready = wl_ready_m[wl_m];
  logic wl_idle;  // every weight path idle
  always_comb begin
    wl_idle = 1'b1;
    for (int m = 0; m < MXUS; m++) wl_idle = wl_idle && wl_ready_m[m];
  end

  for (genvar m = 0; m < MXUS; m++) begin : g_mxu
    logic        fire_m, bf16_q;
    logic [31:0] src_q, stride_q;
    assign fire_m = issue && mxm_op != '0 && mm_m == MW'(m);
    always_ff @(posedge clk) begin
      if (fire_m) begin
        src_q    <= mm_src_now;
        stride_q <= mm_stride_now;
        bf16_q   <= mm_bf16_now;
      end
    end
    logic               in_req, in_bf16;
    logic [15:0]        in_req_row;
    logic [ROWS*16-1:0] in_data;
    assign in_bf16 = fire_m ? mm_bf16_now : bf16_q;
    assign ub_rd_addr[m] = fire_m ? UAW'(mm_src_now) : UAW'(src_q + 32'(in_req_row) * stride_q);
    always_comb begin
      for (int k = 0; k < ROWS; k++)
        in_data[k*16 +: 16] = in_bf16 ? ub_rd_data[m][k*16 +: 16] : {8'h00, ub_rd_data[m][k*8 +: 8]};
    end
    logic               wf_rd, acc_we_mxu, data_free, shadow_ready;
    logic [AW-1:0]      acc_waddr_mxu;
    logic [COLS*32-1:0] acc_wdata_mxu;
    logic               own_we;  // the vector unit writes one of this MXU's rows
    assign own_we = vacc_we && mxu_of(vacc_waddr) == MW'(m);
    vtpu_mxu #(.ROWS(ROWS), .COLS(COLS), .IN_LAT(IN_LAT), .OUT_LAT(OUT_LAT), .SHIFT(SHIFT),
               .ACC_ROWS(ACC_ROWS), .BF16(1'b1)) u_mxu (
      .clk(clk), .rst_n(rst_n),
      .mm_valid(fire_m), .mm_ready(mm_ready_m[m]), .mm_rows(b[MXM_ROWS_LSB +: 16]),
      .mm_dst(mm_dst_now), .mm_acc(b[MXM_ACC_LSB]), .mm_swap(b[MXM_SWAP_LSB]), .mm_bf16(mm_bf16_now),
      .mm_data_free(data_free), .mm_shadow_ready(shadow_ready), .done(mm_done[m]),
      .in_req(in_req), .in_req_row(in_req_row), .in_data(in_data),
      .wl_valid(issue && mxw_op != '0 && wl_m == MW'(m)), .wl_ready(wl_ready_m[m]),
      .wf_avail(wf_avail[m]), .wf_k(wf_k[m]), .wf_n(wf_n[m]), .wf_pop(wf_pop[m]),
      .wf_pop_pending(wf_pop_pending[m]), .wf_rd(wf_rd), .wf_row(wf_row[m]), .wf_data(wf_data[m]),
      .acc_we(acc_we_mxu), .acc_waddr(acc_waddr_mxu), .acc_wdata(acc_wdata_mxu),
      .acc_rd_addr(AW'(32'(vacc_a_addr) % ACC_ROWS)), .acc_rd_data(acc_a_m[m]),
      .acc_rd2_addr(AW'(32'(vacc_b_addr) % ACC_ROWS)), .acc_rd2_data(acc_b_m[m]),
      .acc_ext_we(own_we), .acc_ext_addr(AW'(32'(vacc_waddr) % ACC_ROWS)), .acc_ext_data(vacc_wdata));
    logic unused_mxu;
    assign unused_mxu = ^{data_free, shadow_ready, wf_rd, acc_we_mxu, acc_waddr_mxu, acc_wdata_mxu, in_req};
    assign wload_start[m] = wf_pop[m];

    // flags of this MXU's matmuls in flight, in issue order
    always_ff @(posedge clk) begin
      if (!rst_n) begin
        mmq_head[m] <= '0;
        mmq_tail[m] <= '0;
        mm_out[m] <= '0;
      end else begin
        if (fire_m) begin
          mmq_flag[m][mmq_tail[m]] <= b[MXM_FLAG_LSB +: 6];
          mmq_tail[m] <= mmq_tail[m] + 6'd1;
        end
        if (mm_done[m]) mmq_head[m] <= mmq_head[m] + 6'd1;
        mm_out[m] <= mm_out[m] + 7'(fire_m) - 7'(mm_done[m]);
      end
    end
  end
  logic mm_drained;  // no matmul left whose done has not pulsed (counting this cycle's)
  always_comb begin
    mm_drained = 1'b1;
    for (int m = 0; m < MXUS; m++) mm_drained = mm_drained && (mm_out[m] - 7'(mm_done[m]) == 7'd0);
  end

  // ================================================================ DMA engine
  logic dma_idle, vec_idle;
  vtpu_dma #(.ROWS(ROWS), .COLS(COLS), .UB_BYTES(UB_BYTES), .PB(PB), .DESC_ENTRIES(DESC_ENTRIES),
             .INFLIGHT(DMA_INFLIGHT), .WF_TILES(WF_TILES), .MXUS(MXUS), .SETUP(DMA_SETUP),
             .UB_ROW_BYTES(UB_ROW_BYTES), .UB_RD_PORTS(UB_RD_PORTS), .UB_WR_PORTS(UB_WR_PORTS),
             .UB_RD_LAT(UB_RD_LAT), .UB_WR_LAT(UB_WR_LAT)) u_dma (
    .clk(clk), .rst_n(rst_n), .now(now),
    .desc_we(desc_we), .desc_waddr(desc_waddr), .desc_wdata(desc_wdata),
    .is_op(dma_op), .can_accept(dma_can), .fire(issue && dma_op != '0),
    .src_base(rd_reg(b[DMA_SRC_LSB +: 5])), .dst_base(rd_reg(b[DMA_DST_LSB +: 5])),
    .desc_idx(b[DMA_DESC_LSB +: DMA_DESC_WIDTH]), .unit(b[DMA_UNIT_LSB +: 3]), .flag(b[DMA_FLAG_LSB +: 6]), .pc(pc),
    .inc_valid(dma_inc), .inc_flag(dma_inc_flag), .idle(dma_idle),
    .wf_avail(wf_avail), .wf_k(wf_k), .wf_n(wf_n), .wf_pop(wf_pop), .wf_pop_pending(wf_pop_pending),
    .wf_row(wf_row), .wf_data(wf_data),
    .ub_rd_addr(ub_gr_addr), .ub_rd_row(ub_gr_row), .ub_rd_stride(ub_gr_stride), .ub_rd_data(ub_gr_data),
    .ub_we(ub_gw_en), .ub_waddr(ub_gw_addr), .ub_wlen(ub_gw_len), .ub_wrow(ub_gw_row), .ub_wstride(ub_gw_stride),
    .ub_wdata(ub_gw_data),
    .mem_req_valid(mem_req_valid), .mem_req_write(mem_req_write), .mem_req_addr(mem_req_addr),
    .mem_req_bytes(mem_req_bytes), .mem_req_count(mem_req_count), .mem_req_stride(mem_req_stride),
    .mem_req_first(mem_req_first), .mem_req_offset(mem_req_offset),
    .mem_req_beat_bytes(mem_req_beat_bytes), .mem_req_ready(mem_req_ready), .mem_req_wdata(mem_req_wdata), .mem_req_pc(mem_req_pc),
    .mem_resp_done(mem_resp_done), .mem_resp_rdata(mem_resp_rdata),
    .ev_valid(dma_ev), .ev_pc(dma_ev_pc), .ev_t(dma_ev_t), .ev_done(dma_ev_done),
    .err_late(err_late));

  // ================================================================ vector unit
  logic [31:0] v_a, v_b, v_d;
  assign v_a = rd_reg(b[VEC_A_REG_LSB +: 5]) + 32'(b[VEC_A_OFF_LSB +: VEC_A_OFF_WIDTH]);
  assign v_b = rd_reg(b[VEC_B_REG_LSB +: 5]) + 32'(b[VEC_B_OFF_LSB +: VEC_B_OFF_WIDTH]);
  assign v_d = rd_reg(b[VEC_DST_REG_LSB +: 5]) + 32'(b[VEC_DST_OFF_LSB +: VEC_DST_OFF_WIDTH]);
  vtpu_vector #(.COLS(COLS), .UB_BYTES(UB_BYTES), .PB(PB), .ACC_ROWS(MXUS * ACC_ROWS),
                .UB_ROW_BYTES(UB_ROW_BYTES), .UB_BANKS(UB_BANKS), .UB_RD_PORTS(UB_RD_PORTS),
                .UB_WR_PORTS(UB_WR_PORTS), .LANE_PASSES(LANE_PASSES), .LAT_ALU(VEC_LAT_ALU),
                .LAT_MUL(VEC_LAT_MUL), .LAT_RESCALE(VEC_LAT_RESCALE), .LAT_CONVERT(VEC_LAT_CONVERT), .LAT_REDUCE(VEC_LAT_REDUCE), .LAT_POOL(VEC_LAT_POOL),
                .LAT_TRANS(VEC_LAT_TRANS),
                .PARAM_ENTRIES(PARAM_ENTRIES), .NPEND(NVP)) u_vec (
    .clk(clk), .rst_n(rst_n), .now(now),
    .param_we(param_we), .param_waddr(param_waddr), .param_wdata(param_wdata),
    .fire(issue && vec_op != '0), .ready(vec_ready), .op(vec_op), .dt(v_dt_f),
    // only vec.rescale, vec.addrescale, vec.cvt and vec.rsum have a result type; the others write dt
    .odt((32'(vec_op) == OP_VEC_VEC_RESCALE || 32'(vec_op) == OP_VEC_VEC_ADDRESCALE || 32'(vec_op) == OP_VEC_VEC_CVT ||
          32'(vec_op) == OP_VEC_VEC_RSUM)
         ? v_odt_f : v_dt_f),
    .param(b[VEC_PARAM_LSB +: VEC_PARAM_WIDTH]),
    .a_acc(b[VEC_A_MEM_LSB]), .a_addr(v_a), .b_acc(b[VEC_B_MEM_LSB]), .b_addr(v_b),
    .d_acc(b[VEC_DST_MEM_LSB]), .d_addr(v_d), .rows(b[VEC_ROWS_LSB +: 16]),
    .bcast(b[VEC_BCAST_LSB]), .flag(b[VEC_FLAG_LSB +: 6]), .pc(pc),
    .ua_addr(ub_rd_addr[MXUS]), .ua_data(ub_rd_data[MXUS]), .ubb_addr(ub_rd_addr[MXUS + 1]),
    .ubb_data(ub_rd_data[MXUS + 1]),
    .uw_en(ub_wr_en[0]), .uw_addr(ub_wr_addr[0]), .uw_len(ub_wr_len[0]), .uw_data(ub_wr_data[0]),
    .acc_a_addr(vacc_a_addr), .acc_a_data(vacc_a_data), .acc_b_addr(vacc_b_addr), .acc_b_data(vacc_b_data),
    .acc_we(vacc_we), .acc_waddr(vacc_waddr), .acc_wdata(vacc_wdata),
    .inc_valid(vec_inc), .inc_flag(vec_inc_flag), .idle(vec_idle),
    .ev_valid(vec_ev), .ev_pc(vec_ev_pc), .ev_t(vec_ev_t), .err_pend(err_pend));

  // ================================================================ end of the program
  // total cycles = max(T_halt + 1, every done): the first cycle after halt at which no
  // unit has an event left (the matmul whose done pulses now counts as drained).
  assign finished = halted && dma_idle && vec_idle && wl_idle && mm_drained;
endmodule
