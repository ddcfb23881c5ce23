// How fast a pod simulates: a 64 MiB all-reduce on TPU v4 4x4x4 (64 chips, chip by chip;
// the target is under 60 s of one core) and on the 4096-chip 16x16x16 pod and the 256-chip
// v5e-like pod estimated by symmetry. Each run is timed in a forked child (SystemC allows one
// simulation per process); the buffers hold zeros so that 64 chips x 64 MiB fit in memory
// (the arithmetic and every transfer still run; results are checked by the multichip tests
// and `vtpu collective --check` at sizes that fit). Counters: simulated time, bus bandwidth,
// simulated time / alpha-beta model, wall and CPU seconds (on a shared machine the CPU time is
// what one core needs), peak memory of the child.
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>

#include "vtpu/collectives/collectives.h"
#include "vtpu/support/child_process.h"

namespace {

struct Figures {
  double wall_s = 0, cpu_s = 0, sim_s = 0, busbw = 0, ratio = 0, rss_mib = 0;
  uint64_t cycles = 0;
  char error[512] = {};
};

Figures all_reduce(const char* preset, uint64_t bytes, bool symmetric) {
  std::string got = vtpu::run_in_child(
      [&] {
        Figures f;
        auto cfg = vtpu::config::load_preset(preset);
        vtpu::collectives::Spec s;
        s.bytes = bytes;
        vtpu::collectives::RunOptions o;
        o.data = false;
        o.symmetric = symmetric;
        auto t0 = std::chrono::steady_clock::now();
        auto out = vtpu::collectives::run(cfg, s, o);
        f.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        f.sim_s = out.seconds;
        f.cycles = out.system.total_cycles;
        f.busbw = out.bus_bandwidth;
        f.ratio = out.seconds / out.bound.seconds();
        rusage ru{};
        getrusage(RUSAGE_SELF, &ru);
        f.rss_mib = double(ru.ru_maxrss) / 1024;
        f.cpu_s = double(ru.ru_utime.tv_sec) + double(ru.ru_utime.tv_usec) * 1e-6 + double(ru.ru_stime.tv_sec) +
                  double(ru.ru_stime.tv_usec) * 1e-6;
        return std::string(reinterpret_cast<const char*>(&f), sizeof f);
      },
      [](const std::exception& e) {
        Figures f;
        std::strncpy(f.error, e.what(), sizeof f.error - 1);
        return std::string(reinterpret_cast<const char*>(&f), sizeof f);
      },
      "");
  Figures f;
  if (got.size() == sizeof f) std::memcpy(&f, got.data(), sizeof f);
  else std::strcpy(f.error, "the simulation crashed");
  return f;
}

void run(benchmark::State& state, const char* preset, bool symmetric) {
  for (auto _ : state) {
    Figures f = all_reduce(preset, uint64_t(state.range(0)) << 20, symmetric);
    if (f.error[0]) {
      state.SkipWithError(f.error);
      return;
    }
    state.SetIterationTime(f.wall_s);
    state.counters["sim_us"] = f.sim_s * 1e6;
    state.counters["cycles"] = double(f.cycles);
    state.counters["busbw_GBps"] = f.busbw / 1e9;
    state.counters["time_over_model"] = f.ratio;
    state.counters["wall_s"] = f.wall_s;
    state.counters["cpu_s"] = f.cpu_s;  // the figure for "one core": wall time includes other load
    state.counters["rss_MiB"] = f.rss_mib;
  }
}

void BM_AllReduce_TpuV4_4x4x4(benchmark::State& s) { run(s, "tpu-v4-4x4x4", false); }
void BM_AllReduce_TpuV4_16x16x16_BySymmetry(benchmark::State& s) { run(s, "tpu-v4-16x16x16", true); }
void BM_AllReduce_V5eLike_16x16_BySymmetry(benchmark::State& s) { run(s, "tpu-v5e-like-16x16", true); }

BENCHMARK(BM_AllReduce_TpuV4_4x4x4)->Arg(64)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK(BM_AllReduce_TpuV4_16x16x16_BySymmetry)->Arg(64)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);
BENCHMARK(BM_AllReduce_V5eLike_16x16_BySymmetry)->Arg(64)->Iterations(1)->UseManualTime()->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
