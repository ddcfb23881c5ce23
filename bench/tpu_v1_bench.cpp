// TPU v1's six applications (Jouppi et al., ISCA 2017) on the tpu-v1 preset, beside the
// paper's measured figures (Table 3): TOPS and where the matrix unit's cycles go (array
// active, weight stall, weight shift, non-matrix; RAW and input stalls beside them, as the
// paper's rows 7 and 8). docs/reports.md defines each share from the simulator's counters and
// trace; docs/validation.md discusses the gaps.
//
//   build/bench/bench_tpu_v1                      all six, then the table and mean |TOPS error|
//   build/bench/bench_tpu_v1 --benchmark_filter=mlp
//   build/bench/bench_tpu_v1 --benchmark_filter=lstm   the LSTMs hoisted and per-step (the paper's schedule)
//   build/bench/bench_tpu_v1 --benchmark_filter=whole  each with whole weight tiles (core.mxu.whole_weight_tiles)
//
// Each application compiles (int8, seeded calibration) and simulates in a forked child (one
// SystemC simulation per process). An application the compiler refuses at the paper's batch
// runs at the largest smaller power-of-two batch it accepts, and the table says so. All of
// them take about 4 minutes on the 2-core machine (cnn1 most of it, twice).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "vtpu/models/zoo.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/sim/breakdown.h"
#include "vtpu/support/child_process.h"

namespace {

// Table 1 (batch) and Table 3 (measured) of the paper, rows 1, 4, 5, 6, 7, 8 and 9.
struct Paper {
  const char* name;  // the zoo model
  int64_t batch;
  double active, weight_stall, weight_shift, non_matrix, raw, input, tops;
};
constexpr Paper kPaper[] = {
    {"mlp0", 200, 12.7, 53.9, 15.9, 17.5, 3.3, 6.1, 12.3},  {"mlp1", 168, 10.6, 44.2, 13.4, 31.9, 8.4, 8.8, 9.7},
    {"lstm0", 64, 8.2, 58.1, 15.8, 17.9, 14.6, 5.1, 3.7},   {"lstm1", 96, 10.5, 62.1, 17.1, 10.3, 10.6, 2.4, 2.8},
    {"cnn0", 8, 78.2, 0.0, 0.0, 21.8, 3.5, 3.4, 86.0},      {"cnn1", 32, 46.2, 28.1, 7.0, 18.7, 22.8, 0.6, 14.1}};

struct Result {
  double tops = 0, active = 0, weight_stall = 0, weight_shift = 0, non_matrix = 0, raw = 0, input = 0;
  double compile_s = 0, simulate_s = 0, macs_per_weight_byte = 0;
  uint64_t cycles = 0;
  int64_t batch = 0;
  char error[1024] = {};
};

std::string bytes_of(const Result& r) { return std::string(reinterpret_cast<const char*>(&r), sizeof r); }

Result run_at(const Paper& app, int64_t batch, vtpu::compiler::RnnSchedule rnn, bool whole) {
  const std::string got = vtpu::run_in_child(
      [&] {
        Result r;
        vtpu::runtime::RunOptions o;
        o.precision = vtpu::compiler::Precision::Int8;
        o.batch = batch;
        o.rnn_schedule = rnn;
        o.record_trace = true;
        vtpu::config::Config cfg = vtpu::config::load_preset("tpu-v1");
        cfg.core.mxu.whole_weight_tiles = whole;
        auto run = vtpu::runtime::run_model(vtpu::models::materialize(app.name, vtpu::models::default_dir()), cfg, o);
        const auto& s = run.sim.stats;
        const vtpu::sim::MxuBreakdown b = vtpu::sim::mxu_breakdown(run.sim, run.program);
        r.cycles = s.total_cycles;
        r.tops = 2.0 * double(s.total.macs()) / s.seconds() / 1e12;
        r.active = 100 * b.array_active, r.weight_stall = 100 * b.weight_stall, r.weight_shift = 100 * b.weight_shift;
        r.non_matrix = 100 * b.non_matrix, r.raw = 100 * b.raw_stalls, r.input = 100 * b.input_stalls;
        r.compile_s = run.compile_seconds, r.simulate_s = run.simulate_seconds;
        r.macs_per_weight_byte = double(s.total.macs()) / double(std::max<uint64_t>(1, s.total.wfifo_bytes));
        r.batch = run.batch;
        return bytes_of(r);
      },
      [](const std::exception& e) {
        Result r;
        std::strncpy(r.error, e.what(), sizeof r.error - 1);
        return bytes_of(r);
      },
      [] {
        Result r;
        std::strncpy(r.error, "the child crashed", sizeof r.error - 1);
        return bytes_of(r);
      }());
  Result r;
  std::memcpy(&r, got.data(), std::min(got.size(), sizeof r));
  return r;
}

struct Row {
  const Paper* app;
  bool per_step;  // the LSTMs with the paper's schedule (--rnn-schedule per-step)
  bool whole;     // weight tiles moved whole (core.mxu.whole_weight_tiles; docs/validation.md)
  Result r;
};
std::vector<Row>& results() {
  static std::vector<Row> v;
  return v;
}
std::vector<std::string>& notes() {
  static std::vector<std::string> v;
  return v;
}

void BM_App(benchmark::State& state, const Paper* app, bool per_step, bool whole) {
  const auto rnn = per_step ? vtpu::compiler::RnnSchedule::PerStep : vtpu::compiler::RnnSchedule::Hoisted;
  Result r;
  for (auto _ : state) {
    r = run_at(*app, app->batch, rnn, whole);
    // The compiler's limits at the paper's batch (a descriptor table, a layer's activation
    // bigger than the unified buffer): the largest power-of-two batch it takes.
    auto limit = [](const char* e) { return std::strstr(e, "descriptor") || std::strstr(e, "too small"); };
    const std::string why = r.error;  // at the paper's batch
    for (int64_t b = app->batch / 2; r.error[0] && b >= 1 && limit(r.error); b /= 2) {
      r = run_at(*app, b, rnn, whole);
      if (!r.error[0])
        notes().push_back(std::string(app->name) + ": ran at batch " + std::to_string(b) + "; at batch " +
                          std::to_string(app->batch) + " the compiler refused: " + why);
    }
  }
  if (r.error[0]) {
    state.SkipWithError(r.error);
    return;
  }
  results().push_back({app, per_step, whole, r});
  state.counters["tops"] = r.tops;
  state.counters["paper_tops"] = app->tops;
  state.counters["tops_error_pct"] = 100 * (r.tops - app->tops) / app->tops;
  state.counters["active_pct"] = r.active;
  state.counters["weight_stall_pct"] = r.weight_stall;
  state.counters["weight_shift_pct"] = r.weight_shift;
  state.counters["non_matrix_pct"] = r.non_matrix;
  state.counters["raw_stall_pct"] = r.raw;
  state.counters["sim_cycles"] = double(r.cycles);
  state.counters["macs_per_weight_byte"] = r.macs_per_weight_byte;
  state.counters["compile_s"] = r.compile_s;
  state.counters["simulate_s"] = r.simulate_s;
}

void print_table() {
  if (results().empty()) return;
  std::printf("\nTPU v1's applications on tpu-v1 (int8): vtpu | paper (Table 3). Shares of all cycles, %%.\n");
  std::printf("%-20s %5s %14s %14s %14s %14s %14s %12s %12s %7s\n", "app", "batch", "TOPS", "array active",
              "weight stall", "weight shift", "non-matrix", "RAW stalls", "input stalls", "MAC/B");
  // The mean |TOPS error| and largest share gaps over the six, once with vtpu's own LSTM
  // schedule and once with the paper's (per-step rows in place of the hoisted ones); and
  // with the paper's schedule and whole weight tiles.
  struct Sum {
    double err = 0, gap[4] = {};
    size_t n = 0;
  } own, paper, whole;
  for (const Row& row : results()) {
    const Paper* p = row.app;
    const Result& r = row.r;
    const std::string name = std::string(p->name) + (row.per_step ? " per-step" : "") + (row.whole ? " whole" : "");
    std::printf("%-20s %5lld %6.1f | %5.1f %6.1f | %5.1f %6.1f | %5.1f %6.1f | %5.1f %6.1f | %5.1f %5.1f | %4.1f %5.1f | %4.1f %7.0f\n",
                name.c_str(), static_cast<long long>(r.batch), r.tops, p->tops, r.active, p->active, r.weight_stall,
                p->weight_stall, r.weight_shift, p->weight_shift, r.non_matrix, p->non_matrix, r.raw, p->raw, r.input,
                p->input, r.macs_per_weight_byte);
    const bool recurrent = std::strncmp(p->name, "lstm", 4) == 0;
    for (Sum* sum : {&own, &paper, &whole}) {
      if (row.whole != (sum == &whole) || (recurrent && row.per_step != (sum != &own))) continue;
      sum->err += std::fabs(r.tops - p->tops) / p->tops, ++sum->n;
      const double d[4] = {r.active - p->active, r.weight_stall - p->weight_stall, r.weight_shift - p->weight_shift,
                           r.non_matrix - p->non_matrix};
      for (int i = 0; i < 4; ++i) sum->gap[i] = std::max(sum->gap[i], std::fabs(d[i]));
    }
  }
  for (const Sum* sum : {&own, &paper, &whole}) {
    if (!sum->n) continue;
    const char* what = sum == &own     ? "LSTMs hoisted (vtpu's default)"
                       : sum == &paper ? "LSTMs per-step (the paper's schedule)"
                                       : "LSTMs per-step, whole weight tiles (core.mxu.whole_weight_tiles)";
    std::printf("%s: mean |TOPS error| over %zu applications %.1f%% (Google's own model, Table 7: 8%%); largest share gaps "
                "(points): array active %.1f, weight stall %.1f, weight shift %.1f, non-matrix %.1f\n",
                what, sum->n,
                100 * sum->err / double(sum->n), sum->gap[0], sum->gap[1], sum->gap[2], sum->gap[3]);
  }
  for (const auto& n : notes()) std::printf("note: %s\n", n.c_str());
}

const bool registered = [] {
  for (const Paper& p : kPaper) {
    const bool recurrent = std::strncmp(p.name, "lstm", 4) == 0;
    auto add = [&](const std::string& name, bool per_step, bool whole) {
      benchmark::RegisterBenchmark(name.c_str(), BM_App, &p, per_step, whole)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();
    };
    add(p.name, false, false);
    if (recurrent) add(std::string(p.name) + "/per-step", true, false);
    add(std::string(p.name) + (recurrent ? "/per-step" : "") + "/whole-tiles", recurrent, true);
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  print_table();
  return 0;
}
