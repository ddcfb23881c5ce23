// vtpu_num_pkg: the element arithmetic of docs/numerics.md that the vector unit applies
// (conversions, rounding, saturation, IEEE maximum/minimum, TOSA RESCALE), as functions.
// The fp32 add and multiply are modules (vtpu_fp32_add, vtpu_fp32_mul).
package vtpu_num_pkg;
  import vtpu_isa_pkg::*;

  function automatic int esz(input logic [2:0] t);
    case (32'(t))
      DTYPE_INT8, DTYPE_UINT8: return 1;
      DTYPE_BF16, DTYPE_INT16: return 2;
      default: return 4;
    endcase
  endfunction

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
                                                  input logic [5:0] shift, input logic signed [31:0] p_in_zp,
                                                  input logic signed [31:0] p_out_zp, input logic p_dround,
                                                  input logic signed [47:0] lo, input logic signed [47:0] hi);
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
  // Also stores every float result (fp32: canonical; bf16: rounded) and turns the fp32
  // results of vec.affine / vec.avgpool on integer rows back into integers.
  function automatic logic [31:0] convert(input logic from_int, input logic signed [47:0] vi, input logic [31:0] vf,
                                          input logic [2:0] to);
    logic [31:0] f;
    if (from_int) begin
      if (is_int(to)) return 32'(sat(vi, tmin(to), tmax(to)));
      f = int_to_f32(vi, (32'(to) == DTYPE_BF16) ? 8 : 24);  // bf16: rounded once, to 8 bits
      return (32'(to) == DTYPE_BF16) ? {16'd0, f[31:16]} : f32_canonical(f);
    end
    if (is_int(to)) return 32'(f32_to_int(vf, tmin(to), tmax(to)));
    if (32'(to) == DTYPE_BF16) return {16'd0, f32_to_bf16(vf)};
    return f32_canonical(vf);
  endfunction
endpackage
