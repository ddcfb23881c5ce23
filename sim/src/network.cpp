// The ICI links as packets moving through channels: the rules of docs/microarch.md,
// "Chips and links". Times are in 1/65536 cycle (kSubCycles) so that a link's byte time
// tau is exact enough; every time a chip sees is rounded to whole cycles as the doc says.
#include "network.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "vtpu/config/timing.h"
#include "vtpu/support/error.h"

namespace vtpu::sim::detail {

namespace {
uint64_t cycles_ceil(uint64_t sub) { return (sub + kSubCycles - 1) / kSubCycles; }
uint64_t cycles_floor(uint64_t sub) { return sub / kSubCycles; }
}  // namespace

IciTiming IciTiming::of(const config::Config& cfg) {
  IciTiming t;
  const double f = cfg.clock_mhz;
  t.latency = uint64_t(std::llround(cfg.ici.link_latency_ns * f / 1000.0));
  t.router = uint64_t(std::llround(cfg.ici.router_delay_ns * f / 1000.0));
  // tau = cycles per byte x 65536 = 65536 x f[MHz] x 1e6 / (B[GB/s] x 1e9).
  t.byte_time = std::max<uint64_t>(1, uint64_t(std::llround(65.536 * f / cfg.ici.link_bandwidth_gbytes_per_s)));
  t.packet_bytes = cfg.ici.packet_bytes;
  return t;
}

IciNetwork::IciNetwork(const config::Config& cfg, const config::Topology& topo, bool symmetric, bool record_trace)
    : cfg_(cfg), topo_(topo), symmetric_(symmetric), record_(record_trace), tm_(IciTiming::of(cfg)) {
  hbm_bytes_per_cycle_ = config::hbm_bytes_per_cycle(cfg);
  size_t n = 0;
  if (symmetric_) {
    for (const auto& h : topo.links()) n += h.from == 0;
  } else {
    n = topo.links().size();
  }
  links_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    links_[i].credits = {cfg.ici.buffer_packets, cfg.ici.buffer_packets};
    const auto& h = topo.links()[i];
    links_[i].st.from = h.from, links_[i].st.to = h.to, links_[i].st.dim = h.dim, links_[i].st.dir = h.dir;
  }
  is_dirty_.assign(n, false);
  last_inject_.assign((symmetric_ ? 1 : topo.chips()) * n, Injection{});
}

uint32_t IciNetwork::sim_link(const config::Topology::Hop& h) const {
  // Chip 0's links come first in topology order, so its link index is also its simulated one.
  int i = topo_.link_index(symmetric_ ? 0 : h.from, h.dim, h.dir);
  if (i < 0 || size_t(i) >= links_.size()) throw InternalError("ICI network: a route uses a link that does not exist");
  return uint32_t(i);
}

uint64_t IciNetwork::packet_bytes(const Xfer& x, uint32_t pkt) const {
  if (x.t->signal) return 0;
  uint64_t n = x.t->bytes, p = tm_.packet_bytes;
  return std::min(p, n - uint64_t(pkt) * p);
}

void IciNetwork::post(IciTransfer&& tr) {
  Xfer x;
  auto t = std::make_shared<const IciTransfer>(std::move(tr));
  std::vector<config::Topology::Hop> hops = topo_.route(t->src_phys, t->dst_phys);
  if (hops.empty()) throw InternalError("ICI network: a transfer to its own chip");
  // Dateline: a packet that crosses the wraparound link of a dimension continues in that
  // dimension on virtual channel 1; a new dimension starts again on channel 0.
  bool wrapped = false;
  for (size_t i = 0; i < hops.size(); ++i) {
    if (i > 0 && hops[i].dim != hops[i - 1].dim) wrapped = false;
    wrapped = wrapped || hops[i].wraps;
    x.route.push_back(sim_link(hops[i]));
    x.vc.push_back(wrapped ? 1 : 0);
  }
  x.packets = uint32_t(t->packet_ready.size());
  x.order = t->key();
  x.dst_sim = symmetric_ ? 0 : t->dst_phys;
  x.t = t;
  uint32_t xi = uint32_t(xfers_.size());
  // Packets leave a chip in issue order on each of its links: a later send's packet is
  // never ready before an earlier one's, nor older than it plus its time on the link.
  Injection& last = last_inject_[size_t(t->src_chip) * links_.size() + x.route[0]];
  for (uint32_t k = 0; k < x.packets; ++k) {
    uint64_t ready = std::max(last.ready, t->packet_ready[k] * kSubCycles);
    uint64_t age = std::max(ready, last.age);
    last.ready = ready;
    last.age = age + packet_bytes(x, k) * tm_.byte_time;
    events_.push({ready, Ev::Ready, x.route[0], x.vc[0], Queued{ready, age, x.order, k, xi, 0}});
  }
  xfers_.push_back(std::move(x));
}

uint64_t IciNetwork::next_event_cycle() const { return events_.empty() ? kUnknown : cycles_floor(events_.top().t); }

void IciNetwork::deliver(std::vector<std::vector<IciDelivery>>& out, size_t& n, uint32_t chip, IciDelivery d) {
  // The lookahead rule: nothing a chip learns at this synchronisation happens before it.
  if (d.cycle < now_boundary_)
    throw InternalError(fmt::format("ICI network: a delivery at cycle {} reached a chip at cycle {}", d.cycle,
                                    now_boundary_));
  last_delivery_ = std::max(last_delivery_, d.cycle);
  out[chip].push_back(std::move(d));
  ++n;
}

size_t IciNetwork::advance(uint64_t until, std::vector<std::vector<IciDelivery>>& out) {
  size_t n = 0;
  now_boundary_ = until;
  const uint64_t end = until * kSubCycles;
  while (!events_.empty() && events_.top().t < end) {
    const uint64_t now = events_.top().t;
    // Everything that happens at `now` first, then the links pick their next packet in link
    // order: the outcome does not depend on the order events were posted.
    while (!events_.empty() && events_.top().t == now) {
      Event e = events_.top();
      events_.pop();
      Link& l = links_[e.link];
      if (e.kind == Ev::Credit) l.credits[e.vc]++;
      else if (e.kind == Ev::Ready) l.q[e.vc].push(e.q);
      else l.free_pending = false;
      if (!is_dirty_[e.link]) is_dirty_[e.link] = true, dirty_.push_back(e.link);
    }
    std::sort(dirty_.begin(), dirty_.end());
    std::vector<uint32_t> todo;
    todo.swap(dirty_);
    for (uint32_t li : todo) is_dirty_[li] = false;
    for (uint32_t li : todo) try_start(li, now, out, n);
  }
  return n;
}

void IciNetwork::try_start(uint32_t li, uint64_t now, std::vector<std::vector<IciDelivery>>& out, size_t& n) {
  Link& l = links_[li];
  while (l.free_at <= now) {
    int best = -1;
    for (int v = 0; v < 2; ++v) {
      if (l.q[v].empty() || l.credits[size_t(v)] == 0) continue;
      if (best < 0 || l.q[size_t(best)].top() > l.q[size_t(v)].top()) best = v;
    }
    if (best < 0) {
      if ((!l.q[0].empty() || !l.q[1].empty()) && l.stall_since == kUnknown) l.stall_since = now;
      return;
    }
    if (l.stall_since != kUnknown) l.st.credit_stall_cycles += double(now - l.stall_since) / kSubCycles, l.stall_since = kUnknown;
    Queued p = l.q[size_t(best)].top();
    l.q[size_t(best)].pop();
    l.credits[size_t(best)]--;
    uint64_t ser = packet_bytes(xfers_[p.xfer], p.pkt) * tm_.byte_time;
    l.free_at = now + ser;
    started(li, uint8_t(best), p, now, ser, out, n);
  }
  if (!l.free_pending && (!l.q[0].empty() || !l.q[1].empty())) {
    l.free_pending = true;
    events_.push({l.free_at, Ev::Free, li, 0, Queued{}});
  }
}

void IciNetwork::started(uint32_t li, uint8_t vc, const Queued& p, uint64_t now, uint64_t ser,
                         std::vector<std::vector<IciDelivery>>& out, size_t& n) {
  Link& l = links_[li];
  const Xfer& x = xfers_[p.xfer];
  const uint64_t b = packet_bytes(x, p.pkt);
  const uint64_t lat = tm_.latency * kSubCycles, rd = tm_.router * kSubCycles;
  l.st.bytes += b;
  l.st.packets++;
  l.st.busy_cycles += double(ser) / kSubCycles;
  l.st.queue_cycles += double(now - p.ready) / kSubCycles;
  if (record_) {
    LinkSlice* s = l.open_slice >= 0 ? &slices_[size_t(l.open_slice)] : nullptr;
    double begin = double(now) / kSubCycles, stop = double(now + ser) / kSubCycles;
    if (s && s->bundle == x.t->bundle && s->src == x.t->src_phys && s->dst == x.t->dst_phys && s->end == begin) {
      s->end = stop, s->bytes += b;
    } else if (ser > 0) {
      l.open_slice = int(slices_.size());
      slices_.push_back({li, begin, stop, x.t->src_phys, x.t->dst_phys, x.t->bundle, b});
    }
  }
  // The slot this packet held in the router it leaves frees; the credit travels back.
  if (p.hop > 0) events_.push({now + lat, Ev::Credit, x.route[p.hop - 1], x.vc[p.hop - 1], Queued{}});
  const uint64_t arrive = now + ser + lat + rd;  // into the next router (past its delay)
  if (size_t(p.hop) + 1 < x.route.size()) {
    Queued q = p;
    q.hop++;
    q.ready = arrive;
    events_.push({arrive, Ev::Ready, x.route[q.hop], x.vc[q.hop], q});
    return;
  }
  // At the destination: written through this link's write path, then the slot frees.
  uint64_t w = 0;
  if (!x.t->signal) {
    if (x.t->dst_space == IciSpace::Ub) {
      const auto& u = cfg_.core.unified_buffer;
      w = (b + uint64_t(u.row_bytes) * u.write_ports - 1) / (uint64_t(u.row_bytes) * u.write_ports) * kSubCycles +
          uint64_t(u.write_latency_cycles) * kSubCycles;
    } else {
      w = uint64_t(std::ceil(double(b) * kSubCycles / hbm_bytes_per_cycle_));
    }
  }
  const uint64_t wstart = std::max(arrive, l.port_free);
  const uint64_t written = wstart + w;
  l.port_free = written;
  events_.push({written + lat, Ev::Credit, li, vc, Queued{}});
  const auto& t = x.t;
  if (!t->signal && p.pkt == 0)
    deliver(out, n, x.dst_sim, {IciDelivery::Kind::WriteBegins, cycles_floor(wstart), t, 0});
  if (p.pkt + 1 == x.packets) {
    uint64_t done = cycles_ceil(written);
    if (t->signal) {
      deliver(out, n, x.dst_sim, {IciDelivery::Kind::SignalLands, done, t, 0});
    } else {
      deliver(out, n, x.dst_sim, {IciDelivery::Kind::WriteLands, done, t, 0});
      // The acknowledgement returns along the route: one hop delay per link.
      deliver(out, n, t->src_chip,
              {IciDelivery::Kind::SendAcked, done + x.route.size() * tm_.hop(), nullptr, t->seq});
    }
    xfers_[p.xfer].t.reset();  // every packet is through: the chips hold what they still need
  }
}

LinkStats IciNetwork::link_stats(size_t i) const { return links_[i].st; }

size_t IciNetwork::queued_packets() const {
  size_t n = 0;
  for (const Link& l : links_) n += l.q[0].size() + l.q[1].size();
  return n;
}

}  // namespace vtpu::sim::detail
