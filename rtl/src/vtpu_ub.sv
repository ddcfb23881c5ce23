// vtpu_ub: the unified buffer as BYTES bytes of byte-addressed SRAM with NR read ports and
// NW write ports, each moving up to PB bytes at any byte address per cycle. Reads are
// combinational (the clients model their own latencies, docs/microarch.md); writes take
// effect at the end of the cycle, later ports winning a tie (race-free programs have none).
// Bank conflicts are timing only: the clients count them (docs/microarch.md, "Unified
// buffer: banks and ports"), the storage itself is one array.
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
  input  logic [PB*8-1:0] wr_data [NW]
);
  logic [7:0] mem [BYTES];

  always_comb begin
    for (int p = 0; p < NR; p++)
      for (int i = 0; i < PB; i++)
        rd_data[p][i*8 +: 8] = mem[rd_addr[p] + AW'(i)];  // wraps past the end (masked by users)
  end

  always_ff @(posedge clk) begin
    for (int p = 0; p < NW; p++)
      if (wr_en[p])
        for (int i = 0; i < PB; i++)
          if (i < 32'(wr_len[p])) mem[wr_addr[p] + AW'(i)] <= wr_data[p][i*8 +: 8];
  end
endmodule
