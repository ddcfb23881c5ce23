// A chip's side of a multi-chip system: the ICI engine (ici.send, ici.signal, dma.send),
// barriers, and what the network delivers back. docs/microarch.md, "Chips and links",
// "ICI engine" and "Time across chips", states the rules implemented here.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "machine.h"

namespace vtpu::sim::detail {

namespace {
uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
Space space_of(IciSpace s) { return s == IciSpace::Ub ? Space::Ub : Space::Hbm; }
}  // namespace

// ---- accept ----

Machine::Accept Machine::accept_ici(uint64_t t, const OpRef& ref) {
  if (!fabric_)
    fail(ref, "ICI operations move data between chips, which needs a multi-chip system (system.chips > 1 and a "
              "torus in ici.shape); this is a single-chip run");
  if (ref.def->op_class == isa::OpClass::IciSignal) return {t, StallReason::IciBusy};  // takes no engine slot
  std::erase_if(ici_inflight_, [&](const InFlight& s) { return s.acked != kUnknown && s.acked <= t; });
  size_t slots = cfg_.ici.max_in_flight;
  if (ici_inflight_.size() < slots) return {t, StallReason::IciBusy};
  std::vector<uint64_t> known;
  for (const InFlight& s : ici_inflight_)
    if (s.acked != kUnknown) known.push_back(s.acked);
  std::sort(known.begin(), known.end());
  size_t need = ici_inflight_.size() - slots + 1;
  if (known.size() >= need) return {known[need - 1], StallReason::IciBusy};
  blocked_ = fmt::format("{}: waits for a free ICI engine slot ({} sends unacknowledged, ici.max_in_flight)",
                         where(ref), ici_inflight_.size());
  return {kUnknown, StallReason::IciBusy};
}

Machine::Accept Machine::accept_barrier(const Operation& op, uint64_t t, const OpRef& ref) {
  if (!fabric_) return {t, StallReason::Barrier};  // a single chip reaches every barrier at once
  uint32_t id = uint32_t(f(op, SlotId::Control, "barrier"));
  if (!barrier_wait_ || barrier_wait_->bundle != ref.bundle) {
    barrier_wait_ = BarrierWait{id, barrier_gen_[id], ref.bundle};
    fabric_->barrier_arrive(id, barrier_gen_[id], t);
  }
  uint64_t r = fabric_->barrier_release(id, barrier_wait_->generation, t);
  if (r != kUnknown) return {std::max(r, t), StallReason::Barrier};
  blocked_ = fmt::format("{}: waits at barrier {} (its arrival number {} there); not there yet: {}", where(ref), id,
                         barrier_wait_->generation + 1, fabric_->barrier_missing(id, barrier_wait_->generation));
  return {kUnknown, StallReason::Barrier};
}

void Machine::exec_barrier(const Operation& op) {
  if (!fabric_) return;
  barrier_gen_[size_t(f(op, SlotId::Control, "barrier"))]++;
  barrier_wait_.reset();
}

// ---- issue ----

uint32_t Machine::check_destination(const OpRef& ref, int64_t chip) {
  const config::Topology& topo = fabric_->topology();
  if (chip < 0 || uint64_t(chip) >= topo.chips())
    fail(ref, fmt::format("destination chip {} does not exist: the system has {} chips (system.chips, ids 0..{})",
                          chip, topo.chips(), topo.chips() - 1));
  if (uint32_t(chip) == fabric_->physical_chip())
    fail(ref, fmt::format("sends to its own chip ({}); copy locally with dma.copy or dma.load/dma.store",
                          topo.name(uint32_t(chip))));
  return uint32_t(chip);
}

void Machine::exec_ici(const Operation& op, uint64_t T, const OpRef& ref) {
  auto F = [&](std::string_view n) { return f(op, SlotId::Ici, n); };
  uint32_t chip = check_destination(ref, int64_t(reg(F("chip"))));
  if (ref.def->op_class == isa::OpClass::IciSignal) {
    start_signal(chip, int(F("flag")), T, ref);
    return;
  }
  SendArgs a;
  a.desc = uint32_t(F("desc"));
  a.src = reg(F("src"));
  a.dst = reg(F("dst"));
  a.dst_chip = chip;
  a.src_space = F("src_mem") ? IciSpace::Hbm : IciSpace::Ub;
  a.dst_space = F("dst_mem") ? IciSpace::Hbm : IciSpace::Ub;
  a.flag = int(F("flag"));
  a.sflag = int(F("sflag"));
  start_send(a, T, ref);
}

void Machine::exec_dma_send(const Operation& op, uint64_t T, const OpRef& ref) {
  const config::Topology& topo = fabric_->topology();
  unsigned link = unsigned(f(op, SlotId::Dma, "unit"));
  std::optional<uint32_t> to = topo.neighbour(fabric_->physical_chip(), link);
  if (!to)
    fail(ref, fmt::format("link={} (dimension {}, {} direction) leads nowhere from {} in torus {}{}", link, link / 2,
                          link % 2 ? "-" : "+", topo.name(fabric_->physical_chip()), fmt::join(topo.shape(), "x"),
                          topo.wraparound() ? "" : " (a mesh: the edges have no link outwards)"));
  SendArgs a;
  a.desc = uint32_t(f(op, SlotId::Dma, "desc"));
  a.src = reg(f(op, SlotId::Dma, "src"));
  a.dst = reg(f(op, SlotId::Dma, "dst"));
  a.dst_chip = *to;
  a.flag = int(f(op, SlotId::Dma, "flag"));
  start_send(a, T, ref);
}

void Machine::start_send(const SendArgs& a, uint64_t T, const OpRef& ref) {
  const isa::DmaDescriptor& d = prog_.descriptors[a.desc];
  const auto& ub_cfg = cfg_.core.unified_buffer;
  if (d.bytes == 0) fail(ref, fmt::format("descriptor '{}' moves 0 bytes", d.name));
  bool src_ub = a.src_space == IciSpace::Ub, dst_ub = a.dst_space == IciSpace::Ub;
  uint64_t src = a.src + d.src_offset, dst = a.dst + d.dst_offset;
  int64_t src_strides = 0, dst_strides = 0;
  for (const auto& dim : d.dims) src_strides |= dim.src_stride, dst_strides |= dim.dst_stride;
  // Every chip of a system has the same memories, so the sender checks the destination too.
  auto [slo, shi] = check_dma_side(ref, d, src_ub, src, dma_shape(d, true), "src", src_strides);
  auto [dlo, dhi] = check_dma_side(ref, d, dst_ub, dst, dma_shape(d, false), "dst", dst_strides);
  const uint64_t N = d.total_bytes(), P = cfg_.ici.packet_bytes, npk = ceil_div(N, P);
  const uint64_t S = T + cfg_.core.dma.setup_cycles;
  // A send that cannot end inside the cycle limit stops the run before its rows are listed and
  // its bytes copied (a legal descriptor of 2^32 - 1 rows would ask for 64 GiB of rows): its
  // bytes take at least one link byte time each (docs/microarch.md, "Chips and links").
  const double link_cycles = double(N) * cfg_.clock_mhz / (cfg_.ici.link_bandwidth_gbytes_per_s * 1000.0);
  const auto least = uint64_t(std::min(link_cycles * (1 - 1e-9), 1.8e19));
  if (least > opt_.max_cycles || S + least > opt_.max_cycles)
    fail(ref, fmt::format("descriptor '{}' sends {} rows of {} bytes, at least {} cycles on the link at its full bandwidth, "
                          "past the cycle limit {} at cycle {}; check the descriptor's counts or raise --max-cycles",
                          d.name, N / d.bytes, d.bytes, least, opt_.max_cycles, S));
  std::vector<std::pair<uint64_t, uint64_t>> rows = dma_rows(d, src, dst);

  IciTransfer tv;
  IciTransfer* t = &tv;
  t->src_chip = fabric_->sim_chip();
  t->src_phys = fabric_->physical_chip();
  t->dst_phys = a.dst_chip;
  t->seq = ici_seq_++;
  t->bundle = ref.bundle;
  t->mnemonic = ref.def->mnemonic.data();
  t->issue = T;
  t->dst_space = a.dst_space;
  t->dst_lo = dlo, t->dst_hi = dhi;
  t->flag = a.flag;
  t->bytes = N;
  // The payload as the source holds it at issue; a timing-only run reads and copies nothing.
  auto data = opt_.timing_only ? nullptr : std::make_shared<std::vector<uint8_t>>(N);
  auto drows = std::make_shared<std::vector<std::pair<uint64_t, uint64_t>>>();
  drows->reserve(rows.size());
  t->packet_ready.assign(npk, S);
  Counters& c = tagc(ref.tag);
  if (src_ub) {
    // The engine's own unified-buffer read port, shared by its sends in issue order.
    uint64_t port = uint64_t(ub_cfg.row_bytes) * ub_cfg.read_ports;
    uint64_t start = std::max(S, ici_port_free_);
    for (uint64_t k = 0; k < npk; ++k)
      t->packet_ready[k] = start + ceil_div(std::min(N, (k + 1) * P), port) + ub_cfg.read_latency_cycles;
    ici_port_free_ = start + ceil_div(N, port);
    for (size_t r = 0; data && r < rows.size(); ++r) std::memcpy(data->data() + r * d.bytes, ub_.get() + rows[r].first, d.bytes);
    c.ub_read_bytes += N;
  } else {
    // One memory request per row at S; a packet leaves once all its bytes have arrived.
    for (size_t r = 0; r < rows.size(); ++r) {
      uint64_t done = hbm_port_(rows[r].first, data ? data->data() + r * d.bytes : nullptr, d.bytes, S, false);
      uint64_t o = r * d.bytes;
      for (uint64_t k = o / P; k <= (o + d.bytes - 1) / P; ++k) t->packet_ready[k] = std::max(t->packet_ready[k], done);
    }
    c.hbm_read_bytes += N;
  }
  for (auto [s, dd] : rows) drows->emplace_back(dd, d.bytes);
  t->data = std::move(data);
  t->dst_rows = std::move(drows);

  // The source stays read until the destination acknowledges (sflag), which only a
  // synchronisation can tell.
  Access src_acc{space_of(a.src_space), slo, shi, false, T, kUnknown, ref};
  src_acc.rows = dma_pattern(rows, d.bytes, true, slo, shi);
  src_acc.xfer = t->key();
  hazards_.check_and_add(src_acc, prog_);

  uint16_t lane = 0;
  while (std::any_of(ici_inflight_.begin(), ici_inflight_.end(), [&](const InFlight& s) {
    return s.lane == lane && (s.acked == kUnknown || s.acked > T);
  }))
    ++lane;
  ici_inflight_.push_back({t->seq, kUnknown, ref.tag, ref.bundle, a.sflag, T, lane, t->mnemonic});
  c.ici_sends++;
  c.ici_bytes_sent += N;
  c.ici_hop_bytes += N * fabric_->topology().hops(fabric_->physical_chip(), a.dst_chip);
  fabric_->send(std::move(tv));
}

void Machine::start_signal(uint32_t dst_chip, int flag, uint64_t T, const OpRef& ref) {
  if (flag == 0) fail(ref, "ici.signal on f0, which means 'no flag'; use f1..f63");
  IciTransfer t;
  t.src_chip = fabric_->sim_chip();
  t.src_phys = fabric_->physical_chip();
  t.dst_phys = dst_chip;
  t.seq = ici_seq_++;
  t.signal = true;
  t.bundle = ref.bundle;
  t.mnemonic = ref.def->mnemonic.data();
  t.issue = T;
  t.flag = flag;
  t.packet_ready = {T};
  tagc(ref.tag).ici_signals++;
  charge_done(ref, T + 1);
  fabric_->send(std::move(t));
}

// ---- deliveries ----

void Machine::apply_deliveries(std::vector<IciDelivery>&& ds) {
  for (IciDelivery& d : ds) {
    const IciTransfer* t = d.transfer.get();
    switch (d.kind) {
      case IciDelivery::Kind::WriteBegins: {
        if (fabric_->symmetric()) break;  // another chip's bytes in a translated layout
        OpRef who{t->bundle, SlotId::Ici, isa::find_op(t->mnemonic), 0};
        Access a{space_of(t->dst_space), t->dst_lo, t->dst_hi, true, d.cycle, kUnknown, who};
        std::vector<std::pair<uint64_t, uint64_t>> rows;
        rows.reserve(t->dst_rows->size());
        for (auto [addr, n] : *t->dst_rows) rows.emplace_back(0, addr);
        a.rows = dma_pattern(rows, t->dst_rows->front().second, false, t->dst_lo, t->dst_hi);
        a.xfer = t->key();
        a.remote_chip = int(t->src_phys);
        hazards_.check_and_add(a, prog_);
        break;
      }
      case IciDelivery::Kind::WriteLands: {
        if (!fabric_->symmetric()) {
          hazards_.set_end(t->key(), d.cycle);
          auto at = std::upper_bound(landings_.begin(), landings_.end(), d.cycle,
                                     [](uint64_t c, const Landing& l) { return c < l.done; });
          landings_.insert(at, Landing{d.cycle, d.transfer});
        }
        add_increment(t->flag, d.cycle, StallReason::WaitIci, t->bundle);
        Counters& c = tagc(0);  // another chip's bytes belong to none of this program's tags
        c.last_done = std::max(c.last_done, d.cycle);
        passes_.done(0, d.cycle);
        c.ici_bytes_received += t->bytes;
        (t->dst_space == IciSpace::Ub ? c.ub_write_bytes : c.hbm_write_bytes) += t->bytes;
        last_done_ = std::max(last_done_, d.cycle);
        break;
      }
      case IciDelivery::Kind::SignalLands:
        add_increment(t->flag, d.cycle, StallReason::WaitIci, t->bundle);
        last_done_ = std::max(last_done_, d.cycle);
        break;
      case IciDelivery::Kind::SendAcked: {
        auto it = std::find_if(ici_inflight_.begin(), ici_inflight_.end(), [&](const InFlight& s) { return s.seq == d.seq; });
        if (it == ici_inflight_.end()) throw InternalError(fmt::format("ICI acknowledgement of unknown send {}", d.seq));
        it->acked = d.cycle;
        hazards_.set_end((uint64_t(fabric_->sim_chip()) << 40 | d.seq) + 1, d.cycle);
        add_increment(it->sflag, d.cycle, StallReason::WaitIci, it->bundle);
        OpRef ref{it->bundle, SlotId::Ici, nullptr, it->tag};
        charge_done(ref, d.cycle);
        trace(Unit::Ici, it->lane, ref, it->name, it->issue, d.cycle);
        break;
      }
    }
  }
}

void Machine::land_writes(uint64_t T) {
  size_t n = 0;
  for (; n < landings_.size() && landings_[n].done <= T; ++n) {
    const IciTransfer& t = *landings_[n].t;
    if (!t.data) continue;  // a timing-only run moves no data
    const uint8_t* p = t.data->data();
    for (auto [addr, bytes] : *t.dst_rows) {
      if (t.dst_space == IciSpace::Ub) std::memcpy(ub_.get() + addr, p, bytes);
      else hbm_.write(addr, p, bytes);
      p += bytes;
    }
  }
  landings_.erase(landings_.begin(), landings_.begin() + long(n));
}

void Machine::land_all() { land_writes(kUnknown); }

}  // namespace vtpu::sim::detail
