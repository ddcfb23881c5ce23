// The closed-form fast path of DramTiming against a straightforward per-burst model of
// the same rules (docs/dram.md), written independently here, on random configurations
// and random request streams.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/memory/dram_timing.h"

namespace vtpu::memory {
namespace {

using config::MemoryConfig;
using config::PagePolicy;

// One burst at a time, in global address order, exactly as the rules read. Integer
// constants come from the model's derived-constant accessors, which other tests pin.
class ReferenceDram {
 public:
  ReferenceDram(const MemoryConfig& m, const DramTiming& derived)
      : m_(m),
        rcd_(derived.t_rcd_cycles() << 16),
        rp_(derived.t_rp_cycles() << 16),
        cl_(derived.t_cl_cycles() << 16),
        lat_(derived.access_latency_cycles()),
        bt_(derived.burst_time_fx()),
        ready_(size_t{m.channels} * m.banks_per_channel, 0),
        open_(size_t{m.channels} * m.banks_per_channel, -1),
        bus_(m.channels, 0) {
    stats_.channels.resize(m.channels);
  }

  uint64_t access(uint64_t addr, uint64_t bytes, uint64_t ready, bool write) {
    if (bytes == 0) return ready;
    const uint64_t bb = m_.burst_bytes, il = m_.interleave_bytes, C = m_.channels;
    const uint64_t t = ready << 16;
    uint64_t last = 0;
    for (uint64_t a = addr / bb * bb; a < addr + bytes; a += bb) {
      const uint64_t ch = (a / il) % C;
      const uint64_t la = (a / (il * C)) * il + a % il;
      const uint64_t bank = (la / m_.row_bytes) % m_.banks_per_channel;
      const int64_t row = static_cast<int64_t>(la / (m_.row_bytes * m_.banks_per_channel));
      const size_t bi = ch * m_.banks_per_channel + bank;
      auto& s = stats_.channels[ch];
      const uint64_t cmd = std::max(t, ready_[bi]);
      uint64_t lat;
      if (m_.page_policy == PagePolicy::kOpen) {
        if (open_[bi] == row) {
          lat = cl_;
          ++s.row_hits;
        } else if (open_[bi] < 0) {
          lat = rcd_ + cl_;
          ++s.row_empty;
        } else {
          lat = rp_ + rcd_ + cl_;
          ++s.row_misses;
        }
      } else {
        lat = rcd_ + cl_;
        ++s.row_empty;
      }
      const uint64_t start = std::max(cmd + lat, bus_[ch]);
      const uint64_t end = start + bt_;
      bus_[ch] = end;
      if (m_.page_policy == PagePolicy::kOpen) {
        ready_[bi] = end - cl_;
        open_[bi] = row;
      } else {
        ready_[bi] = end - cl_ + rp_;
      }
      last = std::max(last, end);
      ++s.bursts;
      s.busy_fx += bt_;
      const uint64_t lo = std::max(a, addr), hi = std::min(a + bb, addr + bytes);
      (write ? s.bytes_written : s.bytes_read) += hi - lo;
    }
    stats_.total = DramChannelStats{};
    for (const auto& c : stats_.channels) stats_.total += c;
    ++stats_.requests;
    return ((last + 65535) >> 16) + lat_;
  }
  const DramStats& stats() const { return stats_; }

 private:
  MemoryConfig m_;
  uint64_t rcd_, rp_, cl_, lat_, bt_;
  std::vector<uint64_t> ready_;
  std::vector<int64_t> open_;
  std::vector<uint64_t> bus_;
  DramStats stats_;
};

MemoryConfig random_config(std::mt19937_64& rng) {
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  MemoryConfig m;
  m.kind = config::MemoryKind::kHbm2;
  m.channels = static_cast<uint32_t>(pick(1, 5));
  m.banks_per_channel = static_cast<uint32_t>(pick(1, 4));
  m.burst_bytes = uint64_t{16} << pick(0, 2);
  m.row_bytes = m.burst_bytes * pick(1, 6);
  // Mostly within a row as the loader requires, sometimes not dividing it, rarely larger.
  m.interleave_bytes =
      m.burst_bytes * (pick(0, 9) == 0 ? pick(1, 12) : pick(1, m.row_bytes / m.burst_bytes));
  m.bytes = uint64_t{m.channels} * m.banks_per_channel * m.row_bytes * pick(2, 40);
  m.bandwidth_gbytes_per_s = static_cast<double>(pick(1, 4000)) / 10.0;
  m.access_latency_ns = static_cast<double>(pick(0, 500)) / 10.0;
  m.t_rcd_ns = static_cast<double>(pick(0, 300)) / 10.0;
  m.t_rp_ns = static_cast<double>(pick(0, 300)) / 10.0;
  m.t_cl_ns = static_cast<double>(pick(0, 300)) / 10.0;
  m.page_policy = pick(0, 2) == 0 ? PagePolicy::kClosed : PagePolicy::kOpen;
  return m;
}

TEST(DramRandom, FastPathEqualsPerBurstReference) {
  std::mt19937_64 rng(20240611);
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  constexpr int kStreams = 4000;
  uint64_t requests = 0, bursts = 0;
  for (int stream = 0; stream < kStreams; ++stream) {
    const MemoryConfig m = random_config(rng);
    const double clock = static_cast<double>(pick(200, 2000));
    DramTiming fast(m, clock);
    ReferenceDram ref(m, fast);
    uint64_t t = pick(0, 100);
    const int n = static_cast<int>(pick(1, 60));
    for (int r = 0; r < n; ++r) {
      // Sizes: within a burst, a few bursts, a few stripes, or a big chunk of memory.
      uint64_t bytes;
      switch (pick(0, 3)) {
        case 0:
          bytes = pick(1, m.burst_bytes);
          break;
        case 1:
          bytes = pick(1, 4 * m.burst_bytes);
          break;
        case 2:
          bytes = pick(1, 3 * m.interleave_bytes * m.channels);
          break;
        default:
          bytes = pick(1, m.bytes / 2);
          break;
      }
      bytes = std::min(bytes, m.bytes);
      if (pick(0, 30) == 0) bytes = 0;
      // Addresses: random, or near the previous region to produce hits and conflicts.
      const uint64_t addr = pick(0, m.bytes - bytes);
      // Ready times mostly rise, sometimes stay, sometimes fall (FCFS must still hold).
      switch (pick(0, 4)) {
        case 0:
          break;
        case 1:
          t = t > 50 ? t - pick(0, 50) : t;
          break;
        default:
          t += pick(0, 40);
          break;
      }
      const bool write = pick(0, 1) == 1;
      const uint64_t want = ref.access(addr, bytes, t, write);
      const uint64_t got = fast.access(addr, bytes, t, write);
      ASSERT_EQ(got, want) << "stream " << stream << " request " << r << " addr " << addr
                           << " bytes " << bytes << " ready " << t;
      ++requests;
    }
    ASSERT_EQ(fast.stats(), ref.stats()) << "stream " << stream;
    bursts += fast.stats().total.bursts;
  }
  RecordProperty("requests", static_cast<int>(requests));
  RecordProperty("bursts", static_cast<int>(std::min<uint64_t>(bursts, INT32_MAX)));
}

// The same on the real presets with small, DMA-like requests that keep rows open.
TEST(DramRandom, PresetsLocalityStreams) {
  std::mt19937_64 rng(7);
  auto pick = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  for (const char* preset : {"tpu-v1", "tpu-v4-core", "edge", "tiny-4x4"}) {
    SCOPED_TRACE(preset);
    const auto c = config::load_preset(preset);
    for (PagePolicy policy : {PagePolicy::kOpen, PagePolicy::kClosed}) {
      MemoryConfig m = c.memory;
      m.page_policy = policy;
      DramTiming fast(m, c.clock_mhz);
      ReferenceDram ref(m, fast);
      uint64_t t = 0, base = 0;
      for (int r = 0; r < 5000; ++r) {
        if (pick(0, 20) == 0) base = pick(0, m.bytes / 2) / 64 * 64;
        const uint64_t bytes = pick(1, 2048);
        const uint64_t addr = std::min(base + pick(0, 1 << 16), m.bytes - bytes);
        t += pick(0, 8);
        ASSERT_EQ(fast.access(addr, bytes, t, r % 3 == 0), ref.access(addr, bytes, t, r % 3 == 0))
            << "request " << r;
      }
      ASSERT_EQ(fast.stats(), ref.stats());
    }
  }
}

}  // namespace
}  // namespace vtpu::memory
