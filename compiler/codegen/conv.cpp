// Convolutions: taps as shifted matmuls, tap stacks, a residual add in the epilogues, bias on the MXU (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// A residual add fused into the epilogue of the convolution that produces one operand
// (planned: plan.cpp, residual_add; epilogue and role "residual-add"): each output
// block's epilogue goes on to add the other operand, in place in it, so the add's vector
// work overlaps the matmuls instead of running after them. The operations and roundings
// are gen_add's (INT8: both operands rescaled to the sum's scale, a saturating add, the
// clamp; bf16: the add and the clamp), in the same order up to commuting the add, so the
// results are the same. The emitter declines (decline() drops the plan) where the scratch
// slots take more than the output would and more than half the free space, where the
// other operand is not in the unified buffer alone in its buffer, and (INT8) where an
// operand's range exceeds the sum's (gen_add then takes the sum in fp32).
std::optional<Codegen::FusedAdd> Codegen::fusable_add(tpu::Conv2DOp op, uint64_t scratch_bytes) {
  std::vector<mlir::Operation*> planned_add = planned(op, "residual-add");
  if (planned_add.empty()) return std::nullopt;
  auto add = mlir::cast<tpu::AddOp>(planned_add.front());
  Value out = op.getOutput(), other = add.getLhs() == out ? add.getRhs() : add.getLhs();
  auto ys = shape_of(out);
  uint64_t out_bytes = numel(ys) / uint64_t(ys.back()) * ceil_div(uint64_t(ys.back()), R_) * R_ * esz_;
  bool fits = scratch_bytes <= std::max(out_bytes, ub_.largest_free() / 2);
  if (!fits || !acts_.count(other.getAsOpaquePointer()) || !last_use(other) ||
      (q8_ && (scale(out) > scale(add.getOutput()) || scale(other) > scale(add.getOutput()))))
    return decline(op, "residual-add"), std::nullopt;
  FusedAdd f;
  f.other = act(other);
  double lo = add.getClampMin().convertToDouble(), hi = add.getClampMax().convertToDouble();
  if (q8_) {
    double sy = scale(add.getOutput());
    f.s_other = scale(other), f.s_sum = sy, f.lo = lo, f.hi = hi;
    f.conv_scale = new_param(fmt::format("scale=[{}]", double(scale(out)) / sy));
    f.other_scale = new_param(fmt::format("scale=[{}]", double(scale(other)) / sy));
    f.clamp = clamp_param(std::isinf(lo) ? lo : std::ceil(lo / sy), std::isinf(hi) ? hi : std::floor(hi / sy));
  } else {
    f.clamp = clamp_param(lo, hi);
  }
  return f;
}

// The INT8 fused add through the accumulators (gen_conv) for `rows` rows of output block
// nb: bias, the other operand (at `other`) to int32 in the accumulator scale (at `tmp`),
// added to the sums, which one RESCALE writes over the other operand as the sum.
std::vector<std::string> Codegen::acc_add_phases(const FusedAdd& f, uint32_t mxu, uint64_t acc_row, uint64_t rows, uint64_t bias_ub,
                                        uint64_t nb, uint64_t tmp, uint64_t other) {
  uint64_t g = uint64_t(mxu) * cfg_.core.accumulators.rows + acc_row;
  std::vector<std::string> ph;
  std::string pre;
  if (bias_ub != kNoBias) ph.push_back(bias_phase(g, bias_ub, rows));
  std::string t = reg_ref(tmp, 8, pre), o = reg_ref(other, 9, pre);
  ph.push_back(pre + "  " +
               emit::vec_rescale(ub_ref(t), ub_ref(o), rows, emit::Param{f.to_acc[nb]}, isa::Dtype::Int8, isa::Dtype::Int32,
                                 kPendingFlag) +
               "\n");
  pre.clear();
  t = reg_ref(tmp, 8, pre);
  ph.push_back(pre + "  " + emit::vec_add(acc_at(g), acc_at(g), ub_ref(t), rows, isa::Dtype::Int32, std::nullopt, kPendingFlag) + "\n");
  pre.clear();
  o = reg_ref(other, 9, pre);
  ph.push_back(pre + "  " +
               emit::vec_rescale(ub_ref(o), acc_at(g), rows, emit::Param{f.to_sum[nb]}, std::nullopt, std::nullopt, kPendingFlag) +
               "\n");
  return ph;
}

// The fused add's phases for `rows` rows of one lane block: the convolution's output at
// `conv`, the other operand (and the sum) at `other`. "{flag}" as in epilogue().
std::vector<std::string> Codegen::fused_add_phases(const FusedAdd& f, uint64_t rows, uint64_t conv, uint64_t other) {
  std::vector<std::string> ph;
  // The phase of operation text(o, c): o the other operand's rows, c the convolution's (when `two`).
  auto op = [&](bool two, auto text) {
    std::string pre, o = reg_ref(other, 8, pre), c = two ? reg_ref(conv, 9, pre) : "";
    ph.push_back(pre + "  " + text(ub_ref(o), ub_ref(c)) + "\n");
  };
  if (q8_) {
    std::string pre, c = reg_ref(conv, 9, pre);
    ph.push_back(pre + "  " + emit::vec_affine(ub_ref(c), ub_ref(c), rows, isa::Dtype::Int8, emit::Param{f.conv_scale}, kPendingFlag) +
                 "\n");
    op(false, [&](const emit::Mem& o, const emit::Mem&) {
      return emit::vec_affine(o, o, rows, isa::Dtype::Int8, emit::Param{f.other_scale}, kPendingFlag);
    });
  }
  op(true, [&](const emit::Mem& o, const emit::Mem& c) { return emit::vec_add(o, o, c, rows, dtype_, std::nullopt, kPendingFlag); });
  if (!f.clamp.empty())
    op(false, [&](const emit::Mem& o, const emit::Mem&) {
      return emit::vec_clamp(o, o, rows, dtype_, emit::Param{f.clamp}, kPendingFlag);
    });
  return ph;
}

// INT8 activations whose padding lanes [at, at + kBiasLanes] hold constants (kBiasBig in
// the first kBiasLanes, then 1): a 1x1 convolution reading at most `at` channels then adds
// its bias on the MXU, from weight rows at those lanes whose sum over the constants is the
// bias in the accumulator's scale, instead of a vector pass over every output row.
// A unified-buffer row of C int8 lanes with the constants from lane `at` (loaded once).
uint64_t Codegen::bias_lanes_row(uint64_t at) {
  if (auto it = bias_lanes_rows_.find(at); it != bias_lanes_rows_.end()) return it->second;
  std::vector<uint8_t> row(C_, 0);
  for (uint64_t k = 0; k < kBiasLanes; ++k) row[at + k] = uint8_t(kBiasBig);
  row[at + kBiasLanes] = 1;
  uint64_t ub = ub_take(C_, "the bias lanes' constants", false);
  load_constant(std::move(row), ub);
  return bias_lanes_rows_[at] = ub;
}

// Weight rows (kBiasLanes + 1 int8 values) whose dot product with the constants is q, or
// nothing when |q| is too large.
std::optional<std::vector<int>> Codegen::bias_weights(int64_t q) {
  int64_t big = (q >= 0 ? q + kBiasBig / 2 : q - kBiasBig / 2) / kBiasBig, rest = q - big * kBiasBig;
  if (std::abs(big) > int64_t(kBiasLanes) * 127 || std::abs(rest) > 127) return std::nullopt;
  std::vector<int> w(kBiasLanes + 1, 0);
  for (uint64_t k = 0; k < kBiasLanes && big; ++k) {
    int64_t v = std::clamp<int64_t>(big, -127, 127);
    w[k] = int(v), big -= v;
  }
  w[kBiasLanes] = int(rest);
  return w;
}

ConvShape conv_shape(tpu::Conv2DOp op) {
  auto xs = shape_of(op.getInput());  // N, H, W, CI
  auto ws = shape_of(op.getWeight());  // KH, KW, CI / groups, CO
  auto ys = shape_of(op.getOutput());  // N, OH, OW, CO
  auto stride = op.getStride(), pad = op.getPad(), dil = op.getDilation();
  ConvShape s;
  s.N = uint64_t(xs[0]), s.H = uint64_t(xs[1]), s.W = uint64_t(xs[2]), s.CI = uint64_t(xs[3]);
  s.KH = uint64_t(ws[0]), s.KW = uint64_t(ws[1]), s.CIg = uint64_t(ws[2]), s.CO = uint64_t(ws[3]);
  s.OH = uint64_t(ys[1]), s.OW = uint64_t(ys[2]), s.G = uint64_t(op.getGroups());
  s.sh = uint64_t(stride[0]), s.sw = uint64_t(stride[1]), s.dh = uint64_t(dil[0]), s.dw = uint64_t(dil[1]);
  s.pt = uint64_t(pad[0]), s.pb = uint64_t(pad[1]), s.pl = uint64_t(pad[2]), s.pr = uint64_t(pad[3]);
  return s;
}

std::pair<PixelAxis, PixelAxis> spread_axes(tpu::ZeroInsertOp z) {
  auto x = shape_of(z.getInput());
  return {{uint64_t(z.getPad()[0]), uint64_t(z.getStride()[0]), uint64_t(x[1])},
          {uint64_t(z.getPad()[2]), uint64_t(z.getStride()[1]), uint64_t(x[2])}};
}

uint64_t taps_on_pixels(uint64_t o0, uint64_t o1, const PixelAxis& a, uint64_t k, uint64_t stride, uint64_t before, uint64_t dil) {
  uint64_t n = 0;
  for (uint64_t o = o0; o < o1; ++o)
    for (uint64_t t = 0; t < k; ++t) {
      int64_t i = int64_t(o * stride + t * dil) - int64_t(before) - int64_t(a.first);
      n += i >= 0 && i % int64_t(a.step) == 0 && i / int64_t(a.step) < int64_t(a.n);
    }
  return n;
}

// Useful MACs (docs/reports.md): the taps that fall on the input's own pixels, not on the
// padding around it, nor on the zeros a transposed convolution's spread input
// (tpu.zero_insert, maybe through a slice of a group's channels) has between its pixels; a
// block-diagonal convolution (a flat phase of a transposed convolution,
// pipeline/band_subpixel.cpp, tpu::kBlockDiagonalAttr) counts its blocks only. A band of a
// convolution of a spread in HBM carries its count (tpu::kUsefulMacsAttr, the band planner's).
uint64_t conv_useful_macs(tpu::Conv2DOp op) {
  if (auto m = op->getAttrOfType<mlir::IntegerAttr>(tpu::kUsefulMacsAttr)) return uint64_t(m.getInt());
  const ConvShape c = conv_shape(op);
  PixelAxis ah{0, 1, c.H}, aw{0, 1, c.W};
  Value in = op.getInput();
  if (auto sl = in.getDefiningOp<tpu::SliceOp>(); sl && sl.getStart().size() == 4 && !sl.getStart()[1] && !sl.getStart()[2])
    in = sl.getInput();  // a group's channels of the spread
  if (auto z = in.getDefiningOp<tpu::ZeroInsertOp>()) std::tie(ah, aw) = spread_axes(z);
  uint64_t taps = taps_on_pixels(0, c.OH, ah, c.KH, c.sh, c.pt, c.dh) * taps_on_pixels(0, c.OW, aw, c.KW, c.sw, c.pl, c.dw);
  uint64_t blocks = 1;
  if (auto b = op->getAttrOfType<mlir::IntegerAttr>(tpu::kBlockDiagonalAttr)) blocks = uint64_t(std::max<int64_t>(1, b.getInt()));
  return c.N * taps * c.CIg * c.CO / blocks;
}

void Codegen::gen_conv(tpu::Conv2DOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  // The planner's form (plan.h, kConvFormAttr); a packed input was left in HBM (gen_inputs).
  llvm::StringRef form = conv_form(op);
  if (form == "packed") {
    auto it = input_hbm_.find(op.getInput().getAsOpaquePointer());
    if (it == input_hbm_.end()) throw InternalError(fmt::format("'{}': planned packed, but its input is not in HBM", layer));
    return gen_conv_packed(op, it->second);
  }
  if (form == "two-pixel") return gen_conv_wide(op);
  ConvPlan p;
  auto pool = hosted_pool_ops(op);  // a pool's share beside the matmuls (planned: kBackgroundAttr)
  p.x = act(op.getInput());
  p.s = conv_shape(op);
  p.w = const_floats(op.getWeight(), layer), p.bias = const_floats(op.getBias(), layer);
  conv_output(op, p);
  conv_input(op, p);
  conv_weights(op, p);
  conv_tiles(p);
  if (p.pad_per_block) {
    // One channel block at a time through the one-block padded copy (a depthwise output
    // block reads only its own input block); each stream ends before the next copy.
    for (uint64_t nb = 0; nb < p.x.blocks; ++nb) {
      p.xp_first = nb;  // the copy's one block is input block nb (its border zeroed once)
      fill_padded(p, nb, 1, nb == 0);
      std::vector<Block> blocks = conv_blocks(op, p, nb);
      run_blocks(blocks, true);
    }
    run_vector_ops(pool);
    decline(op, "pool");  // a pool of the output runs at its turn
  } else {
    std::vector<Block> blocks = conv_blocks(op, p);
    std::vector<SideWork> after = p.fused ? std::vector<SideWork>{} : pool_beside(op, p.y, p.spans);
    // Constant weights: the prologue hoists into the previous stream.
    run_blocks(blocks, true, std::nullopt, std::move(pool), std::move(after));
  }
  const ConvShape& c = p.s;
  ub_.release(p.bias_ub);
  if (p.padded) ub_.release(p.xp.base);
  add_bound(layer, conv_useful_macs(op), c.KH * c.KW * c.CIg * c.CO * esz_);
  if (p.fused) ub_.release(p.scratch);
  else define(op.getOutput(), p.y);
}

// The convolution's output, or with a residual add in its epilogues (fusable_add) the
// scratch slots its output rows pass through: the sum goes into the add's other operand.
void Codegen::conv_output(tpu::Conv2DOp op, ConvPlan& p) {
  const ConvShape& c = p.s;
  std::string layer = op.getLayer().str();
  const auto& ubc = cfg_.core.unified_buffer;
  p.period = ubc.banks > 1 ? uint64_t(ubc.banks) * ubc.row_bytes : 0;
  // One slot per MXU and accumulator region: run_blocks splits the accumulators by the
  // largest block, here a full row chunk (the centre tap covers all its rows).
  uint64_t chunk_px = conv_row_chunk(c.N * c.OH, c.OW, ceil_div(c.CO, C_)) * c.OW;
  p.nreg = acc_regions(chunk_px), p.region_rows = cfg_.core.accumulators.rows / p.nreg;
  // INT8 adds through the accumulators need int32 slots (see conv_weights).
  p.int32_slots = q8_ && std::isinf(op.getClampMin().convertToDouble()) && std::isinf(op.getClampMax().convertToDouble());
  p.slot = align_up(chunk_px * C_ * (p.int32_slots ? 4 : esz_), block_align_) + p.period;
  uint64_t slots = p.nreg * uint64_t(cfg_.core.mxu.count);
  p.fused = fusable_add(op, slots * p.slot);
  p.y = p.fused ? Act{} : out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
  p.scratch = p.fused ? ub_take(slots * p.slot, fmt::format("the output rows of '{}'", layer)) : 0;
}

// Zero-padded copy of the input when the conv pads, except for "same" convolutions
// (stride 1, odd kernel, centred pads): their taps read the unpadded input, each clipped
// to the output pixels and rows it reaches, with the centre tap (which reaches all of
// them) first to initialize the accumulators.
// Tap stacks (the planner's tpu.tap_rows = k, plan.cpp): a "same" convolution on at most
// R/2 channels leaves most of every matmul row's K empty. When it is its input's last user,
// DMA copies each pixel's channels into lanes [j CI, (j + 1) CI) of the pixel j rows above,
// j = 1 .. k - 1 (zeros for an image's last j rows), so a matmul row covers kernel rows dy
// .. dy + k - 1 (K = k CI); whatever other padding lanes hold is never read. A stack read
// from a row above the image starts at the image's first row with the kernel rows that reach
// it (a shorter stack). CNN1's 32-channel 3x3 convs take 3 matmuls per output row instead of
// 9 on a 256-lane array, ResNet-50's 64-channel ones 6 on 128 lanes. The emitter declines
// (drops the attribute) when an alias shares the input's buffer.
void Codegen::conv_input(tpu::Conv2DOp op, ConvPlan& p) {
  const ConvShape& c = p.s;
  const Act& x = p.x;
  uint64_t Hp = c.Hp(), Wp = c.Wp();
  p.xp = x;
  p.same = c.same();
  p.padded = (c.pt || c.pb || c.pl || c.pr) && !p.same;
  if (p.padded) {
    // A depthwise convolution's padded copy one channel block at a time when the whole
    // copy does not fit (OCR networks' 5x5 depthwise layers of 200 channels on small buffers).
    uint64_t block_bytes = align_up(c.N * Hp * Wp * R_ * esz_, block_align_);
    p.pad_per_block = c.G > 1 && c.G == c.CI && c.CI == c.CO && R_ == C_ && x.blocks > 1 &&
                      x.blocks * block_bytes > ub_.largest_free();
    p.xp = new_act({int64_t(c.N), int64_t(Hp), int64_t(Wp), int64_t(p.pad_per_block ? std::min<uint64_t>(c.CI, R_) : c.CI)},
                   fmt::format("the padded input of '{}'", op.getLayer().str()), /*temporary=*/true);
    if (!p.pad_per_block) fill_padded(p, 0, x.blocks, true);
  }
  // Planned (plan.cpp, tap_rows) unless an alias shares the input's buffer.
  auto rows = op->getAttrOfType<mlir::IntegerAttr>(kTapRowsAttr);
  p.stack = rows && last_use(op.getInput()) ? uint64_t(rows.getInt()) : 1;
  if (p.stack < 2) op->removeAttr(kTapRowsAttr);
  uint64_t px = R_ * esz_, img = c.H * c.W * px;
  // Each group's copy and its zeros, one at a time (their spans interleave).
  for (uint64_t j = 1; j < p.stack; ++j) {
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", c.CI * esz_,
                                         x.base + j * c.W * px, x.base + j * c.CI * esz_, (c.H - j) * c.W, px, px, c.N, img, img));
    code("  " + emit::dma_copy(emit::Desc{d}, reg(0), reg(0), emit::flag(1)));
    code("  " + emit::wait(emit::flag(1)));
    d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}] dim=[{}, 0, {}]", c.CI * esz_, zero_hbm_,
                             x.base + (c.H - j) * c.W * px + j * c.CI * esz_, j * c.W, px, c.N, img));
    code("  " + emit::dma_load(emit::Desc{d}, reg(0), reg(0), emit::flag(1)));
    code("  " + emit::wait(emit::flag(1)));
  }
}

// Input channel blocks [first, first + count) into the padded copy's interior (whose
// block 0 is input block p.xp_first), with `border` the copy's border zeroed too. Border
// fills and interior copies touch disjoint rows: all in flight, one wait.
void Codegen::fill_padded(ConvPlan& p, uint64_t first, uint64_t count, bool border) {
  const ConvShape& c = p.s;
  uint64_t Hp = c.Hp(), Wp = c.Wp(), inflight = 0;
  if (border) clear_border(p.xp, c.N, Hp, Wp, c.pt, c.pb, c.pl, c.pr, false, &inflight);
  for (uint64_t b = first; b < first + count; ++b)
    for (uint64_t n = 0; n < c.N; ++n) {
      uint64_t src = p.x.base + b * p.x.block_bytes + n * c.H * c.W * R_ * esz_;
      uint64_t dst = p.xp.base + (b - p.xp_first) * p.xp.block_bytes + ((n * Hp + c.pt) * Wp + c.pl) * R_ * esz_;
      std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", c.W * R_ * esz_, src, dst, c.H,
                                           c.W * R_ * esz_, Wp * R_ * esz_));
      code("  " + emit::dma_copy(emit::Desc{d}, reg(0), reg(0), emit::flag(1)));
      ++inflight;
    }
  for (; inflight; inflight -= std::min<uint64_t>(inflight, 65535))
    code("  " + emit::wait(emit::flag(1), std::min<uint64_t>(inflight, 65535)));
}

// INT8 weights per output channel, the bias (rows, or on the MXU through bias lanes), the
// epilogue parameters, and a fused INT8 add's parameters through the accumulators.
void Codegen::conv_weights(tpu::Conv2DOp op, ConvPlan& p) {
  const ConvShape& c = p.s;
  if (q8_) {
    // Per output channel over all taps: [KH*KW*CI, CO] is the same layout as w.
    // A transposed convolution's phase (pipeline/band_subpixel.cpp) takes the whole layer's
    // scale per output channel, so its codes are the layer's.
    std::vector<double> absmax;
    if (auto am = op->getAttrOfType<mlir::DenseF64ArrayAttr>(tpu::kWeightAbsmaxAttr)) {
      if (am.size() != int64_t(c.CO)) throw InternalError(fmt::format("node '{}': {} |weight| maxima for {} output channels", op.getLayer().str(), am.size(), c.CO));
      absmax.assign(am.asArrayRef().begin(), am.asArrayRef().end());
    }
    for (double sw : quantize(p.w, c.KH * c.KW * c.CIg, c.CO, absmax.empty() ? nullptr : &absmax))
      p.acc_scale.push_back(sw * scale(op.getInput()));
  }
  // The bias on the MXU (planned: tpu.bias_lanes): a 1x1 convolution of an input with bias
  // lanes, unless a bias does not fit the weight rows at those lanes (then the plan is dropped).
  if (auto at = op->getAttrOfType<mlir::IntegerAttr>(kBiasLanesAttr)) {
    p.lanes = uint64_t(at.getInt());
    p.folded.assign((p.lanes + kBiasLanes + 1) * c.CO, 0.0f);
    p.bias_on_mxu = true;
    for (uint64_t co = 0; co < c.CO && p.bias_on_mxu; ++co) {
      for (uint64_t ci = 0; ci < c.CI; ++ci) p.folded[ci * c.CO + co] = p.w[ci * c.CO + co];
      auto bw = bias_weights(int64_t(std::nearbyint(double(p.bias[co]) / p.acc_scale[co])));
      if (!bw) p.bias_on_mxu = false;
      for (uint64_t k = 0; bw && k <= kBiasLanes; ++k) p.folded[(p.lanes + k) * c.CO + co] = float((*bw)[k]);
    }
    if (!p.bias_on_mxu) op->removeAttr(kBiasLanesAttr);
  }
  p.bias_ub = p.bias_on_mxu ? kNoBias : bias_rows(p.bias, p.acc_scale);
  p.eps = epilogue_params(c.CO, p.acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                          op.getClampMax().convertToDouble());
  // An INT8 residual add with the convolution's output unclamped goes through the
  // accumulators: the other operand, rescaled to each channel's accumulator scale (int32,
  // in the slot), is added to the sums, and one RESCALE takes them to the sum's scale with
  // the add's clamp. Three vector passes after the bias instead of five (the convolution's
  // own rescale, both operands' rescales to the sum's scale, the add, the clamp), and one
  // rounding instead of three. Needs every ratio well inside RESCALE's range and int32.
  std::optional<FusedAdd>& fused = p.fused;
  if (fused && p.int32_slots) {
    bool fits = true;
    for (double a : p.acc_scale) fits &= a > 0 && fused->s_other / a < double(1 << 20) && fused->s_other / a > 1.0 / double(1 << 20);
    if (fits) {
      fused->in_acc = true;
      std::vector<double> inv;
      for (double a : p.acc_scale) inv.push_back(fused->s_other / a);
      for (uint64_t nb = 0; nb < ceil_div(c.CO, C_); ++nb) {
        std::vector<int64_t> mult, shift;
        for (uint64_t ch = nb * C_; ch < nb * C_ + C_; ++ch) {
          auto [m, sh2] = ch < c.CO ? fixed_point(inv[ch]) : std::pair<int64_t, int64_t>{0, 31};
          mult.push_back(m), shift.push_back(sh2);
        }
        fused->to_acc.push_back(new_param(fmt::format("mult=[{}] shift=[{}]", fmt::join(mult, ", "), fmt::join(shift, ", "))));
      }
      fused->to_sum = epilogue_params(c.CO, p.acc_scale, fused->s_sum, fused->lo, fused->hi);
    }
  }
}

// Whether input channel block cb and output channel block nb share a group (a tile of
// channel pairs of different groups is all zeros).
bool Codegen::group_overlap(const ConvShape& c, uint64_t cb, uint64_t nb) const {
  uint64_t ci0 = cb * R_, ci1 = std::min(c.CI, ci0 + R_), co0 = nb * C_, co1 = std::min(c.CO, co0 + C_), COg = c.CO / c.G;
  return ci0 / c.CIg <= (co1 - 1) / COg && co0 / COg <= (ci1 - 1) / c.CIg;
}

// Weight tiles per (tap, ci block, co block): rows = input channels, cols = output
// channels. Grouped weights [KH, KW, CI/G, CO] spread into the tap's CI x CO matrix,
// zero across groups (a depthwise tap is diagonal); a tile with no channel pair of one
// group is all zeros and is skipped, with its matmuls.
// Then the order taps go in ("same": the centre first, it reaches every output and
// initializes the accumulators) and, with pairs, which of them take kernel row dy + 1
// along (their tiles: rows [0, CI) tap (dy, dx), rows [CI, 2 CI) tap (dy + 1, dx)).
void Codegen::conv_tiles(ConvPlan& p) {
  const ConvShape& c = p.s;
  const std::vector<float>& w = p.w;
  uint64_t CI = c.CI, CO = c.CO, KH = c.KH, KW = c.KW, COg = CO / c.G, cbs = ceil_div(CI, R_), nbs = ceil_div(CO, C_);
  std::vector<float> tap(CI * CO);
  for (uint64_t t = 0; t < KH * KW; ++t) {
    if (c.G == 1) {
      std::copy(w.begin() + long(t * CI * CO), w.begin() + long((t + 1) * CI * CO), tap.begin());
    } else {
      std::fill(tap.begin(), tap.end(), 0.0f);
      for (uint64_t co = 0; co < CO; ++co)
        for (uint64_t i = 0; i < c.CIg; ++i) tap[(co / COg * c.CIg + i) * CO + co] = w[(t * c.CIg + i) * CO + co];
    }
    for (uint64_t cb = 0; cb < cbs; ++cb)
      for (uint64_t nb = 0; nb < nbs; ++nb)
        if (group_overlap(c, cb, nb))
          p.tiles[{t, cb, nb}] = p.bias_on_mxu ? weight_tile(p.folded, p.lanes + kBiasLanes + 1, CO, 0, nb)
                                               : weight_tile(tap, CI, CO, cb, nb);
  }
  uint64_t centre = (KH / 2) * KW + KW / 2, k = p.stack;
  for (uint64_t i = 0; i < KH * KW && k < 2; ++i)
    p.order.push_back({!p.same ? i : i == 0 ? centre : i <= centre ? i - 1 : i, 1});
  // Kernel rows [dy, dy + rows) of column col as one tile (w holds tap t's CI x CO block at
  // t * CI * CO); one row is the tap's own tile.
  auto stack_tile = [&](uint64_t dy, uint64_t col, uint64_t rows) {
    for (uint64_t nb = 0; rows > 1 && nb < nbs; ++nb) {
      auto key = std::make_tuple(dy * KW + col, rows, nb);
      if (p.stack_tiles.count(key)) continue;
      std::vector<float> t(rows * CI * CO);
      for (uint64_t j = 0; j < rows; ++j)
        std::copy(w.begin() + long(((dy + j) * KW + col) * CI * CO), w.begin() + long(((dy + j) * KW + col + 1) * CI * CO),
                  t.begin() + long(j * CI * CO));
      p.stack_tiles[key] = weight_tile(t, rows * CI, CO, 0, nb);
    }
  };
  // The stacks (first kernel row, rows): k at a time from kernel row a, then rows [0, a) as
  // one. The a whose stacks take the fewest tiles (each a weight load per block), with the
  // shorter stacks of output rows near the top; then the fewest stacks (matmul passes).
  auto stacks_from = [&](uint64_t a) {
    std::vector<std::pair<uint64_t, uint64_t>> st;
    for (uint64_t dy = a; dy < KH; dy += k) st.push_back({dy, std::min(k, KH - dy)});
    if (a) st.push_back({0, a});
    return st;
  };
  auto tiles_of = [&](const std::vector<std::pair<uint64_t, uint64_t>>& st) {
    uint64_t n = 0;
    for (auto [dy, rows] : st)
      for (uint64_t m = 0; m < rows && dy + m <= std::max(dy, c.pt); ++m) ++n;
    return std::pair{n, st.size()};
  };
  std::vector<std::pair<uint64_t, uint64_t>> stacks;
  for (uint64_t a = 0; a < k && k > 1; ++a)
    if (stacks.empty() || tiles_of(stacks_from(a)) < tiles_of(stacks)) stacks = stacks_from(a);
  for (uint64_t dx = 0; k > 1 && dx < KW; ++dx) {
    uint64_t col = (dx + c.pl) % KW;  // from the centre column on, which reaches every output
    for (auto [dy, rows] : stacks) {
      p.order.push_back({dy * KW + col, rows});
      stack_tile(dy, col, rows);
      // Output rows for which it starts m rows above the image: from kernel row dy + m.
      for (uint64_t m = 1; m < rows && dy + m <= c.pt; ++m) stack_tile(dy + m, col, rows - m);
    }
  }
}

// The blocks: output rows (n, oy) in chunks that fit an accumulator region, per output
// channel block; a tap's matmul per output row reads the input rows it reaches.
std::vector<Block> Codegen::conv_blocks(tpu::Conv2DOp op, ConvPlan& p, std::optional<uint64_t> only_nb) {
  const ConvShape& c = p.s;
  uint64_t N = c.N, H = c.H, W = c.W, OH = c.OH, OW = c.OW, KW = c.KW, Hp = c.Hp(), Wp = c.Wp();
  uint64_t cbs = ceil_div(c.CI, R_), nbs = ceil_div(c.CO, C_);
  // An output row wider than an accumulator region runs in column pieces of one row each
  // (a 640-pixel row of a detector's head on a 512-row region); else whole rows per block.
  const bool wide = OW > acc_region_;
  const uint64_t cols = wide ? acc_region_ : OW;
  uint64_t rows_per_chunk = wide ? 1 : conv_row_chunk(N * OH, OW, nbs);
  if (wide && p.fused)
    throw DoesNotFitError("core.accumulators.rows", 2 * OW, cfg_.core.accumulators.rows,
                          fmt::format("node '{}': an output row of {} pixels exceeds half the {} accumulator rows "
                                      "(core.accumulators.rows)",
                                      op.getLayer().str(), OW, cfg_.core.accumulators.rows));
  const Act &x = p.x, &xp = p.xp;
  std::vector<Block> blocks;
  for (uint64_t nb = 0; nb < nbs; ++nb)
    for (uint64_t r0 = 0; r0 < N * OH && (!only_nb || nb == *only_nb); r0 += rows_per_chunk)
      for (uint64_t c0 = 0; c0 < OW; c0 += cols) {
        uint64_t r1 = std::min(N * OH, r0 + rows_per_chunk), c1 = std::min(OW, c0 + cols), width = c1 - c0;
        Block b;
        bool first = true;
        if (p.stack > 1) b.groups = stack_groups(p, nb, r0, r1, c0, c1);
        for (auto [t, rows] : p.order)
          for (uint64_t cb = 0; cb < cbs && p.stack < 2; ++cb) {
            if (!group_overlap(c, cb, nb)) continue;
            TileGroup g{p.tiles[{t, cb, nb}], {}};
            uint64_t dy = t / KW, dx = t % KW;
            for (uint64_t r = r0; r < r1; ++r) {
              uint64_t n = r / OH, oy = r % OH;
              if (p.same) {
                int64_t iy = int64_t(oy + dy) - int64_t(c.pt);
                auto [lo, hi] = same_columns(c, dx, c0, c1);
                if (iy < 0 || iy >= int64_t(H) || lo >= hi) continue;
                uint64_t src = x.base + cb * x.block_bytes + ((n * H + uint64_t(iy)) * W + lo + dx - c.pl) * R_ * esz_;
                g.steps.push_back({src, hi - lo, 0, (r - r0) * width + lo - c0, !first});
                continue;
              }
              uint64_t iy = oy * c.sh + dy * c.dh, ix = dx * c.dw + c0 * c.sw;  // in the padded image
              uint64_t src = xp.base + (cb - p.xp_first) * xp.block_bytes + ((n * Hp + iy) * Wp + ix) * R_ * esz_;
              g.steps.push_back({src, width, c.sw == 1 ? 0 : c.sw * R_ * esz_, (r - r0) * width, !first});
            }
            first = false;
            if (!g.steps.empty()) b.groups.push_back(std::move(g));
          }
        b.epilogue = conv_epilogue(p, nb, r0 * OW + c0, (r1 - r0) * width);
        blocks.push_back(std::move(b));
        p.spans.push_back({nb, r0, r1});
      }
  return blocks;
}

// Of output columns [c0, c1) of a "same" convolution, those [lo, hi) whose tap column dx
// lands inside the image's row (none when the kernel reaches past a narrow image: W + pl < dx).
std::pair<uint64_t, uint64_t> same_columns(const ConvShape& c, uint64_t dx, uint64_t c0, uint64_t c1) {
  return {std::max(c0, c.pl > dx ? c.pl - dx : 0),
          std::min(c1, uint64_t(std::clamp<int64_t>(int64_t(c.W + c.pl) - int64_t(dx), 0, int64_t(c.OW))))};
}

// The tile groups of output block nb, rows [r0, r1) and columns [c0, c1) with tap stacks:
// per stack, one group for the output rows it starts inside the image, and one per shorter
// stack for those it starts m rows above it (from the image's first row). A row's first
// step sets its accumulators: the centre column's stacks go first and reach every row and
// column.
std::vector<TileGroup> Codegen::stack_groups(ConvPlan& p, uint64_t nb, uint64_t r0, uint64_t r1, uint64_t c0, uint64_t c1) {
  const ConvShape& c = p.s;
  const uint64_t KW = c.KW, H = c.H, W = c.W, OH = c.OH, width = c1 - c0;
  std::vector<bool> set(r1 - r0, false);
  std::vector<TileGroup> groups;
  for (auto [t, rows] : p.order) {
    uint64_t dy = t / KW, dx = t % KW;
    std::map<uint64_t, TileGroup> by_skip;  // rows above the image -> the group
    for (uint64_t r = r0; r < r1; ++r) {
      uint64_t n = r / OH, oy = r % OH;
      int64_t iy = int64_t(oy + dy) - int64_t(c.pt);
      uint64_t m = iy < 0 ? uint64_t(-iy) : 0;
      auto [lo, hi] = same_columns(c, dx, c0, c1);
      if (m >= rows || iy >= int64_t(H) || lo >= hi) continue;
      if (!set[r - r0] && (lo != c0 || hi != c1)) throw InternalError("tap stacks: an output row's first step leaves columns out");
      auto g = by_skip.find(m);
      if (g == by_skip.end()) {
        uint64_t left = rows - m, tap = (dy + m) * KW + dx;
        g = by_skip.emplace(m, TileGroup{left > 1 ? p.stack_tiles.at({tap, left, nb}) : p.tiles.at({tap, 0, nb}), {}}).first;
      }
      uint64_t src = p.x.base + ((n * H + uint64_t(iy + int64_t(m))) * W + lo + dx - c.pl) * R_ * esz_;
      g->second.steps.push_back({src, hi - lo, 0, (r - r0) * width + lo - c0, bool(set[r - r0])});
      if (lo == c0 && hi == c1) set[r - r0] = true;
    }
    for (auto& [m, g] : by_skip)
      if (!g.steps.empty()) groups.push_back(std::move(g));
  }
  return groups;
}

// The epilogue of output block (nb, `rows` pixels from output pixel `px0` = row * OW + column):
// into the output, or with a fused add through its scratch slot, started one unified-buffer
// bank after the other operand's rows so the add's two reads never share a bank.
std::function<std::vector<std::string>(uint32_t, uint64_t)> Codegen::conv_epilogue(const ConvPlan& p, uint64_t nb, uint64_t px0,
                                                                                    uint64_t rows) {
  uint64_t out = p.y.base + nb * p.y.block_bytes + px0 * C_ * out_esz_, bias_row = bias_at(p.bias_ub, nb);
  std::string ep = p.eps[nb];
  if (!p.fused)
    return [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
  uint64_t other = p.fused->other.base + nb * p.fused->other.block_bytes + px0 * C_ * esz_;
  return [this, rows, bias_row, ep, other, f = *p.fused, scratch = p.scratch, slot = p.slot, period = p.period, nreg = p.nreg,
          region_rows = p.region_rows, nb](uint32_t m, uint64_t acc_row) {
    if (acc_row % region_rows || acc_row / region_rows >= nreg) throw InternalError("fused add: unexpected accumulator region");
    uint64_t at = scratch + (nreg * uint64_t(m) + acc_row / region_rows) * slot;
    if (period) at += (other + cfg_.core.unified_buffer.row_bytes + period - at % period) % period;
    if (f.in_acc) return acc_add_phases(f, m, acc_row, rows, bias_row, nb, at, other);
    auto ph = epilogue(m, acc_row, rows, bias_row, ep, at);
    for (auto& extra : fused_add_phases(f, rows, at, other)) ph.push_back(std::move(extra));
    return ph;
  };
}

}  // namespace vtpu::compiler::codegen
