// vtpu_delay: q(t) = d(t - DEPTH). DEPTH = 0 is a wire. With RESET = 1 every stage clears
// to 0 on a synchronous active-low reset (control bits); datapath delays use RESET = 0.
module vtpu_delay #(
  parameter int WIDTH = 1,
  parameter int DEPTH = 1,
  parameter bit RESET = 1'b0
) (
  input  logic             clk,
  input  logic             rst_n,
  input  logic [WIDTH-1:0] d,
  output logic [WIDTH-1:0] q
);
  if (DEPTH == 0) begin : g_wire
    assign q = d;
    logic unused_clk;
    assign unused_clk = clk ^ rst_n;
  end else begin : g_regs
    logic [DEPTH*WIDTH-1:0] sr;  // stage 0 at the low end
    if (DEPTH == 1) begin : g_one
      always_ff @(posedge clk) begin
        if (RESET && !rst_n) sr <= '0;
        else sr <= d;
      end
    end else begin : g_many
      always_ff @(posedge clk) begin
        if (RESET && !rst_n) sr <= '0;
        else sr <= {sr[(DEPTH-1)*WIDTH-1:0], d};
      end
    end
    assign q = sr[DEPTH*WIDTH-1 -: WIDTH];
    if (!RESET) begin : g_no_reset
      logic unused_rst;
      assign unused_rst = rst_n;
    end
  end
endmodule
