// Simulated cycles per second of the Verilated MXU RTL (rtl/, docs/rtl.md) on a fixed
// matmul stream: 8 weight tiles, each swapped in by a 256-row matmul that accumulates into
// the same 256 accumulator rows, with the next tile loading into the shadow buffer as the
// swap frees it (`mxu.matmul swap=1 || mxu.wload`), so the array streams without a bubble.
// Compare `cycles/s` with the SystemC model (bench_sim), which charges a whole tile per call.
//
//   bench_rtl                               # 16x16, 8x8 and 4x4, int8 and bf16
//   bench_rtl --benchmark_filter=16x16
//
// Each simulated cycle is driven as in the cross-check harness: set the commands, eval(),
// answer the unified-buffer and weight-FIFO reads the model requests, then the clock edge
// (eval() with the new inputs, clk = 1, eval()).
//
// RtlCore/<model>/{stream,gemm}/<dtype>: the whole core (vtpu_core) against the SystemC
// model on one program — stream: rtl::core_stream_program (8 tiles x 256-row matmuls, the
// accumulators copied out and stored); gemm: gemm_program.h's 256 x 4R x 4C GEMM with its
// requantized (int8) or converted (bf16) output — as rtl_cycles/s, sim_cycles/s and
// sim/rtl (how many times faster the SystemC model simulates the same cycles).
//   bench_rtl --benchmark_filter=RtlCore
#include <benchmark/benchmark.h>
#include <verilated.h>

#include <memory>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "compiled_programs.h"
#include "core_harness.h"
#include "gemm_program.h"
#include "vtpu/config/config.h"
#include "vtpu/isa/assembler.h"
#include "vtpu_rtl_models.h"

// The simulator links SystemC, which wants an sc_main; simulations run in child processes.
int sc_main(int, char**) { return 0; }

namespace {

constexpr unsigned kTiles = 8, kRows = 256;

template <class T>
void put16(T& port, unsigned lane, uint16_t v) {
  if constexpr (std::is_integral_v<T>) {
    const uint64_t mask = uint64_t{0xFFFF} << (16 * lane);
    port = static_cast<T>((uint64_t(port) & ~mask) | (uint64_t(v) << (16 * lane)));
  } else {
    EData& w = port.at(lane / 2);
    const unsigned off = 16 * (lane % 2);
    w = (w & ~(0xFFFFu << off)) | (uint32_t(v) << off);
  }
}

struct StreamResult {
  uint64_t cycles = 0, writes = 0, dones = 0;
  bool in_order = true;
};

// One run of the stream from reset.
template <class V, unsigned R, unsigned C>
StreamResult run_stream(V& m, bool bf16, const std::vector<uint16_t>& a, const std::vector<uint16_t>& w) {
  auto edge = [&]() {
    m.eval();
    m.clk = 1;
    m.eval();
    m.clk = 0;
  };
  m.rst_n = 0;
  m.mm_valid = 0;
  m.wl_valid = 0;
  m.acc_ext_we = 0;
  edge();
  edge();
  m.rst_n = 1;
  StreamResult r;
  unsigned bundle = 0;  // bundle 0: mxu.wload; bundle i in 1..8: mxu.matmul swap=1 || mxu.wload (i < 8)
  unsigned pops = 0, loading = 0, next_row = 0;
  while (r.dones < kTiles && r.cycles < 100000) {
    bool mm = false, wl = false;
    if (bundle == 0) {
      wl = m.wl_ready;
    } else if (bundle <= kTiles) {
      const bool with_wl = bundle < kTiles;
      mm = m.mm_data_free && m.mm_shadow_ready && (!with_wl || m.wl_ready);
      wl = mm && with_wl;
    }
    m.mm_valid = mm;
    m.mm_rows = kRows;
    m.mm_dst = 0;
    m.mm_acc = bundle > 1;
    m.mm_swap = 1;
    m.mm_bf16 = bf16;
    m.wl_valid = wl;
    m.wf_avail = pops < kTiles;  // every tile is in the weight FIFO from the start
    m.wf_k = R;
    m.wf_n = C;
    m.eval();
    if (mm || wl) ++bundle;
    if (m.in_req) {
      const unsigned j = m.in_req_row;
      if (j != (mm ? 0u : next_row)) r.in_order = false;
      for (unsigned k = 0; k < R; ++k) put16(m.in_data, k, a[size_t(j % kRows) * R + k]);
      next_row = j + 1;
    }
    if (m.wf_pop) loading = pops++;
    if (m.wf_rd)
      for (unsigned n = 0; n < C; ++n) put16(m.wf_data, n, w[(size_t(loading % kTiles) * R + m.wf_row) * C + n]);
    r.writes += m.acc_we;
    r.dones += m.done;
    edge();
    ++r.cycles;
  }
  return r;
}

template <class V, unsigned R, unsigned C>
void BM_RtlMxu(benchmark::State& state, bool bf16) {
  std::mt19937 rng(1);
  auto value = [&]() -> uint16_t {
    return bf16 ? static_cast<uint16_t>(((rng() & 1u) << 15) | ((120u + rng() % 14u) << 7) | (rng() & 0x7Fu))
                : static_cast<uint16_t>(rng() & 0xFF);
  };
  std::vector<uint16_t> a(size_t(kRows) * R), w(size_t(kTiles) * R * C);
  for (auto& x : a) x = value();
  for (auto& x : w) x = value();

  auto ctx = std::make_unique<VerilatedContext>();
  auto m = std::make_unique<V>(ctx.get(), "mxu");
  StreamResult r;
  for (auto _ : state) r = run_stream<V, R, C>(*m, bf16, a, w);
  m->final();
  if (!r.in_order || r.writes != kTiles * kRows || r.dones != kTiles)
    return state.SkipWithError("the matmul stream did not run as expected");
  state.counters["cycles"] = double(r.cycles);
  state.counters["cycles/s"] = benchmark::Counter(double(r.cycles), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["MAC/s"] =
      benchmark::Counter(double(kTiles) * kRows * R * C, benchmark::Counter::kIsIterationInvariantRate);
}

template <class V, unsigned R, unsigned C>
void register_model(const char* size) {
  for (const bool bf16 : {false, true})
    benchmark::RegisterBenchmark((std::string("RtlMxu/") + size + (bf16 ? "/bf16" : "/int8")).c_str(),
                                 [bf16](benchmark::State& state) { BM_RtlMxu<V, R, C>(state, bf16); })
        ->Unit(benchmark::kMillisecond);
}

// The whole core: the same program through the Verilated vtpu_core and the SystemC model
// (each run from a fresh model; SystemC runs in a forked child and times simulate() there,
// elaboration included). cycles/s of each and their ratio; the runs must agree on the
// total cycles.
void BM_RtlCore(benchmark::State& state, const vtpu::rtl::CoreModelParams& p, const std::string& dtype, bool gemm) {
  using namespace vtpu;
  const config::Config cfg = config::load_preset(p.preset);
  const std::string text =
      gemm ? fmt::format(".config {}\n", p.preset) +
                 bench::gemm_program(cfg, {256, 4 * p.rows, 4 * p.cols, dtype == "bf16"})
           : rtl::core_stream_program(cfg, dtype, 8, 256);
  const isa::Program prog = isa::assemble(text, "bench.s");
  const rtl::Inputs in = rtl::random_core_inputs(prog, 1);
  double rtl_s = 0, sim_s = 0;
  uint64_t cycles = 0, n = 0;
  for (auto _ : state) {
    const rtl::CoreRunResult sim = rtl::run_sim(cfg, prog, in);
    const rtl::CoreRunResult hw = rtl::run_rtl(p.name, cfg, prog, in, 10'000'000);
    if (!sim.ok || !hw.ok) return state.SkipWithError((sim.error + hw.error).c_str());
    if (sim.total_cycles != hw.total_cycles || sim.outputs != hw.outputs)
      return state.SkipWithError("the RTL and the SystemC model disagree on this program");
    state.SetIterationTime(hw.seconds);
    rtl_s += hw.seconds, sim_s += sim.seconds, cycles = hw.total_cycles, ++n;
  }
  state.counters["cycles"] = double(cycles);
  state.counters["rtl_cycles/s"] = double(cycles) * double(n) / rtl_s;
  state.counters["sim_cycles/s"] = double(cycles) * double(n) / sim_s;
  state.counters["sim/rtl"] = rtl_s / sim_s;  // how many times faster the SystemC model is
}

// A compiled model (rtl/tb/compiled_programs.h): the compiler's program for a tiny preset,
// compiled once, then run through both sides as above.
void BM_RtlCompiled(benchmark::State& state, const std::string& model, const std::string& preset,
                    const std::string& dtype) {
  using namespace vtpu;
  const config::Config cfg = config::load_preset(preset);
  std::string name;
  for (const auto& p : rtl::core_models())
    if (p.preset == preset) name = p.name;
  rtl::CompiledProgram c;
  try {
    c = rtl::compile_for_rtl(model, preset, dtype, std::filesystem::temp_directory_path() / "vtpu-bench-rtl");
  } catch (const std::exception& e) {
    return state.SkipWithError(e.what());
  }
  double rtl_s = 0, sim_s = 0;
  uint64_t cycles = 0, n = 0;
  for (auto _ : state) {
    const rtl::CoreRunResult sim = rtl::run_sim(cfg, c.program, c.inputs);
    const rtl::CoreRunResult hw = rtl::run_rtl(name, cfg, c.program, c.inputs, 100'000'000);
    if (!sim.ok || !hw.ok) return state.SkipWithError((sim.error + hw.error).c_str());
    if (!rtl::compare_runs(sim, hw, c.program).empty())
      return state.SkipWithError("the RTL and the SystemC model disagree on this program");
    state.SetIterationTime(hw.seconds);
    rtl_s += hw.seconds, sim_s += sim.seconds, cycles = hw.total_cycles, ++n;
  }
  state.counters["cycles"] = double(cycles);
  state.counters["rtl_cycles/s"] = double(cycles) * double(n) / rtl_s;
  state.counters["sim_cycles/s"] = double(cycles) * double(n) / sim_s;
  state.counters["sim/rtl"] = rtl_s / sim_s;
}

const bool kRegistered = [] {
  for (const std::string& model : vtpu::rtl::compiled_model_names())
    for (const char* preset : {"tiny-16x16", "tiny-8x8-2mxu"})
      for (const char* dt : {"int8", "bf16"})
        benchmark::RegisterBenchmark(("RtlCompiled/" + model + "/" + preset + "/" + dt).c_str(),
                                     [model, preset, dt](benchmark::State& state) {
                                       BM_RtlCompiled(state, model, preset, dt);
                                     })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
  for (const auto& p : vtpu::rtl::core_models())
    for (const bool gemm : {false, true})
      for (const char* dt : {"int8", "bf16"})
        benchmark::RegisterBenchmark(("RtlCore/" + p.name + (gemm ? "/gemm/" : "/stream/") + dt).c_str(),
                                     [p, dt, gemm](benchmark::State& state) { BM_RtlCore(state, p, dt, gemm); })
            ->UseManualTime()
            ->Unit(benchmark::kMillisecond);
  register_model<Vmxu_16x16, 16, 16>("16x16");
  register_model<Vmxu_8x8, 8, 8>("8x8");
  register_model<Vmxu_4x4, 4, 4>("4x4");
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
