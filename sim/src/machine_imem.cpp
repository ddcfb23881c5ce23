// A core's instruction memory: the rules of docs/microarch.md, "Instruction memory". A
// program that fits core.scalar.imem_bundles is resident whole; a longer one runs from
// windows of config::imem_window_bundles bundles, one fetch from memory at a time, each
// taking config::imem_fetch_cycles.
#include "machine.h"
#include "vtpu/config/timing.h"

namespace vtpu::sim::detail {

// The memory is filled before the start: window 0, and window 1 as well with prefetch.
void Machine::imem_start() {
  imem_fetch_cycles_ = config::imem_fetch_cycles(cfg_, bundles_.size());
  imem_window_bundles_ = config::imem_window_bundles(cfg_);
  imem_slot_[0] = {0, 0};
  if (cfg_.core.scalar.imem_prefetch && imem_window_bundles_ < bundles_.size()) imem_slot_[1] = {1, 0};
}

uint64_t Machine::imem_ready(size_t pc, uint64_t earliest) const {
  if (!imem_fetch_cycles_) return earliest;
  const uint64_t w = pc / imem_window_bundles_;
  for (const ImemSlot& s : imem_slot_)
    if (s.window == w) return std::max(earliest, s.ready);
  return std::max(earliest, imem_port_free_) + imem_fetch_cycles_;  // fetched on demand
}

void Machine::imem_issued(size_t pc, uint64_t earliest, uint64_t T, Counters& c) {
  if (!imem_fetch_cycles_) return;
  const uint64_t w = pc / imem_window_bundles_;
  const bool prefetch = cfg_.core.scalar.imem_prefetch;
  const uint64_t window_bytes = imem_window_bundles_ * isa::kBundleBytes;
  // The slot to fill: with prefetch the one not holding the current window.
  auto victim = [&]() -> ImemSlot& {
    return prefetch && imem_slot_[0].window == imem_current_ ? imem_slot_[1] : imem_slot_[0];
  };
  if (imem_slot_[0].window != w && imem_slot_[1].window != w) {
    imem_port_free_ = std::max(earliest, imem_port_free_) + imem_fetch_cycles_;
    victim() = {w, imem_port_free_};
    c.hbm_read_bytes += window_bytes;
  }
  if (w == imem_current_) return;
  imem_current_ = w;
  const uint64_t next = w + 1;
  if (!prefetch || next * imem_window_bundles_ >= bundles_.size()) return;
  if (imem_slot_[0].window == next || imem_slot_[1].window == next) return;
  imem_port_free_ = std::max(T, imem_port_free_) + imem_fetch_cycles_;
  victim() = {next, imem_port_free_};
  c.hbm_read_bytes += window_bytes;
}

}  // namespace vtpu::sim::detail
