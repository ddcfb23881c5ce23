#pragma once
// Internal: the ICI links of a system as a discrete-event model of packets, link
// serialization, latency, router delay and credit-based flow control with two virtual
// channels (docs/microarch.md, "Chips and links"). No SystemC here: system.cpp drives it
// one quantum at a time.
#include <array>
#include <cstdint>
#include <memory>
#include <queue>
#include <vector>

#include "ici.h"
#include "vtpu/config/topology.h"
#include "vtpu/sim/system.h"

namespace vtpu::sim::detail {

class IciNetwork {
 public:
  // symmetric: only chip 0 is simulated; every link is the link of chip 0 in the same
  // direction (docs/microarch.md, "Estimating large pods by symmetry").
  IciNetwork(const config::Config& cfg, const config::Topology& topo, bool symmetric, bool record_trace);

  const IciTiming& timing() const { return tm_; }
  void post(IciTransfer&& t);
  // Processes every event before cycle `until`; what chips learn goes to out[simulated
  // chip]. Returns the number of deliveries.
  size_t advance(uint64_t until, std::vector<std::vector<IciDelivery>>& out);
  bool idle() const { return events_.empty(); }
  size_t queued_packets() const;  // waiting at some link (for a credit, when idle)
  uint64_t next_event_cycle() const;  // kUnknown when idle
  uint64_t last_delivery_cycle() const { return last_delivery_; }

  size_t link_count() const { return links_.size(); }  // simulated links: topology().links()[i]
  LinkStats link_stats(size_t i) const;
  const std::vector<LinkSlice>& trace() const { return slices_; }

 private:
  struct Xfer {
    std::shared_ptr<const IciTransfer> t;
    std::vector<uint32_t> route;  // simulated link per hop
    std::vector<uint8_t> vc;      // virtual channel per hop
    uint32_t packets = 0;
    uint64_t order = 0;           // tie-break: (source chip, seq)
    uint32_t dst_sim = 0;
  };
  // A packet waiting for a link. The oldest goes first: its age is when it would start on its
  // first link if that link carried only its own chip's packets; ties to the lower (source
  // chip, send), then packet number.
  struct Queued {
    uint64_t ready;  // at this link
    uint64_t age;
    uint64_t order;
    uint32_t pkt, xfer;
    uint16_t hop;
    bool operator>(const Queued& o) const {
      if (age != o.age) return age > o.age;
      if (order != o.order) return order > o.order;
      return pkt > o.pkt;
    }
  };
  enum class Ev : uint8_t { Credit, Free, Ready };
  struct Event {
    uint64_t t;  // sub-cycles
    Ev kind;
    uint32_t link;
    uint8_t vc;
    Queued q;  // Ready: the packet
    bool operator>(const Event& o) const {
      if (t != o.t) return t > o.t;
      if (kind != o.kind) return kind > o.kind;
      if (link != o.link) return link > o.link;
      if (vc != o.vc) return vc > o.vc;
      return q > o.q;
    }
  };
  struct Link {
    uint64_t free_at = 0;  // end of the current serialization
    bool free_pending = false;
    std::array<uint32_t, 2> credits{};
    std::array<std::priority_queue<Queued, std::vector<Queued>, std::greater<>>, 2> q;
    uint64_t port_free = 0;  // the destination's write path for this link
    uint64_t stall_since = kUnknown;
    LinkStats st;
    int open_slice = -1;  // index into slices_ of the slice the last packet extended
  };

  uint64_t packet_bytes(const Xfer& x, uint32_t pkt) const;
  void try_start(uint32_t li, uint64_t now, std::vector<std::vector<IciDelivery>>& out, size_t& n);
  void started(uint32_t li, uint8_t vc, const Queued& p, uint64_t now, uint64_t ser,
               std::vector<std::vector<IciDelivery>>& out, size_t& n);
  void deliver(std::vector<std::vector<IciDelivery>>& out, size_t& n, uint32_t chip, IciDelivery d);
  uint32_t sim_link(const config::Topology::Hop& h) const;

  const config::Config& cfg_;
  const config::Topology& topo_;
  bool symmetric_, record_;
  IciTiming tm_;
  double hbm_bytes_per_cycle_;
  std::vector<Link> links_;
  std::vector<Xfer> xfers_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  struct Injection {
    uint64_t ready = 0;  // latest packet ready
    uint64_t age = 0;    // when the latest packet would have left
  };
  std::vector<Injection> last_inject_;  // per (source chip, first link)
  std::vector<LinkSlice> slices_;
  std::vector<uint32_t> dirty_;
  std::vector<bool> is_dirty_;
  uint64_t now_boundary_ = 0;
  uint64_t last_delivery_ = 0;
};

}  // namespace vtpu::sim::detail
