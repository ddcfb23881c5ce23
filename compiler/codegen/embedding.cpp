// Embedding lookups by run-time ids (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Embedding lookup by run-time ids: the chip cannot address memory by a loaded value, so
// each id becomes a one-hot row over the table's V rows and the lookup is one-hot x table
// on the MXUs (the table as weights, per-channel int8 or bf16). Per chunk of ids:
//  - the ids (int32 in HBM) land one per UB row in lane 0; vec.rsum spreads each over
//    its row as fp32 (exact below 2^24); a negative id gets V added (min(max(-V id, 0), V));
//  - e = id - lane; per block k of R table rows: one-hot = 1 - min(e_k^2, 1), exactly 1
//    where e_k = id - kR - lane = 0 and 0 elsewhere, converted to the MXU dtype;
//  - matmuls of the one-hot blocks with the table's tiles; each output is one table row
//    times 1 plus zeros, so the selection is exact (INT8: the row's codes, then the
//    per-channel RESCALE to the output's scale). Ids outside [-V, V) match no row: zeros.
// Schedule: every output block (column block n, table-row range s) keeps its accumulator
// rows for the whole lookup; the MXUs walk the table's row blocks in step, one matmul per
// block and step, and between those rounds the vector unit builds the one-hot blocks the
// next steps need, so building them overlaps the matmuls. The row ranges (ks of them)
// spread the blocks evenly over the MXUs; their partial results are added at the end
// (exact: one row plus zeros).
// A bf16 table with NaN or infinite entries would poison every lookup (0 x NaN = NaN), so
// those entries are 0 in the table's tiles and each kind present (+Inf, -Inf, NaN) gets
// mask columns, 1 where the table has it, looked up with the values (more column blocks);
// each selected mask then becomes +-Inf (1 x 2^100 x 2^100; 0 stays 0) added to the row,
// and for NaN added and subtracted again (Inf - Inf), as a Gather of the row would give.
// The lookup's steps; its locals are members (see gen_embedding).
class EmbeddingLookup {
 public:
  EmbeddingLookup(Codegen& cg, tpu::EmbeddingOp op)
      : cg_(cg), op_(op), layer_(op.getLayer().str()), R_(cg.R_), C_(cg.C_), esz_(cg.esz_), nm_(cg.cfg_.core.mxu.count) {}

  void run() {
    cg_.tag(layer_);
    table();
    constants();
    uint64_t chunks = 0;
    for (uint64_t t0 = 0; t0 < S_; t0 += chunk_, ++chunks) run_chunk(t0);
    if (ks_ > 1) cg_.ub_.release(parts_);
    if (nb_ > nt_) cg_.ub_.release(mask_rows_);
    cg_.ub_.release(iota_);
    // A Gather has no products (docs/reports.md): the one-hot matmuls are array work, which
    // the table's weight tiles bound through the weight path and the memory.
    cg_.add_bound(layer_, 0, chunks * V_ * D_ * esz_ + S_ * 4);
    cg_.define(op_.getOutput(), y_);
  }

 private:
  // The ids, the output and the table's tiles.
  void table() {
    auto it = cg_.int_hbm_.find(op_.getIds().getAsOpaquePointer());
    if (it == cg_.int_hbm_.end())
      throw CompileError(fmt::format("node '{}': embedding ids must be an integer model input", layer_));
    cg_.require_fp32_lane_moves(layer_, "loading one token id per row copies");
    ids_hbm_ = it->second, S_ = numel(shape_of(op_.getIds()));
    auto ts = shape_of(op_.getTable());
    V_ = uint64_t(ts[0]), D_ = uint64_t(ts[1]);
    auto w = const_floats(op_.getTable(), layer_);
    y_ = cg_.new_act(shape_of(op_.getOutput()), fmt::format("the output of '{}'", layer_));
    kt_ = ceil_div(V_, R_), nt_ = nb_ = ceil_div(D_, C_);
    if (non_finite(w)) return masked_table(w);
    std::vector<double> acc_scale;
    if (cg_.q8_) {
      acc_scale = Codegen::quantize(w, V_, D_);  // the one-hot's scale is 1
    }
    one_fits();
    pack_tiles(w, D_);
    eps_ = cg_.epilogue_params(D_, acc_scale, cg_.q8_ ? cg_.scale(op_.getOutput()) : 1.0, -std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::infinity());
  }

  // The one-hot rows of a single id must fit before the table is tiled (a large table on a
  // small config fails here, quickly, with the unified buffer's error).
  void one_fits() {
    if (uint64_t one = kt_ * align_up(R_ * esz_, cg_.block_align_) + (nm_ + 2) * align_up(C_ * 4, cg_.block_align_); cg_.ub_.largest_free() < one)
      cg_.ub_take(one, fmt::format("the one-hot rows of '{}' (1 id x {} table rows)", layer_, V_));
  }

  // The non-finite kinds the table has (masks_), or false.
  bool non_finite(const std::vector<float>& w) {
    const Mask kinds[] = {{"+Inf", 1, false}, {"-Inf", -1, false}, {"NaN", 1, true}};
    for (const Mask& k : kinds)
      for (size_t i = 0; i < w.size(); ++i)
        if (k.is(w[i])) {
          if (cg_.q8_)
            throw CompileError(fmt::format("node '{}': the embedding table has {} at row {}, column {}, which INT8 cannot "
                                           "represent; compile this model in bf16",
                                           layer_, k.name, i / D_, i % D_));
          masks_.push_back(k);
          break;
        }
    return !masks_.empty();
  }

  // bf16 tiles of the finite values (non-finite ones 0), then per kind in masks_ its mask
  // columns, every part whole column blocks (see the top of the file).
  void masked_table(const std::vector<float>& w) {
    nb_ = nt_ * (1 + masks_.size());
    const uint64_t width = nb_ * C_;
    std::vector<float> x(V_ * width, 0.0f);
    for (uint64_t r = 0; r < V_; ++r)
      for (uint64_t c = 0; c < D_; ++c) {
        float v = w[r * D_ + c];
        if (std::isfinite(v)) x[r * width + c] = v;
        for (size_t k = 0; k < masks_.size(); ++k)
          if (masks_[k].is(v)) x[r * width + (1 + k) * nt_ * C_ + c] = 1.0f;
      }
    one_fits();
    pack_tiles(x, width);
    eps_ = cg_.epilogue_params(width, {}, 1.0, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    huge_ = cg_.new_param("scale=[1.2676506002282294e+30] bias=[0]");  // 2^100
    neg_huge_ = cg_.new_param("scale=[-1.2676506002282294e+30] bias=[0]");
  }

  // The table's tiles (rows of `width` values, nb_ column blocks) packed back to back in
  // one HBM segment (a vocabulary makes many small tiles; one page each would multiply the
  // table's HBM footprint on small arrays).
  void pack_tiles(const std::vector<float>& w, uint64_t width) {
    tiles_.assign(nb_, std::vector<TileRef>(kt_));
    std::vector<uint8_t> blob;
    blob.reserve(V_ * width * esz_);
    std::vector<std::vector<uint64_t>> at(nb_, std::vector<uint64_t>(kt_));
    for (uint64_t n = 0; n < nb_; ++n)
      for (uint64_t k = 0; k < kt_; ++k) {
        uint64_t kw = std::min<uint64_t>(R_, V_ - k * R_), nw = std::min<uint64_t>(C_, width - n * C_);
        at[n][k] = blob.size();
        for (uint64_t r = 0; r < kw; ++r)
          for (uint64_t c = 0; c < nw; ++c) {
            float v = w[(k * R_ + r) * width + n * C_ + c];
            if (cg_.q8_) {
              blob.push_back(uint8_t(int8_t(v)));
            } else {
              uint16_t h = bf16_of(v);
              blob.push_back(uint8_t(h & 0xFF)), blob.push_back(uint8_t(h >> 8));
            }
          }
        tiles_[n][k].desc = cg_.new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, cg_.dt_, kw, nw * esz_));
      }
    uint64_t base = cg_.hbm_const(std::move(blob));
    for (uint64_t n = 0; n < nb_; ++n)
      for (uint64_t k = 0; k < kt_; ++k) tiles_[n][k].addr = base + at[n][k];
  }

  // The table-row ranges, the lane numbers, the one-hot steps' parameters and the chunks.
  void constants() {
    // Row ranges: the fewest that minimize the busiest MXU's matmuls.
    for (uint64_t k2 = 2; k2 <= std::min<uint64_t>(nm_, kt_); ++k2)
      if (ceil_div(nb_ * k2, nm_) * ceil_div(kt_, k2) < ceil_div(nb_ * ks_, nm_) * ceil_div(kt_, ks_)) ks_ = k2;
    k_start_.resize(ks_ + 1);
    for (uint64_t s = 0; s <= ks_; ++s) k_start_[s] = s * kt_ / ks_;
    items_ = nb_ * ks_, per_mxu_ = ceil_div(items_, nm_), steps_ = ceil_div(kt_, ks_);
    // The lane numbers 0..R-1 as one fp32 row, and the parameters of the one-hot steps.
    std::vector<uint8_t> lanes(C_ * 4);
    for (uint64_t i = 0; i < C_; ++i) {
      float f = float(i);
      std::memcpy(&lanes[i * 4], &f, 4);
    }
    row32_ = C_ * 4, acc_rows_ = cg_.cfg_.core.accumulators.rows;
    iota_ = cg_.ub_take(row32_, fmt::format("the lane numbers of '{}'", layer_));
    cg_.load_constant(std::move(lanes), iota_);
    neg_scale_ = cg_.new_param(fmt::format("scale=[{}] bias=[0]", -double(V_)));
    neg_clamp_ = cg_.new_param(fmt::format("min=0 max={}", V_));
    at_most_1_ = cg_.new_param("max=1");
    one_minus_ = cg_.new_param("scale=[-1] bias=[1]");
    next_block_ = cg_.new_param(fmt::format("scale=[1] bias=[{}]", -double(R_)));
    // Ids per chunk: as many as half the free unified buffer holds (one-hot rows, the id
    // rows, a work row and one e row per range each, and the masks) and one MXU's
    // accumulators hold.
    uint64_t per_row = kt_ * R_ * esz_ + (ks_ + 2) * row32_ + (nb_ - nt_) * R_ * esz_;
    chunk_ = std::min<uint64_t>({S_, 8192, acc_rows_, std::max<uint64_t>(1, cg_.ub_.largest_free() / 2 / per_row)});
    pb_ = align_up(chunk_ * R_ * esz_, cg_.block_align_);  // one lane block of a partial result
    parts_ = ks_ > 1 ? cg_.ub_take((ks_ - 1) * nb_ * pb_, fmt::format("the partial results of '{}'", layer_)) : 0;
    if (nb_ > nt_) mask_rows_ = cg_.ub_take((nb_ - nt_) * pb_, fmt::format("the non-finite masks of '{}'", layer_));
  }

  // Where column block n of the chunk's lookup goes: the output's rows, or a mask's.
  uint64_t out_at(uint64_t n) const {
    return n < nt_ ? y_.base + n * y_.block_bytes + t0_ * C_ * esz_ : mask_rows_ + (n - nt_) * pb_;
  }

  // The chunk's selected masks made +-Inf (or 0) and added to its rows (NaN: subtracted again).
  void apply_masks() {
    for (size_t k = 0; k < masks_.size(); ++k)
      for (uint64_t n = 0; n < nt_; ++n) {
        cg_.code(bundle({emit::li(reg(1), int64_t(out_at(n))), emit::li(reg(2), int64_t(out_at((1 + k) * nt_ + n)))}));
        cg_.vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), T_, cg_.dtype_, emit::Param{masks_[k].sign < 0 ? neg_huge_ : huge_}));
        cg_.vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), T_, cg_.dtype_, emit::Param{huge_}));
        cg_.vec_wait(emit::vec_add(ub_reg(1), ub_reg(1), ub_reg(2), T_, cg_.dtype_));
        if (masks_[k].nan) cg_.vec_wait(emit::vec_sub(ub_reg(1), ub_reg(1), ub_reg(2), T_, cg_.dtype_));
      }
  }

  // Ids [t0, t0 + T): their rows, the one-hot blocks built between the passes' matmuls,
  // and the ranges' partial results added up.
  void run_chunk(uint64_t t0) {
    t0_ = t0, T_ = std::min(chunk_, S_ - t0);
    bb_ = align_up(T_ * R_ * esz_, cg_.block_align_), fb_ = align_up(T_ * row32_, cg_.block_align_);
    hot_ = cg_.ub_take(kt_ * bb_ + (ks_ + 2) * fb_, fmt::format("the one-hot rows of '{}' ({} ids x {} table rows)", layer_, T_, V_));
    load_ids();
    // One-hot block k_start[s] + j, and e of range s moved on to the next block.
    gens_.clear(), next_gen_ = 0;  // (range, step) in the order the steps need them
    for (uint64_t j = 0; j < steps_; ++j)
      for (uint64_t s = 0; s < ks_; ++s)
        if (k_start_[s] + j < k_start_[s + 1]) gens_.push_back({s, j});
    // Items (column block n, range s), item i on MXU i % nm in slot i / nm; slots of one
    // MXU that fit its accumulators at once form a pass.
    uint64_t slots = std::max<uint64_t>(1, acc_rows_ / T_);
    for (uint64_t p0 = 0; p0 < per_mxu_; p0 += slots) run_pass(p0, std::min(per_mxu_, p0 + slots));
    for (uint64_t s = 1; s < ks_; ++s)
      for (uint64_t n = 0; n < nb_; ++n) {
        cg_.code(bundle({emit::li(reg(1), int64_t(out_at(n))), emit::li(reg(2), int64_t(parts_ + ((s - 1) * nb_ + n) * pb_))}));
        cg_.vec_wait(emit::vec_add(ub_reg(1), ub_reg(1), ub_reg(2), T_, cg_.dtype_));
      }
    apply_masks();
    cg_.ub_.release(hot_);
  }

  // The chunk's ids, one per row in lane 0, spread over their rows as fp32 (a negative id
  // plus V), then e = id - lane for each range.
  void load_ids() {
    uint64_t T = T_, idr = hot_ + kt_ * bb_, tmp = idr + fb_, e0 = tmp + fb_;  // e rows of range s at e0 + s * fb
    cg_.clear(idr, fb_);
    std::string d = cg_.new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, 4, {}]", ids_hbm_ + t0_ * 4, idr, T, row32_));
    cg_.code("  " + emit::dma_load(emit::Desc{d}, cg_.hbm_base(ids_hbm_), reg(0), emit::flag(1)));
    cg_.code("  " + emit::wait(emit::flag(1)));
    cg_.code(bundle({emit::li(reg(1), int64_t(idr)), emit::li(reg(2), int64_t(e0))}));
    cg_.code(bundle({emit::li(reg(3), int64_t(tmp)), emit::li(reg(4), int64_t(iota_))}));
    const isa::Dtype fp32 = isa::Dtype::Fp32;
    cg_.vec_wait(emit::vec_rsum(ub_reg(2), ub_reg(1), T, isa::Dtype::Int32, fp32));
    cg_.vec_wait(emit::vec_affine(ub_reg(3), ub_reg(2), T, fp32, emit::Param{neg_scale_}));
    cg_.vec_wait(emit::vec_clamp(ub_reg(3), ub_reg(3), T, fp32, emit::Param{neg_clamp_}));
    cg_.vec_wait(emit::vec_add(ub_reg(2), ub_reg(2), ub_reg(3), T, fp32));
    cg_.vec_wait(emit::vec_sub(ub_reg(2), ub_reg(2), ub_reg(4), T, fp32, true));
    for (uint64_t s = 1; s < ks_; ++s) {  // e of range s starts at its first row block
      cg_.code("  " + emit::li(reg(1), int64_t(e0 + s * fb_)));
      cg_.vec_wait(emit::vec_affine(ub_reg(1), ub_reg(2), T, fp32,
                                    emit::Param{cg_.new_param(fmt::format("scale=[1] bias=[{}]", -double(k_start_[s] * R_)))}));
    }
  }

  // The next one-hot block: 1 - min(e^2, 1), and e moved on to the range's next block.
  void gen_one() {
    uint64_t tmp = hot_ + kt_ * bb_ + fb_, e0 = tmp + fb_;
    auto [s, j] = gens_[next_gen_++];
    uint64_t k = k_start_[s] + j, T = T_;
    cg_.code(bundle({emit::li(reg(2), int64_t(e0 + s * fb_)), emit::li(reg(3), int64_t(tmp))}));
    cg_.code("  " + emit::li(reg(5), int64_t(hot_ + k * bb_)));
    const isa::Dtype fp32 = isa::Dtype::Fp32;
    cg_.vec_wait(emit::vec_mul(ub_reg(3), ub_reg(2), ub_reg(2), T, fp32));
    cg_.vec_wait(emit::vec_clamp(ub_reg(3), ub_reg(3), T, fp32, emit::Param{at_most_1_}));
    cg_.vec_wait(emit::vec_cvt(ub_reg(5), ub_reg(3), T, fp32, cg_.dtype_));
    cg_.vec_wait(emit::vec_affine(ub_reg(5), ub_reg(5), T, cg_.dtype_, emit::Param{one_minus_}));
    if (k + 1 < k_start_[s + 1]) cg_.vec_wait(emit::vec_affine(ub_reg(2), ub_reg(2), T, fp32, emit::Param{next_block_}));
  }
  size_t gens_through(uint64_t j) const {  // gens for steps <= j
    size_t c = 0;
    while (c < gens_.size() && gens_[c].second <= j) ++c;
    return c;
  }

  // Slots [p0, p1) of every MXU: the matmuls of the table's row blocks in step, the one-hot
  // blocks built between them (first pass), then the epilogues.
  void run_pass(uint64_t p0, uint64_t p1) {
    struct Mm {
      uint64_t item, k;
    };
    std::vector<std::vector<std::vector<Mm>>> rounds;  // [round][mxu] -> at most one matmul
    for (uint64_t j = 0; j < steps_; ++j)
      for (uint64_t q = p0; q < p1; ++q) {
        std::vector<std::vector<Mm>> r(nm_);
        for (uint64_t m = 0; m < nm_; ++m) {
          uint64_t i = q * nm_ + m;
          if (i >= items_) continue;
          uint64_t s = i / nb_;
          if (k_start_[s] + j < k_start_[s + 1]) r[m].push_back({i, k_start_[s] + j});
        }
        rounds.push_back(std::move(r));
      }
    std::vector<std::vector<const Mm*>> stream(nm_);  // each MXU's matmuls in order
    for (const auto& r : rounds)
      for (uint64_t m = 0; m < nm_; ++m)
        for (const Mm& mm : r[m]) stream[m].push_back(&mm);
    auto tile_of = [&](const Mm& mm) -> const TileRef& { return tiles_[mm.item % nb_][mm.k]; };
    cg_.hoist_at_.reset();  // MXU work outside run_blocks: no later prologue may move before it
    for (uint64_t m = 0; m < nm_; ++m) {  // two tiles into each FIFO, one into each shadow
      for (size_t t = 0; t < std::min<size_t>(2, stream[m].size()); ++t) {
        cg_.code("  " + emit::li(wfifo_reg(m), int64_t(tile_of(*stream[m][t]).addr)));
        cg_.code("  " + emit::dma_wfifo(emit::Desc{tile_of(*stream[m][t]).desc}, wfifo_reg(m), m));
      }
      if (!stream[m].empty()) cg_.code("  " + emit::mxu_wload(m)), ++cg_.wloads_;
    }
    std::vector<size_t> pos(nm_, 0);
    for (size_t ri = 0; ri < rounds.size(); ++ri) {
      uint64_t j = ri / (p1 - p0);
      if (p0 == 0)
        for (size_t need = gens_through(j); next_gen_ < need;) gen_one();  // this step's one-hot blocks first
      for (uint64_t m = 0; m < nm_; ++m)
        for (const Mm& mm : rounds[ri][m]) {
          size_t t = pos[m]++;
          uint64_t s = mm.item / nb_, slot = mm.item / nm_ - p0;
          std::string op = emit::mxu_matmul(
              m, emit::Addr{cg_.addr_ref(hot_ + mm.k * bb_, int(kOperandRegs + m))}, emit::addr(0, slot * T_), T_, cg_.dtype_, std::nullopt,
              mm.k > k_start_[s] ? std::optional(true) : std::nullopt, true,
              t + 1 == stream[m].size() ? std::optional(emit::flag(FlagPlan::mxu(m))) : std::nullopt);
          if (t + 1 < stream[m].size()) op += " || " + emit::mxu_wload(m), ++cg_.wloads_;
          if (t + 2 < stream[m].size()) {
            cg_.code("  " + emit::li(wfifo_reg(m), int64_t(tile_of(*stream[m][t + 2]).addr)));
            op += " || " + emit::dma_wfifo(emit::Desc{tile_of(*stream[m][t + 2]).desc}, wfifo_reg(m), m);
          }
          cg_.code("  " + op);
        }
      if (p0 == 0 && next_gen_ < gens_.size()) gen_one();  // builds ahead while the MXUs stream
    }
    // Epilogues: accumulators -> output rows (a range's partial results aside).
    for (uint64_t m = 0; m < nm_; ++m)
      if (!stream[m].empty()) cg_.code("  " + emit::wait(emit::flag(FlagPlan::mxu(m))));
    for (uint64_t q = p0; q < p1; ++q)
      for (uint64_t m = 0; m < nm_; ++m) {
        uint64_t i = q * nm_ + m;
        if (i >= items_) continue;
        uint64_t s = i / nb_, n = i % nb_;
        uint64_t out = s == 0 ? out_at(n) : parts_ + ((s - 1) * nb_ + n) * pb_;
        for (std::string ph : cg_.epilogue(uint32_t(m), (q - p0) * T_, T_, Codegen::kNoBias, eps_[n], out)) {
          cg_.code_ += with_flag(ph, cg_.flags_.vector);
          cg_.code("  " + emit::wait(emit::flag(cg_.flags_.vector)));
        }
      }
  }

  Codegen& cg_;
  tpu::EmbeddingOp op_;
  std::string layer_;
  uint64_t R_, C_, esz_, nm_;
  uint64_t ids_hbm_ = 0, S_ = 0, V_ = 0, D_ = 0, kt_ = 0, nt_ = 0;  // ids, table [V, D], their blocks
  // A kind of non-finite table entry, and its mask's part: the +-Inf it becomes (sign), and
  // whether it is then subtracted again (NaN).
  struct Mask {
    const char* name;
    int sign;
    bool nan;
    bool is(float v) const { return nan ? std::isnan(v) : std::isinf(v) && (v > 0) == (sign > 0); }
  };
  std::vector<Mask> masks_;
  uint64_t nb_ = 0, mask_rows_ = 0;  // column blocks looked up (nt_ and the masks'), the masks' rows
  std::string huge_, neg_huge_;
  Act y_;
  std::vector<std::vector<TileRef>> tiles_;  // [n block][k block]
  std::vector<std::string> eps_;
  uint64_t ks_ = 1, items_ = 0, per_mxu_ = 0, steps_ = 0;  // table-row ranges, (n block, range) items
  std::vector<uint64_t> k_start_;
  uint64_t row32_ = 0, acc_rows_ = 0, iota_ = 0, chunk_ = 0, pb_ = 0, parts_ = 0;
  std::string neg_scale_, neg_clamp_, at_most_1_, one_minus_, next_block_;
  // The chunk being generated: ids [t0, t0 + T), its one-hot blocks at hot (bb bytes each),
  // then the id rows, a work row and the ranges' e rows (fb bytes each).
  uint64_t t0_ = 0, T_ = 0, bb_ = 0, fb_ = 0, hot_ = 0;
  std::vector<std::pair<uint64_t, uint64_t>> gens_;
  size_t next_gen_ = 0;
};

void Codegen::gen_embedding(tpu::EmbeddingOp op) { EmbeddingLookup(*this, op).run(); }

}  // namespace vtpu::compiler::codegen
