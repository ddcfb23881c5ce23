// How fast the cycle-accurate model runs: 2048^3 GEMMs (int8, bf16) on the 256x256 and
// 128x128 presets, against an optimized host GEMM of the same shape (oneDNN, one thread) in
// the same run. The simulation is timed in a forked child (SystemC allows one simulation per
// process); counters: simulated cycles, cycles/s, simulated MACs/s, MXU utilization, and the
// wall-time ratio simulator / host GEMM.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <random>

#include "gemm_program.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"

#ifdef VTPU_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

struct SimFigures {
  double wall_s = 0;
  uint64_t cycles = 0;
  uint64_t macs = 0;
  double utilization = 0;
  char error[512] = {};
};

// Simulates the GEMM in a child process and returns what it measured.
// A preset by name; "tpu-v1+bf16" is tpu-v1 with bf16 added to its MXU (the paper's chip
// is int8 only), to time bf16 on a 256x256 array.
vtpu::config::Config bench_config(const std::string& preset) {
  if (preset != "tpu-v1+bf16") return vtpu::config::load_preset(preset);
  std::string y = vtpu::config::to_yaml(vtpu::config::load_preset("tpu-v1"));
  auto at = y.find("dtypes: [int8]");
  if (at != std::string::npos) y.replace(at, 14, "dtypes: [int8, bf16]");
  auto name = y.find("name: tpu-v1");
  if (name != std::string::npos) y.replace(name, 12, "name: tpu-v1-bf16");
  return vtpu::config::load_string(y, "tpu-v1+bf16");
}

SimFigures simulate_gemm(const char* preset, vtpu::bench::GemmShape g) {
  auto bytes = [](const SimFigures& f) { return std::string(reinterpret_cast<const char*>(&f), sizeof f); };
  std::string got = vtpu::run_in_child(
      [&] {
        SimFigures f;
        auto cfg = bench_config(preset);
        auto prog = vtpu::isa::assemble(vtpu::bench::gemm_program(cfg, g), "gemm.s");
        std::map<std::string, std::vector<uint8_t>> inputs;
        vtpu::sim::fill_missing_inputs(prog, 7, inputs);
        auto t0 = Clock::now();
        auto r = vtpu::sim::simulate(cfg, prog, inputs);
        f.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
        f.cycles = r.stats.total_cycles;
        f.macs = r.stats.total.macs();
        f.utilization = r.stats.mxu_overall_utilization();
        return bytes(f);
      },
      [&](const std::exception& e) {
        SimFigures f;
        std::strncpy(f.error, e.what(), sizeof f.error - 1);
        return bytes(f);
      },
      "");
  SimFigures f;
  if (got.size() != sizeof f) std::strcpy(f.error, "child died");
  else std::memcpy(&f, got.data(), sizeof f);
  return f;
}

// Wall time of the host GEMM of the same shape (best of 3), 0 when oneDNN is missing.
double host_gemm_seconds(const vtpu::bench::GemmShape& g) {
#ifdef VTPU_HAVE_DNNL
  omp_set_num_threads(1);
  std::mt19937 rng(1);
  double best = 1e30;
  if (!g.bf16) {
    std::vector<int8_t> a(size_t(g.M) * g.K), w(size_t(g.K) * g.N);
    std::vector<int32_t> c(size_t(g.M) * g.N);
    for (auto& x : a) x = int8_t(rng());
    for (auto& x : w) x = int8_t(rng());
    for (int i = 0; i < 3; ++i) {
      auto t0 = Clock::now();
      int32_t co = 0;
      dnnl_gemm_s8s8s32('N', 'N', 'F', g.M, g.N, g.K, 1.0f, a.data(), g.K, 0, w.data(), g.N, 0, 0.0f, c.data(), g.N,
                        &co);
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
  } else {
    // bf16 with exact fp32 accumulation has no faster host equivalent than fp32 sgemm.
    std::vector<float> a(size_t(g.M) * g.K), w(size_t(g.K) * g.N), c(size_t(g.M) * g.N);
    for (auto& x : a) x = float(int(rng() % 200) - 100) / 64.0f;
    for (auto& x : w) x = float(int(rng() % 200) - 100) / 64.0f;
    for (int i = 0; i < 3; ++i) {
      auto t0 = Clock::now();
      dnnl_sgemm('N', 'N', g.M, g.N, g.K, 1.0f, a.data(), g.K, w.data(), g.N, 0.0f, c.data(), g.N);
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
  }
  return best;
#else
  (void)g;
  return 0;
#endif
}

void BM_SimulateGemm(benchmark::State& state, const char* preset, bool bf16) {
  uint32_t n = uint32_t(state.range(0));
  vtpu::bench::GemmShape g{n, n, n, bf16};
  SimFigures f;
  for (auto _ : state) {
    f = simulate_gemm(preset, g);
    if (f.error[0]) {
      state.SkipWithError(f.error);
      return;
    }
    state.SetIterationTime(f.wall_s);
  }
  double host = host_gemm_seconds(g);
  state.counters["sim_cycles"] = double(f.cycles);
  state.counters["sim_cycles_per_s"] = double(f.cycles) / f.wall_s;
  state.counters["sim_GMAC_per_s"] = double(f.macs) / f.wall_s / 1e9;
  state.counters["mxu_util"] = f.utilization;
  state.counters["host_gemm_s"] = host;
  state.counters["sim_over_host"] = host > 0 ? f.wall_s / host : 0;
}

}  // namespace

BENCHMARK_CAPTURE(BM_SimulateGemm, tpu_v1_int8, "tpu-v1", false)
    ->Arg(2048)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateGemm, tpu_v1_bf16, "tpu-v1+bf16", true)
    ->Arg(2048)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateGemm, tpu_v4_core_int8, "tpu-v4-core", false)
    ->Arg(2048)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateGemm, tpu_v4_core_bf16, "tpu-v4-core", true)
    ->Arg(2048)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_SimulateGemm, edge_int8, "edge", false)
    ->Arg(1024)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
