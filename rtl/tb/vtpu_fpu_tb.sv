// vtpu_fpu_tb: the floating-point units (fp32 add, bf16 and fp32 multiply, fp32 divide and
// square root, the vector lane's table functions) on their own, for the unit cross-check against
// vtpu::numerics::sf (rtl/tests/fpu_test.cpp). Purely combinational.
module vtpu_fpu_tb import vtpu_fp32_pkg::*, vtpu_vec_table_pkg::*; (
  input  logic [31:0] add_a,
  input  logic [31:0] add_b,
  output logic [31:0] add_y,
  output logic [31:0] add_fn_y,   // f32_add of vtpu_fp32_pkg (the table functions' adder)
  input  logic [15:0] mul_a,
  input  logic [15:0] mul_b,
  output logic [31:0] mul_y,
  input  logic [31:0] fmul_a,
  input  logic [31:0] fmul_b,
  output logic [31:0] fmul_y,
  output logic [31:0] fmul_fn_y,  // f32_mul of vtpu_fp32_pkg
  input  logic [31:0] div_a,
  input  logic [31:0] div_b,
  output logic [31:0] div_y,
  input  logic [31:0] sqrt_a,
  output logic [31:0] sqrt_y,
  input  logic [2:0]  tab_func,
  input  logic [31:0] tab_x,
  output logic [31:0] tab_y
);
  assign add_fn_y = f32_add(add_a, add_b);
  assign fmul_fn_y = f32_mul(fmul_a, fmul_b);
  vtpu_fp32_div u_div (.a(div_a), .b(div_b), .y(div_y));
  vtpu_fp32_sqrt u_sqrt (.a(sqrt_a), .y(sqrt_y));
  assign tab_y = vec_table(tab_func, tab_x);
  vtpu_fp32_mul u_fmul (.a(fmul_a), .b(fmul_b), .y(fmul_y));
  vtpu_fp32_add u_add (.a(add_a), .b(add_b), .y(add_y));

  logic [15:0] sig_prod;
  assign sig_prod = {8'd0, 1'b1, mul_a[6:0]} * {8'd0, 1'b1, mul_b[6:0]};
  vtpu_bf16_mul u_mul (.a(mul_a), .b(mul_b), .sig_prod(sig_prod), .y(mul_y));
endmodule
