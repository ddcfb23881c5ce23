// A core's DMA engine (dma.load, dma.store, dma.copy, dma.wfifo, dma.send's local side):
// the rules of docs/microarch.md, "DMA engine", as accept_dma and exec_dma.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "machine.h"
#include "vtpu/config/timing.h"

namespace vtpu::sim::detail {

using isa::Dtype;

namespace {
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
}  // namespace

Machine::Accept Machine::accept_dma(const Operation& op, uint64_t t, const OpRef& ref) {
  Accept a{t, StallReason::DmaBusy};
  std::erase_if(dma_done_, [&](uint64_t d) { return d <= t; });
  uint32_t slots = cfg_.core.dma.max_in_flight;
  if (dma_done_.size() >= slots) {
    std::vector<uint64_t> d = dma_done_;
    std::sort(d.begin(), d.end());
    a.t = d[d.size() - slots];  // the earliest cycle at which only slots-1 remain in flight
  }
  if (ref.def->mnemonic == "dma.send") {
    if (!fabric_)
      fail(ref, "dma.send moves data between chips, which needs a multi-chip run; this is a single-chip "
                "simulation");
    return accept_ici(t, ref);  // the ICI engine carries it (docs/microarch.md, "ICI engine")
  }
  if (ref.def->mnemonic == "dma.wfifo") {
    uint32_t m = check_mxu(ref, "mxu", f(op, SlotId::Dma, "unit"));
    const MxuState& ms = mxu_[m];
    uint64_t depth = cfg_.core.mxu.weight_fifo_tiles;
    if (ms.fifo_occupancy(a.t) >= depth) {
      std::vector<uint64_t> pops;
      for (uint64_t p : ms.pop_times)
        if (p > a.t) pops.push_back(p);
      std::sort(pops.begin(), pops.end());
      // Occupancy falls by one at each pop; find when it drops below depth.
      uint64_t occ = ms.fifo_occupancy(a.t);
      size_t need = size_t(occ - depth + 1);
      if (need > pops.size())
        fail(ref, fmt::format("deadlock: the weight FIFO of MXU {} is full ({} tiles, "
                              "core.mxu.weight_fifo_tiles) and no issued mxu.wload will take a tile out; "
                              "issue mxu.wload before more dma.wfifo",
                              m, depth));
      a = {pops[need - 1], StallReason::WeightFifoFull};
    }
  }
  return a;
}

void Machine::exec_dma(const Operation& op, uint64_t T, const OpRef& ref) {
  if (ref.def->mnemonic == "dma.send") return exec_dma_send(op, T, ref);
  const auto& ub_cfg = cfg_.core.unified_buffer;
  const isa::DmaDescriptor& d = prog_.descriptors[size_t(f(op, SlotId::Dma, "desc"))];
  std::string_view kind = ref.def->mnemonic;
  bool src_ub = kind == "dma.store" || kind == "dma.copy";
  bool dst_ub = kind == "dma.load" || kind == "dma.copy";
  uint64_t src = uint64_t(reg(f(op, SlotId::Dma, "src"))) + d.src_offset;
  uint64_t dst = kind == "dma.wfifo" ? 0 : uint64_t(reg(f(op, SlotId::Dma, "dst"))) + d.dst_offset;
  DmaShape ss = dma_shape(d, true), ds = dma_shape(d, false);
  uint64_t N = d.total_bytes();
  if (d.bytes == 0) fail(ref, fmt::format("descriptor '{}' moves 0 bytes", d.name));

  int64_t src_strides = 0, dst_strides = 0;
  for (const auto& dim : d.dims) src_strides |= dim.src_stride, dst_strides |= dim.dst_stride;
  auto [slo, shi] = check_dma_side(ref, d, src_ub, src, ss, "src", src_strides);
  std::pair<uint64_t, uint64_t> dr{0, 0};
  if (kind != "dma.wfifo") dr = check_dma_side(ref, d, dst_ub, dst, ds, "dst", dst_strides);

  // Row r's source and destination, innermost dimension first; computed as the transfer goes,
  // so a descriptor of 2^32 - 1 rows costs time, not bookkeeping.
  std::array<uint32_t, isa::kMaxDmaDims> cnt{1, 1, 1};
  std::array<int64_t, isa::kMaxDmaDims> sst{0, 0, 0}, dst_st{0, 0, 0};
  for (size_t i = 0; i < d.dims.size(); ++i) cnt[i] = d.dims[i].count, sst[i] = d.dims[i].src_stride, dst_st[i] = d.dims[i].dst_stride;
  const uint64_t nrows = ss.rows;
  auto row = [&](uint64_t r) {
    int64_t i0 = int64_t(r % cnt[0]), i1 = int64_t(r / cnt[0] % cnt[1]), i2 = int64_t(r / (uint64_t(cnt[0]) * cnt[1]));
    return std::pair{src + uint64_t(i0 * sst[0] + i1 * sst[1] + i2 * sst[2]),
                     dst + uint64_t(i0 * dst_st[0] + i1 * dst_st[1] + i2 * dst_st[2])};
  };

  uint64_t S = T + cfg_.core.dma.setup_cycles;
  uint64_t D = S;
  Counters& c = tagc(ref.tag);
  auto ub_port = [&](uint32_t ports) {
    uint64_t occ = ceil_div(N, ub_cfg.row_bytes * ports);
    uint64_t start = std::max(S, dma_port_free_);
    dma_port_free_ = start + occ;
    return start + occ;
  };

  // A transfer that cannot end inside the cycle limit stops the run before it is simulated
  // row by row (2^32 - 1 rows once ran for hours). Each HBM row takes at least its bursts'
  // time on the memory bus at the full bandwidth of every channel (docs/dram.md); a UB copy
  // takes the cycles computed for it below.
  auto check_duration = [&](uint64_t least, const char* how) {
    if (least > opt_.max_cycles || S + least > opt_.max_cycles)
      fail(ref, fmt::format("descriptor '{}' moves {} rows of {} bytes, at least {} cycles {}, past the cycle limit {} "
                            "at cycle {}; check the descriptor's counts or raise --max-cycles",
                            d.name, nrows, d.bytes, least, how, opt_.max_cycles, S));
  };
  if (kind != "dma.copy") {
    const uint64_t bb = std::max<uint64_t>(1, cfg_.memory.burst_bytes);
    const double bus = double(nrows) * double(ceil_div(d.bytes, bb) * bb) / config::hbm_bytes_per_cycle(cfg_);
    check_duration(uint64_t(std::min(bus * (1 - 1e-9), 1.8e19)), "on the memory bus at its full bandwidth");
  } else {
    check_duration(2 * ceil_div(N, ub_cfg.row_bytes), "through the unified buffer's port");
  }

  if (kind == "dma.load") {
    uint64_t H = S;
    for (uint64_t r = 0; r < nrows; ++r) {
      auto [s, t] = row(r);
      H = std::max(H, hbm_port_(s, ub_.get() + t, d.bytes, S, false));
    }
    D = std::max(H, ub_port(ub_cfg.write_ports)) + ub_cfg.write_latency_cycles;
    c.hbm_read_bytes += N, c.ub_write_bytes += N;
  } else if (kind == "dma.store") {
    uint64_t ready = S + ub_cfg.read_latency_cycles, H = ready;
    for (uint64_t r = 0; r < nrows; ++r) {
      auto [s, t] = row(r);
      H = std::max(H, hbm_port_(t, ub_.get() + s, d.bytes, ready, true));
    }
    D = std::max(H, ub_port(ub_cfg.read_ports));
    c.hbm_write_bytes += N, c.ub_read_bytes += N;
  } else if (kind == "dma.copy") {
    uint64_t occ = ceil_div(N, ub_cfg.row_bytes);
    uint64_t start = std::max(S, dma_port_free_);
    dma_port_free_ = start + 2 * occ;
    D = start + 2 * occ + ub_cfg.read_latency_cycles + ub_cfg.write_latency_cycles;
    if (!opt_.timing_only)
      for (uint64_t r = 0; r < nrows; ++r) {
        auto [s, t] = row(r);
        std::memmove(ub_.get() + t, ub_.get() + s, d.bytes);
      }
    c.ub_read_bytes += N, c.ub_write_bytes += N;
  } else if (kind == "dma.wfifo") {
    uint32_t m = check_mxu(ref, "mxu", f(op, SlotId::Dma, "unit"));
    unsigned esz = isa::dtype_bytes(d.dtype);
    if (d.dtype != Dtype::Int8 && d.dtype != Dtype::Bf16)
      fail(ref, fmt::format("descriptor '{}' has dtype {}; weight tiles are int8 or bf16", d.name, isa::dtype_name(d.dtype)));
    if (d.bytes % esz)
      fail(ref, fmt::format("descriptor '{}': row of {} bytes is not a whole number of {} elements", d.name, d.bytes, isa::dtype_name(d.dtype)));
    uint64_t K = nrows, Ncol = d.bytes / esz;
    if (K > R_ || Ncol > C_)
      fail(ref, fmt::format("descriptor '{}' describes a {}x{} weight tile but the array is {}x{} "
                            "(core.mxu.rows x core.mxu.cols)",
                            d.name, K, Ncol, R_, C_));
    auto tile = std::make_shared<Tile>();
    if (!opt_.timing_only) tile->data.resize(N);
    tile->k = uint32_t(K), tile->n = uint32_t(Ncol), tile->dtype = d.dtype;
    uint64_t H = S;
    for (uint64_t r = 0; r < nrows; ++r)
      H = std::max(H, hbm_port_(row(r).first, opt_.timing_only ? nullptr : tile->data.data() + r * d.bytes, d.bytes, S, false));
    // A chip that moves whole tiles (core.mxu.whole_weight_tiles) reads the rest of the tile
    // too: the bytes after the described ones, as one more request (its data unused).
    if (uint64_t whole = uint64_t(R_) * C_ * esz; cfg_.core.mxu.whole_weight_tiles && N < whole) {
      uint64_t rest = whole - N, at = std::min(row(nrows - 1).first + d.bytes, hbm_.capacity() - std::min(hbm_.capacity(), rest));
      H = std::max(H, hbm_port_(at, nullptr, rest, S, false));
      c.hbm_read_bytes += rest, c.wfifo_bytes += rest;
    }
    D = H;
    tile->ready = D;
    tile->loaded_by_bundle = ref.bundle;
    mxu_[m].fifo.push_back(tile);
    c.hbm_read_bytes += N, c.wfifo_bytes += N;
  }

  // Occupancy for the hazard checker: exact row ranges when the rows leave gaps (up to 2^22
  // rows; a larger strided pattern counts as its bounding box, which can only add races).
  auto space = [](bool ub) { return ub ? Space::Ub : Space::Hbm; };
  auto pattern = [&](bool src_side, uint64_t lo, uint64_t hi) {
    std::shared_ptr<std::vector<std::pair<uint64_t, uint64_t>>> v;
    if (nrows * d.bytes == hi - lo || nrows > (uint64_t(1) << 22)) return v;  // contiguous, or too many to list
    v = std::make_shared<std::vector<std::pair<uint64_t, uint64_t>>>();
    v->reserve(nrows);
    for (uint64_t r = 0; r < nrows; ++r) {
      uint64_t b = src_side ? row(r).first : row(r).second;
      v->emplace_back(b, b + d.bytes);
    }
    std::sort(v->begin(), v->end());
    return v;
  };
  Access src_acc{space(src_ub), slo, shi, false, T, D, ref};
  src_acc.rows = pattern(true, slo, shi);
  hazards_.check_and_add(src_acc, prog_);
  if (kind != "dma.wfifo") {
    Access dst_acc{space(dst_ub), dr.first, dr.second, true, T, D, ref};
    dst_acc.rows = pattern(false, dr.first, dr.second);
    hazards_.check_and_add(dst_acc, prog_);
  }

  add_increment(f(op, SlotId::Dma, "flag"), D, StallReason::WaitDma, ref.bundle);
  dma_done_.push_back(D);
  c.dma_transfers++;
  // Busy = cycles with any transfer in flight; transfers issue in order, so the union
  // grows only past its current end.
  c.dma_busy_cycles += D > std::max(T, dma_busy_end_) ? D - std::max(T, dma_busy_end_) : 0;
  dma_busy_end_ = std::max(dma_busy_end_, D);
  charge_done(ref, D);
  trace(Unit::Dma, uint16_t(dma_done_.size() - 1), ref, ref.def->mnemonic.data(), T, D);
}

}  // namespace vtpu::sim::detail
