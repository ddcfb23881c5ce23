// The MXU stream scheduler (run_blocks) and its row chunking (docs/compiler.md, "Code generation").
#include "codegen_internal.h"

namespace vtpu::compiler::codegen {

// Epilogues in flight, their vector operations slotted in between the matmuls of the
// next blocks where an estimate of the timing (docs/microarch.md) says they can issue
// without stalling the in-order sequencer: an epilogue's first operation waits for its
// block's last matmul, done only after the array's fill and drain, and a step of short
// matmuls (one per output row of a convolution) keeps issue busy, so vector work issued
// only between steps would leave the MXUs idle meanwhile. The accumulators are split
// into as many regions as the largest block leaves room for (acc_regions), so blocks
// keep streaming while earlier epilogues wait. Flags: f(2+m) matmul done per block
// (waited in block order per MXU), the epilogue flag its epilogue operations (flags.h).
//
// Two ways to place the epilogues' operations, by the stream's shape:
// - steps of several short matmuls (a convolution's one per output row), or background
//   work to fit in: each operation goes in before the next matmul the timing estimate
//   says it can issue by without stalling (slot_in);
// - steps of one long matmul per MXU (a matmul's blocks): an epilogue starts once about
//   `lag` cycles of later matmuls have been issued (`clock` estimates each step's cycles),
//   then takes one phase per step. There the per-matmul slotting measured slower (BERT-base
//   layer, bf16, batch 1: 23676 cycles against 23090).
//
// The epilogue flag counts the epilogue operations done, so an epilogue's next phase waits until it
// has counted up to its own previous operation j: the other epilogues' operations issued
// after it keep the unit busy. Operations issue in order but finish after their class's
// latency, so one issued after j with a shorter latency may finish first and count in its
// place: those that can (docs/microarch.md: k after j finishes first only if the issue
// cycles from j's end to k's end plus k's latency are below j's latency) are waited for too.
class StreamScheduler {
 public:
  StreamScheduler(Codegen& cg, std::vector<Block>& blocks, std::vector<std::pair<std::string, uint64_t>> background,
                  std::vector<SideWork> side, std::vector<std::pair<std::string, double>> transfers)
      : cg_(cg), blocks_(blocks), nm_(cg.cfg_.core.mxu.count), side_work_(!side.empty()), transfers_(std::move(transfers)),
        mxc_(cg.cfg_.core.mxu) {
    streams_.resize(nm_);
    for (size_t b = 0; b < blocks_.size(); ++b) {
      streams_[b % nm_].blocks.push_back(b);
      for (size_t g = 0; g < blocks_[b].groups.size(); ++g) streams_[b % nm_].tiles.push_back({b, g});
    }
    uint64_t span = 1;
    for (const Block& b : blocks_)
      for (const TileGroup& g : b.groups)
        for (const MatmulStep& st : g.steps) span = std::max(span, st.acc_row + st.rows);
    nreg_ = cg.acc_regions(span), region_rows_ = cg.cfg_.core.accumulators.rows / nreg_;
    slotted_ = !background.empty();
    for (const Block& b : blocks_)
      for (const TileGroup& g : b.groups) slotted_ |= g.steps.size() > 1;
    started_.assign(blocks_.size(), false);
    mxu_free_.assign(nm_, 0), shifted_.assign(nm_, 0), operand_held_.assign(nm_, std::nullopt);
    drain_lat_ = config::mxu_fill_drain_cycles(cg.cfg_);
    vlat_ = std::max({config::vector_latency(cg.cfg_, isa::OpClass::VecAlu), config::vector_latency(cg.cfg_, isa::OpClass::VecRescale),
                      config::vector_latency(cg.cfg_, isa::OpClass::VecConvert)});
    bytes_per_cycle_ = config::hbm_bytes_per_cycle(cg.cfg_);
    lag_ = drain_lat_ + 2;  // about in + R + C + out (docs/compiler.md)
    if (!background.empty()) {
      Pending bp{nm_, 0, {}};
      bp.free = true;
      for (auto& [text, occ] : background) bp.phases.push_back(std::move(text)), bp.occs.push_back(occ), bp.waits.push_back(false);
      pending_.push_back(std::move(bp));
    }
    for (SideWork& w : side) {
      Pending sp{nm_, 0, {}};
      sp.free = true;
      sp.deps = std::move(w.deps);
      for (VecStep& st : w.steps) sp.phases.push_back(std::move(st.text)), sp.occs.push_back(st.occ), sp.waits.push_back(st.waits);
      pending_.push_back(std::move(sp));
    }
    tile_pos_.assign(nm_, 0), blocks_done_.assign(nm_, 0), block_done_.assign(nm_, 0);
  }

  void run(bool constant_tiles, const std::optional<std::pair<std::string, size_t>>& ready) {
    prologue(constant_tiles, ready);
    // Steps: the longest stream's tile groups.
    for (const Stream& st : streams_) steps_ = std::max(steps_, st.tiles.size());
    for (bool work = true; work;) work = step();
    while (next_transfer_ < transfers_.size()) cg_.code_ += transfers_[next_transfer_++].first;
    cg_.hoist_at_ = cg_.code_.size();  // the next stream's prologue may go here
    finish(pending_.size(), true);
    wait_upto(issued_, vdone_);
  }

 private:
  struct Stream {
    std::vector<size_t> blocks;  // indices into `blocks`
    std::vector<std::pair<size_t, size_t>> tiles;  // (block, group) in order
  };
  // An epilogue (or background or side work) in flight.
  struct Pending {
    uint32_t mxu;
    uint64_t region;
    std::vector<std::string> phases;
    uint64_t last = 0;  // the epilogue flag's count of its last operation issued
    uint64_t start_at = 0;  // not slotted: the `clock` from which its first operation may wait
    size_t next = 0;
    bool closed = false;
    size_t block = 0;
    uint64_t ready = 0, occ = 0;  // estimates: when its next phase's input is there; one phase's issue cycles
    bool free = false;  // background or side work: no MXU to wait for
    std::vector<uint64_t> occs = {};  // free: each phase's issue cycles
    std::vector<bool> waits = {};  // free: whether the phase waits for the one before
    std::vector<size_t> deps = {};  // side work: the blocks whose epilogues its first phase waits for
  };

  // Prologue: two tiles into each FIFO, one into each shadow.
  void prologue(bool constant_tiles, const std::optional<std::pair<std::string, size_t>>& ready) {
    std::string prologue;
    uint64_t tiles = 0, wloads = 0;
    for (uint32_t m = 0; m < nm_; ++m) {
      const Stream& s = streams_[m];
      for (size_t i = 0; i < std::min<size_t>(2, s.tiles.size()); ++i) {
        const TileRef& t = blocks_[s.tiles[i].first].groups[s.tiles[i].second].tile;
        prologue += "  " + emit::li(wfifo_reg(m), int64_t(t.addr)) + "\n";
        prologue += "  " + emit::dma_wfifo({t.desc}, wfifo_reg(m), m) + "\n";
      }
      if (!s.tiles.empty()) prologue += "  " + emit::mxu_wload(m) + "\n", ++wloads;
      tiles += std::min<size_t>(2, s.tiles.size());
    }
    std::string& code = cg_.code_;
    std::optional<size_t>& hoist_at = cg_.hoist_at_;
    cg_.wloads_ += wloads;
    // A prologue hoisted into an earlier layer's code runs under that layer's tag (add_bound).
    if ((ready && hoist_at && ready->second <= *hoist_at) || (!ready && constant_tiles && hoist_at))
      cg_.hoisted_tiles_ += tiles, cg_.hoisted_wloads_ += wloads;
    if (ready && hoist_at && ready->second <= *hoist_at) code.insert(*hoist_at, ready->first + prologue);
    else if (ready) code += ready->first + prologue;
    else if (constant_tiles && hoist_at) code.insert(*hoist_at, prologue);
    else code += prologue;
    hoist_at.reset();
  }

  // One step: each MXU's next tile group, then the epilogues of the blocks it completes.
  // Returns false when no MXU had work left.
  bool step() {
    bool work = false;
    for (++step_; next_transfer_ < transfers_.size() && transfers_[next_transfer_].second * double(steps_) < double(step_);)
      cg_.code_ += transfers_[next_transfer_++].first, bundle(now_);
    // This step: each MXU's next tile group. Their matmuls are interleaved across the MXUs
    // so that in-order issue never leaves one MXU idle behind another's queue.
    std::vector<const TileGroup*> grp(nm_, nullptr);
    std::vector<uint64_t> base(nm_, 0);
    size_t longest = 0;
    for (uint32_t m = 0; m < nm_; ++m) {
      if (tile_pos_[m] >= streams_[m].tiles.size()) continue;
      work = true;
      if (!take_group(m, grp[m], base[m])) continue;
      longest = std::max(longest, grp[m]->steps.size());
    }
    for (size_t k = 0; k < longest; ++k)
      for (uint32_t m = 0; m < nm_; ++m)
        if (grp[m] && k < grp[m]->steps.size()) issue_matmul(m, *grp[m], k, base[m]);
    if (!slotted_) advance_by_clock(grp);
    std::vector<std::pair<uint32_t, std::pair<size_t, uint64_t>>> finished;  // (mxu, (block, region))
    for (uint32_t m = 0; m < nm_; ++m) {
      if (!grp[m]) continue;
      auto [bi, gi] = streams_[m].tiles[tile_pos_[m]];
      if (gi + 1 == blocks_[bi].groups.size()) finished.push_back({m, {bi, blocks_done_[m] % nreg_}}), blocks_done_[m]++;
      tile_pos_[m]++;
    }
    for (auto& [m, br] : finished) start_epilogue(m, br.first, br.second);
    std::erase_if(pending_, [](const Pending& p) { return p.closed || (p.free && p.next >= p.phases.size()); });
    return work;
  }

  // MXU m's next tile group in `grp` and its accumulator region's first row in `base`, or
  // false when it sits this step out.
  bool take_group(uint32_t m, const TileGroup*& grp, uint64_t& base) {
    auto [bi, gi] = streams_[m].tiles[tile_pos_[m]];
    // A block whose input an earlier block's epilogue writes: its matmuls wait until that
    // epilogue has issued its last operation (the MXU sits out this step meanwhile).
    if (gi == 0 && blocks_[bi].needs >= 0) {
      size_t nb = size_t(blocks_[bi].needs);
      if (!epilogue_issued(nb)) return false;
      if (Pending* q = find_block(nb); q && !q->closed) wait_upto(q->last, q->ready), q->closed = true;
    }
    uint64_t region = blocks_done_[m] % nreg_;
    base = region * region_rows_;
    // The accumulator region must be free: finish the epilogues (in order) up to the
    // one that still reads it, interleaved.
    if (gi == 0)
      for (size_t i = 0; i < pending_.size(); ++i)
        if (!pending_[i].free && pending_[i].mxu == m && pending_[i].region == region && !pending_[i].closed) {
          finish(i + 1, false);
          break;
        }
    grp = &blocks_[bi].groups[gi];
    return true;
  }

  // Matmul k of MXU m's tile group, with the weight loads that keep its FIFO two tiles ahead.
  void issue_matmul(uint32_t m, const TileGroup& grp, size_t k, uint64_t base) {
    const Stream& s = streams_[m];
    auto [bi, gi] = s.tiles[tile_pos_[m]];
    const MatmulStep& st = grp.steps[k];
    bool last = gi + 1 == blocks_[bi].groups.size() && k + 1 == grp.steps.size();
    uint64_t issue = std::max({now_, mxu_free_[m], k == 0 ? shifted_[m] : 0});
    if (slotted_ || side_work_) slot_in(issue, !slotted_);
    bool loaded = false;
    std::string src = cg_.addr_ref_held(st.src, int(kOperandRegs + m), operand_held_[m], loaded);
    if (loaded) bundle(now_);
    auto opt = [](bool on) { return on ? std::optional(true) : std::nullopt; };
    std::string op = emit::mxu_matmul(m, {src}, emit::addr(0, base + st.acc_row), st.rows, cg_.dtype_,
                                      st.stride ? std::optional(st.stride) : std::nullopt, opt(st.accumulate), opt(k == 0),
                                      last ? std::optional(emit::flag(FlagPlan::mxu(m))) : std::nullopt);
    if (k == 0) {
      if (tile_pos_[m] + 1 < s.tiles.size()) op += " || " + emit::mxu_wload(m), ++cg_.wloads_;
      if (tile_pos_[m] + 2 < s.tiles.size()) {
        auto [b2, g2] = s.tiles[tile_pos_[m] + 2];
        const TileRef& t = blocks_[b2].groups[g2].tile;
        // The address goes into a register one bundle ahead (read before write).
        cg_.code("  " + emit::li(wfifo_reg(m), int64_t(t.addr)));
        bundle(now_);
        op += " || " + emit::dma_wfifo({t.desc}, wfifo_reg(m), m);
      }
    }
    cg_.code("  " + op);
    uint64_t t = std::max({now_, mxu_free_[m], k == 0 ? shifted_[m] : 0});
    bundle(t);
    mxu_free_[m] = t + st.rows;
    if (k == 0) shifted_[m] = t + config::mxu_swap_to_next_weights_cycles(cg_.cfg_);
    if (last) block_done_[m] = t + st.rows + drain_lat_;
  }

  // Not slotted: the step's estimated cycles move `clock` on, and each epilogue in flight
  // whose lag has passed takes its next phase.
  void advance_by_clock(const std::vector<const TileGroup*>& grp) {
    // A step lasts at least its longest group's rows, but also a weight shift and the
    // load of this step's tiles from memory (a slow memory stretches every step).
    uint64_t step_rows = 0, active = 0;
    for (uint32_t m = 0; m < nm_; ++m) {
      if (!grp[m]) continue;
      uint64_t grows = 0;
      for (const MatmulStep& st : grp[m]->steps) grows += st.rows;
      step_rows = std::max(step_rows, grows);
      ++active;
    }
    uint64_t load = uint64_t(std::ceil(double(active * cg_.R_ * cg_.C_ * cg_.esz_) / bytes_per_cycle_));
    clock_ += std::max<uint64_t>({step_rows, mxc_.weight_shift_cycles, load});
    for (Pending& p : pending_)
      if (!p.free && !p.closed && p.next < p.phases.size() && (p.next > 0 || clock_ >= p.start_at)) advance(p);
  }

  // Block bi has issued its last matmul on MXU m: its epilogue goes in flight.
  void start_epilogue(uint32_t m, size_t bi, uint64_t region) {
    Pending p{m, region, blocks_[bi].epilogue(m, region * region_rows_)};
    uint64_t rows = 0;
    for (const TileGroup& g : blocks_[bi].groups)
      for (const MatmulStep& st : g.steps) rows = std::max(rows, st.acc_row + st.rows);
    p.block = bi;
    p.start_at = clock_ + lag_;
    p.ready = block_done_[m];
    p.occ = cg_.vec_occ(rows);
    pending_.push_back(std::move(p));
    started_[bi] = true;
  }

  // One more bundle, issued no earlier than cycle `at`.
  void bundle(uint64_t at) { now_ = std::max(now_ + 1, at + 1); }

  // Waits on the epilogue flag for operation j (and those that may finish before it, above).
  void wait_upto(uint64_t j, uint64_t done_at) {
    uint64_t need = j;
    for (uint64_t k = j + 1, between = 0; k <= issued_ && between < op_lat_[j]; between += op_occ_[k], ++k)
      if (between + op_occ_[k] + op_lat_[k] < op_lat_[j]) ++need;
    if (consumed_ < need) cg_.code("  " + emit::wait(emit::flag(cg_.flags_.epilogue), need - consumed_)), bundle(done_at);
    consumed_ = std::max(consumed_, need);
  }

  Pending* find_block(size_t bi) {
    for (Pending& q : pending_)
      if (!q.free && q.block == bi) return &q;
    return nullptr;
  }
  // Whether block bi's epilogue has issued every operation (side work and blocks that
  // need it may then go, after a wait for its last one).
  bool epilogue_issued(size_t bi) {
    Pending* q = find_block(bi);
    return started_[bi] && !(q && !q->closed && q->next < q->phases.size());
  }
  // A block's `after` epilogue (split K's first half), issued to its end and waited for
  // (it is always in flight or done by then: it went to the MXUs in the same step or an
  // earlier one).
  void close_block(size_t bi) {
    if (Pending* q = find_block(bi)) {
      if (q->closed) return;
      while (q->next < q->phases.size()) advance(*q);
      wait_upto(q->last, q->ready);
      q->closed = true;
      return;
    }
    if (!started_[bi]) throw InternalError("a split-K block's first half has not started");
  }
  // Issues p's next phase, after the wait it needs.
  void advance(Pending& p) {
    if (p.free) {
      if (p.next == 0)
        for (size_t d : p.deps) close_block(d);
      else if (p.waits[p.next])
        wait_upto(p.last, p.ready);
    } else if (p.next == 0) {
      if (blocks_[p.block].after >= 0) close_block(size_t(blocks_[p.block].after));
      cg_.code("  " + emit::wait(emit::flag(FlagPlan::mxu(p.mxu)))), bundle(p.ready);
    } else {
      wait_upto(p.last, p.ready);
    }
    uint64_t occ = p.free ? p.occs[p.next] : p.occ;
    std::string text = with_flag(p.phases[p.next++], cg_.flags_.epilogue);
    cg_.code_ += text;
    for (size_t at = text.find('\n'); at != std::string::npos && at + 1 < text.size(); at = text.find('\n', at + 1)) bundle(now_);
    uint64_t t = std::max(now_, vfree_);
    bundle(t);
    vfree_ = t + occ;
    p.ready = vdone_ = std::max(vdone_, vfree_ + vlat_);
    p.last = ++issued_;
    op_lat_.push_back(cg_.vec_latency(text));
    op_occ_.push_back(occ);
  }
  // Finishes the epilogues in flight up to `count` of them (in order), one phase of each
  // in turn, so the vector unit works on several while each waits for its previous phase.
  // Background work is left to slot in later unless `all`.
  void finish(size_t count, bool all) {
    for (bool open = true; open;) {
      open = false;
      for (size_t i = 0; i < count && i < pending_.size(); ++i) {
        Pending& p = pending_[i];
        if (p.closed || (p.free && !all)) continue;
        if (p.next < p.phases.size()) {
          advance(p);
          open = true;
        } else {
          wait_upto(p.last, p.ready);  // its last operation has written the output
          p.closed = true;
        }
      }
    }
  }
  // When the next phase of pending_[i] could issue: its matmuls or own previous phase done
  // (and a split-K first half's epilogue), the vector unit free. A first phase waits on its
  // MXU's flag, so blocks of one MXU go in order.
  std::optional<uint64_t> start_of(size_t i) {
    Pending& p = pending_[i];
    if (p.closed || p.next >= p.phases.size()) return std::nullopt;
    if (p.free) {
      uint64_t t = std::max(now_, vfree_);
      if (p.next > 0 && p.waits[p.next]) t = std::max(t, p.ready);
      if (p.next == 0)
        for (size_t d : p.deps) {
          if (!epilogue_issued(d)) return std::nullopt;
          if (Pending* q = find_block(d); q && !q->closed) t = std::max(t, q->ready);
        }
      return t;
    }
    uint64_t t = std::max({now_, vfree_, p.ready});
    if (p.next == 0) {
      for (size_t j = 0; j < i; ++j)
        if (!pending_[j].free && pending_[j].mxu == p.mxu && pending_[j].next == 0) return std::nullopt;
      if (blocks_[p.block].after >= 0)
        if (Pending* q = find_block(size_t(blocks_[p.block].after)); q && !q->closed) {
          if (q->next < q->phases.size()) return std::nullopt;  // it goes first (older)
          t = std::max(t, q->ready);
        }
    }
    return t;
  }
  // Issues the epilogue operations that can start by `until` (the cycle the next matmul
  // would issue anyway), oldest first.
  void slot_in(uint64_t until, bool only_free) {
    for (bool again = true; again;) {
      again = false;
      for (int bg = only_free ? 1 : 0; bg < 2 && !again; ++bg)  // epilogues before background work
        for (size_t i = 0; i < pending_.size(); ++i)
          if (auto t = start_of(i); pending_[i].free == bool(bg) && t && *t <= until) {
            advance(pending_[i]);
            again = true;
            break;
          }
    }
  }

  Codegen& cg_;
  std::vector<Block>& blocks_;
  uint32_t nm_;
  bool side_work_;
  std::vector<std::pair<std::string, double>> transfers_;
  const config::MxuConfig& mxc_;
  std::vector<Stream> streams_;
  uint64_t nreg_ = 0, region_rows_ = 0;
  std::deque<Pending> pending_;
  bool slotted_ = false;
  std::vector<bool> started_;  // its epilogue was put in flight
  // The timing estimate: sequencer cycle, each MXU's data path and weight shift, the
  // vector unit's issue stage and the done cycle of the epilogue operations in flight.
  uint64_t now_ = 0, vfree_ = 0, vdone_ = 0;
  std::vector<uint64_t> mxu_free_, shifted_;
  std::vector<std::optional<uint64_t>> operand_held_;  // what each MXU's operand register holds (addr_ref_held)
  uint64_t drain_lat_ = 0, vlat_ = 0, lag_ = 0, clock_ = 0;
  double bytes_per_cycle_ = 0;
  uint64_t issued_ = 0, consumed_ = 0;
  std::vector<uint64_t> op_lat_{0}, op_occ_{0};  // per epilogue-flag operation, from 1
  std::vector<size_t> tile_pos_, blocks_done_;
  std::vector<uint64_t> block_done_;  // estimated done cycle of each MXU's current block
  size_t next_transfer_ = 0, step_ = 0, steps_ = 1;
};

// Issues the blocks of one layer over the MXUs (see the file comment of codegen_internal.h).
// With `constant_tiles` (weights, not a batch matmul's operand stored by the program),
// the prologue's transfers go right after the previous stream's last matmul (hoist_at_):
// every FIFO is empty and every shadow swapped in by then, and the tiles are in HBM from
// the start, so the loads overlap the previous stream's last epilogues and the layers in
// between instead of delaying this stream's first matmuls.
// A batch matmul's tiles hoist too when their store to HBM was issued before that point:
// `ready` is the wait for it, which then goes in front of the prologue.
// `background`: independent vector instructions ("{flag}" for their flag, with their
// estimated issue cycles) slotted in where the epilogues leave the vector unit free.
// `side`: dependent vector work slotted in the same way once the blocks it needs are done.
// `transfers`: DMA instructions on their own flags, each issued at the step its fraction
// of the stream's steps says, so a long transfer goes in pieces that the weight loads'
// requests need not queue behind.
void Codegen::run_blocks(std::vector<Block>& blocks, bool constant_tiles, std::optional<std::pair<std::string, size_t>> ready,
                         std::vector<std::pair<std::string, uint64_t>> background, std::vector<SideWork> side,
                         std::vector<std::pair<std::string, double>> transfers) {
  StreamScheduler(*this, blocks, std::move(background), std::move(side), std::move(transfers)).run(constant_tiles, ready);
}

// Accumulator regions per MXU that run_blocks uses for blocks of up to `span` rows: as
// many as fit, at least two.
uint64_t Codegen::acc_regions(uint64_t span) const {
  return std::max<uint64_t>(2, cfg_.core.accumulators.rows / std::max<uint64_t>(1, span));
}

// Rows per output block of a matmul with `n_blocks` column blocks (per row chunk): at most
// an accumulator region, and split finer when that balances the blocks over the MXUs
// (6 column blocks on 4 MXUs leave two idle half the time; 12 do not). Finer chunks cost
// extra weight loads, so the count grows only while the busiest MXU's rows shrink.
uint64_t Codegen::row_chunk(uint64_t rows, uint64_t n_blocks) const {
  uint64_t nm = cfg_.core.mxu.count, c0 = ceil_div(rows, acc_region_), best = c0;
  auto busiest = [&](uint64_t c) { return ceil_div(n_blocks * c, nm) * ceil_div(rows, c); };
  for (uint64_t c = c0 + 1; c <= 4 * c0 && ceil_div(rows, c) >= R_; ++c)
    if (busiest(c) < busiest(best)) best = c;
  return ceil_div(rows, best);
}

// Output rows (of `width` pixels) per block of a convolution with `n_blocks` column
// blocks, by row_chunk's rule: at most an accumulator region, and split finer while that
// lowers the busiest MXU's rows (112 rows of 14 pixels in chunks of 36 leave one of four
// MXUs a 4-row remainder; chunks of 28 share them out), keeping a block's matmuls at
// least R rows long so they hide the next weight shift.
uint64_t Codegen::conv_row_chunk(uint64_t out_rows, uint64_t width, uint64_t n_blocks) const {
  uint64_t nm = cfg_.core.mxu.count, most = std::max<uint64_t>(1, acc_region_ / width);
  uint64_t c0 = ceil_div(out_rows, most), best = c0;
  auto busiest = [&](uint64_t c) { return ceil_div(n_blocks * c, nm) * ceil_div(out_rows, c); };
  for (uint64_t c = c0 + 1; c <= 4 * c0 && ceil_div(out_rows, c) * width >= R_; ++c)
    if (busiest(c) < busiest(best)) best = c;
  return ceil_div(out_rows, best);
}

}  // namespace vtpu::compiler::codegen
