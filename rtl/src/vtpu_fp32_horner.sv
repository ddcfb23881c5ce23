// vtpu_fp32_horner: p = C[N-1], then p = p * s + C[i] for i = N-2 down to 0, each step an
// fp32 multiply and an fp32 add rounded separately (no fusing), as Algo::horner in
// sim/numerics/src/transcendental.cpp. C packs the coefficients, C[i] in bits 32i..32i+31.
module vtpu_fp32_horner #(
  parameter int N = 2,
  parameter logic [32*N-1:0] C = '0
) (
  input  logic [31:0] s,
  output logic [31:0] y
);
  logic [31:0] p [N];
  assign p[N-1] = C[32*(N-1) +: 32];
  for (genvar i = N - 2; i >= 0; i--) begin : g_step
    logic [31:0] m;
    vtpu_fp32_mul u_mul (.a(p[i+1]), .b(s), .y(m));
    vtpu_fp32_add u_add (.a(m), .b(C[32*i +: 32]), .y(p[i]));
  end
  assign y = p[0];
endmodule
