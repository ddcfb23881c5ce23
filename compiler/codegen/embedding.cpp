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
void Codegen::gen_embedding(tpu::EmbeddingOp op) {
  std::string layer = op.getLayer().str();
  tag(layer);
  auto it = int_hbm_.find(op.getIds().getAsOpaquePointer());
  if (it == int_hbm_.end())
    throw CompileError(fmt::format("node '{}': embedding ids must be an integer model input", layer));
  require_fp32_lane_moves(layer, "loading one token id per row copies");
  uint64_t ids_hbm = it->second, S = numel(shape_of(op.getIds()));
  auto ts = shape_of(op.getTable());
  uint64_t V = uint64_t(ts[0]), D = uint64_t(ts[1]);
  auto w = const_floats(op.getTable(), layer);
  Act y = new_act(shape_of(op.getOutput()), fmt::format("the output of '{}'", layer));
  std::vector<double> acc_scale;
  if (q8_) {
    QWeights qw = quantize(w, V, D);
    w = std::move(qw.q);
    acc_scale = qw.s;  // the one-hot's scale is 1
  }
  uint64_t kt = ceil_div(V, R_), nt = ceil_div(D, C_), nm = cfg_.core.mxu.count;
  // The one-hot rows of a single id must fit before the table is tiled (a large table on a
  // small config fails here, quickly, with the unified buffer's error).
  if (uint64_t one = kt * align_up(R_ * esz_, 64) + (nm + 2) * align_up(C_ * 4, 64); ub_.largest_free() < one)
    ub_take(one, fmt::format("the one-hot rows of '{}' (1 id x {} table rows)", layer, V));
  // The table's tiles packed back to back in one HBM segment (a vocabulary makes many
  // small tiles; one page each would multiply the table's HBM footprint on small arrays).
  std::vector<std::vector<TileRef>> tiles(nt, std::vector<TileRef>(kt));
  {
    std::vector<uint8_t> blob;
    blob.reserve(V * D * esz_);
    std::vector<std::vector<uint64_t>> at(nt, std::vector<uint64_t>(kt));
    for (uint64_t n = 0; n < nt; ++n)
      for (uint64_t k = 0; k < kt; ++k) {
        uint64_t kw = std::min<uint64_t>(R_, V - k * R_), nw = std::min<uint64_t>(C_, D - n * C_);
        at[n][k] = blob.size();
        for (uint64_t r = 0; r < kw; ++r)
          for (uint64_t c = 0; c < nw; ++c) {
            float v = w[(k * R_ + r) * D + n * C_ + c];
            if (q8_) {
              blob.push_back(uint8_t(int8_t(v)));
            } else {
              uint16_t h = bf16_of(v);
              blob.push_back(uint8_t(h & 0xFF)), blob.push_back(uint8_t(h >> 8));
            }
          }
        tiles[n][k].desc = new_desc(fmt::format("bytes={} dtype={} dim=[{}, {}, 0]", nw * esz_, dt_, kw, nw * esz_));
      }
    uint64_t base = hbm_const(std::move(blob));
    for (uint64_t n = 0; n < nt; ++n)
      for (uint64_t k = 0; k < kt; ++k) tiles[n][k].addr = base + at[n][k];
  }
  auto eps = epilogue_params(D, acc_scale, q8_ ? scale(op.getOutput()) : 1.0, -std::numeric_limits<double>::infinity(),
                             std::numeric_limits<double>::infinity());
  // Row ranges: the fewest that minimize the busiest MXU's matmuls.
  uint64_t ks = 1;
  for (uint64_t k2 = 2; k2 <= std::min<uint64_t>(nm, kt); ++k2)
    if (ceil_div(nt * k2, nm) * ceil_div(kt, k2) < ceil_div(nt * ks, nm) * ceil_div(kt, ks)) ks = k2;
  std::vector<uint64_t> k_start(ks + 1);
  for (uint64_t s = 0; s <= ks; ++s) k_start[s] = s * kt / ks;
  uint64_t items = nt * ks, per_mxu = ceil_div(items, nm), steps = ceil_div(kt, ks);
  // The lane numbers 0..R-1 as one fp32 row, and the parameters of the one-hot steps.
  std::vector<uint8_t> lanes(C_ * 4);
  for (uint64_t i = 0; i < C_; ++i) {
    float f = float(i);
    std::memcpy(&lanes[i * 4], &f, 4);
  }
  uint64_t row32 = C_ * 4, acc_rows = cfg_.core.accumulators.rows;
  uint64_t iota = ub_take(row32, fmt::format("the lane numbers of '{}'", layer));
  {
    std::string d = new_desc(fmt::format("bytes={} src_off={} dst_off={}", row32, hbm_const(std::move(lanes)), iota));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
  }
  std::string neg_scale = new_param(fmt::format("scale=[{}] bias=[0]", -double(V)));
  std::string neg_clamp = new_param(fmt::format("min=0 max={}", V));
  std::string at_most_1 = new_param("max=1");
  std::string one_minus = new_param("scale=[-1] bias=[1]");
  std::string next_block = new_param(fmt::format("scale=[1] bias=[{}]", -double(R_)));
  // Ids per chunk: as many as half the free unified buffer holds (one-hot rows, the id
  // rows, a work row and one e row per range each) and one MXU's accumulators hold.
  uint64_t per_row = kt * R_ * esz_ + (ks + 2) * row32;
  uint64_t chunk = std::min<uint64_t>({S, 8192, acc_rows, std::max<uint64_t>(1, ub_.largest_free() / 2 / per_row)});
  uint64_t pb = align_up(chunk * R_ * esz_, 64);  // one lane block of a partial result
  uint64_t parts = ks > 1 ? ub_take((ks - 1) * nt * pb, fmt::format("the partial results of '{}'", layer)) : 0;
  uint64_t chunks = 0;
  for (uint64_t t0 = 0; t0 < S; t0 += chunk, ++chunks) {
    uint64_t T = std::min(chunk, S - t0);
    uint64_t bb = align_up(T * R_ * esz_, 64), fb = align_up(T * row32, 64);
    uint64_t hot = ub_take(kt * bb + (ks + 2) * fb, fmt::format("the one-hot rows of '{}' ({} ids x {} table rows)", layer, T, V));
    uint64_t idr = hot + kt * bb, tmp = idr + fb, e0 = tmp + fb;  // e rows of range s at e0 + s * fb
    clear(idr, fb);
    std::string d = new_desc(fmt::format("bytes=4 src_off={} dst_off={} dim=[{}, 4, {}]", ids_hbm + t0 * 4, idr, T, row32));
    code(fmt::format("  dma.load desc={} src=r0 dst=r0 flag=f1", d));
    code("  wait f1");
    code(fmt::format("  li r1, {} || li r2, {}", idr, e0));
    code(fmt::format("  li r3, {} || li r4, {}", tmp, iota));
    vec_wait(fmt::format("vec.rsum dst=ub[r2+0] a=ub[r1+0] rows={} dt=int32 odt=fp32", T));
    vec_wait(fmt::format("vec.affine dst=ub[r3+0] a=ub[r2+0] rows={} dt=fp32 param={}", T, neg_scale));
    vec_wait(fmt::format("vec.clamp dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", T, neg_clamp));
    vec_wait(fmt::format("vec.add dst=ub[r2+0] a=ub[r2+0] b=ub[r3+0] rows={} dt=fp32", T));
    vec_wait(fmt::format("vec.sub dst=ub[r2+0] a=ub[r2+0] b=ub[r4+0] rows={} dt=fp32 bcast=1", T));
    for (uint64_t s = 1; s < ks; ++s) {  // e of range s starts at its first row block
      code(fmt::format("  li r1, {}", e0 + s * fb));
      vec_wait(fmt::format("vec.affine dst=ub[r1+0] a=ub[r2+0] rows={} dt=fp32 param={}", T,
                           new_param(fmt::format("scale=[1] bias=[{}]", -double(k_start[s] * R_)))));
    }
    // One-hot block k_start[s] + j, and e of range s moved on to the next block.
    std::vector<std::pair<uint64_t, uint64_t>> gens;  // (range, step) in the order the steps need them
    for (uint64_t j = 0; j < steps; ++j)
      for (uint64_t s = 0; s < ks; ++s)
        if (k_start[s] + j < k_start[s + 1]) gens.push_back({s, j});
    size_t next_gen = 0;
    auto gen_one = [&] {
      auto [s, j] = gens[next_gen++];
      uint64_t k = k_start[s] + j;
      code(fmt::format("  li r2, {} || li r3, {}", e0 + s * fb, tmp));
      code(fmt::format("  li r5, {}", hot + k * bb));
      vec_wait(fmt::format("vec.mul dst=ub[r3+0] a=ub[r2+0] b=ub[r2+0] rows={} dt=fp32", T));
      vec_wait(fmt::format("vec.clamp dst=ub[r3+0] a=ub[r3+0] rows={} dt=fp32 param={}", T, at_most_1));
      vec_wait(fmt::format("vec.cvt dst=ub[r5+0] a=ub[r3+0] rows={} dt=fp32 odt={}", T, dt_));
      vec_wait(fmt::format("vec.affine dst=ub[r5+0] a=ub[r5+0] rows={} dt={} param={}", T, dt_, one_minus));
      if (k + 1 < k_start[s + 1]) vec_wait(fmt::format("vec.affine dst=ub[r2+0] a=ub[r2+0] rows={} dt=fp32 param={}", T, next_block));
    };
    auto gens_through = [&](uint64_t j) {  // gens for steps <= j
      size_t c = 0;
      while (c < gens.size() && gens[c].second <= j) ++c;
      return c;
    };
    // Items (column block n, range s), item i on MXU i % nm in slot i / nm; slots of one
    // MXU that fit its accumulators at once form a pass.
    uint64_t slots = std::max<uint64_t>(1, acc_rows / T);
    for (uint64_t p0 = 0; p0 < per_mxu; p0 += slots) {
      uint64_t p1 = std::min(per_mxu, p0 + slots);
      struct Mm {
        uint64_t item, k;
      };
      std::vector<std::vector<std::vector<Mm>>> rounds;  // [round][mxu] -> at most one matmul
      for (uint64_t j = 0; j < steps; ++j)
        for (uint64_t q = p0; q < p1; ++q) {
          std::vector<std::vector<Mm>> r(nm);
          for (uint64_t m = 0; m < nm; ++m) {
            uint64_t i = q * nm + m;
            if (i >= items) continue;
            uint64_t s = i / nt;
            if (k_start[s] + j < k_start[s + 1]) r[m].push_back({i, k_start[s] + j});
          }
          rounds.push_back(std::move(r));
        }
      std::vector<std::vector<const Mm*>> stream(nm);  // each MXU's matmuls in order
      for (const auto& r : rounds)
        for (uint64_t m = 0; m < nm; ++m)
          for (const Mm& mm : r[m]) stream[m].push_back(&mm);
      auto tile_of = [&](const Mm& mm) -> const TileRef& { return tiles[mm.item % nt][mm.k]; };
      hoist_at_.reset();  // MXU work outside run_blocks: no later prologue may move before it
      for (uint64_t m = 0; m < nm; ++m) {  // two tiles into each FIFO, one into each shadow
        for (size_t t = 0; t < std::min<size_t>(2, stream[m].size()); ++t) {
          code(fmt::format("  li r{}, {}", 16 + m, tile_of(*stream[m][t]).addr));
          code(fmt::format("  dma.wfifo desc={} src=r{} mxu={}", tile_of(*stream[m][t]).desc, 16 + m, m));
        }
        if (!stream[m].empty()) code(fmt::format("  mxu.wload mxu={}", m));
      }
      std::vector<size_t> pos(nm, 0);
      for (size_t ri = 0; ri < rounds.size(); ++ri) {
        uint64_t j = ri / (p1 - p0);
        if (p0 == 0)
          for (size_t need = gens_through(j); next_gen < need;) gen_one();  // this step's one-hot blocks first
        for (uint64_t m = 0; m < nm; ++m)
          for (const Mm& mm : rounds[ri][m]) {
            size_t t = pos[m]++;
            uint64_t s = mm.item / nt, slot = mm.item / nm - p0;
            std::string op = fmt::format("mxu.matmul mxu={} src={} dst=r0+{} rows={} dtype={} swap=1{}{}", m,
                                         addr_ref(hot + mm.k * bb, 10 + int(m)), slot * T, T, dt_,
                                         mm.k > k_start[s] ? " acc=1" : "", t + 1 == stream[m].size() ? fmt::format(" flag=f{}", 2 + m) : "");
            if (t + 1 < stream[m].size()) op += fmt::format(" || mxu.wload mxu={}", m);
            if (t + 2 < stream[m].size()) {
              code(fmt::format("  li r{}, {}", 16 + m, tile_of(*stream[m][t + 2]).addr));
              op += fmt::format(" || dma.wfifo desc={} src=r{} mxu={}", tile_of(*stream[m][t + 2]).desc, 16 + m, m);
            }
            code("  " + op);
          }
        if (p0 == 0 && next_gen < gens.size()) gen_one();  // builds ahead while the MXUs stream
      }
      // Epilogues: accumulators -> output rows (a range's partial results aside).
      for (uint64_t m = 0; m < nm; ++m)
        if (!stream[m].empty()) code(fmt::format("  wait f{}", 2 + m));
      for (uint64_t q = p0; q < p1; ++q)
        for (uint64_t m = 0; m < nm; ++m) {
          uint64_t i = q * nm + m;
          if (i >= items) continue;
          uint64_t s = i / nt, n = i % nt;
          uint64_t out = s == 0 ? y.base + n * y.block_bytes + t0 * C_ * esz_ : parts + ((s - 1) * nt + n) * pb;
          for (std::string ph : epilogue(uint32_t(m), (q - p0) * T, T, kNoBias, eps[n], out)) {
            for (size_t at = ph.find("{flag}"); at != std::string::npos; at = ph.find("{flag}")) ph.replace(at, 6, "f20");
            code_ += ph;
            code("  wait f20");
          }
        }
    }
    for (uint64_t s = 1; s < ks; ++s)
      for (uint64_t n = 0; n < nt; ++n) {
        code(fmt::format("  li r1, {} || li r2, {}", y.base + n * y.block_bytes + t0 * C_ * esz_, parts + ((s - 1) * nt + n) * pb));
        vec_wait(fmt::format("vec.add dst=ub[r1+0] a=ub[r1+0] b=ub[r2+0] rows={} dt={}", T, dt_));
      }
    ub_.release(hot);
  }
  if (ks > 1) ub_.release(parts);
  ub_.release(iota);
  add_bound(layer, S * V * D, chunks * V * D * esz_ + S * 4);
  define(op.getOutput(), y);
}

}  // namespace vtpu::compiler::codegen
