// A chip's operations for each phase of a plan (docs/collectives.md, "Schedules"): which
// pieces it sends where, when it waits, which buffers and flags it uses. Decisions only; the
// emitter prints them.
#include "schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "vtpu/config/topology.h"
#include "vtpu/support/error.h"

namespace vtpu::collectives::detail {
namespace {

struct Range {
  uint64_t a = 0, b = 0;  // [a, b) in bytes
  uint64_t size() const { return b - a; }
};

// Part i of n of r, in whole units, as even as possible (the first parts one unit larger).
Range part(Range r, uint64_t unit, uint32_t n, uint32_t i) {
  uint64_t u = r.size() / unit;
  return {r.a + u * i / n * unit, r.a + u * (i + 1) / n * unit};
}

// Ring 0 takes the first half of a segment, ring 1 the rest (when the dimension has two).
Range half(Range seg, uint64_t unit, unsigned rings, unsigned ring) {
  if (rings == 1) return seg;
  uint64_t u = seg.size() / unit, first = (u + 1) / 2 * unit;
  return ring == 0 ? Range{seg.a, seg.a + first} : Range{seg.a + first, seg.b};
}

std::vector<Range> pieces(Range r, uint64_t piece) {
  std::vector<Range> v;
  for (uint64_t a = r.a; a < r.b; a += piece) v.push_back({a, std::min(r.b, a + piece)});
  return v;
}

// The regions of one chip: whole, then its part after each reduce-scatter dimension (last
// dimension first). regions[d] = {parent, own} for ring dimension d.
std::map<unsigned, std::pair<Range, Range>> levels(const config::Topology& t, uint32_t chip, uint64_t bytes,
                                                   uint64_t unit) {
  std::map<unsigned, std::pair<Range, Range>> m;
  std::vector<uint32_t> x = t.coords(chip);
  Range r{0, bytes};
  for (unsigned d = t.dims(); d-- > 0;) {
    if (t.shape()[d] < 2) continue;
    Range own = part(r, unit, t.shape()[d], x[d]);
    m[d] = {r, own};
    r = own;
  }
  return m;
}

class Builder {
 public:
  Builder(const config::Config& cfg, const Plan& p, uint32_t chip) : cfg_(cfg), p_(p), topo_(cfg), chip_(chip) {}

  std::vector<Op> build() {
    const uint64_t S = p_.spec.bytes;
    auto lv = levels(topo_, chip_, S, p_.unit_bytes);
    bool first_rs = true;
    for (size_t i = 0; i < p_.phases.size(); ++i) {
      const Phase& ph = p_.phases[i];
      if (ph.op == Phase::Op::OneShot) {
        comment(fmt::format("phase {}: one-shot all-reduce over {} chips", i, ph.ring));
        one_shot();
        continue;
      }
      comment(fmt::format("phase {}: {} over dimension {} (ring of {}, {} direction{})", i,
                          ph.op == Phase::Op::ReduceScatter ? "reduce-scatter"
                          : ph.op == Phase::Op::AllGather   ? "all-gather"
                                                            : "all-to-all",
                          ph.dim, ph.ring, ph.rings, ph.rings > 1 ? "s" : ""));
      if (ph.op == Phase::Op::AllToAll) all_to_all();
      else if (ph.op == Phase::Op::ReduceScatter) reduce_scatter(i, ph, lv.at(ph.dim).first, first_rs), first_rs = false;
      else all_gather(i, ph, lv.at(ph.dim).first);
    }
    return std::move(ops_);
  }

 private:
  // ---- helpers ----
  void comment(std::string s) { ops_.push_back({Op::Kind::Comment, 0, 1, 0, 0, false, false, 0, 0, 0, 0, std::move(s)}); }
  void wait(int flag, uint32_t count = 1) {
    if (count) ops_.push_back({Op::Kind::Wait, flag, count});
  }
  void signal_remote(uint32_t chip, int flag) { ops_.push_back({Op::Kind::RemoteSignal, flag, 1, 0, chip}); }
  uint32_t neighbour(unsigned dim, int step) const {
    std::vector<uint32_t> x = topo_.coords(chip_);
    uint32_t n = topo_.shape()[dim];
    x[dim] = uint32_t((int64_t(x[dim]) + step % int64_t(n) + int64_t(n)) % int64_t(n));
    return topo_.chip_at(x);
  }
  uint32_t coord(unsigned dim) const { return topo_.coords(chip_)[dim]; }
  uint32_t seg_index(unsigned dim, int64_t offset) const {
    int64_t n = topo_.shape()[dim];
    return uint32_t(((int64_t(coord(dim)) + offset) % n + n) % n);
  }
  // A per-slot flag counts increments not yet waited for.
  void settle(int flag) {
    if (pending_[flag] > 0) wait(flag, pending_[flag]), pending_[flag] = 0;
  }

  // ---- reduce-scatter over one ring dimension ----
  // Ring r (direction rho = +1 or -1) moves half r of every segment. At step k a chip sends
  // segment x - rho(k+1) (its own data at step 0, the sum it made at step k-1 after) and
  // receives segment x - rho(k+2); after n-1 steps it holds segment x, reduced.
  struct RsRing {
    unsigned r;
    uint32_t next, prev;
    std::vector<Range> sends, adds;  // in order
    size_t raw = 0;                  // sends from the input (step 0)
    size_t sent = 0, added = 0, loaded = 0;
  };

  void reduce_scatter(size_t phase, const Phase& ph, Range region, bool first) {
    const uint64_t unit = p_.unit_bytes;
    const uint64_t src_base = first ? p_.in_addr : p_.out_addr;
    std::vector<RsRing> rings;
    for (unsigned r = 0; r < ph.rings; ++r) {
      int rho = r == 0 ? +1 : -1;
      RsRing g{r, neighbour(ph.dim, rho), neighbour(ph.dim, -rho), {}, {}};
      for (uint32_t k = 0; k + 1 < ph.ring; ++k)
        for (Range q : pieces(half(part(region, unit, ph.ring, seg_index(ph.dim, -rho * int64_t(k + 1))), unit, ph.rings, r),
                              p_.piece_bytes))
          g.sends.push_back(q), g.raw += k == 0;
      for (uint32_t k = 1; k < ph.ring; ++k)
        for (Range q : pieces(half(part(region, unit, ph.ring, seg_index(ph.dim, -rho * int64_t(k + 1))), unit, ph.rings, r),
                              p_.piece_bytes))
          g.adds.push_back(q);
      rings.push_back(std::move(g));
    }
    const unsigned K = p_.slots;
    // Own data for the first adds, then the receivers grant their slots as credits: one per
    // piece the neighbour sends, no more (K now, one more as each add frees a slot), so that
    // none is left over for the next collective on the same flags.
    for (RsRing& g : rings)
      while (g.loaded < g.adds.size() && g.loaded < K) load_own(g, src_base);
    for (RsRing& g : rings)
      for (unsigned s = 0; s < K && s < g.adds.size(); ++s) signal_remote(g.prev, credit_flag(p_, phase, g.r));
    // Send piece t, then add the piece received d earlier (sum t - raw is needed by send t).
    constexpr size_t d = 2;
    size_t longest = 0;
    for (const RsRing& g : rings) longest = std::max(longest, g.sends.size());
    for (size_t t = 0; t < longest; ++t) {
      for (RsRing& g : rings) {
        if (t >= g.sends.size()) continue;
        while (t >= g.raw && g.added <= t - g.raw) add(phase, g, src_base);
        send_piece(phase, g, src_base);
      }
      for (RsRing& g : rings)
        while (g.added < g.adds.size() && g.added + d <= t) add(phase, g, src_base);
    }
    for (bool more = true; more;) {
      more = false;
      for (RsRing& g : rings)
        if (g.added < g.adds.size()) add(phase, g, src_base), more = true;
    }
    // Drain: every send acknowledged, every store written, before the next phase's senders
    // are let in.
    for (RsRing& g : rings) {
      wait(ack_flag(p_, g.r), uint32_t(g.sends.size()));
      for (unsigned s = 0; s < K; ++s) settle(store_flag(p_, g.r, s));
    }
  }

  void load_own(RsRing& g, uint64_t src_base) {
    const unsigned K = p_.slots;
    Range q = g.adds[g.loaded];
    uint64_t slot = g.loaded % K;
    settle(load_flag(p_, g.r, unsigned(slot)));  // never two loads in flight into one slot
    ops_.push_back({Op::Kind::Load, load_flag(p_, g.r, unsigned(slot)), 1, 0, 0, true, false, src_base + q.a,
                    ub_slot(p_, g.r, Buffer::Own, slot), 0, q.size()});
    pending_[load_flag(p_, g.r, unsigned(slot))]++;
    g.loaded++;
  }

  void send_piece(size_t phase, RsRing& g, uint64_t src_base) {
    const unsigned K = p_.slots;
    size_t t = g.sent;
    Range q = g.sends[t];
    uint64_t src = t < g.raw ? src_base + q.a : p_.out_addr + q.a;
    if (t >= g.raw) settle(store_flag(p_, g.r, unsigned((t - g.raw) % K)));  // the sum is in HBM
    wait(credit_flag(p_, phase, g.r));
    ops_.push_back({Op::Kind::Send, arrival_flag(p_, phase, g.r), 1, ack_flag(p_, g.r), g.next, true, false, src,
                    ub_slot(p_, g.r, Buffer::Received, t), 0, q.size()});
    g.sent++;
  }

  void add(size_t phase, RsRing& g, uint64_t src_base) {
    const unsigned K = p_.slots;
    size_t a = g.added;
    Range q = g.adds[a];
    unsigned slot = unsigned(a % K);
    wait(arrival_flag(p_, phase, g.r));
    settle(load_flag(p_, g.r, slot));
    settle(store_flag(p_, g.r, slot));  // the sum slot's previous store has read it
    ops_.push_back({Op::Kind::Add, kVectorFlag, 1, 0, 0, false, false, ub_slot(p_, g.r, Buffer::Received, a),
                    ub_slot(p_, g.r, Buffer::Sum, a), ub_slot(p_, g.r, Buffer::Own, a), q.size()});
    wait(kVectorFlag);
    if (a + K < g.adds.size()) signal_remote(g.prev, credit_flag(p_, phase, g.r));  // the received slot is free again
    ops_.push_back({Op::Kind::Store, store_flag(p_, g.r, slot), 1, 0, 0, false, true, ub_slot(p_, g.r, Buffer::Sum, a),
                    p_.out_addr + q.a, 0, q.size()});
    pending_[store_flag(p_, g.r, slot)]++;
    g.added++;
    if (g.loaded < g.adds.size()) load_own(g, src_base);
  }

  // ---- all-gather over one ring dimension ----
  // The chip holds segment x of the region; at step k it sends segment x - rho k (its own at
  // step 0, then what arrived at step k - 1) straight from HBM into the next chip's HBM.
  void all_gather(size_t phase, const Phase& ph, Range region) {
    const uint64_t unit = p_.unit_bytes;
    struct AgRing {
      unsigned r;
      uint32_t next, prev;
      std::vector<Range> sends;
      size_t own = 0, arrivals = 0, waited = 0;
    };
    std::vector<AgRing> rings;
    for (unsigned r = 0; r < ph.rings; ++r) {
      int rho = r == 0 ? +1 : -1;
      AgRing g{r, neighbour(ph.dim, rho), neighbour(ph.dim, -rho), {}};
      for (uint32_t k = 0; k + 1 < ph.ring; ++k)
        for (Range q : pieces(half(part(region, unit, ph.ring, seg_index(ph.dim, -rho * int64_t(k))), unit, ph.rings, r),
                              p_.piece_bytes))
          g.sends.push_back(q), g.own += k == 0;
      for (uint32_t k = 1; k < ph.ring; ++k)
        g.arrivals += pieces(half(part(region, unit, ph.ring, seg_index(ph.dim, -rho * int64_t(k))), unit, ph.rings, r),
                             p_.piece_bytes)
                          .size();
      rings.push_back(std::move(g));
    }
    for (AgRing& g : rings) signal_remote(g.prev, credit_flag(p_, phase, g.r));  // ready to receive
    for (AgRing& g : rings) wait(credit_flag(p_, phase, g.r));
    size_t longest = 0;
    for (const AgRing& g : rings) longest = std::max(longest, g.sends.size());
    for (size_t t = 0; t < longest; ++t)
      for (AgRing& g : rings) {
        if (t >= g.sends.size()) continue;
        if (t >= g.own) wait(arrival_flag(p_, phase, g.r)), g.waited++;  // forward what has arrived
        Range q = g.sends[t];
        ops_.push_back({Op::Kind::Send, arrival_flag(p_, phase, g.r), 1, ack_flag(p_, g.r), g.next, true, true,
                        p_.out_addr + q.a, p_.out_addr + q.a, 0, q.size()});
      }
    for (AgRing& g : rings) wait(arrival_flag(p_, phase, g.r), uint32_t(g.arrivals - g.waited));
    for (AgRing& g : rings) wait(ack_flag(p_, g.r), uint32_t(g.sends.size()));
  }

  // ---- all-to-all: block j of every chip goes to chip j, routed ----
  // All sends at once (the ICI engine holds ici.max_in_flight of them), taking the first
  // links of their routes in turn, nearest destinations first, so that every link starts
  // busy; the chip's own block is copied while the first ones travel.
  void all_to_all() {
    const uint32_t N = p_.chips;
    const uint64_t B = p_.spec.bytes / N;
    const unsigned K = p_.slots;
    std::vector<uint32_t> near;
    for (uint32_t i = 1; i < N; ++i) near.push_back((chip_ + i) % N);
    std::stable_sort(near.begin(), near.end(),
                     [&](uint32_t a, uint32_t b) { return topo_.hops(chip_, a) < topo_.hops(chip_, b); });
    std::map<unsigned, std::vector<uint32_t>> by_port;  // first link of the route -> destinations
    for (uint32_t j : near) {
      const auto h = topo_.route(chip_, j).front();
      by_port[config::Topology::port(h.dim, h.dir)].push_back(j);
    }
    std::vector<uint32_t> order;
    for (size_t k = 0; order.size() + 1 < N; ++k)
      for (auto& [port, js] : by_port)
        if (k < js.size()) order.push_back(js[k]);
    for (size_t i = 0; i < order.size(); ++i) {
      uint32_t j = order[i];
      ops_.push_back({Op::Kind::Send, arrival_flag(p_, 0, 0), 1, ack_flag(p_, 0), j, true, true, p_.in_addr + uint64_t(j) * B,
                      p_.out_addr + uint64_t(chip_) * B, 0, B});
      if (i == 0) copy_own_block(B, K);
    }
    if (order.empty()) copy_own_block(B, K);
    for (unsigned s = 0; s < K; ++s) settle(store_flag(p_, 0, s));
    wait(arrival_flag(p_, 0, 0), N - 1);
    wait(ack_flag(p_, 0), N - 1);
  }

  // ---- one-shot all-reduce ----
  // Every chip's buffer lands in slot (its index) of every other chip's unified buffer; each
  // adds the N slots in chip order, so every chip makes the same sums, and stores them in
  // place once its own sends have been read. A chip's signal that it has entered the
  // collective (its slots free) is the others' credit to send.
  void one_shot() {
    const uint32_t N = p_.chips;
    const uint64_t S = p_.spec.bytes;
    const int arrival = arrival_flag(p_, 0, 0), credit = credit_flag(p_, 0, 0), ack = ack_flag(p_, 0);
    const int load = load_flag(p_, 0, 0), store = store_flag(p_, 0, 0);
    ops_.push_back({Op::Kind::Load, load, 1, 0, 0, true, false, p_.in_addr, one_shot_slot(p_, chip_), 0, S});
    std::vector<uint32_t> order;  // nearest first, so the first sends leave on every link
    for (uint32_t i = 1; i < N; ++i) order.push_back((chip_ + i) % N);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return topo_.hops(chip_, a) < topo_.hops(chip_, b); });
    for (uint32_t j : order) signal_remote(j, credit);
    wait(credit, N - 1);
    for (uint32_t j : order)
      ops_.push_back({Op::Kind::Send, arrival, 1, ack, j, true, false, p_.in_addr, one_shot_slot(p_, chip_), 0, S});
    wait(load);
    wait(arrival, N - 1);
    for (uint32_t j = 1; j < N; ++j) {
      ops_.push_back({Op::Kind::Add, kVectorFlag, 1, 0, 0, false, false, one_shot_slot(p_, 0), one_shot_slot(p_, 0),
                      one_shot_slot(p_, j), S});
      wait(kVectorFlag);
    }
    wait(ack, N - 1);
    ops_.push_back({Op::Kind::Store, store, 1, 0, 0, false, true, one_shot_slot(p_, 0), p_.out_addr, 0, S});
    wait(store);
  }

  // The chip's own block, through the unified buffer.
  void copy_own_block(uint64_t B, unsigned K) {
    uint64_t base = p_.in_addr + uint64_t(chip_) * B, out = p_.out_addr + uint64_t(chip_) * B;
    size_t k = 0;
    for (Range q : pieces({0, B}, p_.piece_bytes)) {
      unsigned slot = unsigned(k++ % K);
      settle(store_flag(p_, 0, slot));
      ops_.push_back({Op::Kind::Load, load_flag(p_, 0, slot), 1, 0, 0, true, false, base + q.a,
                      ub_slot(p_, 0, Buffer::Own, slot), 0, q.size()});
      wait(load_flag(p_, 0, slot));
      ops_.push_back({Op::Kind::Store, store_flag(p_, 0, slot), 1, 0, 0, false, true, ub_slot(p_, 0, Buffer::Own, slot),
                      out + q.a, 0, q.size()});
      pending_[store_flag(p_, 0, slot)]++;
    }
  }

  const config::Config& cfg_;
  const Plan& p_;
  config::Topology topo_;
  uint32_t chip_;
  std::vector<Op> ops_;
  std::map<int, uint32_t> pending_;  // per-slot flag -> increments issued and not waited for
};

}  // namespace

std::vector<Op> schedule(const config::Config& cfg, const Plan& p, uint32_t chip) {
  if (chip >= p.chips) throw InternalError(fmt::format("collectives: chip {} of {}", chip, p.chips));
  return Builder(cfg, p, chip).build();
}

}  // namespace vtpu::collectives::detail
