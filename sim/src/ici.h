#pragma once
// Internal: what a chip's Machine and the ICI network (network.cpp) exchange, and the
// interface through which a Machine reaches the rest of a multi-chip system (system.cpp).
// docs/microarch.md, "Chips and links" and "Time across chips", states the rules.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "vtpu/config/topology.h"

namespace vtpu::sim::detail {

// An accept cycle that cannot be decided with what a chip knows before the next
// synchronisation (a remote flag, a barrier, an unacknowledged send).
inline constexpr uint64_t kUnknown = UINT64_MAX;

// Network times are kept in 1/65536 of a cycle so that a link's byte time is exact enough
// (docs/microarch.md: tau).
inline constexpr uint64_t kSubCycles = 65536;

enum class IciSpace : uint8_t { Ub, Hbm };

// One ici.send, dma.send or ici.signal as the network carries it.
struct IciTransfer {
  uint32_t src_chip = 0;   // simulated chip that issued it
  uint32_t src_phys = 0;   // its physical chip id (the same unless estimating by symmetry)
  uint32_t dst_phys = 0;   // physical destination chip
  uint64_t seq = 0;        // per source chip, in issue order
  bool signal = false;     // ici.signal: no payload, no acknowledgement
  uint32_t bundle = 0;
  const char* mnemonic = "";
  uint64_t issue = 0;      // cycle T
  // Payload (none for a signal): its size, the source bytes captured at issue in descriptor
  // order (none in a timing-only run, which moves no data), and where they land on the
  // destination chip.
  uint64_t bytes = 0;
  std::shared_ptr<const std::vector<uint8_t>> data;
  IciSpace dst_space = IciSpace::Ub;
  std::shared_ptr<const std::vector<std::pair<uint64_t, uint64_t>>> dst_rows;  // (address, bytes)
  uint64_t dst_lo = 0, dst_hi = 0;  // bounding range of dst_rows
  int flag = 0;                     // on the destination
  // Cycle at which each packet can leave the source (docs/microarch.md, "ICI engine").
  std::vector<uint64_t> packet_ready;
  uint64_t key() const { return (uint64_t(src_chip) << 40 | seq) + 1; }
};

// What the network tells a chip; delivered at a synchronisation, never later than the cycle
// it talks about (the lookahead rule).
struct IciDelivery {
  enum class Kind : uint8_t {
    WriteBegins,  // a transfer starts writing dst range at `cycle` (until WriteLands)
    WriteLands,   // ... and has written all of it by `cycle`; the flag counts then
    SignalLands,  // an ici.signal's flag increment at `cycle`
    SendAcked,    // the sender learns at `cycle` that its transfer `seq` completed
  };
  Kind kind;
  uint64_t cycle = 0;
  std::shared_ptr<const IciTransfer> transfer;  // WriteBegins/WriteLands/SignalLands
  uint64_t seq = 0;                             // SendAcked
};

// The Machine's view of the system it is part of (system.cpp implements it).
class Fabric {
 public:
  virtual ~Fabric() = default;
  virtual uint32_t sim_chip() const = 0;       // index among the simulated chips
  virtual uint32_t physical_chip() const = 0;  // id in the torus
  virtual const config::Topology& topology() const = 0;
  // Estimating by symmetry: what lands here stands for another chip's data under a
  // translation, so only its timing and flags count, not its bytes (docs/microarch.md).
  virtual bool symmetric() const = 0;
  // A chip issues only bundles whose cycle is below the horizon; at the horizon (or when an
  // accept is kUnknown) it synchronises.
  virtual uint64_t horizon() const = 0;
  // Waits (in SystemC) until the other chips and the network have caught up; returns what
  // arrived. `next_issue`: the cycle the chip would issue at next with what it knows, or
  // kUnknown when that depends on something to come.
  virtual std::vector<IciDelivery> synchronize(uint64_t next_issue) = 0;
  virtual void send(IciTransfer&& t) = 0;
  // Barriers: the chip reaches the `generation`-th barrier with this id at `cycle`; its
  // release cycle, or kUnknown while another chip's arrival is not known.
  virtual void barrier_arrive(uint32_t id, uint64_t generation, uint64_t cycle) = 0;
  virtual uint64_t barrier_release(uint32_t id, uint64_t generation, uint64_t cycle) = 0;
  // Chips that have not yet reached that barrier (for a deadlock diagnostic).
  virtual std::string barrier_missing(uint32_t id, uint64_t generation) const = 0;
};

// Per-hop delay L = link latency + router delay, in whole cycles (docs/microarch.md).
struct IciTiming {
  uint64_t latency = 0;      // cycles
  uint64_t router = 0;       // cycles
  uint64_t byte_time = 0;    // tau, sub-cycles per byte on a link
  uint64_t packet_bytes = 0;
  uint64_t hop() const { return latency + router; }
  static IciTiming of(const config::Config& cfg);
};

}  // namespace vtpu::sim::detail
