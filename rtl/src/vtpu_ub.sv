// vtpu_ub: the unified buffer as BYTES bytes of byte-addressed SRAM with NR read ports and
// NW write ports, each moving up to PB bytes at any byte address per cycle, plus one read
// and one write port for the DMA engine that move a group of equal rows at a stride (up to
// PB bytes in all: the rows of a descriptor's innermost dimension that one beat carries,
// packed one after another). Reads are combinational (the clients model their own
// latencies, docs/microarch.md); writes take effect at the end of the cycle, later ports
// winning a tie (race-free programs have none). Bank conflicts are timing only: the clients
// count them (docs/microarch.md, "Unified buffer: banks and ports"), the storage itself is
// one array.
module vtpu_ub #(
  parameter int BYTES = 65536,  // a power of two
  parameter int PB    = 64,     // bytes per port access
  parameter int NR    = 4,
  parameter int NW    = 2,
  localparam int AW = $clog2(BYTES),
  localparam int LW = $clog2(PB + 1)
) (
  input  logic            clk,
  input  logic [AW-1:0]   rd_addr [NR],
  output logic [PB*8-1:0] rd_data [NR],
  input  logic            wr_en   [NW],
  input  logic [AW-1:0]   wr_addr [NW],
  input  logic [LW-1:0]   wr_len  [NW],  // bytes written, 0 .. PB
  input  logic [PB*8-1:0] wr_data [NW],
  // the DMA's ports: rows of `row` bytes (1 .. PB), `stride` bytes apart
  input  logic [AW-1:0]   gr_addr,
  input  logic [LW-1:0]   gr_row,
  input  logic [31:0]     gr_stride,
  output logic [PB*8-1:0] gr_data,
  input  logic            gw_en,
  input  logic [AW-1:0]   gw_addr,
  input  logic [LW-1:0]   gw_len,        // bytes written in all
  input  logic [LW-1:0]   gw_row,
  input  logic [31:0]     gw_stride,
  input  logic [PB*8-1:0] gw_data
);
  logic [7:0] mem [BYTES];

  // Byte i of a group access lies at offset (i / row) * stride + i % row.
  logic [AW-1:0] gr_off [PB];
  logic [AW-1:0] gw_off [PB];
  always_comb begin
    int rr, rj, wr, wj;
    rr = 0;
    rj = 0;
    wr = 0;
    wj = 0;
    for (int i = 0; i < PB; i++) begin
      gr_off[i] = AW'(32'(rr) * gr_stride + 32'(rj));
      gw_off[i] = AW'(32'(wr) * gw_stride + 32'(wj));
      rj++;
      if (rj == 32'(gr_row)) begin
        rj = 0;
        rr++;
      end
      wj++;
      if (wj == 32'(gw_row)) begin
        wj = 0;
        wr++;
      end
    end
  end

  always_comb begin
    for (int p = 0; p < NR; p++)
      for (int i = 0; i < PB; i++)
        rd_data[p][i*8 +: 8] = mem[rd_addr[p] + AW'(i)];  // wraps past the end (masked by users)
    for (int i = 0; i < PB; i++) gr_data[i*8 +: 8] = mem[gr_addr + gr_off[i]];
  end

  always_ff @(posedge clk) begin
    for (int p = 0; p < NW; p++)
      if (wr_en[p])
        for (int i = 0; i < PB; i++)
          if (i < 32'(wr_len[p])) mem[wr_addr[p] + AW'(i)] <= wr_data[p][i*8 +: 8];
    if (gw_en)
      for (int i = 0; i < PB; i++)
        if (i < 32'(gw_len)) mem[gw_addr + gw_off[i]] <= gw_data[i*8 +: 8];
  end
endmodule
