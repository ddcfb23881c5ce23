#pragma once
// Internal: a chip's part of a collective as a list of operations in issue order, decided by
// schedule() and only printed by the emitter (emit.cpp).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "vtpu/collectives/plan.h"
#include "vtpu/config/config.h"

namespace vtpu::collectives::detail {

struct Op {
  enum class Kind : uint8_t {
    Wait,          // wait flag, count
    LocalSignal,   // signal flag, count
    Send,          // ici.send bytes from src (src_hbm ? HBM : UB) to dst on `chip`, flag there, sflag here
    RemoteSignal,  // ici.signal chip, flag
    Load,          // dma.load bytes HBM src -> UB dst, flag
    Store,         // dma.store bytes UB src -> HBM dst, flag
    Add,           // vec.add UB dst = UB src + UB b over bytes, flag
    Comment,
  };
  Kind kind = Kind::Comment;
  int flag = 0;
  uint32_t count = 1;
  int sflag = 0;
  uint32_t chip = 0;
  bool src_hbm = false, dst_hbm = false;
  uint64_t src = 0, dst = 0, b = 0, bytes = 0;
  std::string text;
};

// Flags (docs/collectives.md, "Flags"), laid out from the plan so that a program names none
// past core.scalar.sync_flags: f1 the vector unit; then an arrival and a credit flag per
// phase and ring, so that a neighbour already in a later phase cannot be mistaken for this
// one; then per ring an acknowledgement flag and one flag per slot for its loads and one
// for its stores.
inline constexpr int kVectorFlag = 1;
// The most rings of any ring phase (all-to-all has one): each phase gets flags for that many.
inline unsigned flag_rings(const std::vector<Phase>& phases) {
  unsigned most = 1;
  for (const Phase& ph : phases)
    if (ph.op != Phase::Op::AllToAll && ph.op != Phase::Op::OneShot) most = std::max(most, ph.rings);
  return most;
}
inline int arrival_flag(const Plan& p, size_t phase, unsigned ring) {
  return 2 + 2 * int(phase * flag_rings(p.phases) + ring);
}
inline int credit_flag(const Plan& p, size_t phase, unsigned ring) { return arrival_flag(p, phase, ring) + 1; }
inline int local_base(const Plan& p, unsigned ring) {
  return 2 + 2 * int(p.phases.size() * flag_rings(p.phases)) + int(ring) * int(1 + 2 * p.slots);
}
inline int ack_flag(const Plan& p, unsigned ring) { return local_base(p, ring); }
inline int load_flag(const Plan& p, unsigned ring, unsigned slot) { return local_base(p, ring) + 1 + int(slot); }
inline int store_flag(const Plan& p, unsigned ring, unsigned slot) {
  return local_base(p, ring) + 1 + int(p.slots) + int(slot);
}
// The flags a plan of `phases` phases of up to `rings` rings and `slots` slots names: f1
// up to the last ring's last store flag.
inline uint64_t flags_needed(size_t phases, unsigned rings, unsigned slots) {
  return 1 + 2 * uint64_t(phases) * rings + uint64_t(rings) * (1 + 2 * uint64_t(slots));
}

// Unified-buffer slots of `piece_bytes`: per ring, `slots` each for received pieces, own data
// and sums.
enum class Buffer : uint8_t { Received, Own, Sum };
// One-shot: chip j's buffer at slot j (own data at the chip's own index), N x S in all.
inline uint64_t one_shot_slot(const Plan& p, uint32_t chip) { return uint64_t(chip) * p.piece_bytes; }
inline uint64_t ub_slot(const Plan& p, unsigned ring, Buffer b, uint64_t index) {
  return (uint64_t(ring) * 3 * p.slots + uint64_t(b) * p.slots + index % p.slots) * p.piece_bytes;
}

std::vector<Op> schedule(const config::Config& cfg, const Plan& p, uint32_t chip);

}  // namespace vtpu::collectives::detail
