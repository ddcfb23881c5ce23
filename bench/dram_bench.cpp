// Speed of the DRAM timing model (memory/, docs/dram.md): simulated bursts per second
// for a long sequential read and for random 64-byte accesses, plus the effective
// bandwidth each preset reaches on a 64 MiB sequential read (counters, not timings).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "vtpu/config/config.h"
#include "vtpu/memory/dram_timing.h"

namespace {

using vtpu::memory::DramTiming;

constexpr uint64_t kSeqBytes = uint64_t{64} << 20;

// 64 MiB read as DMA-sized requests (state.range(0) bytes each), all ready at cycle 0.
void BM_SequentialRead(benchmark::State& state, const std::string& preset) {
  const auto c = vtpu::config::load_preset(preset);
  DramTiming d(c.memory, c.clock_mhz);
  const auto req = static_cast<uint64_t>(state.range(0));
  uint64_t done = 0;
  for (auto _ : state) {
    d.reset();
    for (uint64_t a = 0; a < kSeqBytes; a += req) done = std::max(done, d.access(a, req, 0, false));
    benchmark::DoNotOptimize(done);
  }
  const double bursts = static_cast<double>(d.stats().total.bursts);
  state.counters["bursts/s"] = benchmark::Counter(bursts * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
  state.counters["sim_cycles"] = static_cast<double>(done);
  const double gbps =
      static_cast<double>(kSeqBytes) * c.clock_mhz * 1e6 / static_cast<double>(done) / 1e9;
  state.counters["sim_GB/s"] = gbps;
  state.counters["pct_of_peak"] = 100.0 * gbps / c.memory.bandwidth_gbytes_per_s;
}

// Random 64-byte reads anywhere in memory, one per cycle.
void BM_RandomRead64(benchmark::State& state, const std::string& preset) {
  const auto c = vtpu::config::load_preset(preset);
  DramTiming d(c.memory, c.clock_mhz);
  std::mt19937_64 rng(1);
  std::vector<uint64_t> addrs(1 << 16);
  for (auto& a : addrs) a = (rng() % (c.memory.bytes / 64)) * 64;
  uint64_t t = 0, done = 0;
  size_t i = 0;
  for (auto _ : state) {
    done = d.access(addrs[i], 64, t++, false);
    i = (i + 1) & (addrs.size() - 1);
    benchmark::DoNotOptimize(done);
  }
  state.counters["bursts/s"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  const auto& s = d.stats().total;
  state.counters["row_hit_pct"] = 100.0 * static_cast<double>(s.row_hits) /
                                  static_cast<double>(std::max<uint64_t>(1, s.bursts));
}

void register_all() {
  for (const char* p : {"tpu-v1", "tpu-v4-core", "edge"}) {
    benchmark::RegisterBenchmark((std::string("BM_SequentialRead64MiB/") + p).c_str(),
                                 BM_SequentialRead, std::string(p))
        ->Arg(64 << 10)
        ->Arg(4096)
        ->Arg(512)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_RandomRead64B/") + p).c_str(), BM_RandomRead64,
                                 std::string(p));
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
