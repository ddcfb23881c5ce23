#pragma once
// Timing model of the off-chip memory (HBM / DDR / LPDDR) of one chip: banks with row
// buffers, one data bus per channel, requests served first come, first served.
// Every rule is written down in docs/dram.md; the RTL reproduces the same integers.
// Plain C++ (no SystemC): the simulator wraps it in a TLM-2.0 target.
#include <cstdint>
#include <vector>

#include "vtpu/config/config.h"

namespace vtpu::memory {

// Counters of one channel (or of all channels together).
struct DramChannelStats {
  uint64_t bytes_read = 0;     // payload bytes requested (not rounded up to bursts)
  uint64_t bytes_written = 0;  // payload bytes requested
  uint64_t bursts = 0;         // each moves burst_bytes over the data bus
  uint64_t row_hits = 0;       // the bank had this row open: column access only
  uint64_t row_misses = 0;     // another row was open (conflict): precharge + activate
  uint64_t row_empty = 0;      // no row open: activate only
  uint64_t busy_fx = 0;        // data-bus occupancy in cycles x 2^16 (= bursts x burst_time_fx)

  uint64_t activations() const { return row_misses + row_empty; }
  double busy_cycles() const;  // busy_fx / 2^16
  DramChannelStats& operator+=(const DramChannelStats& o);
  bool operator==(const DramChannelStats&) const = default;
};

struct DramStats {
  std::vector<DramChannelStats> channels;  // index = channel
  DramChannelStats total;                  // sum over channels
  uint64_t requests = 0;                   // access() calls with bytes > 0
  bool operator==(const DramStats&) const = default;
};

// Where a byte address lives (docs/dram.md, "Address mapping").
struct DramLocation {
  uint32_t channel = 0;
  uint32_t bank = 0;
  uint64_t row = 0;
  uint64_t local = 0;  // address within the channel
  bool operator==(const DramLocation&) const = default;
};

class DramTiming {
 public:
  // Fixed point of internal times: cycles x 2^16.
  static constexpr unsigned kFxBits = 16;
  static constexpr uint64_t kFxOne = uint64_t{1} << kFxBits;
  // ready_cycle must stay below this so fixed-point times cannot overflow.
  static constexpr uint64_t kMaxReadyCycle = uint64_t{1} << 44;

  // `memory` comes from the config loader (validated); `clock_mhz` is Config::clock_mhz.
  // Throws vtpu::InternalError if the geometry breaks an invariant the loader enforces.
  DramTiming(const config::MemoryConfig& memory, double clock_mhz);

  // One request of `bytes` bytes at byte address `addr`, whose bursts may start at
  // `ready_cycle`. Requests must be submitted in issue order. Returns the cycle the last
  // byte is delivered (docs/dram.md). bytes == 0 touches nothing and returns ready_cycle.
  // Throws vtpu::UserError if [addr, addr + bytes) is not inside memory.bytes.
  uint64_t access(uint64_t addr, uint64_t bytes, uint64_t ready_cycle, bool is_write);

  const DramStats& stats() const { return stats_; }
  // Idle state: every bank closed and ready, every bus free, counters zero.
  void reset();

  DramLocation locate(uint64_t addr) const;

  // Derived constants (docs/dram.md, "Derived constants").
  // ceil(ns x clock_mhz / 1000) with a 1e-6 cycle tolerance for binary round-off.
  static uint64_t ns_to_cycles(double ns, double clock_mhz);
  uint64_t t_rcd_cycles() const { return t_rcd_fx_ >> kFxBits; }
  uint64_t t_rp_cycles() const { return t_rp_fx_ >> kFxBits; }
  uint64_t t_cl_cycles() const { return t_cl_fx_ >> kFxBits; }
  uint64_t access_latency_cycles() const { return access_latency_; }
  double bytes_per_cycle_per_channel() const { return bytes_per_cycle_; }
  uint64_t burst_time_fx() const { return burst_fx_; }
  const config::MemoryConfig& memory() const { return mem_; }

 private:
  struct Bank {
    uint64_t ready_fx = 0;  // earliest cycle (fx) of the bank's next command
    uint64_t open_row = 0;  // valid if has_open_row
    bool has_open_row = false;
  };

  // Channel-local bytes of channel `ch` below global address `a`.
  uint64_t local_below(uint32_t ch, uint64_t a) const;
  // Serves the bursts of channel-local range [lo, hi) (burst aligned) in address order;
  // returns the data end (fx) of the last one.
  uint64_t serve_range(uint32_t ch, uint64_t lo, uint64_t hi, uint64_t t_fx);
  // n >= 1 consecutive bursts to one row of one bank, in closed form.
  uint64_t serve_row_run(uint32_t ch, uint32_t bank, uint64_t row, uint64_t n, uint64_t t_fx);
  void count_payload(uint32_t ch, uint64_t bytes, bool is_write);

  config::MemoryConfig mem_;
  bool open_policy_ = true;
  uint64_t stride_ = 0;  // interleave_bytes x channels
  uint64_t t_rcd_fx_ = 0, t_rp_fx_ = 0, t_cl_fx_ = 0;
  uint64_t access_latency_ = 0;  // whole cycles
  double bytes_per_cycle_ = 0;
  uint64_t burst_fx_ = 0;

  std::vector<Bank> banks_;         // channel-major: banks_[ch * banks_per_channel + bank]
  std::vector<uint64_t> bus_free_;  // per channel, fx
  DramStats stats_;
};

}  // namespace vtpu::memory
