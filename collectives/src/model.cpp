// The alpha-beta model a collective's simulated time is compared with (docs/collectives.md,
// "The bound").
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "vtpu/collectives/plan.h"
#include "vtpu/config/topology.h"

namespace vtpu::collectives {

namespace {

// Bytes the busiest link carries when every chip sends `block` bytes to every other chip
// along its dimension-ordered route. A torus without twist looks the same from every chip,
// so above 512 chips only chip 0's routes are walked (each link of a direction then carries
// what chip 0's routes put on that direction); smaller systems are walked pair by pair.
double busiest_link(const config::Topology& t, uint64_t block) {
  std::map<std::pair<uint32_t, int>, double> per_direction;  // (dim, dir) from chip 0
  std::vector<double> load(t.links().size(), 0);
  bool by_symmetry = t.chips() > 512 && t.wraparound() && !t.twisted();
  for (uint32_t a = 0; a < (by_symmetry ? 1 : t.chips()); ++a)
    for (uint32_t b = 0; b < t.chips(); ++b) {
      if (a == b) continue;
      for (const auto& h : t.route(a, b)) {
        if (by_symmetry) per_direction[{h.dim, h.dir}] += double(block);
        else load[size_t(t.link_index(h.from, h.dim, h.dir))] += double(block);
      }
    }
  double m = 0;
  for (double l : load) m = std::max(m, l);
  for (auto& [k, l] : per_direction) m = std::max(m, l);
  return m;
}

}  // namespace

Bound alpha_beta(const config::Config& cfg, const Plan& p) {
  const config::Topology t(cfg);
  const double f = cfg.clock_mhz * 1e6;
  const double B = cfg.ici.link_bandwidth_gbytes_per_s * 1e9;
  const double hop = std::round(cfg.ici.link_latency_ns * cfg.clock_mhz / 1000) +
                     std::round(cfg.ici.router_delay_ns * cfg.clock_mhz / 1000);
  // alpha: a hop (link latency + router delay) plus the descriptor setup of the send.
  const double alpha = (hop + cfg.core.dma.setup_cycles) / f;
  Bound b;
  for (const Phase& ph : p.phases) {
    const char* what = ph.op == Phase::Op::ReduceScatter ? "reduce-scatter"
                       : ph.op == Phase::Op::AllGather   ? "all-gather"
                       : ph.op == Phase::Op::OneShot     ? "one-shot all-reduce"
                                                         : "all-to-all";
    double beta = 0, a = 0;
    std::string term;
    if (ph.op == Phase::Op::AllToAll || ph.op == Phase::Op::OneShot) {
      // All-to-all: block S / N to every other chip; one-shot: the whole S to every other.
      double load = busiest_link(t, ph.op == Phase::Op::OneShot ? p.spec.bytes : p.spec.bytes / p.chips);
      beta = load / B;
      a = t.diameter() * alpha;
      term = fmt::format("{}: busiest link {:.0f} B / {:.1f} GB/s = {:.3f} us + diameter {} x {:.3f} us", what, load,
                         B / 1e9, beta * 1e6, t.diameter(), alpha * 1e6);
    } else {
      double n = ph.ring;
      beta = (n - 1) / n * double(ph.bytes) / (ph.rings * B);
      a = (n - 1) * alpha;
      term = fmt::format("{} over dimension {}: ({} - 1) / {} x {} B / ({} x {:.1f} GB/s) = {:.3f} us + {} x {:.3f} us",
                         what, ph.dim, ph.ring, ph.ring, ph.bytes, ph.rings, B / 1e9, beta * 1e6, ph.ring - 1,
                         alpha * 1e6);
    }
    b.beta_s += beta;
    b.alpha_s += a;
    b.terms.push_back(std::move(term));
  }
  return b;
}

}  // namespace vtpu::collectives
