// vtpu_vec_lane: one lane of the vector unit — the arithmetic of every supported vector
// operation on element n of a (and b), as docs/numerics.md defines it, plus the running
// value of a pooling window.
module vtpu_vec_lane import vtpu_isa_pkg::*, vtpu_num_pkg::*; (
  input  logic               clk,
  input  logic [5:0]         op,
  input  logic [2:0]         dt,
  input  logic [2:0]         odt,
  input  logic [31:0]        a_raw,      // element of a, b as stored (low esz(dt) bytes)
  input  logic [31:0]        b_raw,
  input  logic               pool_read,  // pooling: this cycle reads a window row
  input  logic               pool_first, // ... the first one
  input  logic [31:0]        mult,       // vec.rescale multiplier and shift of this lane
  input  logic [5:0]         shift,
  input  logic [31:0]        scale,      // vec.affine / vec.avgpool scale, vec.affine bias
  input  logic [31:0]        bias,
  input  logic signed [31:0] in_zp,
  input  logic signed [31:0] out_zp,
  input  logic               dround,
  input  logic signed [47:0] lo_t,       // clamp bounds for the result type
  input  logic signed [47:0] hi_t,
  input  logic [31:0]        fmin,       // fp32 clamp bounds
  input  logic [31:0]        fmax,
  input  logic [31:0]        rsum_i,     // the row's reductions (every lane gets them)
  input  logic [31:0]        rsum_f,
  input  logic [31:0]        rmax_i,
  input  logic [31:0]        rmax_f,
  input  logic [31:0]        tab_y,      // the table function of a (vtpu_vector computes it)
  output logic [31:0]        a_fr,       // a as fp32 bits, raw (for the reductions)
  output logic signed [47:0] a_i,        // a as an integer
  output logic [31:0]        y           // the result, in the low esz(odt) bytes
);
  logic is_float_dt;
  assign is_float_dt = 32'(dt) == DTYPE_FP32 || 32'(dt) == DTYPE_BF16;
  logic [31:0] a_f, b_fr, b_neg, sum_f, mul_in_a, mul_in_b, prod_f, aff_f, r, rf;
  logic [31:0] pacc, pool_f, pool_sum_i, add_a, add_b, psum_f;  // pooling: running value, this cycle's
  logic signed [47:0] b_i, ri;
  logic signed [47:0] prod_i;  // mod 2^48: exact for 16-bit operands, right low 32 bits for int32
  always_comb begin
    case (32'(dt))
      DTYPE_INT8:  begin a_i = 48'($signed(a_raw[7:0]));   b_i = 48'($signed(b_raw[7:0]));   end
      DTYPE_INT16: begin a_i = 48'($signed(a_raw[15:0]));  b_i = 48'($signed(b_raw[15:0]));  end
      DTYPE_UINT8: begin a_i = 48'(a_raw[7:0]);            b_i = 48'(b_raw[7:0]);            end
      default:     begin a_i = 48'($signed(a_raw));        b_i = 48'($signed(b_raw));        end
    endcase
    // floats as fp32 bits: raw for arithmetic (which applies DAZ itself), canonical for vec.cvt
    a_fr = (32'(dt) == DTYPE_BF16) ? {a_raw[15:0], 16'd0} : a_raw;
    b_fr = (32'(dt) == DTYPE_BF16) ? {b_raw[15:0], 16'd0} : b_raw;
    a_f  = f32_canonical(a_fr);
  end
  assign b_neg = (32'(op) == OP_VEC_VEC_SUB) ? {~b_fr[31], b_fr[30:0]} : b_fr;  // a - b = a + (-b)
  // vec.affine: a * scale + bias in fp32 (integers converted to fp32 first, back after);
  // vec.avgpool: the window sum (fp32 in window order, or int32 modulo 2^32) * scale
  assign pool_sum_i = pool_first ? a_i[31:0] : pacc + a_i[31:0];
  logic signed [47:0] to_f32_in;  // the one integer -> fp32 conversion feeding the multiplier
  assign to_f32_in = (32'(op) == OP_VEC_VEC_AVGPOOL) ? 48'($signed(pool_sum_i)) : a_i;
  always_comb begin  // multiplier operands
    if (32'(op) == OP_VEC_VEC_AFFINE) begin
      mul_in_a = is_float_dt ? a_fr : int_to_f32(to_f32_in, 24);
      mul_in_b = scale;
    end else if (32'(op) == OP_VEC_VEC_AVGPOOL) begin
      mul_in_a = is_float_dt ? pool_f : int_to_f32(to_f32_in, 24);
      mul_in_b = scale;
    end else begin
      mul_in_a = a_fr;
      mul_in_b = b_fr;
    end
  end
  // adder operands (a separate block: the affine add takes the product)
  assign add_a = (32'(op) == OP_VEC_VEC_AFFINE) ? prod_f : a_fr;
  assign add_b = (32'(op) == OP_VEC_VEC_AFFINE) ? bias : b_neg;
  vtpu_fp32_mul u_mul (.a(mul_in_a), .b(mul_in_b), .y(prod_f));
  vtpu_fp32_add u_add (.a(add_a), .b(add_b), .y(sum_f));
  vtpu_fp32_add u_padd (.a(pacc), .b(a_fr), .y(psum_f));  // the window sum (its own adder: it feeds the multiplier)
  // the pooled value including this cycle's window row
  always_comb begin
    if (32'(op) == OP_VEC_VEC_MAXPOOL)
      pool_f = pool_first ? f32_canonical(a_fr) : f32_maxmin(pacc, a_fr, 1'b1);
    else
      pool_f = pool_first ? a_fr : psum_f;
  end
  always_ff @(posedge clk) begin
    if (pool_read) begin
      if (32'(op) == OP_VEC_VEC_MAXPOOL)
        pacc <= is_float_dt ? pool_f : ((pool_first || $signed(a_i) > $signed(48'($signed(pacc)))) ? a_i[31:0] : pacc);
      else
        pacc <= is_float_dt ? pool_f : pool_sum_i;
    end
  end
  assign aff_f = sum_f;
  assign prod_i = a_i * b_i;
  // the float operations (fp32 and bf16 rows), as fp32
  always_comb begin
    case (32'(op))
      OP_VEC_VEC_ADD, OP_VEC_VEC_SUB: rf = sum_f;
      OP_VEC_VEC_MUL: rf = prod_f;
      OP_VEC_VEC_MAX: rf = f32_maxmin(a_fr, b_fr, 1'b1);
      OP_VEC_VEC_MIN: rf = f32_maxmin(a_fr, b_fr, 1'b0);
      OP_VEC_VEC_RELU: rf = f32_maxmin(a_fr, 32'd0, 1'b1);
      OP_VEC_VEC_CLAMP: rf = f32_maxmin(f32_maxmin(a_fr, fmin, 1'b1), fmax, 1'b0);
      OP_VEC_VEC_MAXPOOL: rf = pool_f;
      OP_VEC_VEC_RMAX: rf = rmax_f;
      OP_VEC_VEC_AVGPOOL: rf = prod_f;
      OP_VEC_VEC_EXP, OP_VEC_VEC_TANH, OP_VEC_VEC_SIGMOID, OP_VEC_VEC_GELU, OP_VEC_VEC_ERF, OP_VEC_VEC_RECIP,
      OP_VEC_VEC_RSQRT, OP_VEC_VEC_LOG: rf = tab_y;
      default: rf = aff_f;  // vec.affine
    endcase
  end
  // the integer operations: int32 wraps, narrower types saturate
  always_comb begin
    case (32'(op))
      OP_VEC_VEC_ADD: ri = a_i + b_i;
      OP_VEC_VEC_SUB: ri = a_i - b_i;
      OP_VEC_VEC_MUL: ri = (32'(dt) == DTYPE_INT32) ? 48'($signed(prod_i[31:0])) : prod_i[47:0];
      OP_VEC_VEC_MAX: ri = (a_i > b_i) ? a_i : b_i;
      OP_VEC_VEC_MIN: ri = (a_i < b_i) ? a_i : b_i;
      OP_VEC_VEC_RELU: ri = (a_i > 0) ? a_i : 48'sd0;
      OP_VEC_VEC_CLAMP: ri = sat(a_i, lo_t, hi_t);
      OP_VEC_VEC_MAXPOOL: ri = (pool_first || a_i > 48'($signed(pacc))) ? a_i : 48'($signed(pacc));
      default: ri = 48'($signed(rmax_i));  // vec.rmax
    endcase
    if (32'(dt) != DTYPE_INT32) ri = sat(ri, tmin(dt), tmax(dt));
  end
  // One conversion serves vec.cvt, vec.rsum, and storing every float result or the fp32
  // result of vec.affine / vec.avgpool on integer rows.
  logic               conv_int;
  logic signed [47:0] conv_vi;
  logic [31:0]        conv_vf, conv_y;
  logic [2:0]         conv_to;
  always_comb begin
    conv_int = 1'b0;
    conv_vi  = a_i;
    conv_vf  = rf;
    conv_to  = dt;
    if (32'(op) == OP_VEC_VEC_CVT) begin
      conv_int = is_int(dt);
      conv_vf  = a_f;
      conv_to  = odt;
    end else if (32'(op) == OP_VEC_VEC_RSUM) begin
      conv_int = is_int(dt);
      conv_vi  = 48'($signed(rsum_i));
      conv_vf  = f32_canonical(rsum_f);
      conv_to  = odt;
    end
  end
  assign conv_y = convert(conv_int, conv_vi, conv_vf, conv_to);
  logic signed [47:0] ab_sum;  // vec.addrescale: a + b on int32 rows, modulo 2^32
  assign ab_sum = 48'($signed(a_i[31:0] + b_i[31:0]));
  logic int_result;  // the integer operations on integer rows
  assign int_result = !is_float_dt && (32'(op) == OP_VEC_VEC_ADD || 32'(op) == OP_VEC_VEC_SUB ||
                      32'(op) == OP_VEC_VEC_MUL || 32'(op) == OP_VEC_VEC_MAX || 32'(op) == OP_VEC_VEC_MIN ||
                      32'(op) == OP_VEC_VEC_RELU || 32'(op) == OP_VEC_VEC_CLAMP ||
                      32'(op) == OP_VEC_VEC_MAXPOOL || 32'(op) == OP_VEC_VEC_RMAX);
  always_comb begin
    if (32'(op) == OP_VEC_VEC_RESCALE) r = 32'(rescale(a_i, mult, shift, in_zp, out_zp, dround, lo_t, hi_t));
    else if (32'(op) == OP_VEC_VEC_ADDRESCALE) r = 32'(rescale(ab_sum, mult, shift, in_zp, out_zp, dround, lo_t, hi_t));
    else if (int_result) r = 32'(ri);
    else r = conv_y;
  end
  assign y = r;
endmodule
