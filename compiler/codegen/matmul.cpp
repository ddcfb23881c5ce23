// Matmuls with constant weights, alone or as one stream (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

void Codegen::gen_matmul(tpu::MatmulOp op) {
  if (op->hasAttr(tpu::kAllReduceAttr)) return gen_all_reduce_matmul(op);
  tag(op.getLayer().str());
  MatmulPlan plan;
  std::vector<Block> blocks = plan_matmul(op, 0, plan);
  run_blocks(blocks, true, std::nullopt, {}, std::move(plan.side));
  finish_matmul(plan, op.getLayer().str());
  add_fused_bounds();
}

void Codegen::finish_matmul(const MatmulPlan& p, const std::string& report_as, const std::string& node) {
  ub_.release(p.bias_ub);
  if (p.parts != kNoBias) ub_.release(p.parts);
  if (p.ln_work != kNoBias) ub_.release(p.ln_work);
  add_bound(report_as, p.macs, p.hbm_bytes, std::nullopt, node);  // the tiles are read again, whether shared or not
  define(p.out, p.y);
}

// Matmuls that read the same activation (attention's query, key and value projections)
// run as one stream of blocks: one weight prologue and one drain of the array instead of
// one each, and their blocks spread over the MXUs together. Returns false when `op` has
// no such siblings right after it (only constants and reshapes that keep the rows in
// between; those reshapes are done here). Reported under the first one's name.
bool Codegen::gen_matmul_group(tpu::MatmulOp op) {
  auto stream = op->getAttr(kStreamAttr);  // planned (plan.cpp, streams)
  if (!stream) return false;
  std::vector<tpu::MatmulOp> group{op};
  std::vector<tpu::ReshapeOp> aliases;
  for (mlir::Operation* n = op->getNextNode(); n; n = n->getNextNode()) {
    if (mlir::isa<tosa::ConstOp>(n)) continue;
    if (n->getAttr(kStreamAttr) != stream) break;
    if (auto r = mlir::dyn_cast<tpu::ReshapeOp>(n)) aliases.push_back(r);
    else group.push_back(mlir::cast<tpu::MatmulOp>(n));
  }
  for (tpu::ReshapeOp r : aliases) {  // aliases only: no code
    gen_reshape(r);
    for (Value operand : r->getOperands()) release(operand);
    done_.insert(r.getOperation());
  }
  std::string layer = op.getLayer().str();
  tag(layer);
  uint64_t nt = 0;
  bool same_k = true;  // split K only when every matmul splits alike (pairs stay side by side)
  for (tpu::MatmulOp m : group) {
    nt += ceil_div(uint64_t(shape_of(m.getWeight())[1]), C_);
    same_k &= shape_of(m.getWeight())[0] == shape_of(group[0].getWeight())[0];
  }
  std::vector<MatmulPlan> plans(group.size());
  std::vector<Block> blocks;
  std::vector<SideWork> side;
  for (size_t i = 0; i < group.size(); ++i) {
    auto b = plan_matmul(group[i], nt, plans[i], same_k);
    int64_t offset = int64_t(blocks.size());  // `after` and `deps` index the matmul's own blocks
    for (Block& blk : b) {
      if (blk.after >= 0) blk.after += offset;
      blocks.push_back(std::move(blk));
    }
    for (SideWork& w : plans[i].side) {
      for (size_t& d : w.deps) d += size_t(offset);
      side.push_back(std::move(w));
    }
  }
  run_blocks(blocks, true, std::nullopt, {}, std::move(side));
  for (size_t i = 0; i < group.size(); ++i) {
    finish_matmul(plans[i], layer, group[i].getLayer().str());
    for (Value operand : group[i]->getOperands()) release(operand);
    done_.insert(group[i].getOperation());
  }
  add_fused_bounds();
  return true;
}

// The blocks of a matmul (its output allocated, its bias rows loaded), row chunks chosen
// for `nt_total` column blocks in the stream (0: its own).
std::vector<Block> Codegen::plan_matmul(tpu::MatmulOp op, uint64_t nt_total, MatmulPlan& plan, bool allow_split) {
  std::string layer = op.getLayer().str();
  const Act& x = act(op.getInput());
  auto ws = shape_of(op.getWeight());
  uint64_t K = uint64_t(ws[0]), N = uint64_t(ws[1]);
  if (x.features != K) throw CompileError(fmt::format("node '{}': input has {} features, weights expect {}", layer, x.features, K));
  auto bias = const_floats(op.getBias(), layer);
  // A head view (planned: tpu.heads "view" on the output's only user) read as a batch
  // matmul's left-hand side reads whole array rows from a head's first lane: the last row's
  // read runs up to a row past the tensor.
  Value out = op.getOutput();
  bool slack = !is_int32(out) && out.hasOneUse() && heads(*out.getUsers().begin()) == "view";
  Act y = is_int32(op.getOutput())
              ? out_act(op.getOutput(), fmt::format("the output of '{}'", layer))
              : new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer), false, slack ? R_ * esz_ : 0,
                        residual_base(op.getOutput()));
  // Matmuls sharing a weight constant share its tiles in HBM (and its INT8 quantization).
  auto cached = weight_cache_.find(op.getWeight().getAsOpaquePointer());
  bool fresh = cached == weight_cache_.end();
  if (fresh) {
    SharedWeights sw;
    auto w = const_floats(op.getWeight(), layer);
    if (q8_) {
      sw.scales = quantize(w, K, N);
    }
    uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_);
    sw.tiles.assign(nt, std::vector<TileRef>(kt));
    for (uint64_t n = 0; n < nt; ++n)
      for (uint64_t k = 0; k < kt; ++k) sw.tiles[n][k] = weight_tile(w, K, N, k, n);
    cached = weight_cache_.emplace(op.getWeight().getAsOpaquePointer(), std::move(sw)).first;
  }
  const SharedWeights& shared = cached->second;
  std::vector<double> acc_scale;
  if (q8_)
    for (double ws_ : shared.scales) acc_scale.push_back(ws_ * scale(op.getInput()));
  uint64_t bias_ub = bias_rows(bias, acc_scale);
  auto eps = epilogue_params(N, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, op.getClampMin().convertToDouble(),
                             op.getClampMax().convertToDouble());
  uint64_t kt = ceil_div(K, R_), nt = ceil_div(N, C_);
  uint64_t mc = row_chunk(x.rows, nt_total ? nt_total : nt);
  const auto& tiles = shared.tiles;
  // What the planner put into the epilogues (plan.cpp).
  llvm::StringRef kind = epilogue_kind(op);
  FusedPhases fused = kind == "elementwise" ? fuse_elementwise(op, y, layer) : kind == "chain" ? fuse_chain(op, y, layer) : FusedPhases();
  tpu::LayerNormOp ln;
  if (fused)
    if (FusedPhases cvt = prepare_layernorm(op, y, &ln)) {
      FusedPhases add = fused;
      fused = [add, cvt](uint64_t n, uint64_t off, uint64_t rows) {
        auto ph = add(n, off, rows);
        for (auto& p : cvt(n, off, rows)) ph.push_back(p);
        return ph;
      };
    }
  if (kind == "scale") {  // attention's 1 / sqrt(d), a power of two, applied to the queries
    auto af = mlir::cast<tpu::AffineOp>(planned(op, "scale").at(0));
    std::string p = new_param(fmt::format("scale=[{}]", double(const_floats(af.getScale(), af.getLayer().str())[0])));
    fused = [this, y, p](uint64_t n, uint64_t off, uint64_t rows) {
      uint64_t o = y.base + n * y.block_bytes + off;
      std::string pre, at = reg_ref(o, 6, pre);
      return std::vector<std::string>{
          pre + "  " + emit::vec_affine(ub_ref(at), ub_ref(at), rows, isa::Dtype::Bf16, emit::Param{p}, kPendingFlag) + "\n"};
    };
  }
  // Split K: when the output blocks do not spread evenly over the MXUs (BERT's 768-wide
  // projections at batch 1: 6 blocks on 4 MXUs, two of them doing twice the work), each
  // block's K tiles go in two halves on two MXUs, if that lowers the busiest MXU's tile
  // count. The first half's epilogue copies its partial sums to unified-buffer rows, the
  // second's adds them to its own before the usual epilogue.
  // The first half takes the smaller share of tiles, so it never finishes after the
  // second (they go to the MXUs side by side), whose epilogue waits for it.
  // With a layer norm beside the stream (below), its rows wait for their chunk's last block:
  // up to 8 chunks leave little of it after the stream's last matmul.
  if (ln && x.rows > R_) mc = std::min(mc, std::max<uint64_t>(R_, align_up(ceil_div(x.rows, 8), cfg_.core.vector.sublanes)));
  uint64_t nm = cfg_.core.mxu.count, chunks = ceil_div(x.rows, mc), kh = kt / 2;
  auto busiest = [&](uint64_t nblocks, uint64_t tiles_per) { return ceil_div(nblocks, nm) * tiles_per; };
  uint64_t part_bytes = align_up(mc * C_ * 4, block_align_) * nt * chunks;
  uint64_t stream_blocks = (nt_total ? nt_total : nt) * chunks;  // a group's blocks spread together
  bool split = allow_split && !is_int32(op.getOutput()) && kt >= 2 && busiest(2 * stream_blocks, kt - kh) < busiest(stream_blocks, kt) &&
               ub_.largest_free() >= part_bytes + (1 << 16);
  uint64_t parts = split ? ub_take(part_bytes, fmt::format("the partial sums of '{}'", layer)) : kNoBias;
  isa::Dtype acc_dt = q8_ ? isa::Dtype::Int32 : isa::Dtype::Fp32;
  std::vector<Block> blocks;
  std::vector<std::vector<size_t>> chunk_blocks(ceil_div(x.rows, mc));  // the blocks of each row chunk
  auto add_blocks = [&](uint64_t n, uint64_t r0) {
    uint64_t rows = std::min(mc, x.rows - r0);
    uint64_t part = split ? parts + (n * chunks + r0 / mc) * align_up(mc * C_ * 4, block_align_) : 0;
    if (split) {
      Block a;
      for (uint64_t k = 0; k < kh; ++k)
        a.groups.push_back({tiles[n][k], {{x.base + k * x.block_bytes + r0 * R_ * esz_, rows, 0, 0, k > 0}}});
      a.epilogue = [this, rows, part, acc_dt](uint32_t m, uint64_t acc_row) {
        uint64_t g = uint64_t(m) * cfg_.core.accumulators.rows + acc_row;
        std::string pre, at = reg_ref(part, 8, pre);
        return std::vector<std::string>{pre + "  " + emit::vec_copy(ub_ref(at), acc_at(g), rows, acc_dt, kPendingFlag) + "\n"};
      };
      chunk_blocks[r0 / mc].push_back(blocks.size());
      blocks.push_back(std::move(a));
    }
    Block b;
    for (uint64_t k = split ? kh : 0; k < kt; ++k)
      b.groups.push_back({tiles[n][k], {{x.base + k * x.block_bytes + r0 * R_ * esz_, rows, 0, 0, k > (split ? kh : 0)}}});
    if (split) b.after = int64_t(blocks.size()) - 1;
    uint64_t out = y.base + n * y.block_bytes + r0 * C_ * out_esz_, bias_row = bias_at(bias_ub, n);
    std::string ep = eps[n];
    b.epilogue = [this, rows, bias_row, ep, out, fused, n, r0, split, part, acc_dt](uint32_t m, uint64_t acc_row) {
      std::vector<std::string> ph;
      if (split) {
        uint64_t g = uint64_t(m) * cfg_.core.accumulators.rows + acc_row;
        std::string pre, at = reg_ref(part, 8, pre);
        ph.push_back(pre + "  " + emit::vec_add(acc_at(g), acc_at(g), ub_ref(at), rows, acc_dt, std::nullopt, kPendingFlag) + "\n");
      }
      for (auto& p : epilogue(m, acc_row, rows, bias_row, ep, out)) ph.push_back(p);
      if (fused)
        for (auto& p : fused(n, r0 * C_ * esz_, rows)) ph.push_back(p);
      return ph;
    };
    chunk_blocks[r0 / mc].push_back(blocks.size());
    blocks.push_back(std::move(b));
  };
  // A layer norm of the output runs beside the stream, row chunk by row chunk, once the
  // chunk's blocks are done: the blocks then go chunk by chunk.
  bool side_ln = ln && x.rows > mc;
  for (uint64_t i = 0; i < nt * chunk_blocks.size(); ++i) {
    uint64_t n = side_ln ? i % nt : i / chunk_blocks.size(), c = side_ln ? i / nt : i % chunk_blocks.size();
    add_blocks(n, c * mc);
  }
  plan = {layer, y, bias_ub, x.rows * K * N, K * N * esz_, op.getOutput(), parts, {}, kNoBias};
  if (side_ln) {
    auto it = ln_prepared_.find(ln.getOperation());
    plan.ln_work = it->second;
    ln_prepared_.erase(it);
    uint64_t base = align_up(plan.ln_work, cfg_.core.unified_buffer.row_bytes);
    LnLayout lay = ln_layout(y.rows, y.blocks);
    ln_load_mask(y, base, lay);
    Act yl = new_act(shape_of(ln.getOutput()), fmt::format("the output of '{}'", ln.getLayer().str()));
    tpu::AffineOp af = ln_affine(ln);
    // Chains of R rows at most, so that one chunk's operations interleave.
    for (uint64_t c = 0; c < chunk_blocks.size(); ++c)
      for (uint64_t r0 = c * mc; r0 < std::min(x.rows, c * mc + mc); r0 += R_)
        plan.side.push_back({chunk_blocks[c], ln_steps(ln, y, yl, base, lay, r0, std::min<uint64_t>({R_, x.rows - r0, c * mc + mc - r0}), true, af)});
    fused_[ln.getOperation()] = yl;
    fused_bounds_.push_back({layer, "layernorm", yl.shape});
    if (af) fuse_ln_affine(af, yl, layer);
  }
  return blocks;
}

}  // namespace vtpu::compiler::codegen
