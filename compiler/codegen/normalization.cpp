// Layer normalization and softmax in fp32 rows (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

Codegen::LnLayout Codegen::ln_layout(uint64_t rows, uint64_t blocks) const {
  const auto& ubc = cfg_.core.unified_buffer;
  uint64_t rb = ubc.row_bytes, banks = ubc.banks, row32 = C_ * 4;
  LnLayout l;
  l.block_bytes = align_up(rows * row32, rb);
  std::vector<bool> taken(banks, false);
  for (uint64_t b = 0; b < blocks; ++b) taken[(b * l.block_bytes / rb) % banks] = true;
  uint64_t at = blocks * l.block_bytes;
  for (int i = 0; i < 3; ++i) {
    for (uint64_t k = 0; k < banks && taken[(at / rb) % banks]; ++k) at += rb;
    taken[(at / rb) % banks] = true;
    l.stat_off[i] = at;
    at += l.block_bytes;
  }
  l.mask_off = at;
  l.total = at + row32 + rb;  // a row of room to align the start to a bank row
  return l;
}

// A bf16 layer norm of `out` (a matmul's output) plus a residual added in the matmul's
// epilogues: its work rows are allocated now and each output block's epilogue converts
// the block's rows to fp32 into them (the conversion the layer norm starts with), which
// overlaps the matmuls instead of running after them. Returns the extra phase, or nothing.
Codegen::FusedPhases Codegen::prepare_layernorm(mlir::Operation* producer, const Act& y, tpu::LayerNormOp* prepared) {
  auto planned_ln = planned(producer, "layernorm");  // plan.cpp, beside_layernorm
  if (planned_ln.empty()) return {};
  auto ln = mlir::cast<tpu::LayerNormOp>(planned_ln[0]);
  LnLayout lay = ln_layout(y.rows, y.blocks);
  if (ub_.largest_free() < lay.total) return decline(producer, "layernorm"), FusedPhases();
  uint64_t work = ub_take(lay.total, fmt::format("the fp32 rows and statistics of '{}'", ln.getLayer().str()));
  ln_prepared_[ln.getOperation()] = work;
  if (prepared) *prepared = ln;
  uint64_t base = align_up(work, cfg_.core.unified_buffer.row_bytes), row32 = C_ * 4;
  return [this, y, base, lay, row32](uint64_t n, uint64_t off, uint64_t rows) {
    uint64_t src = y.base + n * y.block_bytes + off, dst = base + n * lay.block_bytes + off / (C_ * esz_) * row32;
    std::string pre, d = reg_ref(dst, 6, pre), a = reg_ref(src, 7, pre);
    return std::vector<std::string>{
        pre + "  " + emit::vec_cvt(ub_ref(d), ub_ref(a), rows, isa::Dtype::Bf16, isa::Dtype::Fp32, kPendingFlag) + "\n"};
  };
}

// The per-channel scale and shift after a bf16 layer norm (its only user), which the
// layer norm then applies to its fp32 rows before their one rounding to bf16.
tpu::AffineOp Codegen::ln_affine(tpu::LayerNormOp ln) {
  auto af = planned(ln, "ln-affine");  // plan.cpp, layernorm_affine
  return af.empty() ? tpu::AffineOp() : mlir::cast<tpu::AffineOp>(af[0]);
}

// The row of ones (valid lanes) the layer norm masks its last lane block with, when that
// block is partial.
void Codegen::ln_load_mask(const Act& x, uint64_t base, const LnLayout& lay) {
  uint64_t valid = x.features - (x.blocks - 1) * C_;
  if (valid == C_) return;
  load_constant(lane_row(valid, 1.0f, 0.0f, isa::Dtype::Fp32), base + lay.mask_off);
}

// The vector operations of a layer norm of rows [r0, r0 + rows) of x into y, with its fp32
// rows and statistics at `base` (ln_layout); `converted`: the fp32 rows are there already;
// `af`: the gamma/beta step applied too (ln_affine).
std::vector<VecStep> Codegen::ln_steps(tpu::LayerNormOp op, const Act& x, const Act& y, uint64_t base, const LnLayout& lay,
                              uint64_t r0, uint64_t rows, bool converted, tpu::AffineOp af) {
  uint64_t row32 = C_ * 4, off = r0 * row32;
  uint64_t sum = base + lay.stat_off[0] + off, part = base + lay.stat_off[1] + off, sq = base + lay.stat_off[2] + off;
  uint64_t mask = base + lay.mask_off, valid = x.features - (x.blocks - 1) * C_, occ = vec_occ(rows);
  auto block = [&](uint64_t b) { return base + b * lay.block_bytes + off; };
  auto io = [&](const Act& a, uint64_t b) { return a.base + b * a.block_bytes + r0 * C_ * esz_; };
  std::vector<VecStep> steps;
  std::string pre;
  int reg = 6;
  auto U = [&](uint64_t a) {
    if (a <= kMaxOffset) return ub_at(a);
    pre += "  " + emit::li(codegen::reg(unsigned(reg)), int64_t(a)) + "\n";
    return ub_reg(unsigned(reg++));
  };
  bool wait_next = false;
  // `wait`: the next operation waits for this one (and every one before it). Every
  // operation carries the pending flag (kPendingFlag).
  auto vec = [&](const std::string& line, bool wait) {
    steps.push_back({pre + "  " + line + "\n", occ, wait_next});
    pre.clear(), reg = 6, wait_next = wait;
  };
  const isa::Dtype fp32 = isa::Dtype::Fp32;
  // fp32 d = d `op` b (op: emit::vec_add, vec_sub or vec_mul) and d = d * scale + bias, with
  // one U per operand; the U calls are one call's arguments, so U numbers its registers
  // in the order it always has.
  auto in_place = [&](auto op, const emit::Mem& d, const emit::Mem& b, std::optional<bool> bcast = std::nullopt) {
    return op(d, d, b, rows, fp32, bcast, kPendingFlag);
  };
  auto affine_in_place = [&](const emit::Mem& d, const std::string& param) {
    return emit::vec_affine(d, d, rows, fp32, emit::Param{param}, kPendingFlag);
  };
  std::string in_scale = q8_ ? new_param(fmt::format("scale=[{}]", double(scale(op.getInput())))) : "";
  for (uint64_t b = 0; b < x.blocks && !converted; ++b) {
    vec(emit::vec_cvt(U(block(b)), U(io(x, b)), rows, dtype_, fp32, kPendingFlag), q8_);
    if (q8_) vec(affine_in_place(U(block(b)), in_scale), true);
  }
  if (!converted) wait_next = true;
  // The blocks added up by add_block (into `part`, or `single` when there is one block),
  // then their row sums into `sum`.
  auto row_sums = [&](const std::function<void(uint64_t)>& add_block, uint64_t single) {
    for (uint64_t b = 0; b < x.blocks; ++b) add_block(b);
    vec(emit::vec_rsum(U(sum), U(x.blocks == 1 ? single : part), rows, fp32, fp32, kPendingFlag), true);
  };
  row_sums([&](uint64_t b) {
    if (b == 1) vec(emit::vec_add(U(part), U(block(0)), U(block(1)), rows, fp32, std::nullopt, kPendingFlag), true);
    if (b > 1) vec(in_place(emit::vec_add, U(part), U(block(b))), true);
  }, block(0));
  vec(affine_in_place(U(sum), new_param(fmt::format("scale=[{}]", 1.0 / double(x.features)))), true);
  for (uint64_t b = 0; b < x.blocks; ++b) {
    bool masked = b + 1 == x.blocks && valid < C_;
    vec(in_place(emit::vec_sub, U(block(b)), U(sum)), masked || b + 1 == x.blocks);
    if (masked) vec(in_place(emit::vec_mul, U(block(b)), U(mask), true), true);
  }
  // Squares block by block, summed like the values.
  row_sums([&](uint64_t b) {
    uint64_t dst = b == 0 ? part : sq;
    vec(emit::vec_mul(U(dst), U(block(b)), U(block(b)), rows, fp32, std::nullopt, kPendingFlag), true);
    if (b > 0) vec(in_place(emit::vec_add, U(part), U(sq)), true);
  }, part);
  std::string var_eps = new_param(fmt::format("scale=[{}] bias=[{}]", 1.0 / double(x.features), op.getEpsilon().convertToDouble()));
  vec(affine_in_place(U(sum), var_eps), true);
  {
    emit::Mem s = U(sum);
    vec(emit::vec_rsqrt(s, s, rows, fp32, kPendingFlag), true);
  }
  std::string out_scale = q8_ ? new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput())))) : "";
  std::vector<float> gamma, beta;
  if (af) gamma = const_floats(af.getScale(), af.getLayer().str()), beta = const_floats(af.getBias(), af.getLayer().str());
  for (uint64_t b = 0; b < x.blocks; ++b) {
    vec(in_place(emit::vec_mul, U(block(b)), U(sum)), true);
    if (q8_) vec(affine_in_place(U(block(b)), out_scale), true);
    if (af) vec(affine_in_place(U(block(b)), affine_param(gamma, beta, b, 1.0, 1.0)), true);
    vec(emit::vec_cvt(U(io(y, b)), U(block(b)), rows, fp32, dtype_, kPendingFlag), false);
  }
  return steps;
}

// The gamma/beta step `af` as done by the layer norm that produced y.
void Codegen::fuse_ln_affine(tpu::AffineOp af, const Act& y, const std::string& into_layer) {
  Act fy = y;
  fy.shape = shape_of(af.getOutput());
  fused_[af.getOperation()] = fy;
  fused_bounds_.push_back({into_layer, "affine", fy.shape});
}

// Layer normalization in fp32 rows. The lane blocks are added up first and the sum takes
// one vec.rsum (which fills every lane with its row's sum), so the mean and 1/std are whole
// rows that subtract and multiply lane by lane; padding lanes are masked back to zero after
// the mean is taken out so they do not count in the variance. The fp32 rows and the
// statistics rows sit on unified-buffer rows whose banks differ, so a vector step that
// reads values and a statistic does not read one bank twice. Operations on different
// blocks are issued back to back; dependent ones wait.
void Codegen::gen_layernorm(tpu::LayerNormOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  const Act& x = act(op.getInput());
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  LnLayout lay = ln_layout(x.rows, x.blocks);
  // The fp32 rows may already be there: converted in the epilogues of the matmul whose
  // output (with a residual added) this normalizes (prepare_layernorm).
  bool converted = false;
  uint64_t work = 0;
  if (auto it = ln_prepared_.find(op.getOperation()); it != ln_prepared_.end()) {
    work = it->second, converted = true;
    ln_prepared_.erase(it);
  } else {
    work = ub_take(lay.total, fmt::format("the fp32 rows and statistics of '{}'", layer));
  }
  uint64_t base = align_up(work, cfg_.core.unified_buffer.row_bytes);
  ln_load_mask(x, base, lay);
  tpu::AffineOp af = ln_affine(op);
  emit_steps(ln_steps(op, x, y, base, lay, 0, x.rows, converted, af));
  ub_.release(work);
  add_bound(layer, 0, 0);
  if (af) fuse_ln_affine(af, y, layer);
  add_fused_bounds();
  define(op.getOutput(), y);
}

// Softmax in fp32 rows: per lane block, the values (+ masks), running row max and sum over
// the blocks (vec.rmax / vec.rsum fill every lane with the row's result). Rows go in
// chunks as large as the free unified buffer holds (attention's batch x heads x queries
// rows can be many). The log-softmax keeps x - max, sums exp(x - max) from a spare row and
// subtracts log(sum).
void Codegen::gen_softmax(tpu::SoftmaxOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  // An fp32 model input (read_fp32) is read from HBM row by row; x then only gives the shape.
  auto fp32_in = input_hbm_.find(op.getInput().getAsOpaquePointer());
  bool from_hbm = fp32_in != input_hbm_.end();
  Act shape_only;
  if (from_hbm) {
    shape_only.shape = shape_of(op.getInput());
    shape_only.features = uint64_t(shape_only.shape.back());
    shape_only.rows = numel(shape_only.shape) / shape_only.features;
    shape_only.blocks = ceil_div(shape_only.features, R_);
  }
  const Act& x = from_hbm ? shape_only : act(op.getInput());
  uint64_t row32 = C_ * 4, rows = x.rows, xrow = R_ * esz_;
  std::string in_scale, out_scale;
  if (q8_) {
    in_scale = new_param(fmt::format("scale=[{}]", double(scale(op.getInput()))));
    out_scale = new_param(fmt::format("scale=[{}]", 1.0 / double(scale(op.getOutput()))));
  }
  // Mask rows of the last lane block when it is partial: 0 on valid lanes, -inf on padding,
  // so padding never wins the max. A log-softmax (never positive) also has the inverse row:
  // max with it makes the padding lanes of the result 0 again (a matmul reading them would
  // make -inf * 0 a NaN).
  const bool log = op.getLog();
  const float ninf = -std::numeric_limits<float>::infinity();
  const uint64_t last_valid = x.features - (x.blocks - 1) * C_;
  std::vector<uint8_t> pad_mask;
  if (last_valid < C_) {
    pad_mask = lane_row(last_valid, 0.0f, ninf, isa::Dtype::Fp32);
    if (log) {
      auto inv = lane_row(last_valid, ninf, 0.0f, isa::Dtype::Fp32);
      pad_mask.insert(pad_mask.end(), inv.begin(), inv.end());
    }
  }
  // Work rows per chunk: one per block for the values, plus the max, sum and a spare row
  // (and the exponentials of a log-softmax).
  uint64_t unit = std::max<uint64_t>(op.getMask() ? numel(shape_of(op.getMask())) / x.features : 1, 1);
  auto work_bytes = [&](uint64_t n) { return (x.blocks + 3 + (log ? 1 : 0)) * align_up(n * row32, block_align_); };
  // The result takes the input's place when it would not fit beside the masks and the work
  // rows of one chunk and this is the input's last use: each chunk's input rows are in the
  // work rows before its result rows are written.
  const uint64_t y_bytes = x.blocks * align_up(rows * xrow, block_align_);
  const bool in_place = !from_hbm && y_bytes + pad_mask.size() + work_bytes(unit) > ub_.largest_free() && last_use(op.getInput());
  Act y = in_place ? x : new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  const bool partial = !pad_mask.empty();
  uint64_t masks = partial ? ub_take(pad_mask.size(), fmt::format("the lane masks of '{}'", layer)) : 0;
  if (partial) load_constant(std::move(pad_mask), masks);
  // The model's own mask [M, N] (fp32, blocked like the values), added to each group of M rows.
  uint64_t mask_rows = 0, user_mask = 0;
  if (op.getMask()) {
    auto mk = const_floats(op.getMask(), layer);
    mask_rows = mk.size() / x.features;
    if (rows % mask_rows) throw InternalError("softmax mask rows do not divide the input rows");
    std::vector<uint8_t> bytes(x.blocks * mask_rows * row32, 0);
    for (uint64_t i = 0; i < mask_rows; ++i)
      for (uint64_t j = 0; j < x.features; ++j)
        std::memcpy(&bytes[((j / C_) * mask_rows + i) * row32 + (j % C_) * 4], &mk[i * x.features + j], 4);
    user_mask = ub_take(bytes.size(), fmt::format("the attention mask of '{}'", layer));
    load_constant(std::move(bytes), user_mask);
  }
  uint64_t cr = rows;
  while (cr > unit && work_bytes(cr) > ub_.largest_free()) cr = std::max(unit, (cr / 2 + unit - 1) / unit * unit);
  uint64_t span = align_up(cr * row32, block_align_);
  uint64_t vals = ub_take(work_bytes(cr), fmt::format("the fp32 work rows of '{}'", layer));
  uint64_t mx = vals + x.blocks * span, sum = mx + span, tmp = sum + span, exps = tmp + span;
  for (uint64_t r0 = 0; r0 < rows; r0 += cr) {
    uint64_t n = std::min(cr, rows - r0);
    // The row reduction `red` (vec.rmax, vec.rsum of block b's values (r2) into r4) into
    // `into`, combined over the blocks by `combine` (max, add) through tmp.
    auto row_reduce = [&](const std::string& red, const char* combine, uint64_t into, uint64_t b) {
      code("  " + emit::li(reg(4), int64_t(b == 0 ? into : tmp)));
      vec_wait(red);
      if (b) {
        code(bundle({emit::li(reg(5), int64_t(into)), emit::li(reg(6), int64_t(tmp))}));
        vec_wait(vec_binary(combine, ub_reg(5), ub_reg(5), ub_reg(6), n, isa::Dtype::Fp32));
      }
    };
    for (uint64_t b = 0; b < x.blocks; ++b) {
      uint64_t v = vals + b * span;
      if (from_hbm) {
        uint64_t fw = std::min<uint64_t>(C_, x.features - b * C_);
        if (fw < C_) clear(v, span);
        std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", fw * 4,
                                             fp32_in->second + (r0 * x.features + b * C_) * 4, v, n, x.features * 4, row32));
        code("  " + emit::dma_load(emit::Desc{d}, hbm_base(fp32_in->second), reg(0), emit::flag(1)));
        code("  " + emit::wait(emit::flag(1)));
        code("  " + emit::li(reg(2), int64_t(v)));
      } else {
        code(bundle({emit::li(reg(1), int64_t(x.base + b * x.block_bytes + r0 * xrow)), emit::li(reg(2), int64_t(v))}));
        vec_wait(emit::vec_cvt(ub_reg(2), ub_reg(1), n, dtype_, isa::Dtype::Fp32));
        if (q8_) vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), n, isa::Dtype::Fp32, emit::Param{in_scale}));
      }
      if (x.features - b * C_ < C_) {  // only the last block, when partial, has padding lanes to mask
        code("  " + emit::li(reg(3), int64_t(masks)));
        vec_wait(emit::vec_add(ub_reg(2), ub_reg(2), ub_reg(3), n, isa::Dtype::Fp32, true));
      }
      for (uint64_t g = 0; mask_rows && g < n / mask_rows; ++g) {
        code(bundle({emit::li(reg(3), int64_t(v + g * mask_rows * row32)), emit::li(reg(4), int64_t(user_mask + b * mask_rows * row32))}));
        vec_wait(emit::vec_add(ub_reg(3), ub_reg(3), ub_reg(4), mask_rows, isa::Dtype::Fp32));
      }
      row_reduce(emit::vec_rmax(ub_reg(4), ub_reg(2), n, isa::Dtype::Fp32), "max", mx, b);
    }
    for (uint64_t b = 0; b < x.blocks; ++b) {
      uint64_t v = vals + b * span;
      code(bundle({emit::li(reg(2), int64_t(v)), emit::li(reg(5), int64_t(mx))}));
      vec_wait(emit::vec_sub(ub_reg(2), ub_reg(2), ub_reg(5), n, isa::Dtype::Fp32));
      if (log) code("  " + emit::li(reg(7), int64_t(exps)));
      const emit::Mem e = log ? ub_reg(7) : ub_reg(2);
      vec_wait(emit::vec_exp(e, ub_reg(2), n, isa::Dtype::Fp32));
      row_reduce(emit::vec_rsum(ub_reg(4), e, n, isa::Dtype::Fp32, isa::Dtype::Fp32), "add", sum, b);
    }
    code("  " + emit::li(reg(5), int64_t(sum)));
    if (log) vec_wait(emit::vec_log(ub_reg(5), ub_reg(5), n, isa::Dtype::Fp32));
    else vec_wait(emit::vec_recip(ub_reg(5), ub_reg(5), n, isa::Dtype::Fp32));
    for (uint64_t b = 0; b < x.blocks; ++b) {
      uint64_t v = vals + b * span;
      code(bundle({emit::li(reg(2), int64_t(v)), emit::li(reg(3), int64_t(y.base + b * y.block_bytes + r0 * xrow))}));
      if (log) {
        vec_wait(emit::vec_sub(ub_reg(2), ub_reg(2), ub_reg(5), n, isa::Dtype::Fp32));
        if (x.features - b * C_ < C_) {
          code("  " + emit::li(reg(4), int64_t(masks + row32)));
          vec_wait(emit::vec_max(ub_reg(2), ub_reg(2), ub_reg(4), n, isa::Dtype::Fp32, true));
        }
      } else {
        vec_wait(emit::vec_mul(ub_reg(2), ub_reg(2), ub_reg(5), n, isa::Dtype::Fp32));
      }
      if (q8_) vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), n, isa::Dtype::Fp32, emit::Param{out_scale}));
      vec_wait(emit::vec_cvt(ub_reg(3), ub_reg(2), n, isa::Dtype::Fp32, dtype_));
    }
  }
  ub_.release(vals);
  if (partial) ub_.release(masks);
  if (mask_rows) ub_.release(user_mask);
  add_bound(layer, 0, 0);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
