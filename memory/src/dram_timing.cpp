// DRAM timing model; the rules, their reasons and a worked example are in docs/dram.md.
#include "vtpu/memory/dram_timing.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "vtpu/support/error.h"

namespace vtpu::memory {
namespace {

std::string hex(uint64_t v) {
  static const char kDigits[] = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), kDigits[v & 15]);
    v >>= 4;
  } while (v != 0);
  return "0x" + s;
}

void require(bool ok, const char* what) {
  if (!ok) {
    throw vtpu::InternalError(std::string("DramTiming: invalid memory config: ") + what +
                              " (the config loader should have rejected it)");
  }
}

}  // namespace

double DramChannelStats::busy_cycles() const {
  return static_cast<double>(busy_fx) / static_cast<double>(DramTiming::kFxOne);
}

DramChannelStats& DramChannelStats::operator+=(const DramChannelStats& o) {
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  bursts += o.bursts;
  row_hits += o.row_hits;
  row_misses += o.row_misses;
  row_empty += o.row_empty;
  busy_fx += o.busy_fx;
  return *this;
}

uint64_t DramTiming::ns_to_cycles(double ns, double clock_mhz) {
  const double cycles = ns * clock_mhz / 1000.0;
  // Decimal inputs are not exact in binary (14 ns could come out as 14.000000000000002
  // cycles); the tolerance keeps such values on the integer the user meant.
  const double c = std::ceil(cycles - 1e-6);
  return c > 0 ? static_cast<uint64_t>(c) : 0;
}

DramTiming::DramTiming(const config::MemoryConfig& memory, double clock_mhz) : mem_(memory) {
  require(clock_mhz > 0, "clock_mhz must be > 0");
  require(mem_.channels >= 1, "channels must be >= 1");
  require(mem_.banks_per_channel >= 1, "banks_per_channel must be >= 1");
  require(mem_.bandwidth_gbytes_per_s > 0, "bandwidth_gbytes_per_s must be > 0");
  require(mem_.burst_bytes >= 1, "burst_bytes must be >= 1");
  require(mem_.row_bytes >= 1 && mem_.row_bytes % mem_.burst_bytes == 0,
          "row_bytes must be a multiple of burst_bytes");
  require(mem_.interleave_bytes >= 1 && mem_.interleave_bytes % mem_.burst_bytes == 0,
          "interleave_bytes must be a multiple of burst_bytes");
  require(
      mem_.t_rcd_ns >= 0 && mem_.t_rp_ns >= 0 && mem_.t_cl_ns >= 0 && mem_.access_latency_ns >= 0,
      "timings must be >= 0");

  open_policy_ = mem_.page_policy == config::PagePolicy::kOpen;
  stride_ = mem_.interleave_bytes * mem_.channels;
  t_rcd_fx_ = ns_to_cycles(mem_.t_rcd_ns, clock_mhz) << kFxBits;
  t_rp_fx_ = ns_to_cycles(mem_.t_rp_ns, clock_mhz) << kFxBits;
  t_cl_fx_ = ns_to_cycles(mem_.t_cl_ns, clock_mhz) << kFxBits;
  access_latency_ = ns_to_cycles(mem_.access_latency_ns, clock_mhz);

  // Exactly the expressions of docs/dram.md, in this order, so every build gets the same
  // integer: bytes per cycle of one channel, then one burst's bus time rounded once to
  // the nearest 2^-16 cycle (ties away from zero), at least 1.
  bytes_per_cycle_ =
      mem_.bandwidth_gbytes_per_s * 1e9 / static_cast<double>(mem_.channels) / (clock_mhz * 1e6);
  const double burst_fx =
      std::round(static_cast<double>(mem_.burst_bytes) / bytes_per_cycle_ * 65536.0);
  burst_fx_ = std::max<uint64_t>(1, static_cast<uint64_t>(burst_fx));

  reset();
}

void DramTiming::reset() {
  banks_.assign(size_t{mem_.channels} * mem_.banks_per_channel, Bank{});
  bus_free_.assign(mem_.channels, 0);
  stats_ = DramStats{};
  stats_.channels.assign(mem_.channels, DramChannelStats{});
}

DramLocation DramTiming::locate(uint64_t addr) const {
  DramLocation loc;
  loc.channel = static_cast<uint32_t>((addr / mem_.interleave_bytes) % mem_.channels);
  loc.local = (addr / stride_) * mem_.interleave_bytes + addr % mem_.interleave_bytes;
  loc.bank = static_cast<uint32_t>((loc.local / mem_.row_bytes) % mem_.banks_per_channel);
  loc.row = loc.local / (mem_.row_bytes * mem_.banks_per_channel);
  return loc;
}

uint64_t DramTiming::local_below(uint32_t ch, uint64_t a) const {
  // Whole stripes below `a` give interleave_bytes each; the partial stripe gives the part
  // of channel ch's slice [ch x il, (ch + 1) x il) that lies below a % stride.
  const uint64_t il = mem_.interleave_bytes;
  const uint64_t in_stripe = a % stride_;
  const uint64_t slice = ch * il;
  const uint64_t part = in_stripe <= slice ? 0 : std::min(in_stripe - slice, il);
  return (a / stride_) * il + part;
}

uint64_t DramTiming::serve_row_run(uint32_t ch, uint32_t bank, uint64_t row, uint64_t n,
                                   uint64_t t_fx) {
  Bank& b = banks_[size_t{ch} * mem_.banks_per_channel + bank];
  uint64_t& bus = bus_free_[ch];
  DramChannelStats d;  // this run's counts, added to the channel and to the total
  d.bursts = n;
  d.busy_fx = n * burst_fx_;
  const uint64_t cmd = std::max(t_fx, b.ready_fx);
  uint64_t end;
  if (open_policy_) {
    uint64_t lat = t_cl_fx_;
    if (!b.has_open_row) {
      lat += t_rcd_fx_;
      d.row_empty = 1;
    } else if (b.open_row != row) {
      lat += t_rp_fx_ + t_rcd_fx_;
      d.row_misses = 1;
    } else {
      d.row_hits = 1;
    }
    // The other n - 1 bursts hit the row just opened; each one's column command is ready
    // exactly when the bus frees (ready = end - tCL, + tCL), so they stream at bus rate.
    d.row_hits += n - 1;
    end = std::max(cmd + lat, bus) + n * burst_fx_;
    b.open_row = row;
    b.has_open_row = true;
    b.ready_fx = end - t_cl_fx_;
  } else {
    // Every burst activates a closed bank; each later one waits for the previous one's
    // precharge: period = burst time + tRP + tRCD (docs/dram.md, closed policy).
    d.row_empty = n;
    const uint64_t first_end = std::max(cmd + t_rcd_fx_ + t_cl_fx_, bus) + burst_fx_;
    end = first_end + (n - 1) * (burst_fx_ + t_rp_fx_ + t_rcd_fx_);
    b.ready_fx = end - t_cl_fx_ + t_rp_fx_;
  }
  bus = end;
  stats_.channels[ch] += d;
  stats_.total += d;
  return end;
}

uint64_t DramTiming::serve_range(uint32_t ch, uint64_t lo, uint64_t hi, uint64_t t_fx) {
  // Split at row boundaries: each row_bytes piece of the local space is one (bank, row).
  const uint64_t rb = mem_.row_bytes;
  uint64_t end = 0;
  while (lo < hi) {
    const uint64_t row_index = lo / rb;
    const uint64_t piece_end = std::min(hi, (row_index + 1) * rb);
    const auto bank = static_cast<uint32_t>(row_index % mem_.banks_per_channel);
    const uint64_t row = row_index / mem_.banks_per_channel;
    end = serve_row_run(ch, bank, row, (piece_end - lo) / mem_.burst_bytes, t_fx);
    lo = piece_end;
  }
  return end;
}

void DramTiming::count_payload(uint32_t ch, uint64_t bytes, bool is_write) {
  if (is_write) {
    stats_.channels[ch].bytes_written += bytes;
    stats_.total.bytes_written += bytes;
  } else {
    stats_.channels[ch].bytes_read += bytes;
    stats_.total.bytes_read += bytes;
  }
}

uint64_t DramTiming::access(uint64_t addr, uint64_t bytes, uint64_t ready_cycle, bool is_write) {
  if (bytes > mem_.bytes || addr > mem_.bytes - bytes) {
    throw vtpu::UserError("memory access of " + std::to_string(bytes) + " bytes at address " +
                          hex(addr) + " ends past the memory capacity of " +
                          std::to_string(mem_.bytes) + " bytes (" + hex(mem_.bytes) +
                          "); keep address + length <= memory.bytes");
  }
  if (ready_cycle >= kMaxReadyCycle) {
    throw vtpu::InternalError("DramTiming: ready cycle " + std::to_string(ready_cycle) +
                              " exceeds the model's time range");
  }
  if (bytes == 0) return ready_cycle;

  const uint64_t bb = mem_.burst_bytes;
  const uint64_t il = mem_.interleave_bytes;
  const uint64_t a0 = addr / bb * bb;                     // first burst
  const uint64_t a1 = (addr + bytes + bb - 1) / bb * bb;  // end of the last burst
  const uint64_t t_fx = ready_cycle << kFxBits;
  const uint64_t first_chunk = a0 / il;
  const uint64_t chunks = (a1 - 1) / il - first_chunk + 1;
  uint64_t end = 0;

  if (chunks == 1) {
    // Common small case: one channel, one contiguous local range.
    const DramLocation loc = locate(a0);
    count_payload(loc.channel, bytes, is_write);
    end = serve_range(loc.channel, loc.local, loc.local + (a1 - a0), t_fx);
  } else {
    // Channels share nothing but the ready time, so each channel's bursts (a contiguous
    // local range, in address order) can be served on their own: same result as the
    // global address order, one pass per channel instead of per burst.
    const uint64_t touched = std::min<uint64_t>(chunks, mem_.channels);
    for (uint64_t i = 0; i < touched; ++i) {
      const auto ch = static_cast<uint32_t>((first_chunk + i) % mem_.channels);
      count_payload(ch, local_below(ch, addr + bytes) - local_below(ch, addr), is_write);
      end = std::max(end, serve_range(ch, local_below(ch, a0), local_below(ch, a1), t_fx));
    }
  }

  ++stats_.requests;
  return ((end + kFxOne - 1) >> kFxBits) + access_latency_;
}

}  // namespace vtpu::memory
