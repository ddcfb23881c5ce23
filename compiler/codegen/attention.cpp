// Attention: head views, batch matmuls, the softmax in the scores' epilogues, early stores (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Attention's softmax (optionally after a per-channel affine step, the 1 / sqrt(d) scale)
// as the only consumer of a bf16 batch matmul whose rows fit one lane block: each output
// block's epilogue takes the scores straight from the accumulators in fp32 (no rounding to
// bf16 and no conversion back): scale, mask (the model's, and -inf on padding lanes), row
// max, subtract, exp, row sum, reciprocal, multiply, convert, one vector operation each,
// overlapping the next blocks' matmuls. The row statistics go to an fp32 row per
// accumulator row. Returns the phases of a block (MXU, accumulator row, rows, output
// address, first row within the mask) and the unified-buffer space to free afterwards.
std::optional<Codegen::SoftmaxEpilogue> Codegen::fuse_softmax(mlir::Operation* producer, const Act& y, const std::string& into_layer,
                                                             uint64_t M) {
  auto sm = mlir::cast<tpu::SoftmaxOp>(planned(producer, "softmax").at(0));
  // The scale step before it (the planner checked the pattern), whether applied here or,
  // a power of two, to the queries (role "scale").
  Value v = sm.getInput();
  while (auto r = v.getDefiningOp<tpu::ReshapeOp>()) v = r.getInput();
  tpu::AffineOp af = v.getDefiningOp<tpu::AffineOp>();
  uint64_t row32 = C_ * 4, N = y.features, acc_rows = cfg_.core.accumulators.rows;
  std::vector<float> mk;
  if (sm.getMask()) mk = const_floats(sm.getMask(), sm.getLayer().str());
  uint64_t stat_bytes = uint64_t(cfg_.core.mxu.count) * acc_rows * row32;
  uint64_t mask_rows = !mk.empty() ? M : N < C_ ? 1 : 0;
  if (ub_.largest_free() < stat_bytes + mask_rows * row32 + (1 << 16)) {
    // Not beside the matmuls: the scale step (unless applied to the queries) in the
    // epilogues, the softmax and the context on their own.
    decline(producer, "context");
    decline(producer, "softmax");
    if (auto scale = planned(producer, "softmax-scale"); !scale.empty()) {
      scale[0]->setAttr(kRoleAttr, mlir::StringAttr::get(producer->getContext(), "elementwise"));
      producer->setAttr(kEpilogueAttr, mlir::StringAttr::get(producer->getContext(), "elementwise"));
    }
    return std::nullopt;
  }
  SoftmaxEpilogue e;
  uint64_t stats = ub_take(stat_bytes, fmt::format("the softmax statistics of '{}'", into_layer));
  e.buffers.push_back(stats);
  uint64_t masks = 0;
  if (mask_rows) {
    std::vector<uint8_t> bytes(mask_rows * row32);
    for (uint64_t i = 0; i < mask_rows; ++i)
      for (uint64_t j = 0; j < C_; ++j) {
        float f = j >= N ? -std::numeric_limits<float>::infinity() : mk.empty() ? 0.0f : mk[i * N + j];
        std::memcpy(&bytes[(i * C_ + j) * 4], &f, 4);
      }
    masks = ub_take(bytes.size(), fmt::format("the attention mask of '{}'", sm.getLayer().str()));
    e.buffers.push_back(masks);
    load_constant(std::move(bytes), masks);
  }
  std::string scale_p;
  if (af && !has_role(af, "scale")) scale_p = affine_param(const_floats(af.getScale(), af.getLayer().str()), const_floats(af.getBias(), af.getLayer().str()), 0, 1.0, 1.0);
  bool per_row_mask = !mk.empty();
  e.phases = [=](uint32_t m, uint64_t acc_row, uint64_t rows, uint64_t out_ub, uint64_t row_in_m) {
    uint64_t g = uint64_t(m) * acc_rows + acc_row;
    emit::Mem a = acc_at(g);
    // The phase of operation text(S, B): S the unified-buffer rows at ub_addr, B those at ub2.
    auto op = [&](auto text, uint64_t ub_addr = UINT64_MAX, uint64_t ub2 = UINT64_MAX) {
      std::string pre, s_ref, b_ref;
      if (ub_addr != UINT64_MAX) {
        b_ref = ub2 == UINT64_MAX ? "" : reg_ref(ub2, 7, pre);  // B's li ahead of S's, as the former text fill ran them
        s_ref = reg_ref(ub_addr, 6, pre);
      }
      return pre + "  " + text(ub_ref(s_ref), ub_ref(b_ref)) + "\n";
    };
    using Ref = const emit::Mem&;
    const auto f32 = isa::Dtype::Fp32;
    std::vector<std::string> ph;
    if (!scale_p.empty())
      ph.push_back(op([&](Ref, Ref) { return emit::vec_affine(a, a, rows, f32, emit::Param{scale_p}, kPendingFlag); }));
    uint64_t S = stats + g * row32;
    if (mask_rows)
      ph.push_back(op(
          [&](Ref, Ref mask) {
            return emit::vec_add(a, a, mask, rows, f32, per_row_mask ? std::nullopt : std::optional(true), kPendingFlag);
          },
          S, masks + (per_row_mask ? row_in_m * row32 : 0)));
    ph.push_back(op([&](Ref st, Ref) { return emit::vec_rmax(st, a, rows, f32, kPendingFlag); }, S));
    ph.push_back(op([&](Ref st, Ref) { return emit::vec_sub(a, a, st, rows, f32, std::nullopt, kPendingFlag); }, S));
    ph.push_back(op([&](Ref, Ref) { return emit::vec_exp(a, a, rows, f32, kPendingFlag); }));
    ph.push_back(op([&](Ref st, Ref) { return emit::vec_rsum(st, a, rows, f32, f32, kPendingFlag); }, S));
    ph.push_back(op([&](Ref st, Ref) { return emit::vec_recip(st, st, rows, f32, kPendingFlag); }, S));
    ph.push_back(op([&](Ref st, Ref) { return emit::vec_mul(a, a, st, rows, f32, std::nullopt, kPendingFlag); }, S));
    ph.push_back(op([&](Ref st, Ref) { return emit::vec_cvt(st, a, rows, f32, isa::Dtype::Bf16, kPendingFlag); }, out_ub));
    return ph;
  };
  for (mlir::Operation* u : {af ? af.getOperation() : nullptr, sm.getOperation()}) {
    if (!u) continue;
    Act fy = y;
    fy.shape = shape_of(u->getResult(0));
    fused_[u] = fy;
    fused_bounds_.push_back({into_layer, u->getName().stripDialect().str(), fy.shape});
  }
  return e;
}

// Attention's head split and transpose, [B, S, H*d] -> [B, S, H, d] -> [B, H, S, d], read
// in place (planned: tpu.heads "view"): no copy, the batch matmuls read head h of the unsplit
// tensor (its lanes [h*d, h*d + d) of every row): as the left-hand side, matmul rows that
// start at the head's first lane (the array ignores the lanes past its tile's rows; the
// last row's read runs into the row of room plan_matmul left after x); as the right-hand
// side, weight tiles that read the head's lanes of the rows stored in HBM.
// gen_reshape's part: the split and its transpose become views of x.
void Codegen::make_head_view(tpu::ReshapeOp op, const Act& x) {
  auto tp = mlir::cast<tpu::TransposeOp>(*op.getOutput().getUsers().begin());
  auto ys = shape_of(op.getOutput());
  HeadView hv{x, uint64_t(ys[1]), uint64_t(ys[2]), uint64_t(ys[3])};
  auto alias = [&](Value v) {
    Act a = x;  // shares x's buffer, so x lives while the view does
    a.shape = shape_of(v);
    a.features = uint64_t(a.shape.back());
    a.rows = numel(a.shape) / a.features;
    a.blocks = ceil_div(a.features, R_);
    define(v, a);
  };
  alias(op.getOutput());
  alias(tp.getOutput());
  views_[tp.getOutput().getAsOpaquePointer()] = hv;
  add_bound(op.getLayer().str(), 0, 0);
  if (op->hasAttr(kEarlyStoreAttr) && !store_rhs_early(tp.getOutput())) op->removeAttr(kEarlyStoreAttr);
}

// Attention's K^T (planned: tpu.heads "transpose"): a head split whose only consumer is the
// transpose [0, 2, 3, 1] ([B, S, H, d] -> [B, H, d, S]) is generated as that transpose
// straight from the unsplit [B * S, H * d] tensor, a range of batch elements at a time:
// lanes of its fp32 twin gathered into rows. That skips the split's copy and converts half
// the bytes (the split tensor's rows hold d of R lanes).
void Codegen::make_head_transpose(tpu::ReshapeOp op, const Act& x) {
  auto xs = shape_of(op.getInput()), ys = shape_of(op.getOutput());
  auto tp = mlir::cast<tpu::TransposeOp>(*op.getOutput().getUsers().begin());
  std::string layer = tp.getLayer().str();
  uint64_t B = uint64_t(xs[0]), S = uint64_t(xs[1]), H = uint64_t(ys[2]), d = uint64_t(ys[3]);
  Act y0 = new_act(shape_of(tp.getOutput()), fmt::format("the output of '{}'", layer));
  auto twin_bytes = [&](uint64_t n) {
    return x.blocks * align_up(n * S * R_ * 4, block_align_) + y0.blocks * align_up(n * H * d * R_ * 4, block_align_);
  };
  uint64_t per = B;
  while (per > 1 && twin_bytes(per) > ub_.largest_free()) per = (per + 1) / 2;
  uint64_t row4 = R_ * 4;
  // When a batch matmul takes the result as its right-hand side (planned: tpu.early_store),
  // it goes to HBM group by group of output rows as they are converted, overlapping the next
  // group's copies.
  std::optional<Value> target = op->hasAttr(kEarlyStoreAttr) ? early_target(tp.getOutput()) : std::nullopt;
  int flag = target ? free_rhs_flag() : 0;
  if (!flag) op->removeAttr(kEarlyStoreAttr);
  RhsCopy store;
  if (flag) store = {hbm_alloc(y0.blocks * y0.rows * R_ * esz_), flag, 0};
  for (uint64_t b0 = 0; b0 < B; b0 += per) {
    uint64_t n = std::min(per, B - b0);
    Act xv = x, yv = y0;  // batch elements [b0, b0 + n)
    xv.rows = n * S, xv.base = x.base + b0 * S * R_ * esz_;
    yv.rows = n * H * d, yv.base = y0.base + b0 * H * d * R_ * esz_;
    Act xt = fp32_twin(xv, layer, "transpose copies", true), yt = yv;
    if (S % R_) {
      yt = fp32_twin(yv, layer, "transpose copies", false);  // zeros on the padding lanes
    } else {  // the copies write every lane
      yt.block_bytes = align_up(yv.rows * R_ * 4, block_align_);
      yt.base = ub_take(yt.bytes(), fmt::format("the fp32 transpose copies of '{}'", layer));
    }
    // Output row (b, h, e) holds lanes s = x's rows (b, s), lane h * d + e: one copy per
    // run of e within a lane block and output lane block. The (b, h) pairs go in up to 4
    // groups: a group's conversion back (and store) overlaps the next group's copies.
    uint64_t pairs = n * H, per_group = ceil_div(pairs, std::min<uint64_t>(pairs, 4));
    std::optional<std::pair<uint64_t, uint64_t>> converted;  // rows whose conversion is in flight
    auto store_group = [&](std::pair<uint64_t, uint64_t> r) {
      code("  " + emit::wait(emit::flag(flags_.vector), yv.blocks));  // their conversions (the oldest in flight)
      if (!flag) return;
      for (uint64_t nb = 0; nb < y0.blocks; ++nb) {
        uint64_t rb = rhs_row_bytes(y0, nb), r0 = b0 * H * d + r.first;
        std::string dsc = new_desc(fmt::format("bytes={} dim=[{}, {}, {}]", rb, r.second - r.first, R_ * esz_, rb));
        code(bundle({emit::li(reg(1), int64_t(y0.base + nb * y0.block_bytes + r0 * R_ * esz_)),
                     emit::li(reg(2), int64_t(store.addr + nb * y0.rows * R_ * esz_ + r0 * rb))}));
        code("  " + emit::dma_store(emit::Desc{dsc}, reg(1), reg(2), emit::flag(flag)));
        ++store.count;
      }
    };
    for (uint64_t p0 = 0; p0 < pairs; p0 += per_group) {
      uint64_t p1 = std::min(pairs, p0 + per_group);
      for (uint64_t pr = p0; pr < p1; ++pr) {
        uint64_t b = pr / H, h = pr % H;
        for (uint64_t e0 = 0; e0 < d;) {
          uint64_t lane = h * d + e0, run = std::min(d - e0, R_ - lane % R_);
          for (uint64_t sb = 0; sb < yv.blocks; ++sb) {
            uint64_t cnt = std::min<uint64_t>(R_, S - sb * R_);
            uint64_t src = xt.base + (lane / R_) * xt.block_bytes + (b * S + sb * R_) * row4 + (lane % R_) * 4;
            uint64_t dst = yt.base + sb * yt.block_bytes + ((b * H + h) * d + e0) * row4;
            ub_copy_async(src, dst, fmt::format("bytes=4 dim=[{}, {}, 4] dim=[{}, 4, {}]", cnt, row4, run, row4));
          }
          e0 += run;
        }
      }
      copies_wait();
      for (uint64_t sb = 0; sb < yv.blocks; ++sb)
        code(bundle({emit::li(reg(1), int64_t(yt.base + sb * yt.block_bytes + p0 * d * row4)),
                     emit::li(reg(2), int64_t(yv.base + sb * yv.block_bytes + p0 * d * R_ * esz_))}) +
             "\n  " + emit::vec_cvt(ub_reg(2), ub_reg(1), (p1 - p0) * d, isa::Dtype::Fp32, dtype_, emit::flag(flags_.vector)));
      if (converted) store_group(*converted);
      converted = std::make_pair(p0 * d, p1 * d);
    }
    store_group(*converted);
    ub_.release(xt.base);
    ub_.release(yt.base);
  }
  define(tp.getOutput(), y0);
  add_bound(op.getLayer().str(), 0, 0);
  store.issued_at = code_.size();
  if (flag) stored_rhs_[target->getAsOpaquePointer()] = store;
}

const Codegen::HeadView* Codegen::view_of(Value v) const {
  auto it = views_.find(v.getAsOpaquePointer());
  return it == views_.end() ? nullptr : &it->second;
}

// Activation x activation, per batch b: lhs[b] [M, K] x rhs[b] [K, N]. The MXU's weights
// only come from HBM, so rhs's lane blocks are stored there first (one DMA each); a
// weight tile (b, k block, n block) is then kw rows of its block, read with the block's
// row stride. INT8: rhs's codes are the weights, with its per-tensor scale.
// The blocks of batch matmul `op` reading its left-hand side from `a`.
Codegen::BatchPlan Codegen::plan_batch_matmul(tpu::BatchMatmulOp op, const Act& a) {
  std::string layer = op.getLayer().str();
  const HeadView *lv = view_of(op.getLhs()), *rv = view_of(op.getRhs());
  const Act& w = rv ? rv->x : act(op.getRhs());  // a view's rhs: the unsplit tensor's rows in HBM
  auto as = shape_of(op.getLhs()), ws = shape_of(op.getRhs());
  uint64_t B = uint64_t(as[0]), M = uint64_t(as[1]), K = uint64_t(as[2]), N = uint64_t(ws[2]);
  BatchPlan p;
  p.y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  const Act& y = p.y;
  RhsCopy rhs;
  if (auto it = stored_rhs_.find(op.getRhs().getAsOpaquePointer()); it != stored_rhs_.end()) {
    rhs = it->second, p.early = true;
    stored_rhs_.erase(it);
  } else {
    rhs = store_rhs(w, 1);
  }
  p.ready = "  " + emit::wait(emit::flag(rhs.flag), rhs.count) + "\n";
  p.issued_at = rhs.issued_at;
  std::vector<double> acc_scale;
  if (q8_) acc_scale.assign(N, double(scale(op.getLhs())) * scale(op.getRhs()));
  p.bias_ub = bias_rows(std::vector<float>(N, 0.0f), acc_scale);
  auto eps = epilogue_params(N, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::infinity());
  uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_), mc = row_chunk(M, nt * B);
  if (epilogue_kind(op) == "softmax") p.softmax = fuse_softmax(op, y, layer, M);
  FusedPhases fused = epilogue_kind(op) == "elementwise" ? fuse_elementwise(op, y, layer) : FusedPhases();
  for (uint64_t b = 0; b < B; ++b)
    for (uint64_t n = 0; n < nt; ++n) {
      uint64_t nw = std::min<uint64_t>(C_, N - n * C_);
      std::vector<TileRef> tiles;
      for (uint64_t k = 0; k < kt; ++k) {
        uint64_t kw = std::min<uint64_t>(R_, K - k * R_);
        // Row (b, k*R) of rhs and its lane block / first lane: a view's item b is head
        // b % H of batch b / H, its lanes start at head * d.
        uint64_t row = b * K + k * R_, lane = n * C_;
        if (rv) row = (b / rv->H) * rv->S + k * R_, lane = (b % rv->H) * rv->d + n * C_;
        uint64_t blk = lane / R_, rb = rhs_row_bytes(w, blk);
        tiles.push_back({new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, dt_, kw, rb)),
                         rhs.addr + blk * w.rows * R_ * esz_ + row * rb + (lane % R_) * esz_});
      }
      for (uint64_t r0 = 0; r0 < M; r0 += mc) {
        uint64_t rows = std::min(mc, M - r0), row = b * M + r0;
        Block blk;
        for (uint64_t k = 0; k < kt; ++k) {
          uint64_t src = a.base + k * a.block_bytes + row * R_ * esz_;
          if (lv) {
            uint64_t lane = (b % lv->H) * lv->d + k * R_;
            src = lv->x.base + (lane / R_) * lv->x.block_bytes + ((b / lv->H) * lv->S + r0) * R_ * esz_ + (lane % R_) * esz_;
          }
          blk.groups.push_back({tiles[k], {{src, rows, 0, 0, k > 0}}});
        }
        uint64_t out = y.base + n * y.block_bytes + row * C_ * esz_, bias_row = bias_at(p.bias_ub, n);
        std::string ep = eps[n];
        if (p.softmax) {
          auto sp = p.softmax->phases;
          blk.epilogue = [sp, rows, out, r0](uint32_t m, uint64_t acc_row) { return sp(m, acc_row, rows, out, r0); };
          p.blocks.push_back(std::move(blk));
          continue;
        }
        blk.epilogue = [this, rows, bias_row, ep, out, fused, n, row](uint32_t m, uint64_t acc_row) {
          auto ph = epilogue(m, acc_row, rows, bias_row, ep, out);
          if (fused)
            for (auto& f : fused(n, row * C_ * esz_, rows)) ph.push_back(f);
          return ph;
        };
        p.blocks.push_back(std::move(blk));
      }
    }
  p.macs = B * M * K * N;
  return p;
}

void Codegen::finish_batch_matmul(const BatchPlan& p) {
  ub_.release(p.bias_ub);
  if (p.softmax)
    for (uint64_t at : p.softmax->buffers) ub_.release(at);
}

void Codegen::gen_batch_matmul(tpu::BatchMatmulOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  BatchPlan p = plan_batch_matmul(op, act(op.getLhs()));
  // Attention's context (planned: role "context"; fuse_softmax declined it with the softmax).
  std::vector<mlir::Operation*> planned_ctx = planned(op, "context");
  if (planned_ctx.empty()) {
    if (p.early) run_blocks(p.blocks, false, std::make_pair(p.ready, p.issued_at));
    else code_ += p.ready, run_blocks(p.blocks);
    finish_batch_matmul(p);
    add_bound(layer, p.macs, 0);
    add_fused_bounds();
    define(op.getOutput(), p.y);
    return;
  }
  // Attention: the context's matmuls join the stream, each (batch, head) block a few rounds
  // of the MXUs after the scores block whose softmax it reads, on the same MXU (blocks go to
  // the MXUs in turn), so they fill the MXUs while the vector unit runs later softmaxes
  // instead of waiting for all of them.
  auto ctx = mlir::cast<tpu::BatchMatmulOp>(planned_ctx[0]);
  std::vector<tpu::ReshapeOp> reshapes;  // its right-hand side's reshapes that keep the rows, done now
  for (Value r = ctx.getRhs(); !view_of(r) && !acts_.count(r.getAsOpaquePointer()); r = reshapes.back().getInput()) {
    reshapes.push_back(r.getDefiningOp<tpu::ReshapeOp>());
    if (!reshapes.back())
      throw InternalError(fmt::format("attention's context '{}': its right-hand side is not there", ctx.getLayer().str()));
  }
  for (auto it = reshapes.rbegin(); it != reshapes.rend(); ++it) {
    gen_reshape(*it);
    release(it->getInput());
    done_.insert(it->getOperation());
  }
  Act probs = p.y;
  probs.shape = shape_of(ctx.getLhs());
  BatchPlan c = plan_batch_matmul(ctx, probs);
  std::vector<Block> blocks;
  // The lag: half the accumulator regions' worth of rounds, so a softmax (seven vector
  // passes, one per round) is mostly done when its context block comes, and its region is
  // not yet needed again (measured on BERT-base, batch 1 to 8: 2 rounds stall, 4 to 8 do not).
  uint64_t span = 1;
  for (const Block& b : p.blocks)
    for (const TileGroup& g : b.groups)
      for (const MatmulStep& st : g.steps) span = std::max(span, st.acc_row + st.rows);
  size_t nm = cfg_.core.mxu.count, ns = p.blocks.size(), lag = nm * std::max<size_t>(2, acc_regions(span) / 2);
  if (c.blocks.size() != ns) throw InternalError("attention's context blocks do not pair with its scores blocks");
  for (size_t i = 0, j = 0; i < ns || j < c.blocks.size();) {
    for (size_t r = 0; r < nm && i < ns; ++r) blocks.push_back(std::move(p.blocks[i++]));
    if (i < std::min(ns, lag) && i < ns) continue;
    for (size_t r = 0; r < nm && j < c.blocks.size(); ++r) {
      Block& b = c.blocks[j];
      b.needs = int64_t(j);  // the scores block of the same rows
      ++j;
      blocks.push_back(std::move(b));
    }
  }
  // Block indices: `needs` counted scores blocks, which now sit among context blocks.
  std::vector<size_t> where(ns);
  for (size_t i = 0, k = 0; i < blocks.size(); ++i)
    if (blocks[i].needs < 0) where[k++] = i;
  for (Block& b : blocks)
    if (b.needs >= 0) b.needs = int64_t(where[size_t(b.needs)]);
  std::string ready = p.ready + c.ready;
  if (p.early && c.early) run_blocks(blocks, false, std::make_pair(ready, std::max(p.issued_at, c.issued_at)));
  else code_ += ready, run_blocks(blocks);
  finish_batch_matmul(p);
  finish_batch_matmul(c);
  add_bound(layer, p.macs, 0);
  add_fused_bounds();
  add_bound(layer, c.macs, 0, shape_of(ctx.getOutput()), ctx.getLayer().str());  // the context's row
  define(op.getOutput(), p.y);
  define(ctx.getOutput(), c.y);
}

uint64_t Codegen::rhs_row_bytes(const Act& w, uint64_t nb) const {
  uint64_t fw = std::min<uint64_t>(R_, w.features - nb * R_);
  return std::min<uint64_t>(R_ * esz_, align_up(fw * esz_, cfg_.core.unified_buffer.alignment_bytes));
}

Codegen::RhsCopy Codegen::store_rhs(const Act& w, int flag) {
  RhsCopy c{hbm_alloc(w.blocks * w.rows * R_ * esz_), flag, w.blocks};
  for (uint64_t nb = 0; nb < w.blocks; ++nb) {
    uint64_t rb = rhs_row_bytes(w, nb);
    std::string d = new_desc(fmt::format("bytes={} dim=[{}, {}, {}]", rb, w.rows, R_ * esz_, rb));
    code(bundle({emit::li(reg(1), int64_t(w.base + nb * w.block_bytes)), emit::li(reg(2), int64_t(c.addr + nb * w.rows * R_ * esz_))}));
    code("  " + emit::dma_store(emit::Desc{d}, reg(1), reg(2), emit::flag(flag)));
  }
  c.issued_at = code_.size();
  return c;
}

// Stores an activation to HBM as soon as it is computed when its only consumer (through
// reshapes that keep the rows) is a later batch matmul's right-hand side (planned:
// tpu.early_store on the op that computes it): the store then runs during the layers in
// between (attention's K^T and V during the scores and the softmax) instead of in front of
// the batch matmul. One flag per store in flight, of those the flag plan leaves for early
// stores (flags.h); the batch matmul waits for it. Returns whether it stored v: not when no
// flag is free or v was stored already (an earlier op of the chain).
bool Codegen::store_rhs_early(Value v) {
  auto it = acts_.find(v.getAsOpaquePointer());
  if (it == acts_.end()) return false;
  const HeadView* hv = view_of(v);  // a view stores the unsplit tensor
  std::optional<Value> target = early_target(v);
  if (!target) return false;
  int f = free_rhs_flag();
  if (f) stored_rhs_[target->getAsOpaquePointer()] = store_rhs(hv ? hv->x : it->second, f);
  return f != 0;
}

// The batch-matmul right-hand side `v` becomes (rhs_target), when not stored yet.
std::optional<Value> Codegen::early_target(Value v) const {
  std::optional<Value> t = rhs_target(v);
  if (t && stored_rhs_.count(t->getAsOpaquePointer())) return std::nullopt;
  return t;
}

// An early-store flag (flags.h) no early store in flight uses, or 0.
int Codegen::free_rhs_flag() const {
  for (int f = flags_.first_store; f < flags_.first_store + flags_.stores; ++f) {
    bool busy = false;
    for (auto& [k, c] : stored_rhs_) busy |= c.flag == f;
    if (!busy) return f;
  }
  return 0;
}

// A layout change by unified-buffer DMA. For each output row and lane block: if the lanes
// stay the lanes, one contiguous copy; otherwise the lanes gather one input lane from
// rows a fixed stride apart. DMA rows must start on unified-buffer words, so a gather
// moves fp32 copies (4-byte elements), converted exactly from and back to int8/bf16.
// Attention's head merge (planned: tpu.heads "merge"), [B, H, S, d] -> [B, S, H, d] (this
// transpose) -> [B, S, H * d] (its only consumer, a reshape): one pass of copies straight
// into the merged layout, a copy per head moving its d lanes of every row of every batch
// element, instead of a transpose's copies and then the reshape's.
void Codegen::merge_heads(tpu::TransposeOp op) {
  auto xs = shape_of(op.getInput());
  auto r = mlir::cast<tpu::ReshapeOp>(*op.getOutput().getUsers().begin());
  auto ms = shape_of(r.getOutput());
  uint64_t B = uint64_t(xs[0]), H = uint64_t(xs[1]), S = uint64_t(xs[2]), d = uint64_t(xs[3]);
  const Act& x = act(op.getInput());
  std::string layer = r.getLayer().str();
  tag(layer);
  Act y = new_act(ms, fmt::format("the output of '{}'", layer));
  if (y.features % R_) clear(y.base + (y.blocks - 1) * y.block_bytes, y.block_bytes);
  uint64_t row = R_ * esz_;
  for (uint64_t h = 0; h < H; ++h)
    for (uint64_t e0 = 0; e0 < d; e0 += std::min<uint64_t>(d, R_)) {
      uint64_t lane = h * d + e0, n = std::min<uint64_t>(d - e0, R_);
      // x row (b, h, s), lanes [e0, e0 + n) of block e0 / R -> y row (b, s), lanes from `lane`.
      uint64_t src = x.base + (e0 / R_) * x.block_bytes + h * S * row;
      uint64_t dst = y.base + (lane / R_) * y.block_bytes + (lane % R_) * esz_;
      ub_copy_async(src, dst, fmt::format("bytes={} dim=[{}, {}, {}] dim=[{}, {}, {}]", n * esz_, S, row, row, B, H * S * row, S * row));
    }
  copies_wait();
  define(r.getOutput(), y);
  add_bound(layer, 0, 0);
}

}  // namespace vtpu::compiler::codegen
