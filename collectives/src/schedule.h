#pragma once
// Internal: a chip's part of a collective as a list of operations in issue order, decided by
// schedule() and only printed by the emitter (emit.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include "vtpu/collectives/collectives.h"
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

// Flags (docs/collectives.md, "Flags"): every phase has its own arrival and credit flags per
// ring, so that a neighbour already in the next phase cannot be mistaken for this one.
inline constexpr int kVectorFlag = 1;
inline int arrival_flag(size_t phase, unsigned ring) { return 2 + int(phase) * 4 + int(ring) * 2; }
inline int credit_flag(size_t phase, unsigned ring) { return 3 + int(phase) * 4 + int(ring) * 2; }
inline constexpr size_t kMaxPhases = 8;
inline int local_base(unsigned ring, unsigned slots) { return 2 + int(kMaxPhases) * 4 + int(ring) * int(1 + 2 * slots); }
inline int ack_flag(unsigned ring, unsigned slots) { return local_base(ring, slots); }
inline int load_flag(unsigned ring, unsigned slots, unsigned slot) { return local_base(ring, slots) + 1 + int(slot); }
inline int store_flag(unsigned ring, unsigned slots, unsigned slot) {
  return local_base(ring, slots) + 1 + int(slots) + int(slot);
}

// The most slots the flags leave room for, with 1 or 2 rings per phase (63 flags).
inline unsigned max_slots(unsigned rings) { return (63 - unsigned(local_base(0, 0))) / rings / 2 - 1; }

// Unified-buffer slots of `piece_bytes`: per ring, `slots` each for received pieces, own data
// and sums.
enum class Buffer : uint8_t { Received, Own, Sum };
inline uint64_t ub_slot(const Plan& p, unsigned ring, Buffer b, uint64_t index) {
  return (uint64_t(ring) * 3 * p.slots + uint64_t(b) * p.slots + index % p.slots) * p.piece_bytes;
}

std::vector<Op> schedule(const config::Config& cfg, const Plan& p, uint32_t chip);

}  // namespace vtpu::collectives::detail
