// vtpu_core: one vtpu core on a single-MXU config — the sequencer that decodes the ISA's
// bundles (field positions and opcodes from the generated vtpu_isa_pkg), the scalar unit,
// the sync flags, the unified buffer, the DMA engine with the weight FIFO, the MXU and the
// vector unit. Timing follows docs/microarch.md rule for rule; docs/rtl.md lists the
// supported subset and how each rule is met. The off-chip memory is outside: the DMA
// engine's memory port (vtpu_dma) is answered by the testbench's memory model.
//
// Cycle 0 is the first cycle with rst_n high. Programs (bundles, DMA descriptors) are
// written through imem_* / desc_* while rst_n is low.
module vtpu_core import vtpu_isa_pkg::*; #(
  parameter int ROWS           = 4,
  parameter int COLS           = 4,
  parameter int IN_LAT         = 2,
  parameter int OUT_LAT        = 2,
  parameter int SHIFT          = ROWS,
  parameter int ACC_ROWS       = 256,
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
  output logic              wload_start,   // a weight shift starts (the tile leaves the FIFO)
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
  logic [15:0] bubble;  // branch penalty cycles left
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
  logic                    mm_done;
  logic [5:0]              mmq_flag [MMQ];
  logic [5:0]              mmq_head, mmq_tail;
  logic [6:0]              mm_out;  // matmuls issued whose done has not pulsed

  // increments realized at this cycle, per flag
  logic [31:0] inc [64];
  always_comb begin
    for (int f = 0; f < 64; f++) inc[f] = 32'd0;
    for (int i = 0; i < DMA_INFLIGHT; i++) if (dma_inc[i]) inc[dma_inc_flag[i]] += 32'd1;
    for (int i = 0; i < NVP; i++) if (vec_inc[i]) inc[vec_inc_flag[i]] += 32'd1;
    if (mm_done && mmq_flag[mmq_head] != 6'd0) inc[mmq_flag[mmq_head]] += 32'd1;
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
      OP_VEC_VEC_MIN, OP_VEC_VEC_RELU, OP_VEC_VEC_CLAMP, OP_VEC_VEC_AFFINE, OP_VEC_VEC_RSUM, OP_VEC_VEC_RMAX:
        vec_ok_op = 32'(v_dt_f) <= DTYPE_INT16 && 32'(v_odt_f) <= DTYPE_INT16;
      // pooling windows are byte offsets into the unified buffer
      OP_VEC_VEC_MAXPOOL, OP_VEC_VEC_AVGPOOL:
        vec_ok_op = 32'(v_dt_f) <= DTYPE_INT16 && 32'(v_odt_f) <= DTYPE_INT16 && !b[VEC_A_MEM_LSB];
      OP_VEC_VEC_RESCALE: vec_ok_op = int_type(v_dt_f) && int_type(v_odt_f);
      // the table functions compute on fp32 or bf16 rows
      OP_VEC_VEC_EXP, OP_VEC_VEC_TANH, OP_VEC_VEC_SIGMOID, OP_VEC_VEC_GELU, OP_VEC_VEC_ERF, OP_VEC_VEC_RECIP,
      OP_VEC_VEC_RSQRT:
        vec_ok_op = (32'(v_dt_f) == DTYPE_FP32 || 32'(v_dt_f) == DTYPE_BF16) && 32'(v_odt_f) <= DTYPE_INT16;
      default: vec_ok_op = 1'b0;
    endcase
    unsupported = !vec_ok_op || (32'(dma_op) == OP_DMA_DMA_SEND) || (32'(dma_op) > OP_DMA_DMA_SEND) ||
                  (mxw_op != '0 && b[MXW_MXU_LSB +: 3] != 3'd0) || (mxm_op != '0 && b[MXM_MXU_LSB +: 3] != 3'd0) ||
                  (dma_op != '0 && 32'(dma_op) == OP_DMA_DMA_WFIFO && b[DMA_UNIT_LSB +: 3] != 3'd0) ||
                  (32'(ctl_op) > OP_CTL_LOOP) ||
                  (vec_op != '0 && b[VEC_PARAM_LSB +: 12] >= 12'(PARAM_ENTRIES));
  end

  assign issue = rst_n && !halted && error == 4'd0 && !unsupported && bubble == 16'd0 &&
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

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      now <= '0;
      pc <= '0;
      halted <= 1'b0;
      bubble <= '0;
      sig_pend <= 1'b0;
      for (int f = 0; f < 64; f++) flags[f] <= '0;
      for (int r = 0; r < 32; r++) regs[r] <= '0;
      err_unsup <= 1'b0;
    end else begin
      now <= now + 32'd1;
      if (!halted && unsupported) err_unsup <= 1'b1;
      for (int f = 0; f < 64; f++) flags[f] <= flags[f] + inc[f];
      sig_pend <= 1'b0;
      if (bubble != 16'd0) bubble <= bubble - 16'd1;
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
        if (taken) begin
          pc <= 24'(b[CTL_TARGET_LSB +: CTL_TARGET_WIDTH]);
          bubble <= 16'(BRANCH_PENALTY);
        end else begin
          pc <= pc + 24'd1;
        end
      end
    end
  end

  // ================================================================ unified buffer
  logic [UAW-1:0]  ub_rd_addr [4];
  logic [PB*8-1:0] ub_rd_data [4];
  logic            ub_wr_en   [2];
  logic [UAW-1:0]  ub_wr_addr [2];
  logic [ULW-1:0]  ub_wr_len  [2];
  logic [PB*8-1:0] ub_wr_data [2];
  vtpu_ub #(.BYTES(UB_BYTES), .PB(PB), .NR(4), .NW(2)) u_ub (
    .clk(clk), .rd_addr(ub_rd_addr), .rd_data(ub_rd_data),
    .wr_en(ub_wr_en), .wr_addr(ub_wr_addr), .wr_len(ub_wr_len), .wr_data(ub_wr_data));

  // ================================================================ MXU
  logic        mm_fire, mm_bf16_now, mm_bf16_q;
  logic [31:0] mm_src_now, mm_src_q, mm_stride_now, mm_stride_q;
  assign mm_fire       = issue && mxm_op != '0;
  assign mm_bf16_now   = b[MXM_DTYPE_LSB];
  assign mm_src_now    = rd_reg(b[MXM_SRC_REG_LSB +: 5]) + 32'(b[MXM_SRC_OFF_LSB +: MXM_SRC_OFF_WIDTH]);
  // stride 0: packed rows of ROWS elements
  assign mm_stride_now = (b[MXM_STRIDE_LSB +: 16] != 16'd0) ? 32'(b[MXM_STRIDE_LSB +: 16])
                                                              : (mm_bf16_now ? 32'(ROWS * 2) : 32'(ROWS));
  always_ff @(posedge clk) begin
    if (mm_fire) begin
      mm_src_q    <= mm_src_now;
      mm_stride_q <= mm_stride_now;
      mm_bf16_q   <= mm_bf16_now;
    end
  end

  logic               in_req;
  logic [15:0]        in_req_row;
  logic [ROWS*16-1:0] in_data;
  logic               in_bf16;
  assign in_bf16 = mm_fire ? mm_bf16_now : mm_bf16_q;
  assign ub_rd_addr[0] = mm_fire ? UAW'(mm_src_now) : UAW'(mm_src_q + 32'(in_req_row) * mm_stride_q);
  always_comb begin
    for (int k = 0; k < ROWS; k++)
      in_data[k*16 +: 16] = in_bf16 ? ub_rd_data[0][k*16 +: 16] : {8'h00, ub_rd_data[0][k*8 +: 8]};
  end
  logic unused_in_req;
  assign unused_in_req = in_req;

  logic              wf_avail, wf_pop, wf_pop_pending, wf_rd;
  logic [$clog2(ROWS+1)-1:0] wf_k;
  logic [$clog2(COLS+1)-1:0] wf_n;
  logic [((ROWS > 1) ? $clog2(ROWS) : 1)-1:0] wf_row;
  logic [COLS*16-1:0] wf_data;
  logic              acc_we_mxu;
  logic [AW-1:0]     acc_waddr_mxu;
  logic [COLS*32-1:0] acc_wdata_mxu;
  logic [AW-1:0]     vacc_a_addr, vacc_b_addr, vacc_waddr;
  logic [COLS*32-1:0] vacc_a_data, vacc_b_data, vacc_wdata;
  logic              vacc_we;
  logic              mm_data_free, mm_shadow_ready;
  vtpu_mxu #(.ROWS(ROWS), .COLS(COLS), .IN_LAT(IN_LAT), .OUT_LAT(OUT_LAT), .SHIFT(SHIFT),
             .ACC_ROWS(ACC_ROWS), .BF16(1'b1)) u_mxu (
    .clk(clk), .rst_n(rst_n),
    .mm_valid(mm_fire), .mm_ready(mm_ready), .mm_rows(b[MXM_ROWS_LSB +: 16]),
    .mm_dst(AW'(rd_reg(b[MXM_DST_REG_LSB +: 5]) + 32'(b[MXM_DST_OFF_LSB +: MXM_DST_OFF_WIDTH]))),
    .mm_acc(b[MXM_ACC_LSB]), .mm_swap(b[MXM_SWAP_LSB]), .mm_bf16(mm_bf16_now),
    .mm_data_free(mm_data_free), .mm_shadow_ready(mm_shadow_ready), .done(mm_done),
    .in_req(in_req), .in_req_row(in_req_row), .in_data(in_data),
    .wl_valid(issue && mxw_op != '0), .wl_ready(wl_ready),
    .wf_avail(wf_avail), .wf_k(wf_k), .wf_n(wf_n), .wf_pop(wf_pop), .wf_pop_pending(wf_pop_pending),
    .wf_rd(wf_rd), .wf_row(wf_row), .wf_data(wf_data),
    .acc_we(acc_we_mxu), .acc_waddr(acc_waddr_mxu), .acc_wdata(acc_wdata_mxu),
    .acc_rd_addr(vacc_a_addr), .acc_rd_data(vacc_a_data),
    .acc_rd2_addr(vacc_b_addr), .acc_rd2_data(vacc_b_data),
    .acc_ext_we(vacc_we), .acc_ext_addr(vacc_waddr), .acc_ext_data(vacc_wdata));
  logic unused_mxu;
  assign unused_mxu = ^{mm_data_free, mm_shadow_ready, wf_rd, acc_we_mxu, acc_waddr_mxu, acc_wdata_mxu};
  assign wload_start = wf_pop;

  // flags of matmuls in flight, in issue order (done pulses come in that order)
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      mmq_head <= '0;
      mmq_tail <= '0;
      mm_out <= '0;
    end else begin
      if (mm_fire) begin
        mmq_flag[mmq_tail] <= b[MXM_FLAG_LSB +: 6];
        mmq_tail <= mmq_tail + 6'd1;
      end
      if (mm_done) mmq_head <= mmq_head + 6'd1;
      mm_out <= mm_out + 7'(mm_fire) - 7'(mm_done);
    end
  end

  // ================================================================ DMA engine
  logic dma_idle, vec_idle;
  vtpu_dma #(.ROWS(ROWS), .COLS(COLS), .UB_BYTES(UB_BYTES), .PB(PB), .DESC_ENTRIES(DESC_ENTRIES),
             .INFLIGHT(DMA_INFLIGHT), .WF_TILES(WF_TILES), .SETUP(DMA_SETUP),
             .UB_ROW_BYTES(UB_ROW_BYTES), .UB_RD_PORTS(UB_RD_PORTS), .UB_WR_PORTS(UB_WR_PORTS),
             .UB_RD_LAT(UB_RD_LAT), .UB_WR_LAT(UB_WR_LAT)) u_dma (
    .clk(clk), .rst_n(rst_n), .now(now),
    .desc_we(desc_we), .desc_waddr(desc_waddr), .desc_wdata(desc_wdata),
    .is_op(dma_op), .can_accept(dma_can), .fire(issue && dma_op != '0),
    .src_base(rd_reg(b[DMA_SRC_LSB +: 5])), .dst_base(rd_reg(b[DMA_DST_LSB +: 5])),
    .desc_idx(b[DMA_DESC_LSB +: 12]), .flag(b[DMA_FLAG_LSB +: 6]), .pc(pc),
    .inc_valid(dma_inc), .inc_flag(dma_inc_flag), .idle(dma_idle),
    .wf_avail(wf_avail), .wf_k(wf_k), .wf_n(wf_n), .wf_pop(wf_pop), .wf_pop_pending(wf_pop_pending),
    .wf_row(wf_row), .wf_data(wf_data),
    .ub_rd_addr(ub_rd_addr[3]), .ub_rd_data(ub_rd_data[3]),
    .ub_we(ub_wr_en[1]), .ub_waddr(ub_wr_addr[1]), .ub_wlen(ub_wr_len[1]), .ub_wdata(ub_wr_data[1]),
    .mem_req_valid(mem_req_valid), .mem_req_write(mem_req_write), .mem_req_addr(mem_req_addr),
    .mem_req_bytes(mem_req_bytes), .mem_req_first(mem_req_first), .mem_req_offset(mem_req_offset),
    .mem_req_beat_bytes(mem_req_beat_bytes), .mem_req_ready(mem_req_ready), .mem_req_wdata(mem_req_wdata), .mem_req_pc(mem_req_pc),
    .mem_resp_done(mem_resp_done), .mem_resp_rdata(mem_resp_rdata),
    .ev_valid(dma_ev), .ev_pc(dma_ev_pc), .ev_t(dma_ev_t), .ev_done(dma_ev_done),
    .err_late(err_late));

  // ================================================================ vector unit
  logic [31:0] v_a, v_b, v_d;
  assign v_a = rd_reg(b[VEC_A_REG_LSB +: 5]) + 32'(b[VEC_A_OFF_LSB +: VEC_A_OFF_WIDTH]);
  assign v_b = rd_reg(b[VEC_B_REG_LSB +: 5]) + 32'(b[VEC_B_OFF_LSB +: VEC_B_OFF_WIDTH]);
  assign v_d = rd_reg(b[VEC_DST_REG_LSB +: 5]) + 32'(b[VEC_DST_OFF_LSB +: VEC_DST_OFF_WIDTH]);
  vtpu_vector #(.COLS(COLS), .UB_BYTES(UB_BYTES), .PB(PB), .ACC_ROWS(ACC_ROWS),
                .UB_ROW_BYTES(UB_ROW_BYTES), .UB_BANKS(UB_BANKS), .UB_RD_PORTS(UB_RD_PORTS),
                .UB_WR_PORTS(UB_WR_PORTS), .LANE_PASSES(LANE_PASSES), .LAT_ALU(VEC_LAT_ALU),
                .LAT_MUL(VEC_LAT_MUL), .LAT_RESCALE(VEC_LAT_RESCALE), .LAT_CONVERT(VEC_LAT_CONVERT), .LAT_REDUCE(VEC_LAT_REDUCE), .LAT_POOL(VEC_LAT_POOL),
                .LAT_TRANS(VEC_LAT_TRANS),
                .PARAM_ENTRIES(PARAM_ENTRIES), .NPEND(NVP)) u_vec (
    .clk(clk), .rst_n(rst_n), .now(now),
    .param_we(param_we), .param_waddr(param_waddr), .param_wdata(param_wdata),
    .fire(issue && vec_op != '0), .ready(vec_ready), .op(vec_op), .dt(v_dt_f),
    // only vec.rescale, vec.cvt and vec.rsum have a result type; the others write dt
    .odt((32'(vec_op) == OP_VEC_VEC_RESCALE || 32'(vec_op) == OP_VEC_VEC_CVT || 32'(vec_op) == OP_VEC_VEC_RSUM)
         ? v_odt_f : v_dt_f),
    .param(b[VEC_PARAM_LSB +: 12]),
    .a_acc(b[VEC_A_MEM_LSB]), .a_addr(v_a), .b_acc(b[VEC_B_MEM_LSB]), .b_addr(v_b),
    .d_acc(b[VEC_DST_MEM_LSB]), .d_addr(v_d), .rows(b[VEC_ROWS_LSB +: 16]),
    .bcast(b[VEC_BCAST_LSB]), .flag(b[VEC_FLAG_LSB +: 6]), .pc(pc),
    .ua_addr(ub_rd_addr[1]), .ua_data(ub_rd_data[1]), .ubb_addr(ub_rd_addr[2]), .ubb_data(ub_rd_data[2]),
    .uw_en(ub_wr_en[0]), .uw_addr(ub_wr_addr[0]), .uw_len(ub_wr_len[0]), .uw_data(ub_wr_data[0]),
    .acc_a_addr(vacc_a_addr), .acc_a_data(vacc_a_data), .acc_b_addr(vacc_b_addr), .acc_b_data(vacc_b_data),
    .acc_we(vacc_we), .acc_waddr(vacc_waddr), .acc_wdata(vacc_wdata),
    .inc_valid(vec_inc), .inc_flag(vec_inc_flag), .idle(vec_idle),
    .ev_valid(vec_ev), .ev_pc(vec_ev_pc), .ev_t(vec_ev_t), .err_pend(err_pend));

  // ================================================================ end of the program
  // total cycles = max(T_halt + 1, every done): the first cycle after halt at which no
  // unit has an event left (the matmul whose done pulses now counts as drained).
  assign finished = halted && dma_idle && vec_idle && wl_ready &&
                    (mm_out - 7'(mm_done) == 7'd0);
endmodule
