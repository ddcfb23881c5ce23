// Elementwise ops (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// INT8 y = a <kind> b through fp32 rows, each operand rescaled to the output's scale
// (params pa, pb) and the result rounded once: for operands whose range exceeds the
// output's, which int8 rescaling would saturate before the op. Registers: r1 = a, r2 = b,
// r3 = y, r4 and r5 = fp32 temporaries of `rows` rows.
void Codegen::int8_in_fp32(const std::string& kind, uint64_t rows, const std::string& pa, const std::string& pb) {
  const isa::Dtype f32 = isa::Dtype::Fp32, i8 = isa::Dtype::Int8;
  vec_wait(emit::vec_cvt(ub_reg(4), ub_reg(1), rows, i8, f32));
  vec_wait(emit::vec_affine(ub_reg(4), ub_reg(4), rows, f32, emit::Param{pa}));
  vec_wait(emit::vec_cvt(ub_reg(5), ub_reg(2), rows, i8, f32));
  vec_wait(emit::vec_affine(ub_reg(5), ub_reg(5), rows, f32, emit::Param{pb}));
  vec_wait(vec_binary(kind, ub_reg(4), ub_reg(4), ub_reg(5), rows, f32));
  vec_wait(emit::vec_cvt(ub_reg(3), ub_reg(4), rows, f32, i8));
}

void Codegen::gen_add(tpu::AddOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  if (has_role(op, "residual-add")) {  // done in the convolution's epilogues (conv.cpp, fusable_add)
    add_bound(layer, 0, 0);
    // The sum is in the other operand's buffer (the convolution's output has none).
    mlir::Operation* conv = op.getLhs().getDefiningOp();
    bool lhs_conv = conv && conv->getAttr(kIdAttr) == op->getAttr(kFusedIntoAttr);
    define(op.getOutput(), act(lhs_conv ? op.getRhs() : op.getLhs()));
    return;
  }
  const Act& a = act(op.getLhs());
  const Act& b = act(op.getRhs());
  Act y = out_in_place(op.getOutput(), {op.getLhs(), op.getRhs()}, layer);
  double lo = op.getClampMin().convertToDouble(), hi = op.getClampMax().convertToDouble();
  double sy = q8_ ? scale(op.getOutput()) : 1.0;
  std::string cp = q8_ ? clamp_param(std::isinf(lo) ? lo : std::ceil(lo / sy), std::isinf(hi) ? hi : std::floor(hi / sy))
                       : clamp_param(lo, hi);
  // INT8: bring both operands to the output scale first (one rounding each), then add:
  // b's rescaled rows into a temporary first (y may be b's own buffer), a's into y, y += it.
  // When an operand's range exceeds the output's (terms that cancel), that would saturate
  // it before the sum: then the sum is taken in fp32 rows and rounded once. Temporaries
  // cover a chunk of rows at a time.
  std::string pa, pb;
  bool wide = q8_ && (scale(op.getLhs()) > sy || scale(op.getRhs()) > sy);
  uint64_t row_tmp = wide ? C_ * 4 : R_ * esz_,
           cr = std::min<uint64_t>({y.rows, std::max<uint64_t>(1, (1u << 20) / row_tmp), kMaxVectorRows});
  uint64_t tmp = 0, tmp_bytes = align_up(cr * row_tmp, block_align_);
  // vec.add reads y and the rescaled b together: the temporary starts one unified-buffer
  // bank after y's rows (mod the banks' period), so the two reads never share a bank.
  const auto& ubc = cfg_.core.unified_buffer;
  uint64_t period = ubc.banks > 1 ? uint64_t(ubc.banks) * ubc.row_bytes : 0;
  if (q8_) {
    pa = new_param(fmt::format("scale=[{}]", double(scale(op.getLhs())) / sy));
    pb = new_param(fmt::format("scale=[{}]", double(scale(op.getRhs())) / sy));
    tmp = ub_take((wide ? 2 : 1) * tmp_bytes + (wide ? 0 : period), fmt::format("the rescaled operands of '{}'", layer));
  }
  uint64_t rowb = R_ * esz_;
  for (uint64_t blk = 0; blk < y.blocks; ++blk)
    for (uint64_t r0 = 0; r0 < y.rows; r0 += (q8_ ? cr : std::min(y.rows, kMaxVectorRows))) {
      uint64_t n = q8_ ? std::min(cr, y.rows - r0) : std::min(y.rows - r0, kMaxVectorRows);
      uint64_t ya = y.base + blk * y.block_bytes + r0 * rowb, aa = a.base + blk * a.block_bytes + r0 * rowb,
               ba = b.base + blk * b.block_bytes + r0 * rowb;
      uint64_t tb = tmp;
      if (q8_ && !wide && period) tb += (ya + ubc.row_bytes + period - tmp % period) % period;
      code(bundle({emit::li(reg(1), int64_t(aa)), emit::li(reg(2), int64_t(ba))}));
      code(bundle({emit::li(reg(3), int64_t(ya)), emit::li(reg(4), int64_t(tb))}));
      if (wide) {
        code("  " + emit::li(reg(5), int64_t(tmp + tmp_bytes)));
        int8_in_fp32("add", n, pa, pb);
      } else if (q8_) {
        vec_wait(emit::vec_affine(ub_reg(4), ub_reg(2), n, isa::Dtype::Int8, emit::Param{pb}));
        vec_wait(emit::vec_affine(ub_reg(3), ub_reg(1), n, isa::Dtype::Int8, emit::Param{pa}));
        vec_wait(emit::vec_add(ub_reg(3), ub_reg(3), ub_reg(4), n, isa::Dtype::Int8));
      } else {
        vec_wait(emit::vec_add(ub_reg(3), ub_reg(1), ub_reg(2), n, dtype_));
      }
      if (!cp.empty()) vec_wait(emit::vec_clamp(ub_reg(3), ub_reg(3), n, dtype_, emit::Param{cp}));
    }
  if (q8_) ub_.release(tmp);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

// bf16 runs vec.sub/mul/max/min directly. INT8 subtracts and compares like gen_add adds
// (both operands rescaled to the output's scale first; rounding is monotonic, so max and
// min commute with it) and multiplies in fp32 rows, since the product of two int8 codes
// needs the combined scale s_a * s_b / s_y applied before requantizing.
// ONNX integer Div, trunc(a / b), in fp32 rows: q = round(|a| * (1 / |b|)) (vec.recip is
// correctly rounded, so q is within one of the quotient while the integers stay below
// 2^22), corrected by one either way from the exact remainder |a| - q |b|, times the sign
// of a * b. Division by zero is left to the arithmetic (ONNX leaves it undefined).
void Codegen::gen_int_div(tpu::BinaryOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& a = act(op.getLhs());
  const Act& b = act(op.getRhs());
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  auto sc = [&](Value v) { return q8_ ? std::optional<double>(scale(v)) : std::nullopt; };
  Act A = fp32_twin(a, layer, "dividend", true, sc(op.getLhs())), B = fp32_twin(b, layer, "divisor", true, sc(op.getRhs()));
  Act S = fp32_twin(a, layer, "sign", false), T = fp32_twin(a, layer, "quotient", false), U = fp32_twin(a, layer, "remainder", false);
  std::string neg = new_param("scale=[-1]"), unit = clamp_param(-1.0, 1.0), bit = clamp_param(0.0, 1.0),
              plus1 = new_param("scale=[1] bias=[1]");
  const std::string to_out = q8_ ? new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput())))) : "";
  for (uint64_t blk = 0; blk < y.blocks; ++blk)
    in_vector_pieces(y.rows, [&](uint64_t r0, uint64_t rows) {
      uint64_t o = blk * A.block_bytes + r0 * R_ * 4;
      const isa::Dtype f32 = isa::Dtype::Fp32;
      auto u = [&](const Act& t) { return ub_at(t.base + o); };
      // d = x <kind> z (add, sub, mul, max), d = x * param (affine), d = clamp(x, param), d = 1 / x.
      auto v = [&](const std::string& kind, const Act& d, const Act& x, const Act& z) {
        vec_wait(vec_binary(kind, u(d), u(x), u(z), rows, f32));
      };
      auto affine = [&](const Act& d, const Act& x, const std::string& p) {
        vec_wait(emit::vec_affine(u(d), u(x), rows, f32, emit::Param{p}));
      };
      auto clamp = [&](const Act& d, const Act& x, const std::string& p) {
        vec_wait(emit::vec_clamp(u(d), u(x), rows, f32, emit::Param{p}));
      };
      v("mul", S, A, B), clamp(S, S, unit);  // the sign of a * b
      affine(U, A, neg), v("max", A, A, U);  // |a|
      affine(U, B, neg), v("max", B, B, U);  // |b|
      vec_wait(emit::vec_recip(u(T), u(B), rows, f32)), v("mul", T, T, A);
      vec_wait(emit::vec_cvt(u(T), u(T), rows, f32, isa::Dtype::Int32));  // round half to even
      vec_wait(emit::vec_cvt(u(T), u(T), rows, isa::Dtype::Int32, f32));
      v("mul", U, T, B), v("sub", U, A, U);  // the remainder |a| - q |b|
      affine(A, U, neg), clamp(A, A, bit), v("sub", T, T, A);  // q -= (r < 0)
      v("sub", U, U, B), affine(U, U, plus1), clamp(U, U, bit);
      v("add", T, T, U);  // q += (r >= |b|)
      v("mul", T, T, S);
      if (q8_) affine(T, T, to_out);
    });
  from_fp32_twin(T, y);
  for (const Act* t : {&A, &B, &S, &U}) ub_.release(t->base);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

void Codegen::gen_binary(tpu::BinaryOp op) {
  std::string layer = op.getLayer().str();
  if (op.getKind() == "div") return gen_int_div(op);
  tag(layer);
  const Act& a = act(op.getLhs());
  const Act& b = act(op.getRhs());
  Act y = out_in_place(op.getOutput(), {op.getLhs(), op.getRhs()}, layer);
  // sub, max, min: both rescaled to the output's scale, then one int8 op. Saturating an
  // operand first is harmless for max and min (monotonic) but not for a difference of
  // terms that cancel: such a sub goes through fp32 rows like mul.
  bool rescale_both = op.getKind() != "mul";
  if (q8_ && op.getKind() == "sub" &&
      (scale(op.getLhs()) > scale(op.getOutput()) || scale(op.getRhs()) > scale(op.getOutput())))
    rescale_both = false;
  uint64_t tmp = 0, tmp_bytes = 0;
  std::string pa, pb;
  // A temporary row: int8 (both rescaled) or fp32 (mul, or a sub through fp32); the two
  // temporaries hold all the rows when the buffer has room, else a piece of them.
  const uint64_t rowb = R_ * esz_, tmp_row = rescale_both ? R_ : C_ * 4;
  const uint64_t piece = q8_ ? std::clamp<uint64_t>((ub_.largest_free() - std::min<uint64_t>(ub_.largest_free(), 256)) / (2 * tmp_row), 1, y.rows) : kMaxVectorRows;
  if (q8_) {
    double sa = scale(op.getLhs()), sb = scale(op.getRhs()), sy = scale(op.getOutput());
    tmp_bytes = y.rows <= piece ? (rescale_both ? y.block_bytes : y.rows * C_ * 4) : align_up(piece * tmp_row, block_align_);
    tmp = ub_take(2 * tmp_bytes, fmt::format("the rescaled operands of '{}'", layer));
    bool mul = op.getKind() == "mul";
    pa = new_param(fmt::format("scale=[{}]", mul ? sa * sb / sy : sa / sy));
    if (!mul) pb = new_param(fmt::format("scale=[{}]", sb / sy));
  }
  for (uint64_t blk = 0; blk < y.blocks; ++blk)
    in_vector_pieces(y.rows, [&](uint64_t r0, uint64_t n) {
      uint64_t ya = y.base + blk * y.block_bytes + r0 * rowb, aa = a.base + blk * a.block_bytes + r0 * rowb,
               ba = b.base + blk * b.block_bytes + r0 * rowb, ta = tmp;
      code(bundle({emit::li(reg(1), int64_t(aa)), emit::li(reg(2), int64_t(ba))}));
      code(bundle({emit::li(reg(3), int64_t(ya)), emit::li(reg(4), int64_t(ta))}));
      code("  " + emit::li(reg(5), int64_t(ta + tmp_bytes)));
      const isa::Dtype f32 = isa::Dtype::Fp32, i8 = isa::Dtype::Int8;
      if (!q8_) {
        vec_wait(vec_binary(op.getKind().str(), ub_reg(3), ub_reg(1), ub_reg(2), n, dtype_));
      } else if (rescale_both) {
        vec_wait(emit::vec_affine(ub_reg(4), ub_reg(1), n, i8, emit::Param{pa}));
        vec_wait(emit::vec_affine(ub_reg(5), ub_reg(2), n, i8, emit::Param{pb}));
        vec_wait(vec_binary(op.getKind().str(), ub_reg(3), ub_reg(4), ub_reg(5), n, i8));
      } else if (op.getKind() == "mul") {
        vec_wait(emit::vec_cvt(ub_reg(4), ub_reg(1), n, i8, f32));
        vec_wait(emit::vec_cvt(ub_reg(5), ub_reg(2), n, i8, f32));
        vec_wait(emit::vec_mul(ub_reg(4), ub_reg(4), ub_reg(5), n, f32));
        vec_wait(emit::vec_affine(ub_reg(4), ub_reg(4), n, f32, emit::Param{pa}));
        vec_wait(emit::vec_cvt(ub_reg(3), ub_reg(4), n, f32, i8));
      } else {  // a sub whose operands exceed the output's range: in fp32, rounded once
        int8_in_fp32(op.getKind().str(), n, pa, pb);
      }
    }, piece);
  if (q8_) ub_.release(tmp);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

// Table functions run on bf16 or fp32; INT8 goes through fp32 rows (dequantize, function,
// requantize to the output's scale). log, recip and rsqrt of the zeros in a partial lane
// block's padding are -inf or +inf, which a later affine (x 0 there) or a softmax's mask
// would make NaN: a max (log) or min with a row of -inf/+inf on the valid lanes and 0 on
// the padding puts it back to 0 (the planner keeps these ops out of matmul epilogues).
void Codegen::gen_unary(tpu::UnaryOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = out_in_place(op.getOutput(), {op.getInput()}, layer);
  std::string fn = op.getFn().str();
  const isa::Dtype row_dt = q8_ ? isa::Dtype::Fp32 : isa::Dtype::Bf16;
  const uint64_t valid = y.features - (y.blocks - 1) * C_;
  uint64_t pad_fix = 0;
  if (infinite_at_zero(fn) && valid < C_) {
    const float keep = fn == "log" ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    std::vector<uint8_t> row = lane_row(valid, keep, 0.0f, row_dt);
    pad_fix = ub_take(row.size(), fmt::format("the padding lanes' mask of '{}'", layer));
    load_constant(std::move(row), pad_fix);
  }
  // dst's padding lanes back to 0 (the last block of a partial one only)
  auto fix_padding = [&](uint64_t blk, const emit::Mem& dst, uint64_t n) {
    if (!pad_fix || blk + 1 != y.blocks) return;
    code("  " + emit::li(reg(4), int64_t(pad_fix)));
    vec_wait(vec_binary(fn == "log" ? "max" : "min", dst, dst, ub_reg(4), n, row_dt, true));
  };
  // The function on n rows a into dst: sqrt as rsqrt then recip (in place, on the result).
  auto table = [&](const emit::Mem& dst, const emit::Mem& a, isa::Dtype dt, uint64_t n) {
    if (fn != "sqrt") return vec_wait(vec_unary(fn, dst, a, n, dt));
    vec_wait(emit::vec_rsqrt(dst, a, n, dt));
    vec_wait(emit::vec_recip(dst, dst, n, dt));
  };
  uint64_t tmp = 0;
  std::string in_s, out_s;
  // The fp32 work rows: all of them when the buffer has room, else a piece.
  const uint64_t piece = q8_ ? std::clamp<uint64_t>((ub_.largest_free() - std::min<uint64_t>(ub_.largest_free(), 128)) / (C_ * 4), 1, x.rows) : kMaxVectorRows;
  if (q8_) {
    tmp = ub_take(std::min(x.rows, piece) * C_ * 4, fmt::format("the fp32 work rows of '{}'", layer));
    in_s = new_param(fmt::format("scale=[{}]", double(scale(op.getInput()))));
    out_s = new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput()))));
  }
  const isa::Dtype f32 = isa::Dtype::Fp32, i8 = isa::Dtype::Int8;
  const uint64_t rowb = R_ * esz_;
  for (uint64_t blk = 0; blk < y.blocks; ++blk)
    in_vector_pieces(y.rows, [&](uint64_t r0, uint64_t n) {
      code(bundle({emit::li(reg(1), int64_t(x.base + blk * x.block_bytes + r0 * rowb)),
                   emit::li(reg(2), int64_t(y.base + blk * y.block_bytes + r0 * rowb))}));
      if (!q8_) {
        table(ub_reg(2), ub_reg(1), isa::Dtype::Bf16, n);
        fix_padding(blk, ub_reg(2), n);
        return;
      }
      code("  " + emit::li(reg(3), int64_t(tmp)));
      vec_wait(emit::vec_cvt(ub_reg(3), ub_reg(1), n, i8, f32));
      vec_wait(emit::vec_affine(ub_reg(3), ub_reg(3), n, f32, emit::Param{in_s}));
      table(ub_reg(3), ub_reg(3), f32, n);
      fix_padding(blk, ub_reg(3), n);
      vec_wait(emit::vec_affine(ub_reg(3), ub_reg(3), n, f32, emit::Param{out_s}));
      vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(3), n, f32, i8));
    }, piece);
  if (q8_) ub_.release(tmp);
  if (pad_fix) ub_.release(pad_fix);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

void Codegen::gen_affine(tpu::AffineOp op) {
  std::string layer = op.getLayer().str();
  if (has_role(op, "scale")) {  // applied to the queries (plan.cpp, attention_scale)
    Act y = act(op.getInput());
    y.shape = shape_of(op.getOutput());
    define(op.getOutput(), y);
    return;
  }
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = out_in_place(op.getOutput(), {op.getInput()}, layer);
  auto sc = const_floats(op.getScale(), layer), bi = const_floats(op.getBias(), layer);
  // INT8: y_q = (x_q * s_x * scale + bias) / s_y, folded into the lane constants.
  double sx = q8_ ? scale(op.getInput()) : 1.0, sy = q8_ ? scale(op.getOutput()) : 1.0;
  const uint64_t rowb = R_ * esz_;
  for (uint64_t blk = 0; blk < y.blocks; ++blk) {
    std::string p = affine_param(sc, bi, blk, sx, sy);
    in_vector_pieces(y.rows, [&](uint64_t r0, uint64_t n) {
      code(bundle({emit::li(reg(1), int64_t(x.base + blk * x.block_bytes + r0 * rowb)),
                   emit::li(reg(2), int64_t(y.base + blk * y.block_bytes + r0 * rowb))}));
      code("  " + emit::vec_affine(ub_reg(2), ub_reg(1), n, dtype_, emit::Param{p}, emit::flag(flags_.vector)));
      code("  " + emit::wait(emit::flag(flags_.vector)));
    });
  }
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

void Codegen::gen_clamp(tpu::ClampOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = out_in_place(op.getOutput(), {op.getInput()}, layer);
  double lo = op.getClampMin().convertToDouble(), hi = op.getClampMax().convertToDouble();
  std::string cp;
  std::string rq;
  if (q8_) {
    // RESCALE from the input's scale to the output's, clamped to the bounds in output units.
    double sx = scale(op.getInput()), sy = scale(op.getOutput());
    auto [m, sh] = fixed_point(sx / sy);
    std::string body = fmt::format("mult=[{}] shift=[{}]", m, sh);
    if (!std::isinf(lo)) body += fmt::format(" min={}", std::max(-128.0, std::ceil(lo / sy)));
    if (!std::isinf(hi)) body += fmt::format(" max={}", std::min(127.0, std::floor(hi / sy)));
    rq = new_param(body);
  } else {
    cp = clamp_param(lo, hi);
  }
  const uint64_t rowb = R_ * esz_;
  for (uint64_t blk = 0; blk < y.blocks; ++blk)
    in_vector_pieces(y.rows, [&](uint64_t r0, uint64_t n) {
      code(bundle({emit::li(reg(1), int64_t(x.base + blk * x.block_bytes + r0 * rowb)),
                   emit::li(reg(2), int64_t(y.base + blk * y.block_bytes + r0 * rowb))}));
      const emit::Flag done = emit::flag(flags_.vector);
      if (q8_)
        code("  " + emit::vec_rescale(ub_reg(2), ub_reg(1), n, emit::Param{rq}, isa::Dtype::Int8, isa::Dtype::Int8, done));
      else if (cp.empty()) code("  " + emit::vec_copy(ub_reg(2), ub_reg(1), n, isa::Dtype::Bf16, done));
      else code("  " + emit::vec_clamp(ub_reg(2), ub_reg(1), n, isa::Dtype::Bf16, emit::Param{cp}, done));
      code("  " + emit::wait(done));
    });
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
