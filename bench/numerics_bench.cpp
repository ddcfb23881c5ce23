// MXU tile kernels in GMAC/s (one MAC = one multiply-add), next to oneDNN's GEMMs on the
// same shapes when oneDNN is available. Everything runs on one thread: the simulator calls
// the kernels from one thread per simulated MXU, so single-thread throughput is what counts.
//
//   bench_numerics                         # all
//   bench_numerics --benchmark_filter=int8 # one family
// The last lines printed are the vtpu / oneDNN ratios per shape.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "vtpu/numerics/mxu.h"

#ifdef VTPU_HAVE_DNNL
#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>
#endif

namespace {

using namespace vtpu::numerics;

struct Shape {
  int64_t B, K, N;
};
// Tile shapes (one call) and the 1024^3 GEMM built from 128 x 128 weight tiles.
const Shape kTileShapes[] = {{256, 256, 256}, {2048, 128, 128}};
constexpr int64_t kGemm = 1024, kTile = 128;

template <class T>
std::vector<T> random_vec(size_t n, uint32_t seed, T (*gen)(std::mt19937&)) {
  std::mt19937 rng(seed);
  std::vector<T> v(n);
  for (auto& x : v) x = gen(rng);
  return v;
}
int8_t gen_i8(std::mt19937& r) { return static_cast<int8_t>(r()); }
uint16_t gen_bf16(std::mt19937& r) {  // normal values around 1
  return static_cast<uint16_t>(((r() & 1u) << 15) | ((120u + r() % 14u) << 7) | (r() & 0x7Fu));
}
float gen_f32(std::mt19937& r) { return static_cast<float>(static_cast<int>(r() % 2001) - 1000) / 997.0f; }

void set_macs(benchmark::State& state, double macs) {
  state.counters["GMAC/s"] = benchmark::Counter(macs * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Int8Tile(benchmark::State& state, KernelIsa isa, Shape s) {
  if (!kernel_isa_supported(isa)) return state.SkipWithError("ISA not supported on this CPU");
  auto a = random_vec<int8_t>(s.B * s.K, 1, gen_i8);
  auto w = random_vec<int8_t>(s.K * s.N, 2, gen_i8);
  std::vector<int32_t> acc(s.B * s.N);
  for (auto _ : state) {
    matmul_tile_int8(isa, a.data(), s.K, w.data(), s.N, acc.data(), s.N, s.B, s.K, s.N, true);
    benchmark::DoNotOptimize(acc.data());
  }
  set_macs(state, double(s.B) * s.K * s.N);
}

void BM_Bf16Tile(benchmark::State& state, KernelIsa isa, Shape s) {
  if (!kernel_isa_supported(isa)) return state.SkipWithError("ISA not supported on this CPU");
  auto a = random_vec<uint16_t>(s.B * s.K, 1, gen_bf16);
  auto w = random_vec<uint16_t>(s.K * s.N, 2, gen_bf16);
  std::vector<float> acc(s.B * s.N);
  for (auto _ : state) {
    matmul_tile_bf16(isa, a.data(), s.K, w.data(), s.N, acc.data(), s.N, s.B, s.K, s.N, false);
    benchmark::DoNotOptimize(acc.data());
  }
  set_macs(state, double(s.B) * s.K * s.N);
}

// C[1024 x 1024] = A[1024 x 1024] W[1024 x 1024] as the MXU runs it: for every 128 x 128
// weight tile, stream all 1024 rows of A's matching 128-column slice; accumulate over k.
void BM_Int8Gemm(benchmark::State& state, KernelIsa isa) {
  if (!kernel_isa_supported(isa)) return state.SkipWithError("ISA not supported on this CPU");
  const int64_t M = kGemm;
  auto a = random_vec<int8_t>(M * M, 1, gen_i8);
  auto w = random_vec<int8_t>(M * M, 2, gen_i8);
  std::vector<int32_t> c(M * M);
  for (auto _ : state) {
    for (int64_t n0 = 0; n0 < M; n0 += kTile)
      for (int64_t k0 = 0; k0 < M; k0 += kTile)
        matmul_tile_int8(isa, a.data() + k0, M, w.data() + k0 * M + n0, M, c.data() + n0, M, M,
                         kTile, kTile, k0 > 0);
    benchmark::DoNotOptimize(c.data());
  }
  set_macs(state, double(M) * M * M);
}

void BM_Bf16Gemm(benchmark::State& state, KernelIsa isa) {
  if (!kernel_isa_supported(isa)) return state.SkipWithError("ISA not supported on this CPU");
  const int64_t M = kGemm;
  auto a = random_vec<uint16_t>(M * M, 1, gen_bf16);
  auto w = random_vec<uint16_t>(M * M, 2, gen_bf16);
  std::vector<float> c(M * M);
  for (auto _ : state) {
    for (int64_t n0 = 0; n0 < M; n0 += kTile)
      for (int64_t k0 = 0; k0 < M; k0 += kTile)
        matmul_tile_bf16(isa, a.data() + k0, M, w.data() + k0 * M + n0, M, c.data() + n0, M, M,
                         kTile, kTile, k0 > 0);
    benchmark::DoNotOptimize(c.data());
  }
  set_macs(state, double(M) * M * M);
}

#ifdef VTPU_HAVE_DNNL
void BM_DnnlS8(benchmark::State& state, Shape s) {
  auto a = random_vec<int8_t>(s.B * s.K, 1, gen_i8);
  auto w = random_vec<int8_t>(s.K * s.N, 2, gen_i8);
  std::vector<int32_t> c(s.B * s.N);
  const int32_t co = 0;
  for (auto _ : state) {
    // Row-major C = A W: dnnl's GEMM is row-major already (C API, no transposes).
    dnnl_gemm_s8s8s32('N', 'N', 'F', s.B, s.N, s.K, 1.0f, a.data(), s.K, 0, w.data(), s.N, 0,
                      1.0f, c.data(), s.N, &co);
    benchmark::DoNotOptimize(c.data());
  }
  set_macs(state, double(s.B) * s.K * s.N);
}

void BM_DnnlF32(benchmark::State& state, Shape s) {
  auto a = random_vec<float>(s.B * s.K, 1, gen_f32);
  auto w = random_vec<float>(s.K * s.N, 2, gen_f32);
  std::vector<float> c(s.B * s.N);
  for (auto _ : state) {
    dnnl_sgemm('N', 'N', s.B, s.N, s.K, 1.0f, a.data(), s.K, w.data(), s.N, 0.0f, c.data(), s.N);
    benchmark::DoNotOptimize(c.data());
  }
  set_macs(state, double(s.B) * s.K * s.N);
}

void BM_DnnlBf16(benchmark::State& state, Shape s) {
  using namespace dnnl;
  engine eng(engine::kind::cpu, 0);
  stream strm(eng);
  memory::desc ad({s.B, s.K}, memory::data_type::bf16, memory::format_tag::ab);
  memory::desc wd({s.K, s.N}, memory::data_type::bf16, memory::format_tag::ab);
  memory::desc cd({s.B, s.N}, memory::data_type::f32, memory::format_tag::ab);
  matmul prim(matmul::primitive_desc(matmul::desc(ad, wd, cd), eng));
  auto av = random_vec<uint16_t>(s.B * s.K, 1, gen_bf16);
  auto wv = random_vec<uint16_t>(s.K * s.N, 2, gen_bf16);
  std::vector<float> cv(s.B * s.N);
  memory am(ad, eng, av.data()), wm(wd, eng, wv.data()), cm(cd, eng, cv.data());
  for (auto _ : state) {
    prim.execute(strm, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, cm}});
    strm.wait();
    benchmark::DoNotOptimize(cv.data());
  }
  set_macs(state, double(s.B) * s.K * s.N);
}
#endif

std::string shape_name(Shape s) {
  return std::to_string(s.B) + "x" + std::to_string(s.K) + "x" + std::to_string(s.N);
}

void register_all() {
  for (KernelIsa isa : {KernelIsa::Avx512, KernelIsa::Avx2, KernelIsa::Scalar}) {
    const std::string isa_name(kernel_isa_name(isa));
    for (Shape s : kTileShapes) {
      benchmark::RegisterBenchmark(("int8/vtpu_" + isa_name + "/" + shape_name(s)).c_str(), BM_Int8Tile, isa, s)
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(("bf16/vtpu_" + isa_name + "/" + shape_name(s)).c_str(), BM_Bf16Tile, isa, s)
          ->Unit(benchmark::kMicrosecond);
    }
    const std::string g = shape_name({kGemm, kGemm, kGemm});
    benchmark::RegisterBenchmark(("int8/vtpu_" + isa_name + "/" + g).c_str(), BM_Int8Gemm, isa)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("bf16/vtpu_" + isa_name + "/" + g).c_str(), BM_Bf16Gemm, isa)
        ->Unit(benchmark::kMillisecond);
  }
#ifdef VTPU_HAVE_DNNL
  std::vector<Shape> shapes(std::begin(kTileShapes), std::end(kTileShapes));
  shapes.push_back({kGemm, kGemm, kGemm});
  for (Shape s : shapes) {
    benchmark::RegisterBenchmark(("int8/onednn_s8s8s32/" + shape_name(s)).c_str(), BM_DnnlS8, s)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("bf16/onednn_bf16_matmul/" + shape_name(s)).c_str(), BM_DnnlBf16, s)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("fp32/onednn_sgemm/" + shape_name(s)).c_str(), BM_DnnlF32, s)
        ->Unit(benchmark::kMicrosecond);
  }
#endif
}

// Keeps the console output and remembers GMAC/s per benchmark name for the ratio table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("GMAC/s");
      if (it != r.counters.end() && !r.error_occurred) gmacs[r.benchmark_name()] = it->second.value;
    }
  }
  std::map<std::string, double> gmacs;
};

}  // namespace

int main(int argc, char** argv) {
#ifdef VTPU_HAVE_DNNL
  omp_set_num_threads(1);  // same single thread as the vtpu kernels
#endif
  benchmark::Initialize(&argc, argv);
  register_all();
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\nvtpu kernel GMAC/s and ratio to oneDNN (1 thread; >1 means vtpu is faster)\n");
  const std::string best(kernel_isa_name(default_kernel_isa()));
  std::vector<Shape> shapes(std::begin(kTileShapes), std::end(kTileShapes));
  shapes.push_back({kGemm, kGemm, kGemm});
  for (Shape s : shapes) {
    const std::string sn = shape_name(s);
    const auto get = [&](const std::string& n) {
      auto it = reporter.gmacs.find(n);
      return it == reporter.gmacs.end() ? 0.0 : it->second;
    };
    const double i8 = get("int8/vtpu_" + best + "/" + sn), b16 = get("bf16/vtpu_" + best + "/" + sn);
    const double d8 = get("int8/onednn_s8s8s32/" + sn), db = get("bf16/onednn_bf16_matmul/" + sn),
                 df = get("fp32/onednn_sgemm/" + sn);
    std::printf("  %-14s int8 %7.1f GMAC/s", sn.c_str(), i8);
    if (d8 > 0) std::printf(" (oneDNN s8s8s32 %7.1f, ratio %.2f)", d8, i8 / d8);
    std::printf("\n  %-14s bf16 %7.1f GMAC/s", "", b16);
    if (db > 0) std::printf(" (oneDNN bf16 %7.1f, ratio %.2f)", db, b16 / db);
    if (df > 0) std::printf(" (oneDNN sgemm %7.1f, ratio %.2f)", df, b16 / df);
    std::printf("\n");
  }
  benchmark::Shutdown();
  return 0;
}
