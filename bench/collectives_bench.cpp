// How fast a pod simulates: a 64 MiB all-reduce on TPU v4 4x4x4 (64 chips, chip by chip;
// the target is under 60 s of one core) and on the 4096-chip 16x16x16 pod and the 256-chip
// v5e-like pod estimated by symmetry. Each run is timed in a forked child (SystemC allows one
// simulation per process); the buffers hold zeros so that 64 chips x 64 MiB fit in memory
// (the arithmetic and every transfer still run; results are checked by the multichip tests
// and `vtpu collective --check` at sizes that fit). Counters: simulated time, bus bandwidth,
// simulated time / alpha-beta model, wall and CPU seconds (on a shared machine the CPU time is
// what one core needs), peak memory of the child.
#include <benchmark/benchmark.h>

#include <chrono>

#include "vtpu/collectives/collectives.h"

namespace {

void run(benchmark::State& state, const char* preset, bool symmetric) {
  for (auto _ : state) {
    vtpu::collectives::Spec s;
    s.bytes = uint64_t(state.range(0)) << 20;
    vtpu::collectives::RunOptions o;
    o.data = false;
    o.symmetric = symmetric;
    auto t0 = std::chrono::steady_clock::now();
    vtpu::collectives::Summary f = vtpu::collectives::run_isolated(vtpu::config::load_preset(preset), s, o);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!f.error.empty()) {
      state.SkipWithError(f.error.c_str());
      return;
    }
    state.SetIterationTime(wall);
    state.counters["sim_us"] = f.seconds * 1e6;
    state.counters["cycles"] = double(f.cycles);
    state.counters["busbw_GBps"] = f.bus_bandwidth / 1e9;
    state.counters["time_over_model"] = f.seconds / (f.beta_s + f.alpha_s);
    state.counters["wall_s"] = wall;
    state.counters["cpu_s"] = f.cpu_s;  // the figure for "one core": wall time includes other load
    state.counters["rss_MiB"] = f.peak_rss_mib;
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
