// vtpu_fp32_sqrt: fp32 square root under docs/numerics.md §1, as sim/numerics sf::sqrt:
// DAZ, sqrt(+-0) = +-0, negative or NaN -> canonical NaN, sqrt(+inf) = +inf; otherwise the
// bit-by-bit integer root of the significand (exponent made even) to 31 bits with a sticky
// bit for a nonzero remainder, rounded to 24 bits with ties to even (never out of range).
// Combinational.
module vtpu_fp32_sqrt (
  input  logic [31:0] a,
  output logic [31:0] y
);
  logic [7:0] ea;
  assign ea = a[30:23];
  logic [31:0] sig;  // the root, leading one at bit 30, sticky in bit 0
  int          e_half;
  always_comb begin
    logic [63:0] n, root, rem, bit_;
    int          e;
    e = int'(ea) - 127;
    n = {40'd0, 1'b1, a[22:0]};
    if (e[0]) begin  // make the exponent even
      n = n << 1;
      e = e - 1;
    end
    n = n << 37;     // floor(sqrt(m / 2^23) * 2^30) = isqrt(m * 2^37)
    root = 64'd0;
    rem = n;
    for (int i = 31; i >= 0; i--) begin
      bit_ = 64'd1 << (2 * i);
      if (rem >= root + bit_) begin
        rem = rem - (root + bit_);
        root = (root >> 1) + bit_;
      end else begin
        root = root >> 1;
      end
    end
    sig = root[31:0] | {31'd0, rem != 64'd0};
    e_half = e / 2 + 127;
  end

  always_comb begin
    logic [31:0] s;
    logic [6:0]  round_bits;
    int          e;
    e = e_half;
    s = sig;
    round_bits = s[6:0];
    s = s + 32'h40;
    if (s[31]) begin  // rounding carried out: 2.0 -> 1.0 x 2
      s = s >> 1;
      e = e + 1;
    end
    s = s >> 7;
    if (round_bits == 7'h40) s[0] = 1'b0;  // an exact tie goes to even
    if (ea == 8'hFF && a[22:0] != 23'd0) y = 32'h7FC00000;  // NaN
    else if (ea == 8'd0) y = {a[31], 31'd0};                // +-0 or a denormal (DAZ)
    else if (a[31]) y = 32'h7FC00000;
    else if (ea == 8'hFF) y = a;                            // +inf
    else y = {1'b0, e[7:0], s[22:0]};
  end
endmodule
