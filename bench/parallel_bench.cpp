// Models across chips: BERT-base (one encoder layer and all twelve, sequence 128) and MLP0 on
// the 8 chips of tpu-v4-2x2x2 split by batch, by layers and by the matmuls' weights
// (vtpu run --parallel data|pipeline|tensor), against the batch on one chip. Each case runs in
// a forked child (one SystemC simulation per process; the single-chip baseline in a child of
// that). Counters: simulated microseconds on one chip and on the system, speed-up, time the
// busiest link carried data, whether the outputs are byte-identical to the single-chip run's
// and the largest difference relative to the output's largest |value|, and wall seconds.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>

#include "vtpu/models/zoo.h"
#include "vtpu/runtime/parallel.h"
#include "vtpu/support/child_process.h"

namespace {

struct Figures {
  double one_chip_s = 0, system_s = 0, collective_s = 0, relative_difference = 0;
  bool identical = false;
  char error[512] = {};
};

Figures run(const char* model, const char* preset, const char* kind, vtpu::compiler::Precision p, int64_t batch) {
  auto bytes = [](const Figures& f) { return std::string(reinterpret_cast<const char*>(&f), sizeof f); };
  auto fail = [&](const char* what) {
    Figures f;
    std::strncpy(f.error, what, sizeof f.error - 1);
    return bytes(f);
  };
  std::string got = vtpu::run_in_child(
      [&] {
        vtpu::runtime::RunOptions o;
        o.precision = p;
        o.batch = batch;
        vtpu::runtime::ParallelOptions po;
        po.kind = vtpu::runtime::parallelism_from_name(kind);
        auto r = vtpu::runtime::run_parallel(vtpu::models::materialize(model, vtpu::models::default_dir()),
                                             vtpu::config::load_preset(preset), po, o);
        if (!r.baseline_ran) return fail(("the single-chip run failed: " + r.baseline_error).c_str());
        Figures f;
        f.one_chip_s = r.baseline_seconds(), f.system_s = r.seconds(), f.collective_s = r.collective_seconds();
        f.identical = r.identical, f.relative_difference = r.max_relative_difference;
        return bytes(f);
      },
      [&](const std::exception& e) { return fail(e.what()); }, fail("the child crashed"));
  Figures f;
  std::memcpy(&f, got.data(), std::min(got.size(), sizeof f));
  return f;
}

void BM_Parallel(benchmark::State& state, const char* model, const char* preset, const char* kind, vtpu::compiler::Precision p,
                 int64_t batch) {
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    Figures f = run(model, preset, kind, p, batch);
    double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (f.error[0]) {
      state.SkipWithError(f.error);
      return;
    }
    state.SetIterationTime(wall);
    state.counters["one_chip_us"] = f.one_chip_s * 1e6;
    state.counters["system_us"] = f.system_s * 1e6;
    state.counters["speedup"] = f.system_s > 0 ? f.one_chip_s / f.system_s : 0;
    state.counters["collective_us"] = f.collective_s * 1e6;
    state.counters["identical"] = f.identical ? 1 : 0;
    state.counters["rel_diff"] = f.relative_difference;
    state.counters["wall_s"] = wall;
  }
}

using vtpu::compiler::Precision;
#define PARALLEL_CASE(name, model, kind, precision, batch)                                                    \
  BENCHMARK_CAPTURE(BM_Parallel, name, model, "tpu-v4-2x2x2", kind, precision, batch)                          \
      ->Iterations(1)                                                                                          \
      ->UseManualTime()                                                                                        \
      ->Unit(benchmark::kSecond)
// One encoder layer: by batch and by weights (a layer has too few places to cut for 8
// pipeline stages); the whole encoder by all three.
PARALLEL_CASE(BertLayer_bf16_b8_Data, "bert-base-layer", "data", Precision::Bf16, 8);
PARALLEL_CASE(BertLayer_bf16_b8_Tensor, "bert-base-layer", "tensor", Precision::Bf16, 8);
PARALLEL_CASE(BertLayer_int8_b8_Tensor, "bert-base-layer", "tensor", Precision::Int8, 8);
PARALLEL_CASE(BertLayer_bf16_b1_Tensor, "bert-base-layer", "tensor", Precision::Bf16, 1);
PARALLEL_CASE(BertBase_bf16_b8_Data, "bert-base", "data", Precision::Bf16, 8);
PARALLEL_CASE(BertBase_bf16_b8_Pipeline, "bert-base", "pipeline", Precision::Bf16, 8);
PARALLEL_CASE(BertBase_bf16_b8_Tensor, "bert-base", "tensor", Precision::Bf16, 8);
// MLP0 at a small batch, where reading the weights bounds one chip: each chip reads an
// eighth of them.
PARALLEL_CASE(Mlp0_int8_b8_Tensor, "mlp0", "tensor", Precision::Int8, 8);
PARALLEL_CASE(Mlp0_int8_b200_Tensor, "mlp0", "tensor", Precision::Int8, 200);

}  // namespace

BENCHMARK_MAIN();
