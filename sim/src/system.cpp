// A multi-chip system in SystemC: one Chip module (with its own sequencer thread and
// memory) per simulated chip, and a coordinator thread that owns the ICI network. Chips run
// ahead in quanta no longer than the lookahead L and meet at boundaries, where the network
// catches up and delivers what they can see (docs/microarch.md, "Time across chips").
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "chip.h"
#include "energy.h"
#include "network.h"
#include "kernel_run.h"
#include "vtpu/sim/system.h"

namespace vtpu::sim {
namespace detail {
namespace {

class System;

// One chip's door to the system.
class ChipPort final : public Fabric {
 public:
  ChipPort(System& sys, uint32_t sim, uint32_t phys) : sys_(sys), sim_(sim), phys_(phys) {}
  uint32_t sim_chip() const override { return sim_; }
  uint32_t physical_chip() const override { return phys_; }
  const config::Topology& topology() const override;
  bool symmetric() const override;
  uint64_t horizon() const override;
  std::vector<IciDelivery> synchronize(uint64_t next_issue) override;
  void send(IciTransfer&& t) override { outbox.push_back(std::move(t)); }
  void barrier_arrive(uint32_t id, uint64_t generation, uint64_t cycle) override {
    barrier_posts.push_back({id, generation, cycle});
  }
  uint64_t barrier_release(uint32_t id, uint64_t generation, uint64_t cycle) override;
  std::string barrier_missing(uint32_t id, uint64_t generation) const override;

  struct BarrierPost {
    uint32_t id;
    uint64_t generation, cycle;
  };
  std::vector<IciTransfer> outbox;
  std::vector<IciDelivery> inbox;
  std::vector<BarrierPost> barrier_posts;
  uint64_t next_issue = 0;
  bool active = true;

 private:
  System& sys_;
  uint32_t sim_, phys_;
};

class System : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(System);
  System(sc_core::sc_module_name name, const config::Config& cfg, const std::vector<ChipRun>& runs,
         const SystemOptions& opt, sc_core::sc_time period)
      : sc_module(name),
        cfg_(cfg),
        topo_(cfg),
        opt_(opt),
        period_(period),
        net_(cfg, topo_, opt.symmetric, opt.sim.record_trace) {
    lookahead_ = net_.timing().hop();
    quantum_ = opt.quantum_cycles ? opt.quantum_cycles : lookahead_;
    if (quantum_ > lookahead_)
      throw UserError(fmt::format("quantum of {} cycles exceeds the lookahead of {} cycles (one hop: link latency + "
                                  "router delay); longer quanta would break cycle-exactness",
                                  quantum_, lookahead_));
    horizon_ = quantum_;
    size_t n = runs.size();
    for (uint32_t i = 0; i < n; ++i) {
      std::string nm = fmt::format("chip{}", i);
      hbms_.push_back(std::make_unique<Hbm>(("hbm" + std::to_string(i)).c_str(), cfg, period));
      ports_.push_back(std::make_unique<ChipPort>(*this, i, opt.symmetric ? 0 : i));
      chips_.push_back(std::make_unique<Chip>(nm.c_str(), cfg, runs[i].program, opt.sim, *hbms_.back(),
                                              ports_.back().get(), [this, i] { chip_ended(i); }));
      chips_.back()->dma_socket.bind(hbms_.back()->socket);
      load_memory(*hbms_.back(), cfg, runs[i].program, runs[i].inputs);
    }
    active_ = uint32_t(n);
    inbox_.resize(n);
    SC_THREAD(coordinator);
  }

  const config::Topology& topology() const { return topo_; }
  uint64_t horizon() const { return horizon_; }
  bool symmetric() const { return opt_.symmetric; }

  // A chip thread at its horizon: counted in, then parked until the coordinator is done.
  std::vector<IciDelivery> arrive(ChipPort& p, uint64_t next_issue) {
    p.next_issue = next_issue;
    if (++arrived_ == active_) all_arrived_.notify(sc_core::SC_ZERO_TIME);
    wait(release_);
    return std::move(p.inbox);
  }

  uint64_t barrier_release(uint32_t phys, uint32_t id, uint64_t generation, uint64_t cycle) {
    const uint64_t L = lookahead_;
    if (opt_.symmetric) {
      // Every chip arrives when chip 0 does; the last word reaches chip 0 from the farthest.
      return cycle + eccentricity0() * L;
    }
    auto it = barriers_.find({id, generation});
    uint64_t r = cycle;
    for (uint32_t j = 0; j < topo_.chips(); ++j) {
      if (j == phys) continue;
      uint64_t a = it == barriers_.end() ? kUnknown : it->second[j];
      if (a == kUnknown) return kUnknown;
      r = std::max(r, a + topo_.hops(j, phys) * L);
    }
    return r;
  }

  std::string barrier_missing(uint32_t phys, uint32_t id, uint64_t generation) const {
    auto it = barriers_.find({id, generation});
    std::vector<uint32_t> missing;
    for (uint32_t j = 0; j < topo_.chips(); ++j)
      if (j != phys && (it == barriers_.end() || it->second[j] == kUnknown)) missing.push_back(j);
    std::string s;
    for (size_t k = 0; k < missing.size() && k < 8; ++k) s += (k ? ", " : "") + topo_.name(missing[k]);
    if (missing.size() > 8) s += fmt::format(" and {} more", missing.size() - 8);
    return s.empty() ? "(none)" : s;
  }

  SystemResult finish(const std::vector<ChipRun>& runs);

 private:
  void chip_ended(uint32_t i) {
    ChipPort& p = *ports_[i];
    p.active = false;
    --active_;
    if (chips_[i]->error) failed_ = true;
    if (arrived_ >= active_) all_arrived_.notify(sc_core::SC_ZERO_TIME);
  }

  uint64_t eccentricity0() {
    if (ecc0_ == kUnknown) ecc0_ = topo_.eccentricity(0);
    return ecc0_;
  }

  void coordinator();
  bool window(uint64_t until);      // network up to `until`; true if an active chip learnt something
  void skip_while_idle();           // when no chip can issue before horizon_ + quantum_
  [[noreturn]] void deadlock() const;

  const config::Config& cfg_;
  config::Topology topo_;
  SystemOptions opt_;
  sc_core::sc_time period_;
  IciNetwork net_;
  uint64_t lookahead_ = 1, quantum_ = 1, horizon_ = 1, ecc0_ = kUnknown;
  std::vector<std::unique_ptr<Hbm>> hbms_;
  std::vector<std::unique_ptr<ChipPort>> ports_;
  std::vector<std::unique_ptr<Chip>> chips_;
  std::vector<std::vector<IciDelivery>> inbox_;
  std::map<std::pair<uint32_t, uint64_t>, std::vector<uint64_t>> barriers_;  // arrival per chip
  uint32_t active_ = 0, arrived_ = 0;
  bool failed_ = false;
  std::exception_ptr error_;
  sc_core::sc_event all_arrived_, release_;

  friend class ChipPort;
};

const config::Topology& ChipPort::topology() const { return sys_.topology(); }
uint64_t ChipPort::horizon() const { return sys_.horizon(); }
bool ChipPort::symmetric() const { return sys_.symmetric(); }
std::vector<IciDelivery> ChipPort::synchronize(uint64_t next_issue) { return sys_.arrive(*this, next_issue); }
uint64_t ChipPort::barrier_release(uint32_t id, uint64_t generation, uint64_t cycle) {
  return sys_.barrier_release(phys_, id, generation, cycle);
}
std::string ChipPort::barrier_missing(uint32_t id, uint64_t generation) const {
  return sys_.barrier_missing(phys_, id, generation);
}

bool System::window(uint64_t until) {
  for (auto& ib : inbox_) ib.clear();
  net_.advance(until, inbox_);
  bool learnt = false;
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (inbox_[i].empty()) continue;
    ChipPort& p = *ports_[i];
    if (p.active) {
      learnt = true;
      for (auto& d : inbox_[i]) p.inbox.push_back(std::move(d));
    } else {
      chips_[i]->machine().apply_deliveries(std::move(inbox_[i]));  // a halted chip still receives
    }
  }
  return learnt;
}

void System::coordinator() {
  try {
    while (true) {
      while (arrived_ < active_) wait(all_arrived_);
      if (failed_) break;
      arrived_ = 0;
      // Every active chip has issued all it can below horizon_: the network catches up.
      const uint64_t H = horizon_;
      sc_core::sc_time at = period_ * double(H);
      if (at > sc_core::sc_time_stamp()) wait(at - sc_core::sc_time_stamp());
      bool barrier_news = false;
      for (auto& p : ports_) {
        for (IciTransfer& t : p->outbox) net_.post(std::move(t));
        p->outbox.clear();
        barrier_news = barrier_news || !p->barrier_posts.empty();
        for (const auto& b : p->barrier_posts) {
          auto& v = barriers_[{b.id, b.generation}];
          if (v.empty()) v.assign(topo_.chips(), kUnknown);
          v[p->physical_chip()] = b.cycle;
        }
        p->barrier_posts.clear();
      }
      bool learnt = window(H) || barrier_news;
      if (active_ == 0) {  // drain what is still on the links
        for (uint64_t u = H; !net_.idle(); u = std::max(u + quantum_, net_.next_event_cycle() + 1)) window(u);
        break;
      }
      if (!learnt) skip_while_idle();
      horizon_ += quantum_;
      release_.notify(sc_core::SC_ZERO_TIME);
    }
  } catch (...) {
    error_ = std::current_exception();
  }
  sc_core::sc_stop();
  end_thread();
}

void System::skip_while_idle() {
  // Nothing new for any chip: while none can issue before the next boundary, the network
  // runs on alone (quantum by quantum where it has events, in one jump where it has none).
  uint64_t next = kUnknown;
  for (const auto& p : ports_)
    if (p->active) next = std::min(next, p->next_issue);
  while (next == kUnknown || next >= horizon_ + quantum_) {
    uint64_t ev = net_.next_event_cycle();
    if (ev == kUnknown && next == kUnknown) deadlock();
    uint64_t t = std::min(ev, next);
    if (t >= horizon_ + quantum_) {
      horizon_ = t / quantum_ * quantum_;
      continue;
    }
    horizon_ += quantum_;
    if (window(horizon_)) return;
  }
}

void System::deadlock() const {
  std::string s = "deadlock: every chip that has not halted waits for something no chip or transfer will provide";
  size_t shown = 0, waiting = 0;
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (!ports_[i]->active) continue;
    ++waiting;
    if (shown++ < 16)
      s += fmt::format("\n  {}: {}", topo_.name(ports_[i]->physical_chip()), chips_[i]->machine().blocked_description());
  }
  if (shown > 16) s += fmt::format("\n  ... and {} more chips waiting", shown - 16);
  std::string halted;
  for (size_t i = 0; i < ports_.size(); ++i)
    if (!ports_[i]->active) halted += (halted.empty() ? "" : ", ") + std::to_string(ports_[i]->physical_chip());
  if (!halted.empty()) s += "\n  halted: chips " + halted;
  if (size_t q = net_.queued_packets())
    s += fmt::format("\n  the links hold {} packets that wait for credits no transfer will return (a deadlock of the "
                     "network itself; please report it)",
                     q);
  s += fmt::format("\n  ({} chips waiting; check that every wait has a matching send or signal, with the same "
                   "flag and count, and that every chip reaches the same barriers)",
                   waiting);
  throw SimError(s);
}

SystemResult System::finish(const std::vector<ChipRun>& runs) {
  auto rethrow = [&](std::exception_ptr e, const std::string& who) {
    try {
      std::rethrow_exception(e);
    } catch (const SimError& x) {
      throw SimError(who + x.what());
    } catch (const InternalError& x) {
      throw InternalError(who + x.what());
    } catch (const UserError& x) {
      throw UserError(who + x.what());
    }
  };
  for (size_t i = 0; i < chips_.size(); ++i)
    if (chips_[i]->error) rethrow(chips_[i]->error, topo_.name(ports_[i]->physical_chip()) + ": ");
  if (error_) rethrow(error_, "");
  for (size_t i = 0; i < chips_.size(); ++i)
    if (!chips_[i]->finished) throw InternalError("the system simulation ended before every chip halted");

  SystemResult r;
  r.system_chips = topo_.chips();
  r.symmetric = opt_.symmetric;
  r.quantum_cycles = quantum_;
  r.lookahead_cycles = lookahead_;
  r.clock_mhz = cfg_.clock_mhz;
  for (size_t i = 0; i < chips_.size(); ++i) {
    Machine& m = chips_[i]->machine();
    m.land_all();
    m.finalize();
    RunResult rr;
    rr.stats = std::move(m.stats());
    const memory::DramStats& ds = hbms_[i]->timing.stats();
    rr.stats.hbm_row_hits = ds.total.row_hits;
    rr.stats.hbm_row_misses = ds.total.row_misses;
    rr.stats.hbm_row_empty = ds.total.row_empty;
    compute_energy(cfg_, rr.stats);
    rr.trace = std::move(m.trace());
    rr.outputs = read_outputs(*hbms_[i], cfg_, runs[i].program);
    r.total_cycles = std::max(r.total_cycles, rr.stats.total_cycles);
    r.chips.push_back(std::move(rr));
  }
  for (size_t i = 0; i < net_.link_count(); ++i) r.links.push_back(net_.link_stats(i));
  r.link_trace = net_.trace();
  return r;
}

}  // namespace
}  // namespace detail

SystemResult simulate_system(const config::Config& cfg, const std::vector<ChipRun>& chips, const SystemOptions& opt) {
  using namespace detail;
  if (cfg.system.chips < 2)
    throw UserError(fmt::format("config '{}' has one chip (system.chips); run its program with simulate() / vtpu sim",
                                cfg.name));
  if (opt.symmetric) {
    if (!cfg.ici.wraparound || !cfg.ici.twist.empty())
      throw UserError(fmt::format("estimating by symmetry needs a torus whose chips all look alike; config '{}' is "
                                  "a {}; simulate it chip by chip",
                                  cfg.name, cfg.ici.wraparound ? "twisted torus" : "mesh"));
    if (chips.size() != 1)
      throw UserError(fmt::format("estimating by symmetry runs chip 0's program alone; got {} programs", chips.size()));
  } else if (chips.size() != cfg.system.chips) {
    throw UserError(fmt::format("config '{}' has {} chips but {} programs were given (one per chip)", cfg.name,
                                cfg.system.chips, chips.size()));
  }
  for (size_t i = 0; i < chips.size(); ++i) {
    try {
      check_run(cfg, chips[i].program, chips[i].inputs);
    } catch (const UserError& e) {
      throw UserError(fmt::format("chip {}: {}", i, e.what()));
    }
  }
  sc_core::sc_time period = start_kernel(cfg);
  auto sys = std::make_unique<System>("system", cfg, chips, opt, period);
  run_kernel();
  return sys->finish(chips);
}

}  // namespace vtpu::sim
