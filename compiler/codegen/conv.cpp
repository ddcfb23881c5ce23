// Convolutions: taps as shifted matmuls, tap pairs, a residual add in the epilogues, bias on the MXU (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Only where it pays: when the matmuls of an output block (`groups` tiles of rows) last at
// least as long as the epilogues the vector unit runs meanwhile (one per MXU, two
// operations each), so the add's work is not all queued behind them; and where the scratch
// slots take no more than the output would, or than half the free space.
// A residual add fused into the epilogue of the convolution that produces one operand:
// when the convolution's output has no other user and the add's other operand is already
// in the unified buffer with the add as its last user, each output block's epilogue goes
// on to add it, in place in that operand, so the add's vector work overlaps the matmuls
// instead of running after them. The operations and roundings are gen_add's (INT8: both
// operands rescaled to the sum's scale, a saturating add, the clamp; bf16: the add and
// the clamp), in the same order up to commuting the add, so the results are the same.
std::optional<Codegen::FusedAdd> Codegen::fusable_add(tpu::Conv2DOp op, uint64_t groups, uint64_t scratch_bytes) {
  Value out = op.getOutput();
  if (int_out_ || !out.hasOneUse() || groups * cfg_.core.vector.sublanes < 2 * uint64_t(cfg_.core.mxu.count))
    return std::nullopt;
  auto ys = shape_of(out);
  uint64_t out_bytes = numel(ys) / uint64_t(ys.back()) * ceil_div(uint64_t(ys.back()), R_) * R_ * esz_;
  if (scratch_bytes > std::max(out_bytes, ub_.largest_free() / 2)) return std::nullopt;
  auto add = mlir::dyn_cast<tpu::AddOp>(*out.getUsers().begin());
  if (!add || add.getLhs() == add.getRhs()) return std::nullopt;
  Value other = add.getLhs() == out ? add.getRhs() : add.getLhs();
  if (!acts_.count(other.getAsOpaquePointer()) || !last_use(other) || shape_of(other) != shape_of(add.getOutput()) ||
      shape_of(out) != shape_of(add.getOutput()))
    return std::nullopt;
  FusedAdd f;
  f.other = act(other);
  double lo = add.getClampMin().convertToDouble(), hi = add.getClampMax().convertToDouble();
  if (q8_) {
    double sy = scale(add.getOutput());
    if (scale(out) > sy || scale(other) > sy) return std::nullopt;  // gen_add's fp32 case
    f.s_other = scale(other), f.s_sum = sy, f.lo = lo, f.hi = hi;
    f.conv_scale = new_param(fmt::format("scale=[{}]", double(scale(out)) / sy));
    f.other_scale = new_param(fmt::format("scale=[{}]", double(scale(other)) / sy));
    f.clamp = clamp_param(std::isinf(lo) ? lo : std::ceil(lo / sy), std::isinf(hi) ? hi : std::floor(hi / sy));
  } else {
    f.clamp = clamp_param(lo, hi);
  }
  fused_adds_[add.getOperation()] = f.other;
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
  ph.push_back(pre + fmt::format("  vec.rescale dst=ub[{}] a=ub[{}] rows={} param={} dt=int8 odt=int32 flag={{flag}}\n", t, o, rows,
                                 f.to_acc[nb]));
  pre.clear();
  t = reg_ref(tmp, 8, pre);
  ph.push_back(pre + fmt::format("  vec.add dst=acc[r0+{0}] a=acc[r0+{0}] b=ub[{1}] rows={2} dt=int32 flag={{flag}}\n", g, t, rows));
  pre.clear();
  o = reg_ref(other, 9, pre);
  ph.push_back(pre + fmt::format("  vec.rescale dst=ub[{}] a=acc[r0+{}] rows={} param={} flag={{flag}}\n", o, g, rows, f.to_sum[nb]));
  return ph;
}

// The fused add's phases for `rows` rows of one lane block: the convolution's output at
// `conv`, the other operand (and the sum) at `other`. "{flag}" as in epilogue().
std::vector<std::string> Codegen::fused_add_phases(const FusedAdd& f, uint64_t rows, uint64_t conv, uint64_t other) {
  std::vector<std::string> ph;
  auto op = [&](const std::string& fmt_, bool two) {
    std::string pre, o = reg_ref(other, 8, pre), c = two ? reg_ref(conv, 9, pre) : "";
    ph.push_back(pre + fmt::format(fmt::runtime(fmt_), fmt::arg("o", o), fmt::arg("c", c), fmt::arg("rows", rows),
                                   fmt::arg("dt", dt_)) + "\n");
  };
  if (q8_) {
    std::string pre, c = reg_ref(conv, 9, pre);
    ph.push_back(pre + fmt::format("  vec.affine dst=ub[{0}] a=ub[{0}] rows={1} dt=int8 param={2} flag={{flag}}\n", c, rows,
                                   f.conv_scale));
    op("  vec.affine dst=ub[{o}] a=ub[{o}] rows={rows} dt=int8 param=" + f.other_scale + " flag={{flag}}", false);
  }
  op("  vec.add dst=ub[{o}] a=ub[{o}] b=ub[{c}] rows={rows} dt={dt} flag={{flag}}", true);
  if (!f.clamp.empty()) op("  vec.clamp dst=ub[{o}] a=ub[{o}] rows={rows} dt={dt} param=" + f.clamp + " flag={{flag}}", false);
  return ph;
}

// A unified-buffer row of C int8 lanes with the constants from lane `at` (loaded once).
// INT8 activations whose padding lanes [at, at + kBiasLanes] hold constants (kBiasBig in
// the first kBiasLanes, then 1): a 1x1 convolution reading at most `at` channels then adds
// its bias on the MXU, from weight rows at those lanes whose sum over the constants is the
// bias in the accumulator's scale, instead of a vector pass over every output row.
uint64_t Codegen::bias_lanes_row(uint64_t at) {
  if (auto it = bias_lanes_rows_.find(at); it != bias_lanes_rows_.end()) return it->second;
  std::vector<uint8_t> row(C_, 0);
  for (uint64_t k = 0; k < kBiasLanes; ++k) row[at + k] = uint8_t(kBiasBig);
  row[at + kBiasLanes] = 1;
  uint64_t ub = ub_take(C_, "the bias lanes' constants", false);
  std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", C_, hbm_const(row), ub));
  code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
  code("  wait f1");
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

void Codegen::gen_conv(tpu::Conv2DOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  if (auto it = input_hbm_.find(op.getInput().getAsOpaquePointer()); it != input_hbm_.end())
    return gen_conv_packed(op, it->second);
  if (wide_conv(op)) return gen_conv_wide(op);
  const Act& x = act(op.getInput());
  auto xs = x.shape;  // N, H, W, CI
  auto ws = shape_of(op.getWeight());  // KH, KW, CI, CO
  auto ys = shape_of(op.getOutput());  // N, OH, OW, CO
  uint64_t N = uint64_t(xs[0]), H = uint64_t(xs[1]), W = uint64_t(xs[2]), CI = uint64_t(xs[3]);
  uint64_t KH = uint64_t(ws[0]), KW = uint64_t(ws[1]), CO = uint64_t(ws[3]);
  uint64_t OH = uint64_t(ys[1]), OW = uint64_t(ys[2]);
  uint64_t G = uint64_t(op.getGroups()), CIg = uint64_t(ws[2]);  // channels per group
  auto stride = op.getStride(), pad = op.getPad(), dil = op.getDilation();
  uint64_t sh = uint64_t(stride[0]), sw = uint64_t(stride[1]), dh = uint64_t(dil[0]), dw = uint64_t(dil[1]);
  uint64_t pt = uint64_t(pad[0]), pb = uint64_t(pad[1]), pl = uint64_t(pad[2]), pr = uint64_t(pad[3]);
  auto w = const_floats(op.getWeight(), layer), bias = const_floats(op.getBias(), layer);
  // A fused residual add (fusable_add) writes the sum into its other operand; this
  // convolution's output rows then only pass through a scratch slot per accumulator region.
  const auto& ubc = cfg_.core.unified_buffer;
  uint64_t period = ubc.banks > 1 ? uint64_t(ubc.banks) * ubc.row_bytes : 0;
  // One slot per MXU and accumulator region: run_blocks splits the accumulators by the
  // largest block, here a full row chunk (the centre tap covers all its rows).
  uint64_t chunk_px = conv_row_chunk(N * OH, OW, ceil_div(CO, C_)) * OW;
  uint64_t nreg = acc_regions(chunk_px), region_rows = cfg_.core.accumulators.rows / nreg;
  // INT8 adds through the accumulators need int32 slots (see below).
  bool int32_slots = q8_ && std::isinf(op.getClampMin().convertToDouble()) && std::isinf(op.getClampMax().convertToDouble());
  uint64_t slot = align_up(chunk_px * C_ * (int32_slots ? 4 : esz_), 64) + period;
  uint64_t slots = nreg * uint64_t(cfg_.core.mxu.count);
  std::optional<FusedAdd> fused = fusable_add(op, KH * KW * ceil_div(CI, R_), slots * slot);
  Act y = fused ? Act{} : out_act(op.getOutput(), fmt::format("the output of '{}'", layer));
  uint64_t scratch = fused ? ub_take(slots * slot, fmt::format("the output rows of '{}'", layer)) : 0;

  // Zero-padded copy of the input when the conv pads, except for "same" convolutions
  // (stride 1, odd kernel, centred pads): their taps read the unpadded input, each clipped
  // to the output pixels and rows it reaches, with the centre tap (which reaches all of
  // them) first to initialize the accumulators.
  uint64_t Hp = H + pt + pb, Wp = W + pl + pr;
  Act xp = x;
  bool same = sh == 1 && sw == 1 && dh == 1 && dw == 1 && KH % 2 == 1 && KW % 2 == 1 && pt == (KH - 1) / 2 &&
              pb == pt && pl == (KW - 1) / 2 && pr == pl;
  bool padded = (pt || pb || pl || pr) && !same;
  if (padded) {
    xp = new_act({int64_t(N), int64_t(Hp), int64_t(Wp), int64_t(CI)}, fmt::format("the padded input of '{}'", layer),
                 /*temporary=*/true);
    // Border fills and interior copies touch disjoint rows: all in flight, one wait.
    uint64_t inflight = 0;
    clear_border(xp, N, Hp, Wp, pt, pb, pl, pr, false, &inflight);
    for (uint64_t b = 0; b < x.blocks; ++b)
      for (uint64_t n = 0; n < N; ++n) {
        uint64_t src = x.base + b * x.block_bytes + n * H * W * R_ * esz_;
        uint64_t dst = xp.base + b * xp.block_bytes + ((n * Hp + pt) * Wp + pl) * R_ * esz_;
        std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}]", W * R_ * esz_, src, dst, H,
                                             W * R_ * esz_, Wp * R_ * esz_));
        code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1", d));
        ++inflight;
      }
    for (; inflight; inflight -= std::min<uint64_t>(inflight, 65535))
      code(fmt::format("  wait f1, {}", std::min<uint64_t>(inflight, 65535)));
  }
  // Tap pairs: a "same" convolution on at most R/2 channels leaves half of every matmul
  // row's K empty. When it is its input's last user, one DMA copies each pixel's channels
  // into lanes [CI, 2 CI) of the pixel above (zeros for an image's bottom row), so a
  // matmul row covers kernel rows dy and dy + 1 (K = 2 CI); whatever other padding lanes
  // hold is never read. Pairs start at the centre row (their row read is never above the
  // image); rows above it stay single taps. ResNet-50's 64-channel 3x3 convs take 6
  // matmuls per output row instead of 9.
  bool pairs = same && G == 1 && KH > 1 && H > 1 && 2 * CI <= R_ &&
               (CI * esz_) % cfg_.core.unified_buffer.alignment_bytes == 0 && last_use(op.getInput());
  if (pairs) {
    uint64_t px = R_ * esz_, img = H * W * px;
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, {}, {}] dim=[{}, {}, {}]", CI * esz_,
                                         x.base + W * px, x.base + CI * esz_, (H - 1) * W, px, px, N, img, img));
    code(fmt::format("  dma.copy desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");  // the two transfers' spans interleave
    d = new_desc(fmt::format("bytes={} src_off={} dst_off={} dim=[{}, 0, {}] dim=[{}, 0, {}]", CI * esz_, zero_hbm_,
                             x.base + (H - 1) * W * px + CI * esz_, W, px, N, img));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
  }
  std::vector<double> acc_scale;
  if (q8_) {
    // Per output channel over all taps: [KH*KW*CI, CO] is the same layout as w.
    QWeights qw = quantize(w, KH * KW * CIg, CO);
    w = std::move(qw.q);
    for (double sw : qw.s) acc_scale.push_back(sw * scale(op.getInput()));
  }
  // The bias on the MXU (bias_lanes_): a 1x1 convolution of an input with bias lanes.
  uint64_t lanes = 0;
  bool bias_on_mxu = false;
  std::vector<float> folded;
  if (auto it = bias_lanes_.find(op.getInput().getAsOpaquePointer());
      it != bias_lanes_.end() && q8_ && KH == 1 && KW == 1 && sh == 1 && sw == 1 && G == 1 && !padded && CI <= it->second) {
    lanes = it->second;
    folded.assign((lanes + kBiasLanes + 1) * CO, 0.0f);
    bias_on_mxu = true;
    for (uint64_t co = 0; co < CO && bias_on_mxu; ++co) {
      for (uint64_t ci = 0; ci < CI; ++ci) folded[ci * CO + co] = w[ci * CO + co];
      auto bw = bias_weights(int64_t(std::nearbyint(double(bias[co]) / acc_scale[co])));
      if (!bw) bias_on_mxu = false;
      for (uint64_t k = 0; bw && k <= kBiasLanes; ++k) folded[(lanes + k) * CO + co] = float((*bw)[k]);
    }
  }
  uint64_t bias_ub = bias_on_mxu ? kNoBias : bias_rows(bias, acc_scale);
  auto eps = epilogue_params(CO, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                             op.getClampMax().convertToDouble());
  uint64_t cbs = ceil_div(CI, R_), nbs = ceil_div(CO, C_);
  // An INT8 residual add with the convolution's output unclamped goes through the
  // accumulators: the other operand, rescaled to each channel's accumulator scale (int32,
  // in the slot), is added to the sums, and one RESCALE takes them to the sum's scale with
  // the add's clamp. Three vector passes after the bias instead of five (the convolution's
  // own rescale, both operands' rescales to the sum's scale, the add, the clamp), and one
  // rounding instead of three. Needs every ratio well inside RESCALE's range and int32.
  if (fused && int32_slots) {
    bool fits = true;
    for (double a : acc_scale) fits &= a > 0 && fused->s_other / a < double(1 << 20) && fused->s_other / a > 1.0 / double(1 << 20);
    if (fits) {
      fused->in_acc = true;
      std::vector<double> inv;
      for (double a : acc_scale) inv.push_back(fused->s_other / a);
      for (uint64_t nb = 0; nb < nbs; ++nb) {
        std::vector<int64_t> mult, shift;
        for (uint64_t c = 0; c < C_; ++c) {
          uint64_t ch = nb * C_ + c;
          auto [m, sh2] = ch < CO ? fixed_point(inv[ch]) : std::pair<int64_t, int64_t>{0, 31};
          mult.push_back(m), shift.push_back(sh2);
        }
        fused->to_acc.push_back(new_param(fmt::format("mult=[{}] shift=[{}]", fmt::join(mult, ", "), fmt::join(shift, ", "))));
      }
      fused->to_sum = epilogue_params(CO, acc_scale, fused->s_sum, fused->lo, fused->hi);
    }
  }
  // Weight tiles per (tap, ci block, co block): rows = input channels, cols = output
  // channels. Grouped weights [KH, KW, CI/G, CO] spread into the tap's CI x CO matrix,
  // zero across groups (a depthwise tap is diagonal); a tile with no channel pair of one
  // group is all zeros and is skipped, with its matmuls.
  uint64_t COg = CO / G;
  auto group_overlap = [&](uint64_t cb, uint64_t nb) {
    uint64_t ci0 = cb * R_, ci1 = std::min(CI, ci0 + R_), co0 = nb * C_, co1 = std::min(CO, co0 + C_);
    return ci0 / CIg <= (co1 - 1) / COg && co0 / COg <= (ci1 - 1) / CIg;
  };
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, TileRef> tiles;
  std::vector<float> tap(CI * CO);
  for (uint64_t t = 0; t < KH * KW; ++t) {
    if (G == 1) {
      std::copy(w.begin() + long(t * CI * CO), w.begin() + long((t + 1) * CI * CO), tap.begin());
    } else {
      std::fill(tap.begin(), tap.end(), 0.0f);
      for (uint64_t co = 0; co < CO; ++co)
        for (uint64_t i = 0; i < CIg; ++i) tap[(co / COg * CIg + i) * CO + co] = w[(t * CIg + i) * CO + co];
    }
    for (uint64_t cb = 0; cb < cbs; ++cb)
      for (uint64_t nb = 0; nb < nbs; ++nb)
        if (group_overlap(cb, nb)) tiles[{t, cb, nb}] = bias_on_mxu ? weight_tile(folded, lanes + kBiasLanes + 1, CO, 0, nb)
                                                                     : weight_tile(tap, CI, CO, cb, nb);
  }
  // The order taps go in ("same": the centre first, it reaches every output and
  // initializes the accumulators) and, with pairs, which of them take kernel row dy + 1
  // along (their tiles: rows [0, CI) tap (dy, dx), rows [CI, 2 CI) tap (dy + 1, dx)).
  std::vector<std::pair<uint64_t, bool>> order;  // (tap, paired)
  std::map<std::pair<uint64_t, uint64_t>, TileRef> pair_tiles;
  uint64_t centre = (KH / 2) * KW + KW / 2;
  for (uint64_t i = 0; i < KH * KW && !pairs; ++i) order.push_back({!same ? i : i == 0 ? centre : i <= centre ? i - 1 : i, false});
  for (uint64_t dx = 0; pairs && dx < KW; ++dx) {
    uint64_t c = (dx + pl) % KW;  // from the centre column on
    for (uint64_t dy = pt; dy + 1 < KH; dy += 2) {
      order.push_back({dy * KW + c, true});
      // w holds tap t's CI x CO block at t * CI * CO.
      std::vector<float> t(2 * CI * CO);
      std::copy(w.begin() + long((dy * KW + c) * CI * CO), w.begin() + long((dy * KW + c + 1) * CI * CO), t.begin());
      std::copy(w.begin() + long(((dy + 1) * KW + c) * CI * CO), w.begin() + long(((dy + 1) * KW + c + 1) * CI * CO),
                t.begin() + long(CI * CO));
      for (uint64_t nb = 0; nb < nbs; ++nb) pair_tiles[{dy * KW + c, nb}] = weight_tile(t, 2 * CI, CO, 0, nb);
    }
    if ((KH - pt) % 2) order.push_back({(KH - 1) * KW + c, false});
    for (uint64_t dy = 0; dy < pt; ++dy) order.push_back({dy * KW + c, false});
  }
  // Output rows (n, oy) in chunks that fit an accumulator region.
  uint64_t rows_per_chunk = conv_row_chunk(N * OH, OW, nbs);
  if (OW > acc_region_)
    throw CompileError(fmt::format("node '{}': an output row of {} pixels exceeds half the {} accumulator rows "
                                   "(core.accumulators.rows)",
                                   layer, OW, cfg_.core.accumulators.rows));
  std::vector<Block> blocks;
  for (uint64_t nb = 0; nb < nbs; ++nb)
    for (uint64_t r0 = 0; r0 < N * OH; r0 += rows_per_chunk) {
      uint64_t r1 = std::min(N * OH, r0 + rows_per_chunk);
      Block b;
      bool first = true;
      for (auto [t, paired] : order)
        for (uint64_t cb = 0; cb < cbs; ++cb) {
          if (!group_overlap(cb, nb)) continue;
          TileGroup g{paired ? pair_tiles[{t, nb}] : tiles[{t, cb, nb}], {}};
          uint64_t dy = t / KW, dx = t % KW;
          for (uint64_t r = r0; r < r1; ++r) {
            uint64_t n = r / OH, oy = r % OH;
            if (same) {
              int64_t iy = int64_t(oy + dy) - int64_t(pt);
              // Output columns [lo, hi) whose tap dx lands inside the row (none when the kernel
              // reaches past a narrow image: W + pl < dx).
              uint64_t lo = pl > dx ? pl - dx : 0,
                       hi = uint64_t(std::clamp<int64_t>(int64_t(W + pl) - int64_t(dx), 0, int64_t(OW)));
              if (iy < 0 || iy >= int64_t(H) || lo >= hi) continue;
              uint64_t src = x.base + cb * x.block_bytes + ((n * H + uint64_t(iy)) * W + lo + dx - pl) * R_ * esz_;
              g.steps.push_back({src, hi - lo, 0, (r - r0) * OW + lo, !first});
              continue;
            }
            uint64_t iy = oy * sh + dy * dh, ix = dx * dw;  // in the padded image
            uint64_t src = xp.base + cb * xp.block_bytes + ((n * Hp + iy) * Wp + ix) * R_ * esz_;
            g.steps.push_back({src, OW, sw == 1 ? 0 : sw * R_ * esz_, (r - r0) * OW, !first});
          }
          first = false;
          if (!g.steps.empty()) b.groups.push_back(std::move(g));
        }
      uint64_t rows = (r1 - r0) * OW;
      uint64_t out = y.base + nb * y.block_bytes + r0 * OW * C_ * out_esz_, bias_row = bias_at(bias_ub, nb);
      std::string ep = eps[nb];
      if (fused) {
        // The slot of this accumulator region, started one unified-buffer bank after the
        // other operand's rows so the add's two reads never share a bank.
        uint64_t other = fused->other.base + nb * fused->other.block_bytes + r0 * OW * C_ * esz_;
        b.epilogue = [this, rows, bias_row, ep, other, f = *fused, scratch, slot, period, nreg, region_rows, nb](uint32_t m,
                                                                                                        uint64_t acc_row) {
          if (acc_row % region_rows || acc_row / region_rows >= nreg) throw InternalError("fused add: unexpected accumulator region");
          uint64_t at = scratch + (nreg * uint64_t(m) + acc_row / region_rows) * slot;
          if (period) at += (other + cfg_.core.unified_buffer.row_bytes + period - at % period) % period;
          if (f.in_acc) return acc_add_phases(f, m, acc_row, rows, bias_row, nb, at, other);
          auto ph = epilogue(m, acc_row, rows, bias_row, ep, at);
          for (auto& extra : fused_add_phases(f, rows, at, other)) ph.push_back(std::move(extra));
          return ph;
        };
      } else {
        b.epilogue = [this, rows, bias_row, ep, out](uint32_t m, uint64_t acc_row) { return epilogue(m, acc_row, rows, bias_row, ep, out); };
      }
      blocks.push_back(std::move(b));
    }
  run_blocks(blocks, true);  // constant weights: the prologue hoists into the previous stream
  ub_.release(bias_ub);
  if (padded) ub_.release(xp.base);
  add_bound(layer, N * OH * OW * KH * KW * CIg * CO, KH * KW * CIg * CO * esz_);
  if (fused) ub_.release(scratch);
  else define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
