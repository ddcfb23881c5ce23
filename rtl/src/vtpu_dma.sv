// vtpu_dma: the DMA engine and the weight FIFOs of the MXUs, one each (docs/microarch.md,
// "DMA engine"). Transfers are accepted into a table of INFLIGHT slots; one row generator walks
// them in issue order and sends each HBM row to the memory port as one request carrying the
// cycle it is ready at (S, or S + read latency for stores). A cycle's beat carries one row,
// or as many rows of the innermost dimension as fit in PB bytes (their requests in row
// order, their data packed one after another), so the generator keeps up with the unified
// buffer's port rate of docs/microarch.md however short the rows are. The memory model answers in the same cycle with the request's completion cycle
// (docs/dram.md; the testbench runs the simulator's DramTiming) and, for reads, the data.
// When the last row is answered the transfer's done cycle D is known and the slot raises
// its flag increment at D. Rows are moved into the unified buffer or the FIFO as they are
// answered, which is before D; the simulator's race check guarantees no one looks earlier.
//
// The generator must know D before D: err_late is raised (and stays) otherwise. A row
// longer than PB bytes moves in PB-byte beats, one per cycle: the memory model times the
// whole row at its first beat (mem_req_first) and answers every beat with that time. Weight
// tiles move one row per cycle.
//
// Descriptor RAM entry (DESC_BITS), written by the loader before the run:
//   [31:0] src_offset [63:32] dst_offset [79:64] bytes [82:80] dtype
//   [83+16d +: 16] count of dim d, [131+32d +: 32] src stride, [227+32d +: 32] dst stride
//   (d = 0..2, innermost first; a missing dimension has count 1).
module vtpu_dma import vtpu_isa_pkg::*; #(
  parameter int ROWS         = 4,
  parameter int COLS         = 4,
  parameter int UB_BYTES     = 65536,
  parameter int PB           = 64,    // UB port width of vtpu_ub = the largest descriptor row
  parameter int DESC_ENTRIES = 64,
  parameter int INFLIGHT     = 4,     // core.dma.max_in_flight
  parameter int WF_TILES     = 2,     // core.mxu.weight_fifo_tiles
  parameter int MXUS         = 1,     // core.mxu.count: one weight FIFO each
  parameter int SETUP        = 16,    // core.dma.setup_cycles
  parameter int UB_ROW_BYTES = 8,     // core.unified_buffer.row_bytes
  parameter int UB_RD_PORTS  = 1,
  parameter int UB_WR_PORTS  = 1,
  parameter int UB_RD_LAT    = 2,
  parameter int UB_WR_LAT    = 1,
  localparam int DESC_BITS = 323,
  localparam int DW  = $clog2(DESC_ENTRIES),
  localparam int UAW = $clog2(UB_BYTES),
  localparam int ULW = $clog2(PB + 1),
  localparam int KW  = $clog2(ROWS + 1),
  localparam int NW  = $clog2(COLS + 1),
  localparam int RW  = (ROWS > 1) ? $clog2(ROWS) : 1,
  localparam int SW  = (INFLIGHT > 1) ? $clog2(INFLIGHT) : 1,
  localparam int TW  = (WF_TILES > 1) ? $clog2(WF_TILES) : 1,
  localparam int MW  = (MXUS > 1) ? $clog2(MXUS) : 1
) (
  input  logic                 clk,
  input  logic                 rst_n,
  input  logic [31:0]          now,
  // descriptor RAM
  input  logic                 desc_we,
  input  logic [DW-1:0]        desc_waddr,
  input  logic [DESC_BITS-1:0] desc_wdata,
  // issue (the sequencer)
  input  logic [3:0]           is_op,      // dma opcode of the bundle (0: none)
  output logic                 can_accept, // for is_op, from registers and wf_pop_pending
  input  logic                 fire,
  input  logic [31:0]          src_base,
  input  logic [31:0]          dst_base,
  input  logic [DMA_DESC_WIDTH-1:0] desc_idx,
  input  logic [2:0]           unit,       // dma.wfifo: the MXU whose FIFO it fills
  input  logic [5:0]           flag,
  input  logic [23:0]          pc,
  // flag increments at this cycle (one per slot)
  output logic [INFLIGHT-1:0]  inc_valid,
  output logic [5:0]           inc_flag [INFLIGHT],
  output logic                 idle,       // no transfer with D > now
  // weight FIFOs, MXU side (each vtpu_mxu's wf_* ports)
  output logic                 wf_avail       [MXUS],
  output logic [KW-1:0]        wf_k           [MXUS],
  output logic [NW-1:0]        wf_n           [MXUS],
  input  logic                 wf_pop         [MXUS],
  input  logic                 wf_pop_pending [MXUS],
  input  logic [RW-1:0]        wf_row         [MXUS],
  output logic [COLS*16-1:0]   wf_data        [MXUS],
  // unified buffer ports (vtpu_ub's group ports): rows of *_row bytes, *_stride apart
  output logic [UAW-1:0]       ub_rd_addr,
  output logic [ULW-1:0]       ub_rd_row,
  output logic [31:0]          ub_rd_stride,
  input  logic [PB*8-1:0]      ub_rd_data,
  output logic                 ub_we,
  output logic [UAW-1:0]       ub_waddr,
  output logic [ULW-1:0]       ub_wlen,
  output logic [ULW-1:0]       ub_wrow,
  output logic [31:0]          ub_wstride,
  output logic [PB*8-1:0]      ub_wdata,
  // memory port: a request and its answer in the same cycle
  output logic                 mem_req_valid,
  output logic                 mem_req_write,
  output logic [31:0]          mem_req_addr,    // the (first) row's first byte
  output logic [15:0]          mem_req_bytes,   // the row's bytes (the request the memory times)
  output logic [15:0]          mem_req_count,   // rows in this beat (their requests in order)
  output logic [31:0]          mem_req_stride,  // bytes between them in memory
  output logic                 mem_req_first,   // the row's first beat: time the request now
  output logic [15:0]          mem_req_offset,  // this beat's bytes: [offset, offset + beat_bytes)
  output logic [15:0]          mem_req_beat_bytes,
  output logic [31:0]          mem_req_ready,   // cycle the request may start
  output logic [PB*8-1:0] mem_req_wdata,
  output logic [23:0]          mem_req_pc,      // observation: the bundle of the transfer
  input  logic [31:0]          mem_resp_done,   // cycle the last byte of the beat's rows is delivered
  input  logic [PB*8-1:0] mem_resp_rdata,
  // a transfer's timing is known: [ev_t, ev_done) of bundle ev_pc
  output logic                 ev_valid,
  output logic [23:0]          ev_pc,
  output logic [31:0]          ev_t,
  output logic [31:0]          ev_done,
  output logic                 err_late
);
  localparam int PORT_WR = UB_ROW_BYTES * UB_WR_PORTS;  // UB bytes per cycle, DMA writes
  localparam int PORT_RD = UB_ROW_BYTES * UB_RD_PORTS;

  logic [DESC_BITS-1:0] desc_mem [DESC_ENTRIES];
  always_ff @(posedge clk) if (desc_we) desc_mem[desc_waddr] <= desc_wdata;

  // ---------------------------------------------------------------- in-flight table
  logic        s_valid [INFLIGHT];
  logic        s_known [INFLIGHT];
  logic [31:0] s_done  [INFLIGHT];
  logic [5:0]  s_flag  [INFLIGHT];
  logic [3:0]  s_op    [INFLIGHT];
  logic [31:0] s_src   [INFLIGHT];
  logic [31:0] s_dst   [INFLIGHT];
  logic [DW-1:0] s_desc [INFLIGHT];
  logic [23:0] s_pc    [INFLIGHT];
  logic [31:0] s_t     [INFLIGHT];
  logic [TW-1:0] s_wslot [INFLIGHT];
  logic [MW-1:0] s_wunit [INFLIGHT];

  logic [INFLIGHT-1:0] busy;
  logic [SW:0] nbusy;
  logic [SW-1:0] free_slot;
  always_comb begin
    nbusy = '0;
    free_slot = '0;
    for (int i = INFLIGHT - 1; i >= 0; i--) begin
      busy[i] = s_valid[i] && (!s_known[i] || s_done[i] > now);
      if (busy[i]) nbusy = nbusy + 1'b1;
      else free_slot = SW'(i);
      inc_valid[i] = s_valid[i] && s_known[i] && s_done[i] == now && s_flag[i] != 6'd0;
      inc_flag[i] = s_flag[i];
    end
  end
  assign idle = (nbusy == '0);

  // ---------------------------------------------------------------- weight FIFOs
  logic [COLS*16-1:0] wf_mem   [MXUS][WF_TILES][ROWS];
  logic [COLS*16-1:0] wf_stage [MXUS][ROWS];  // the tile being shifted (its slot may refill)
  logic [KW-1:0]      wf_tk    [MXUS][WF_TILES];
  logic [NW-1:0]      wf_tn    [MXUS][WF_TILES];
  logic               wf_known [MXUS][WF_TILES];
  logic [31:0]        wf_ready [MXUS][WF_TILES];
  logic [TW-1:0]      wf_wr    [MXUS];
  logic [TW-1:0]      wf_rd    [MXUS];
  logic [TW:0]        wf_count [MXUS];  // reserved by dma.wfifo, not yet popped

  for (genvar m = 0; m < MXUS; m++) begin : g_wf
    assign wf_avail[m] = (wf_count[m] != '0) && wf_known[m][wf_rd[m]] && wf_ready[m][wf_rd[m]] <= now;
    assign wf_k[m]     = wf_tk[m][wf_rd[m]];
    assign wf_n[m]     = wf_tn[m][wf_rd[m]];
    assign wf_data[m]  = wf_pop[m] ? wf_mem[m][wf_rd[m]][wf_row[m]] : wf_stage[m][wf_row[m]];
    always_ff @(posedge clk) begin
      if (wf_pop[m])
        for (int r = 0; r < ROWS; r++) wf_stage[m][r] <= wf_mem[m][wf_rd[m]][r];
    end
  end

  logic is_wfifo;
  logic [MW-1:0] wunit;
  assign is_wfifo = (32'(is_op) == OP_DMA_DMA_WFIFO);
  assign wunit = MW'(unit);
  logic unused_unit;
  assign unused_unit = ^unit;  // the core refuses units past MXUS
  // A pop at this cycle frees its slot for a dma.wfifo issuing now (docs/microarch.md).
  assign can_accept = (nbusy < (SW+1)'(INFLIGHT)) &&
                      (!is_wfifo || (wf_count[wunit] - (TW+1)'(wf_pop_pending[wunit])) < (TW+1)'(WF_TILES));

  // issue queue: slots in issue order
  logic [SW-1:0] q_slot [INFLIGHT];
  logic [SW-1:0] q_head, q_tail;
  logic [SW:0]   q_count;

  // ---------------------------------------------------------------- row generator
  logic          g_active, g_start;
  logic [SW-1:0] g_slot;
  logic [3:0]    g_op;
  logic [31:0]   g_src, g_dst;       // bases including the descriptor offsets
  logic [15:0]   g_bytes;
  logic [15:0]   g_beat;             // offset of this cycle's beat within the row
  logic [15:0]   beat_bytes;
  logic          last_beat;
  logic [15:0]   g_per;              // rows per beat: PB / bytes (1 for longer rows and tiles)
  logic [15:0]   g_n;                // rows this cycle
  logic          g_long;             // rows longer than PB bytes: several beats each
  assign g_long = 32'(g_bytes) > PB;
  always_comb begin
    g_n = g_cnt[0] - g_i[0];
    if (g_long || g_per < g_n) g_n = g_long ? 16'd1 : g_per;
    if (g_n == 16'd0) g_n = 16'd1;  // a dimension of count 0 (no rows): as before, one at a time
  end
  assign beat_bytes = !g_long ? 16'(32'(g_n) * 32'(g_bytes))
                      : (32'(g_bytes) - 32'(g_beat) > PB) ? 16'(PB) : g_bytes - g_beat;
  assign last_beat  = 32'(g_beat) + PB >= 32'(g_bytes);
  logic [2:0]    g_dtype;
  logic [15:0]   g_cnt [3];
  logic [31:0]   g_ss  [3];
  logic [31:0]   g_ds  [3];
  logic [15:0]   g_i   [3];
  logic [31:0]   g_row;              // rows done
  logic [31:0]   g_S, g_H, g_N;
  logic [31:0]   port_free;          // the DMA's UB port, shared in issue order
  logic [TW-1:0] g_wslot;
  logic [MW-1:0] g_wunit;

  assign g_start = !g_active && q_count != '0;

  // addresses of the current row
  logic [31:0] so, dof, a_src, a_dst;
  always_comb begin
    so = 32'(g_i[0]) * g_ss[0] + 32'(g_i[1]) * g_ss[1] + 32'(g_i[2]) * g_ss[2];
    dof = 32'(g_i[0]) * g_ds[0] + 32'(g_i[1]) * g_ds[1] + 32'(g_i[2]) * g_ds[2];
    a_src = g_src + so;
    a_dst = g_dst + dof;
  end
  logic is_load, is_store, is_copy, is_wf;
  assign is_load  = 32'(g_op) == OP_DMA_DMA_LOAD;
  assign is_store = 32'(g_op) == OP_DMA_DMA_STORE;
  assign is_copy  = 32'(g_op) == OP_DMA_DMA_COPY;
  assign is_wf    = 32'(g_op) == OP_DMA_DMA_WFIFO;

  assign mem_req_valid = g_active && !is_copy;
  assign mem_req_write = is_store;
  assign mem_req_addr  = is_store ? a_dst : a_src;
  assign mem_req_bytes = g_bytes;
  assign mem_req_count = g_n;
  assign mem_req_stride = is_store ? g_ds[0] : g_ss[0];
  assign mem_req_first = g_beat == 16'd0;
  assign mem_req_offset = g_beat;
  assign mem_req_beat_bytes = beat_bytes;
  assign mem_req_ready = is_store ? g_S + 32'(UB_RD_LAT) : g_S;
  assign mem_req_pc    = s_pc[g_slot];
  assign ub_rd_addr    = UAW'(a_src + 32'(g_beat));
  assign ub_rd_row     = g_long ? ULW'(PB) : ULW'(g_bytes);
  assign ub_rd_stride  = g_ss[0];
  assign mem_req_wdata = ub_rd_data;

  assign ub_we    = g_active && (is_load || is_copy);
  assign ub_waddr = UAW'(a_dst + 32'(g_beat));
  assign ub_wlen  = ULW'(beat_bytes);
  assign ub_wrow  = g_long ? ULW'(PB) : ULW'(g_bytes);
  assign ub_wstride = g_ds[0];
  assign ub_wdata = is_copy ? ub_rd_data : mem_resp_rdata;

  logic        last_row;
  logic [31:0] h_next, occ_w, occ_r, occ_c, p_start, d_cycle, port_next;
  always_comb begin
    last_row = last_beat && (g_i[0] + g_n == g_cnt[0]) && (g_i[1] == g_cnt[1] - 16'd1) &&
               (g_i[2] == g_cnt[2] - 16'd1);
    h_next = (!is_copy && mem_resp_done > g_H) ? mem_resp_done : g_H;
    occ_w = (g_N + 32'(PORT_WR) - 1) / 32'(PORT_WR);
    occ_r = (g_N + 32'(PORT_RD) - 1) / 32'(PORT_RD);
    occ_c = (g_N + 32'(UB_ROW_BYTES) - 1) / 32'(UB_ROW_BYTES);
    p_start = (g_S > port_free) ? g_S : port_free;
    port_next = port_free;
    d_cycle = h_next;
    if (is_load) begin
      port_next = p_start + occ_w;
      d_cycle = ((h_next > port_next) ? h_next : port_next) + 32'(UB_WR_LAT);
    end else if (is_store) begin
      port_next = p_start + occ_r;
      d_cycle = (h_next > port_next) ? h_next : port_next;
    end else if (is_copy) begin
      port_next = p_start + 2 * occ_c;
      d_cycle = port_next + 32'(UB_RD_LAT + UB_WR_LAT);
    end
  end

  assign ev_valid = g_active && last_row;
  assign ev_pc    = s_pc[g_slot];
  assign ev_t     = s_t[g_slot];
  assign ev_done  = d_cycle;

  // the tile row of this response, as MXU lanes (int8 in bits 7..0)
  logic [COLS*16-1:0] tile_row;
  always_comb begin
    for (int n = 0; n < COLS; n++)
      tile_row[n*16 +: 16] = (32'(g_dtype) == DTYPE_BF16)
          ? mem_resp_rdata[n*16 +: 16] : {8'h00, mem_resp_rdata[n*8 +: 8]};
  end

  logic [DESC_BITS-1:0] d;
  assign d = desc_mem[s_desc[q_slot[q_head]]];
  logic unused_desc_idx;  // indices past the table are refused by the harness's loader
  assign unused_desc_idx = ^desc_idx[DMA_DESC_WIDTH-1:DW];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      for (int i = 0; i < INFLIGHT; i++) s_valid[i] <= 1'b0;
      q_head <= '0;
      q_tail <= '0;
      q_count <= '0;
      g_active <= 1'b0;
      port_free <= '0;
      for (int m = 0; m < MXUS; m++) begin
        wf_wr[m] <= '0;
        wf_rd[m] <= '0;
        wf_count[m] <= '0;
      end
      err_late <= 1'b0;
    end else begin
      // accept
      if (fire) begin
        s_valid[free_slot] <= 1'b1;
        s_known[free_slot] <= 1'b0;
        s_flag[free_slot]  <= flag;
        s_op[free_slot]    <= is_op;
        s_src[free_slot]   <= src_base;
        s_dst[free_slot]   <= dst_base;
        s_desc[free_slot]  <= DW'(desc_idx);
        s_pc[free_slot]    <= pc;
        s_t[free_slot]     <= now;
        s_wslot[free_slot] <= wf_wr[wunit];
        s_wunit[free_slot] <= wunit;
        q_slot[q_tail]     <= free_slot;
        q_tail <= (q_tail == SW'(INFLIGHT - 1)) ? '0 : q_tail + 1'b1;
        if (is_wfifo) begin
          wf_known[wunit][wf_wr[wunit]] <= 1'b0;
          wf_wr[wunit] <= (wf_wr[wunit] == TW'(WF_TILES - 1)) ? '0 : wf_wr[wunit] + 1'b1;
        end
      end
      q_count <= q_count + (SW+1)'(fire) - (SW+1)'(g_start);
      for (int m = 0; m < MXUS; m++) begin
        wf_count[m] <= wf_count[m] + (TW+1)'(fire && is_wfifo && wunit == MW'(m)) - (TW+1)'(wf_pop[m]);
        if (wf_pop[m]) wf_rd[m] <= (wf_rd[m] == TW'(WF_TILES - 1)) ? '0 : wf_rd[m] + 1'b1;
      end

      // the generator takes the oldest queued transfer
      if (g_start) begin
        g_active <= 1'b1;
        g_slot   <= q_slot[q_head];
        g_op     <= s_op[q_slot[q_head]];
        g_src    <= s_src[q_slot[q_head]] + d[31:0];
        g_dst    <= s_dst[q_slot[q_head]] + d[63:32];
        g_bytes  <= d[79:64];
        g_per    <= (32'(s_op[q_slot[q_head]]) == OP_DMA_DMA_WFIFO || d[79:64] == 16'd0 || 32'(d[79:64]) > PB)
                    ? 16'd1 : 16'(PB / 32'(d[79:64]));
        g_dtype  <= d[82:80];
        for (int k = 0; k < 3; k++) begin
          g_cnt[k] <= d[83 + 16*k +: 16];
          g_ss[k]  <= d[131 + 32*k +: 32];
          g_ds[k]  <= d[227 + 32*k +: 32];
          g_i[k]   <= '0;
        end
        g_N      <= 32'(d[79:64]) * 32'(d[83 +: 16]) * 32'(d[99 +: 16]) * 32'(d[115 +: 16]);
        g_S      <= s_t[q_slot[q_head]] + 32'(SETUP);
        g_H      <= (32'(s_op[q_slot[q_head]]) == OP_DMA_DMA_STORE)
                    ? s_t[q_slot[q_head]] + 32'(SETUP + UB_RD_LAT) : s_t[q_slot[q_head]] + 32'(SETUP);
        g_row    <= '0;
        g_beat   <= '0;
        g_wslot  <= s_wslot[q_slot[q_head]];
        g_wunit  <= s_wunit[q_slot[q_head]];
        q_head <= (q_head == SW'(INFLIGHT - 1)) ? '0 : q_head + 1'b1;
      end else if (g_active && !last_beat) begin
        g_H <= h_next;
        g_beat <= g_beat + 16'(PB);
      end else if (g_active) begin
        g_H <= h_next;
        g_beat <= '0;
        g_row <= g_row + 32'(g_n);
        if (is_wf) wf_mem[g_wunit][g_wslot][RW'(g_row)] <= tile_row;  // tile rows are one beat
        // next row, innermost dimension first
        if (g_i[0] + g_n != g_cnt[0]) g_i[0] <= g_i[0] + g_n;
        else begin
          g_i[0] <= '0;
          if (g_i[1] != g_cnt[1] - 16'd1) g_i[1] <= g_i[1] + 16'd1;
          else begin
            g_i[1] <= '0;
            g_i[2] <= g_i[2] + 16'd1;
          end
        end
        if (last_row) begin
          g_active <= 1'b0;
          s_known[g_slot] <= 1'b1;
          s_done[g_slot]  <= d_cycle;
          port_free <= port_next;
          if (d_cycle <= now) err_late <= 1'b1;
          if (is_wf) begin
            wf_known[g_wunit][g_wslot] <= 1'b1;
            wf_ready[g_wunit][g_wslot] <= d_cycle;
            wf_tk[g_wunit][g_wslot]    <= KW'(g_row + 1);
            wf_tn[g_wunit][g_wslot]    <= NW'((32'(g_dtype) == DTYPE_BF16) ? 32'(g_bytes) / 2 : 32'(g_bytes));
          end
        end
      end
    end
  end
endmodule
