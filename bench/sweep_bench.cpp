// What a sweep point costs, and the sweep-speed target of issue 17 (docs/sweeps.md):
//   BM_CompileResNet50/cold             compile ResNet-50 int8 for tpu-v1 with INT8 calibration
//   BM_CompileResNet50/reused_calibration  the same with the calibration of an earlier compile
//   BM_CompileResNet50Group             8 programs from one lowering (compiler::ModelCompiler), as a
//                                       sweep's compile task makes them: CPU per program
//   BM_SimulateResNet50/full, /timing_only  one simulation, arithmetic on and off
//   BM_Sweep1000                        bench/sweeps/resnet50_int8_1000.yaml from a cold cache, -j 2
// Every figure is CPU seconds of the processes doing the work (the machine may be shared,
// so wall time alone says little); BM_Sweep1000 also reports wall time and points per
// CPU-second. It takes minutes: run it alone with --benchmark_filter=Sweep.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "vtpu/compiler/compiler.h"
#include "vtpu/models/zoo.h"
#include "vtpu/sim/simulator.h"
#include "vtpu/support/child_process.h"
#include "vtpu/support/heap.h"
#include "vtpu/sweep/runner.h"
#include "vtpu/sweep/spec.h"

namespace {

namespace fs = std::filesystem;
using vtpu::compiler::Precision;

double children_cpu() {
  rusage ru{};
  getrusage(RUSAGE_CHILDREN, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

fs::path resnet50() { return vtpu::models::materialize("resnet50", vtpu::models::default_dir()); }

// CPU seconds of fn run in a child (one SystemC simulation per process).
double child_cpu(const std::function<void()>& fn) {
  double before = children_cpu();
  std::string r = vtpu::run_in_child(
      [&] {
        fn();
        return std::string("ok");
      },
      [](const std::exception& e) { return std::string(e.what()); }, "crashed");
  if (r != "ok") throw std::runtime_error(r);
  return children_cpu() - before;
}

// ResNet-50's INT8 scales from a compile in a child, as a sweep's worker makes them (a
// compile here would leave this process's heap in pieces that the measured child then reuses
// on small pages).
std::vector<float> scales_from_a_child(const vtpu::config::Config& cfg, const vtpu::compiler::CompileOptions& o) {
  std::string bytes = vtpu::run_in_child(
      [&] {
        std::vector<float> s = vtpu::compiler::compile_onnx(resnet50(), cfg, o).calibration_scales;
        return std::string(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(float));
      },
      [](const std::exception& e) { return std::string("error: ") + e.what(); }, "crashed");
  if (bytes.size() % sizeof(float)) throw std::runtime_error(bytes);
  std::vector<float> scales(bytes.size() / sizeof(float));
  std::memcpy(scales.data(), bytes.data(), bytes.size());
  return scales;
}

void BM_CompileResNet50(benchmark::State& state, bool reuse) {
  auto cfg = vtpu::config::load_preset("tpu-v1");
  vtpu::compiler::CompileOptions o;
  o.precision = Precision::Int8;
  if (reuse) o.calibration_scales = scales_from_a_child(cfg, o);
  double cpu = 0;
  for (auto _ : state) cpu = child_cpu([&] { vtpu::compiler::compile_onnx(resnet50(), cfg, o); });
  state.counters["cpu_s"] = cpu;
}
BENCHMARK_CAPTURE(BM_CompileResNet50, cold, false)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_CompileResNet50, reused_calibration, true)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// Eight tpu-v1 configs that differ in HBM bytes per cycle (each its own program), compiled
// from one import and lowering with the calibration reused, as a sweep's worker does.
void BM_CompileResNet50Group(benchmark::State& state) {
  auto base = vtpu::config::load_preset("tpu-v1");
  std::vector<vtpu::config::Config> cfgs;
  for (double gbs : {8.5, 12.0, 17.0, 24.0, 34.0, 48.0, 68.0, 136.0}) {
    cfgs.push_back(base);
    cfgs.back().memory.bandwidth_gbytes_per_s = gbs;
  }
  vtpu::compiler::CompileOptions o;
  o.precision = Precision::Int8;
  o.calibration_scales = scales_from_a_child(base, o);
  double cpu = 0;
  for (auto _ : state)
    cpu = child_cpu([&] {
      vtpu::compiler::ModelCompiler m(resnet50(), o);
      for (const auto& c : cfgs) vtpu::isa::serialize(m.compile(c).program);
    });
  state.counters["cpu_s"] = cpu;
  state.counters["cpu_s_per_program"] = cpu / double(cfgs.size());
}
BENCHMARK(BM_CompileResNet50Group)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SimulateResNet50(benchmark::State& state, bool timing_only) {
  auto cfg = vtpu::config::load_preset("tpu-v1");
  vtpu::compiler::CompileOptions o;
  o.precision = Precision::Int8;
  vtpu::isa::Program prog = vtpu::compiler::compile_onnx(resnet50(), cfg, o).program;
  std::map<std::string, std::vector<uint8_t>> in;
  vtpu::sim::fill_missing_inputs(prog, 1, in);
  double cpu = 0;
  uint64_t cycles = 0;
  for (auto _ : state)
    cpu = child_cpu([&] {
      vtpu::sim::SimOptions so;
      so.timing_only = timing_only;
      cycles = vtpu::sim::simulate(cfg, prog, in, so).stats.total_cycles;
    });
  state.counters["cpu_s"] = cpu;
}
BENCHMARK_CAPTURE(BM_SimulateResNet50, full, false)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_SimulateResNet50, timing_only, true)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Sweep1000(benchmark::State& state) {
  vtpu::sweep::SweepSpec spec = vtpu::sweep::load_sweep(VTPU_SOURCE_DIR "/bench/sweeps/resnet50_int8_1000.yaml");
  fs::path dir = fs::temp_directory_path() / ("vtpu-bench-sweep-" + std::to_string(getpid()));
  vtpu::sweep::RunSummary s;
  for (auto _ : state) {
    fs::remove_all(dir);
    vtpu::sweep::RunOptions o;
    o.jobs = 2;
    o.db = dir / "results.sqlite";
    o.cache_dir = dir / "cache";
    s = vtpu::sweep::run_sweep(spec, o);
  }
  fs::remove_all(dir);
  state.counters["points"] = double(s.ran);
  state.counters["ok"] = double(s.ok);
  state.counters["does_not_fit"] = double(s.does_not_fit);
  state.counters["compiles"] = double(s.compiles);
  state.counters["wall_s"] = s.wall_s;
  state.counters["cpu_s"] = s.cpu_s;
  state.counters["points_per_cpu_s"] = s.cpu_s > 0 ? double(s.ran) / s.cpu_s : 0;
}
BENCHMARK(BM_Sweep1000)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
  vtpu::heap_on_huge_pages();  // as the vtpu tool's main does: the compiles it measures fork from here
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
