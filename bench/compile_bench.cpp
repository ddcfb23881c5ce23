// The compiler's own speed: the assembler's throughput on a compiled program's text, and the
// compile time of the zoo's longest compiles (small arrays that stream large models, where
// most of the time goes into printing and assembling millions of bundles, and a refusal
// past the instruction set's 2^24 bundles). Figures: seconds, bundles, bundles per second.
#include <benchmark/benchmark.h>

#include <chrono>

#include "vtpu/compiler/compiler.h"
#include "vtpu/config/config.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/models/zoo.h"

namespace {

using vtpu::compiler::Precision;

vtpu::compiler::CompileResult compile(const char* model, const char* preset, Precision p) {
  vtpu::compiler::CompileOptions o;
  o.precision = p;
  auto path = vtpu::models::materialize(model, vtpu::models::default_dir());
  return vtpu::compiler::compile_onnx(path, vtpu::config::load_preset(preset), o);
}

// isa::assemble on the text of MLP0 INT8 compiled for tiny-8x8 (about 1M bundles).
void BM_Assemble(benchmark::State& state) {
  static const std::string text = compile("mlp0", "tiny-8x8", Precision::Int8).assembly;
  size_t bundles = 0;
  for (auto _ : state) bundles = vtpu::isa::assemble(text, "<bench>").code.size();
  state.counters["bundles"] = double(bundles);
  state.counters["bundles_per_s"] = benchmark::Counter(double(bundles), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["text_MB"] = double(text.size()) / 1e6;
}
BENCHMARK(BM_Assemble)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

// A whole compile (import, calibration, planning, code generation, assembly); a refusal
// reports its seconds too, and `refused` = 1.
void BM_Compile(benchmark::State& state, const char* model, const char* preset, Precision p) {
  double seconds = 0, bundles = 0, refused = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      bundles = double(compile(model, preset, p).program.code.size());
    } catch (const vtpu::compiler::CompileError&) {
      refused = 1;
    }
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters["compile_s"] = seconds;
  state.counters["bundles"] = bundles;
  state.counters["refused"] = refused;
}
#define CASE(name, model, preset, p) \
  BENCHMARK_CAPTURE(BM_Compile, name, model, preset, p)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime()
CASE(lstm0_tiny8x8_bf16, "lstm0", "tiny-8x8", Precision::Bf16);
CASE(lstm0_tiny8x8_int8, "lstm0", "tiny-8x8", Precision::Int8);
CASE(lstm0_tiny4x4_int8_refused, "lstm0", "tiny-4x4", Precision::Int8);
CASE(mlp0_tiny4x4_int8, "mlp0", "tiny-4x4", Precision::Int8);
CASE(mlp0_tiny4x4_bf16, "mlp0", "tiny-4x4", Precision::Bf16);
CASE(resnet50_tiny16x16_bf16, "resnet50", "tiny-16x16", Precision::Bf16);
CASE(resnet50_v4_int8, "resnet50", "tpu-v4-core", Precision::Int8);

}  // namespace

BENCHMARK_MAIN();
