// Whole programs compute what plain C++ reference code computes, bit for bit.
#include <fmt/format.h>

#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "sim_test_util.h"
#include "vtpu/numerics/float.h"
#include "vtpu/numerics/mxu.h"
#include "vtpu/numerics/rescale.h"

namespace vtpu::sim {
namespace {

using testing::run_asm;

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string hex(const std::vector<uint8_t>& b) {
  std::string s;
  for (uint8_t x : b) s += fmt::format("{:02x}", x);
  return s;
}

std::vector<uint8_t> random_int8(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& x : v) x = uint8_t(rng());  // the full int8 range, -128..127
  return v;
}

TEST(SimNumerics, TiledMatmulExampleMatchesPlainCpp) {
  std::string text = slurp(std::string(VTPU_SOURCE_DIR) + "/examples/matmul_tiled.s");
  auto A = random_int8(256, 1), W = random_int8(256, 2);
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) { return hex(r.outputs.at("C")); },
                            {{"A", A}, {"W", W}});
  std::vector<uint8_t> expect(16 * 16 * 4);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      int32_t s = 0;
      for (int k = 0; k < 16; ++k) s += int32_t(int8_t(A[size_t(i * 16 + k)])) * int8_t(W[size_t(k * 16 + j)]);
      std::memcpy(&expect[size_t(i * 16 + j) * 4], &s, 4);
    }
  EXPECT_EQ(out, hex(expect));
}

// A bf16 matmul with a partial tile (K < R, N < C) and accumulation over two matmuls.
TEST(SimNumerics, Bf16PartialTileAccumulatesLikeTheReference) {
  config::Config cfg = config::load_preset("tiny-8x8");
  const uint32_t R = cfg.core.mxu.rows, C = cfg.core.mxu.cols, K = 5, N = 6, B = 7;
  std::mt19937_64 rng(3);
  auto bf = [&](float lo, float hi) {
    float f = lo + (hi - lo) * float(rng() % 100000) / 100000.0f;
    return numerics::f32_to_bf16(numerics::f32_bits(f));
  };
  // Input rows in UB are R bf16 wide; only K are used. Two weight tiles.
  std::vector<uint16_t> a(size_t(B) * R), w1(size_t(K) * N), w2(size_t(K) * N);
  for (auto& x : a) x = bf(-4, 4);
  for (auto& x : w1) x = bf(-2, 2);
  for (auto& x : w2) x = bf(-2, 2);
  auto bytes = [](const std::vector<uint16_t>& v) {
    std::vector<uint8_t> b(v.size() * 2);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  std::string text = fmt::format(R"(
    .tensor a role=input dtype=bf16 shape=[{B}, {R}] addr=0x0
    .tensor w1 role=input dtype=bf16 shape=[{K}, {N}] addr=0x1000
    .tensor w2 role=input dtype=bf16 shape=[{K}, {N}] addr=0x2000
    .tensor out role=output dtype=fp32 shape=[{B}, {C}] addr=0x3000
    .desc in bytes={ab}
    .desc wt bytes={wb} dtype=bf16 dim=[{K}, {wb}, {wb}]
    .desc res bytes={ob}
      li r1, 0x1000 || li r2, 0x2000
      li r3, 0x3000 || li r4, 1024
      dma.load desc=in src=r0 dst=r0 flag=f1
      dma.wfifo desc=wt src=r1 mxu=0
      dma.wfifo desc=wt src=r2 mxu=0
      mxu.wload mxu=0 || wait f1
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows={B} dtype=bf16 swap=1 || mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows={B} dtype=bf16 swap=1 acc=1 flag=f2
      wait f2
      vec.copy dst=ub[r4+0] a=acc[r0+0] rows={B} dt=fp32 flag=f3
      wait f3
      dma.store desc=res src=r4 dst=r3 flag=f4
      wait f4
      halt
  )", fmt::arg("B", B), fmt::arg("R", R), fmt::arg("K", K), fmt::arg("N", N), fmt::arg("C", C),
      fmt::arg("ab", size_t(B) * R * 2), fmt::arg("wb", N * 2), fmt::arg("ob", size_t(B) * C * 4));
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) { return hex(r.outputs.at("out")); },
                            {{"a", bytes(a)}, {"w1", bytes(w1)}, {"w2", bytes(w2)}});
  std::vector<float> acc(size_t(B) * C, 0.0f);
  numerics::ref::matmul_tile_bf16(a.data(), R, w1.data(), N, acc.data(), C, B, K, N, false);
  numerics::ref::matmul_tile_bf16(a.data(), R, w2.data(), N, acc.data(), C, B, K, N, true);
  std::vector<uint8_t> expect(acc.size() * 4);
  std::memcpy(expect.data(), acc.data(), expect.size());
  EXPECT_EQ(out, hex(expect));
}

// int8 matmul then TOSA RESCALE back to int8, against the spec's formula applied by hand.
TEST(SimNumerics, MatmulThenRescaleToInt8) {
  const uint32_t R = 4, C = 4, B = 4;
  auto A = random_int8(B * R, 5), W = random_int8(R * C, 6);
  int32_t mult = 1518500250, shift = 38;  // ~ 2^-7 scale with rounding
  std::string text = fmt::format(R"(
    .tensor A role=input dtype=int8 shape=[4, 4] addr=0x0
    .tensor W role=input dtype=int8 shape=[4, 4] addr=0x100
    .tensor Y role=output dtype=int8 shape=[4, 4] addr=0x200
    .desc in bytes=16
    .desc wt bytes=4 dim=[4, 4, 4]
    .desc out bytes=16
    .vparam rq mult=[{mult}] shift=[{shift}] out_zp=3
      li r1, 0x100 || li r2, 0x200
      li r3, 512
      dma.load desc=in src=r0 dst=r0 flag=f1
      dma.wfifo desc=wt src=r1 mxu=0
      mxu.wload mxu=0 || wait f1
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=int8 swap=1 flag=f2
      wait f2
      vec.rescale dst=ub[r3+0] a=acc[r0+0] rows=4 param=rq flag=f3
      wait f3
      dma.store desc=out src=r3 dst=r2 flag=f4
      wait f4
      halt
  )", fmt::arg("mult", mult), fmt::arg("shift", shift));
  std::string out = run_asm("tiny-4x4", text, [](const RunResult& r) { return hex(r.outputs.at("Y")); },
                            {{"A", A}, {"W", W}});
  std::vector<uint8_t> expect(16);
  for (uint32_t i = 0; i < B; ++i)
    for (uint32_t j = 0; j < C; ++j) {
      int64_t s = 0;
      for (uint32_t k = 0; k < R; ++k) s += int64_t(int8_t(A[i * R + k])) * int8_t(W[k * C + j]);
      // TOSA apply_scale_32: (s * mult + 2^(shift-1)) >> shift, then + zp, then clamp.
      int64_t v = ((s * mult + (int64_t(1) << (shift - 1))) >> shift) + 3;
      v = std::clamp<int64_t>(v, -128, 127);
      expect[i * C + j] = uint8_t(int8_t(v));
    }
  EXPECT_EQ(out, hex(expect));
}

// vec.addrescale (an INT8 epilogue's bias add and RESCALE in one pass) gives the bytes of
// vec.add (int32, modulo 2^32) then vec.rescale, and the TOSA formula applied by hand, with
// per-lane multipliers and shifts, a broadcast bias row and sums that wrap; the vector unit
// is busy for one pass over the rows instead of two.
TEST(SimNumerics, AddRescaleIsTheBiasAddThenTheRescaleInOnePass) {
  const uint32_t C = 4, rows = 6;
  std::mt19937_64 rng(11);
  std::vector<int32_t> a(rows * C), bias(C);
  for (auto& x : a) x = int32_t(uint32_t(rng()) >> (rng() % 2 ? 0 : 12));  // some near +-2^31
  for (auto& x : bias) x = int32_t(uint32_t(rng()));
  a[0] = INT32_MAX, bias[0] = 5;  // wraps to negative
  const int32_t mult[C] = {1518500250, 1073741824, 2147483647, 987654321}, shift[C] = {38, 30, 40, 33};
  auto bytes = [](const std::vector<int32_t>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  auto program = [&](bool fused) {
    return fmt::format(R"(
    .tensor A role=input dtype=int32 shape=[6, 4] addr=0x0
    .tensor B role=input dtype=int32 shape=[1, 4] addr=0x100
    .tensor Y role=output dtype=int8 shape=[6, 4] addr=0x200
    .desc in bytes=96
    .desc bias bytes=16 src_off=0x100 dst_off=0x100
    .desc out bytes=24 src_off=0x200 dst_off=0x200
    .vparam rq mult=[{}, {}, {}, {}] shift=[{}, {}, {}, {}] out_zp=-2
      dma.load desc=in src=r0 dst=r0 flag=f1
      dma.load desc=bias src=r0 dst=r0 flag=f1
      wait f1, 2
      {}
      dma.store desc=out src=r0 dst=r0 flag=f4
      wait f4
      halt
  )", mult[0], mult[1], mult[2], mult[3], shift[0], shift[1], shift[2], shift[3],
                       fused ? "vec.addrescale dst=ub[r0+512] a=ub[r0+0] b=ub[r0+256] rows=6 param=rq bcast=1 flag=f3\n      wait f3"
                             : "vec.add dst=ub[r0+0] a=ub[r0+0] b=ub[r0+256] rows=6 dt=int32 bcast=1 flag=f3\n      wait f3\n"
                               "      vec.rescale dst=ub[r0+512] a=ub[r0+0] rows=6 param=rq flag=f3\n      wait f3");
  };
  auto report = [](const RunResult& r) { return hex(r.outputs.at("Y")) + " " + std::to_string(r.stats.total.vector_busy_cycles); };
  std::map<std::string, std::vector<uint8_t>> in{{"A", bytes(a)}, {"B", bytes(bias)}};
  std::string fused = run_asm("tiny-4x4", program(true), report, in), apart = run_asm("tiny-4x4", program(false), report, in);
  std::vector<uint8_t> expect(rows * C);
  for (uint32_t i = 0; i < rows; ++i)
    for (uint32_t j = 0; j < C; ++j) {
      int64_t s = int32_t(uint32_t(a[i * C + j]) + uint32_t(bias[j]));  // modulo 2^32
      int64_t v = ((s * mult[j] + (int64_t(1) << (shift[j] - 1))) >> shift[j]) - 2;
      expect[i * C + j] = uint8_t(int8_t(std::clamp<int64_t>(v, -128, 127)));
    }
  ASSERT_EQ(fused.substr(0, fused.find(' ')), hex(expect));
  EXPECT_EQ(apart.substr(0, apart.find(' ')), hex(expect));
  EXPECT_EQ(std::stoull(apart.substr(apart.find(' ') + 1)) - std::stoull(fused.substr(fused.find(' ') + 1)), rows);  // one pass fewer
  // It adds int32 rows only.
  std::string int8_rows = program(true);
  int8_rows.replace(int8_rows.find("bcast=1"), 7, "bcast=1 dt=int8");
  EXPECT_NE(run_asm("tiny-4x4", int8_rows, report, in).find("vec.addrescale adds int32 rows, not dt=int8"), std::string::npos);
}

// The last entries of full descriptor and vector parameter tables (16,384 each, their
// 14-bit fields' reach) are the ones the simulator uses: a field cut to 12 bits would read
// entry 4095 (scale 4095) instead.
TEST(SimNumerics, TheLastEntriesOfFullTablesAreTheOnesUsed) {
  std::string src = ".tensor X role=input dtype=fp32 shape=[1, 4] addr=0x0\n"
                    ".tensor Y role=output dtype=fp32 shape=[1, 4] addr=0x100\n";
  for (unsigned i = 0; i < isa::kMaxDescriptors; ++i)
    src += i + 1 < isa::kMaxDescriptors ? fmt::format(".desc d{} bytes=16\n", i)
                                       : fmt::format(".desc d{} bytes=16 src_off=0x40 dst_off=0x100\n", i);
  for (unsigned i = 0; i < isa::kMaxVectorParams; ++i) src += fmt::format(".vparam p{} scale=[{}] bias=[0.5]\n", i, i);
  src += R"(
      dma.load desc=d0 src=r0 dst=r0 flag=f1
      wait f1
      vec.affine dst=ub[r0+64] a=ub[r0+0] rows=1 dt=fp32 param=p16383 flag=f2
      wait f2
      dma.store desc=d16383 src=r0 dst=r0 flag=f3
      wait f3
      halt
  )";
  const float x[4] = {1.0f, -2.0f, 0.25f, 3.0f};
  std::vector<uint8_t> in(sizeof x);
  std::memcpy(in.data(), x, sizeof x);
  std::string got = run_asm("tiny-4x4", src, [](const RunResult& r) { return hex(r.outputs.at("Y")); }, {{"X", in}});
  float y[4];
  for (int i = 0; i < 4; ++i) y[i] = x[i] * 16383.0f + 0.5f;
  std::vector<uint8_t> want(sizeof y);
  std::memcpy(want.data(), y, sizeof y);
  EXPECT_EQ(got, hex(want));
}

// Random GEMMs tiled over the array by a small program generator, on several presets.
std::string tiled_gemm_program(uint32_t R, uint32_t C, uint32_t M, uint32_t K, uint32_t N, uint64_t fifo) {
  // Layout: A (M x K, int8, row-major) at 0; W (K x N) at 1 MiB; Y (M x N int32) at 2 MiB.
  // UB: A as K-slices of R bytes per row; results staged after them.
  std::string s;
  s += fmt::format(".tensor A role=input dtype=int8 shape=[{}, {}] addr=0\n", M, K);
  s += fmt::format(".tensor W role=input dtype=int8 shape=[{}, {}] addr=0x100000\n", K, N);
  s += fmt::format(".tensor Y role=output dtype=int32 shape=[{}, {}] addr=0x200000\n", M, N);
  uint32_t kt = (K + R - 1) / R, nt = (N + C - 1) / C;
  uint64_t slice_bytes = uint64_t(M) * R;  // UB bytes of one K-slice (rows of R bytes)
  uint64_t res_base = kt * slice_bytes;
  res_base = (res_base + 63) / 64 * 64;
  int reg = 1;
  (void)fifo;
  std::string code;
  // Load every K-slice of A: rows of min(R, K - k0) bytes, padded rows in UB are R wide.
  for (uint32_t k = 0; k < kt; ++k) {
    uint32_t kw = std::min(R, K - k * R);
    s += fmt::format(".desc a{} bytes={} src_off={} dst_off={} dim=[{}, {}, {}]\n", k, kw, k * R,
                     k * slice_bytes, M, K, R);
    code += fmt::format("  dma.load desc=a{} src=r0 dst=r0 flag=f1\n", k);
  }
  code += fmt::format("  wait f1, {}\n", kt);
  for (uint32_t n = 0; n < nt; ++n) {
    uint32_t nw = std::min(C, N - n * C);
    for (uint32_t k = 0; k < kt; ++k) {
      uint32_t kw = std::min(R, K - k * R);
      s += fmt::format(".desc w{}_{} bytes={} src_off={} dim=[{}, {}, 0]\n", n, k, nw,
                       0x100000 + uint64_t(k) * R * N + n * C, kw, N);
      code += fmt::format("  dma.wfifo desc=w{}_{} src=r0 mxu=0 flag=f2\n  wait f2\n  mxu.wload mxu=0\n", n, k);
      code += fmt::format("  mxu.matmul mxu=0 src=r0+{} dst=r0+0 rows={} dtype=int8 swap=1 acc={} flag=f3\n",
                          k * slice_bytes, M, k ? 1 : 0);
    }
    code += fmt::format("  wait f3, {}\n", kt);
    // Accumulator rows hold C int32 lanes; copy them out and store the valid columns.
    code += fmt::format("  vec.copy dst=ub[r0+{}] a=acc[r0+0] rows={} dt=int32 flag=f4\n  wait f4\n", res_base, M);
    s += fmt::format(".desc y{} bytes={} src_off={} dst_off={} dim=[{}, {}, {}]\n", n, nw * 4, res_base,
                     0x200000 + uint64_t(n) * C * 4, M, C * 4, N * 4);
    code += fmt::format("  dma.store desc=y{} src=r0 dst=r0 flag=f5\n  wait f5\n", n);
  }
  (void)reg;
  return s + code + "  halt\n";
}

TEST(SimNumerics, RandomTiledGemmsMatchPlainCpp) {
  std::mt19937_64 rng(11);
  int runs = 0;
  for (const char* preset : {"tiny-4x4", "tiny-8x8", "tiny-16x16"}) {
    config::Config cfg = config::load_preset(preset);
    uint32_t R = cfg.core.mxu.rows, C = cfg.core.mxu.cols;
    for (int it = 0; it < 8; ++it) {
      uint32_t M = 1 + uint32_t(rng() % 40), K = 1 + uint32_t(rng() % (3 * R)), N = 1 + uint32_t(rng() % (3 * C));
      auto A = random_int8(size_t(M) * K, rng()), W = random_int8(size_t(K) * N, rng());
      std::string prog = tiled_gemm_program(R, C, M, K, N, cfg.core.mxu.weight_fifo_tiles);
      std::string out = run_asm(preset, prog, [](const RunResult& r) { return hex(r.outputs.at("Y")); },
                                {{"A", A}, {"W", W}});
      std::vector<uint8_t> expect(size_t(M) * N * 4);
      for (uint32_t i = 0; i < M; ++i)
        for (uint32_t j = 0; j < N; ++j) {
          int32_t sum = 0;
          for (uint32_t k = 0; k < K; ++k) sum += int32_t(int8_t(A[i * K + k])) * int8_t(W[k * N + j]);
          std::memcpy(&expect[(size_t(i) * N + j) * 4], &sum, 4);
        }
      ASSERT_EQ(out, hex(expect)) << preset << " M=" << M << " K=" << K << " N=" << N << "\n" << prog;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 24);
}

}  // namespace
}  // namespace vtpu::sim

namespace vtpu::sim {
namespace {

TEST(SimNumerics, ConvExampleMatchesPlainCpp) {
  std::string text = slurp(std::string(VTPU_SOURCE_DIR) + "/examples/conv3x3.s");
  std::mt19937_64 rng(21);
  std::vector<uint8_t> x(6 * 6 * 8), w(9 * 64);
  for (auto& v : x) v = uint8_t(int8_t(int(rng() % 128) - 64));
  for (auto& v : w) v = uint8_t(int8_t(int(rng() % 128) - 64));
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) { return hex(r.outputs.at("y")); },
                            {{"x", x}, {"w", w}});
  const int32_t bias[8] = {100, -50, 0, 25, -100, 75, 10, -10};
  std::vector<uint8_t> expect(4 * 4 * 8);
  for (int oy = 0; oy < 4; ++oy)
    for (int ox = 0; ox < 4; ++ox)
      for (int co = 0; co < 8; ++co) {
        int64_t s = bias[co];
        for (int dy = 0; dy < 3; ++dy)
          for (int dx = 0; dx < 3; ++dx)
            for (int ci = 0; ci < 8; ++ci)
              s += int64_t(int8_t(x[size_t(((oy + dy) * 6 + (ox + dx)) * 8 + ci)])) *
                   int8_t(w[size_t((dy * 3 + dx) * 64 + ci * 8 + co)]);
        // TOSA RESCALE with multiplier 2^30, shift 38: round half up at 2^37, then clamp [0, 127].
        int64_t v = (s * 1073741824 + (int64_t(1) << 37)) >> 38;
        expect[size_t((oy * 4 + ox) * 8 + co)] = uint8_t(std::clamp<int64_t>(v, 0, 127));
      }
  EXPECT_EQ(out, hex(expect));
}

TEST(SimNumerics, SoftmaxExampleIsASoftmax) {
  std::string text = slurp(std::string(VTPU_SOURCE_DIR) + "/examples/softmax_row.s");
  std::vector<float> x(32);
  std::mt19937_64 rng(4);
  for (auto& v : x) v = float(int(rng() % 2000) - 1000) / 100.0f;
  std::vector<uint8_t> xb(128);
  std::memcpy(xb.data(), x.data(), 128);
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) { return hex(r.outputs.at("y")); },
                            {{"x", xb}});
  ASSERT_EQ(out.size(), 256u) << out;
  std::vector<float> y(32);
  for (size_t i = 0; i < 128; ++i) reinterpret_cast<uint8_t*>(y.data())[i] = uint8_t(std::stoi(out.substr(i * 2, 2), nullptr, 16));
  for (int r = 0; r < 4; ++r) {
    double m = -1e30, s = 0;
    for (int i = 0; i < 8; ++i) m = std::max(m, double(x[size_t(r * 8 + i)]));
    for (int i = 0; i < 8; ++i) s += std::exp(double(x[size_t(r * 8 + i)]) - m);
    for (int i = 0; i < 8; ++i) {
      double want = std::exp(double(x[size_t(r * 8 + i)]) - m) / s;
      EXPECT_NEAR(y[size_t(r * 8 + i)], want, 1e-6 + 1e-5 * want) << "row " << r << " lane " << i;
    }
  }
}

}  // namespace
}  // namespace vtpu::sim
