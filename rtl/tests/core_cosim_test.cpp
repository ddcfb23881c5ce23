// Program-level cross-check: the Verilated vtpu_core against the SystemC model on the
// tiny presets, int8 and bf16 (docs/rtl.md, "Core cross-check"): random programs, the
// benchmarks' GEMM schedule, and hand-written edge cases.
//
//   default                 a quick subset (CI)
//   VTPU_COSIM_FULL=1       ten times more programs (over a thousand)
//   VTPU_COSIM_SEED=<n>     CoreCosim.Reproduce reruns seed n on VTPU_COSIM_MODEL=<model>
//                           and VTPU_COSIM_DTYPE=<int8|bf16>; a failure prints this command.
#include <fmt/format.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>
#include <string>

#include "cosim_env.h"
#include "core_harness.h"
#include "gemm_program.h"
#include "vtpu/config/config.h"
#include "vtpu/config/timing.h"
#include "vtpu/isa/assembler.h"

// The simulator links SystemC, which wants an sc_main; the tests never elaborate in-process.
int sc_main(int, char**) { return 0; }

namespace vtpu::rtl {
namespace {


// Quick: 380 programs over the three models and two dtypes; full: 3 800.
unsigned case_count(const CoreModelParams& p) {
  const unsigned quick = p.rows >= 16 ? 30 : p.rows >= 8 ? 60 : 100;
  return full_run() ? quick * 10 : quick;
}

std::string reproduce(const CoreModelParams& p, const std::string& dtype, uint64_t seed) {
  return fmt::format(
      "reproduce: VTPU_COSIM_SEED={} VTPU_COSIM_MODEL={} VTPU_COSIM_DTYPE={} build/tests/vtpu_rtl_core_cosim_test "
      "--gtest_filter=CoreCosim.Reproduce",
      seed, p.name, dtype);
}

// Runs one program on both sides; empty if they agree, else the whole report.
std::string cross_check(const CoreModelParams& p, const std::string& text, const Inputs* given, uint64_t seed,
                        const std::string& what, uint64_t* cycles = nullptr,
                        const std::function<void(config::Config&)>& tweak = {}) {
  config::Config cfg = config::load_preset(p.preset);
  if (tweak) tweak(cfg);
  isa::Program prog;
  try {
    prog = isa::assemble(text, what);
  } catch (const std::exception& e) {
    return fmt::format("{}: the program does not assemble: {}\nprogram:\n{}", what, e.what(), text);
  }
  const Inputs inputs = given ? *given : random_core_inputs(prog, seed);
  const CoreRunResult sim = run_sim(cfg, prog, inputs);
  if (!sim.ok) return fmt::format("{}: {}\nprogram:\n{}", what, sim.error, text);
  const CoreRunResult rtl = run_rtl(p.name, cfg, prog, inputs, sim.total_cycles * 2 + 1000);
  if (!rtl.ok) return fmt::format("{}: {}\nprogram:\n{}", what, rtl.error, text);
  if (cycles) *cycles += sim.total_cycles;
  if (env("VTPU_COSIM_VERBOSE")) {
    for (const auto* r : {&sim, &rtl}) {
      std::printf("%s: total %llu\n", r == &sim ? "SystemC" : "RTL", static_cast<unsigned long long>(r->total_cycles));
      for (const auto& e : r->events)
        std::printf("  %s bundle %u [%llu, %llu)\n", e.unit.c_str(), e.bundle, static_cast<unsigned long long>(e.begin),
                    static_cast<unsigned long long>(e.end));
    }
  }
  std::string diff = compare_runs(sim, rtl, prog);
  if (diff.empty()) return {};
  return fmt::format("core cross-check mismatch: model {} (config {}), {}\n{}\nprogram:\n{}", p.name, p.preset, what,
                     diff, text);
}

struct Case {
  std::string model, dtype;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.dtype; }

std::vector<Case> cases() {
  std::vector<Case> v;
  for (const auto& p : core_models())
    for (const char* dt : {"int8", "bf16"}) v.push_back({p.name, dt});
  return v;
}

class CoreRandom : public ::testing::TestWithParam<Case> {};

TEST_P(CoreRandom, Programs) {
  const CoreModelParams& p = core_model(GetParam().model);
  const std::string dt = GetParam().dtype;
  const config::Config cfg = config::load_preset(p.preset);
  const unsigned n = case_count(p);
  uint64_t cycles = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seed = 1; seed <= n; ++seed) {
    const std::string text = random_core_program(cfg, seed, dt);
    const std::string err =
        cross_check(p, text, nullptr, seed, fmt::format("random program, dtype {}, seed {}", dt, seed), &cycles);
    ASSERT_TRUE(err.empty()) << err << "\n" << reproduce(p, dt, seed);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s %s: %u programs, %llu cycles each side, %.2f s\n", p.name.c_str(), dt.c_str(), n,
              static_cast<unsigned long long>(cycles), s);
}

INSTANTIATE_TEST_SUITE_P(Cosim, CoreRandom, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.model + "_" + info.param.dtype; });

// The quick set's random programs do reach what the newer parts of the subset add: pooling
// from the accumulators, and matmuls, weight loads and FIFOs of a second MXU.
TEST(CoreCosim, RandomProgramsUseAccumulatorPoolingAndEveryMxu) {
  const config::Config two = config::load_preset("tiny-8x8-2mxu");
  unsigned acc_pool = 0, mxu1 = 0;
  for (uint64_t seed = 1; seed <= 60; ++seed)
    for (const char* dt : {"int8", "bf16"}) {
      const std::string text = random_core_program(two, seed, dt);
      acc_pool += std::regex_search(text, std::regex("vec\\.(max|avg)pool dst=\\S+ a=acc"));
      mxu1 += text.find("mxu.matmul mxu=1") != std::string::npos && text.find("dma.wfifo desc=wt0 src=r6 mxu=1") != std::string::npos;
    }
  EXPECT_GE(acc_pool, 10u) << acc_pool << " of 120 programs pool from the accumulators";
  EXPECT_EQ(mxu1, 120u);
}

TEST(CoreCosim, Reproduce) {
  const uint64_t seed = env("VTPU_COSIM_SEED") ? std::strtoull(env("VTPU_COSIM_SEED"), nullptr, 0) : 1;
  const std::string dt = env("VTPU_COSIM_DTYPE") ? env("VTPU_COSIM_DTYPE") : "int8";
  ASSERT_TRUE(dt == "int8" || dt == "bf16") << "VTPU_COSIM_DTYPE must be int8 or bf16, not " << dt;
  for (const auto& p : core_models()) {
    if (env("VTPU_COSIM_MODEL") && p.name != env("VTPU_COSIM_MODEL")) continue;
    const std::string text = random_core_program(config::load_preset(p.preset), seed, dt);
    if (env("VTPU_COSIM_VERBOSE")) std::printf("%s", text.c_str());
    const std::string err = cross_check(p, text, nullptr, seed, fmt::format("random program, dtype {}, seed {}", dt, seed));
    EXPECT_TRUE(err.empty()) << err << "\n" << reproduce(p, dt, seed);
  }
}

// The benchmarks' hand-scheduled GEMM (bench/gemm_program.h): A streamed through every
// weight tile with swap-and-load bundles, the output requantized (vec.rescale) or converted
// to bf16 (vec.cvt) in a double-buffered drain behind the next block's matmuls.
TEST(CoreCosim, GemmPrograms) {
  for (const auto& p : core_models()) {
    const config::Config cfg = config::load_preset(p.preset);
    const uint32_t R = p.rows, C = p.cols;
    const std::vector<bench::GemmShape> shapes = {
        {64, 2 * R, 2 * C, false}, {64, 2 * R, 2 * C, true}, {37, R + 3, C + 5, false}, {37, R + 3, C + 5, true},
        {300, 3 * R, C, false}};
    for (const auto& g : shapes) {
      const std::string text = fmt::format(".config {}\n", p.preset) + bench::gemm_program(cfg, g);
      const std::string err = cross_check(p, text, nullptr, 11,
                                          fmt::format("gemm_program M={} K={} N={} {}", g.M, g.K, g.N,
                                                      g.bf16 ? "bf16" : "int8"));
      EXPECT_TRUE(err.empty()) << err;
    }
  }
}

// The hand-written programs of examples/ (all in the subset) must agree.
TEST(CoreCosim, Examples) {
  auto read = [](const std::string& name) {
    std::ifstream f(std::string(VTPU_EXAMPLES_DIR) + "/" + name);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  const CoreModelParams& p = core_model("core_8x8");
  for (const char* name : {"matmul_tiled.s", "conv3x3.s", "softmax_row.s"}) {
    const std::string text = read(name);
    ASSERT_FALSE(text.empty()) << name;
    const std::string err = cross_check(p, text, nullptr, 5, std::string("examples/") + name);
    EXPECT_TRUE(err.empty()) << err;
  }
}

TEST(CoreModels, MatchPresets) {
  for (const auto& p : core_models()) {
    const config::Config cfg = config::load_preset(p.preset);
    EXPECT_EQ(model_matches(p, cfg), "") << p.name;
  }
  // A model refuses a config it was not built for, naming the key.
  const CoreModelParams small = core_models().front();
  const std::string e = model_matches(small, config::load_preset("tiny-16x16"));
  EXPECT_NE(e.find("core.mxu.rows"), std::string::npos) << e;
}

// ---------------------------------------------------------------- hand-written edge cases

std::string edge(const std::string& model, const std::string& body, const std::string& head = "") {
  const CoreModelParams& p = core_model(model);
  const std::string text = fmt::format(".config {}\n{}{}", p.preset, head, body);
  return cross_check(p, text, nullptr, 7, "edge case");
}

TEST(CoreEdge, HaltOnly) { EXPECT_EQ(edge("core_4x4", "halt\n"), ""); }

TEST(CoreEdge, ScalarBranchesAndLoops) {
  // Every scalar operation, a counted loop, taken and untaken branches of each kind. The
  // registers become visible through memory: each result picks (its low bits) where a
  // 4-byte word lands in the unified buffer, and the buffer is stored as the output.
  std::string body = R"(
  li r1, -7 || li r2, 5
  add r3, r1, r2 || sub r4, r1, r2
  mul r5, r1, r2 || and r6, r1, r2
  or r7, r1, r2 || xor r8, r1, r2
  shl r9, r1, r2 || shr r10, r1, r2
  sra r11, r1, r2 || slt r12, r1, r2
  sltu r13, r1, r2 || seq r14, r1, r1
  sne r15, r1, r2 || min r16, r1, r2
  max r17, r1, r2 || addi r18, r1, 100
  muli r19, r1, -3 || andi r20, r1, 0xff
  ori r21, r1, 1 || xori r22, r1, -1
  shli r23, r1, 33 || shri r24, r1, 4
  srai r25, r1, 4 || slti r26, r1, -8
  li r27, 4
top:
  addi r28, r28, 3 || loop r27, top
  blt r1, r2, a
  halt
a: bge r1, r2, b
  bne r1, r2, c
b: halt
c: beq r1, r1, d
  halt
d: jmp e
  halt
e: nop
)";
  for (int r = 3; r <= 28; ++r)
    body += fmt::format("  andi r29, r{}, 60 || addi r30, r0, {}\n  add r29, r29, r30\n"
                        "  dma.load desc=word src=r0 dst=r29 flag=f1 || li r31, {}\n",
                        r, 0x400 + 64 * (r - 3), 4 * r);
  body += "  wait f1, 26\n  li r2, 0x400 || li r3, 0x100000\n  dma.store desc=img src=r2 dst=r3 flag=f2\n"
          "  wait f2\n  halt\n";
  EXPECT_EQ(edge("core_4x4", body,
                 ".tensor x role=input dtype=uint8 shape=[4] addr=0x0\n"
                 ".tensor o role=output dtype=uint8 shape=[1664] addr=0x100000\n"
                 ".desc word bytes=4 dim=[1, 4, 4]\n.desc img bytes=64 dim=[26, 64, 64]\n"),
            "");
}

// A program longer than core.scalar.imem_bundles (1024 on the tiny presets) runs from
// windows fetched from memory (docs/microarch.md, "Instruction memory"): a loop whose body
// crosses into the second window enters it three times and goes back into the first twice,
// five fetches in all, each delaying the next bundle by the same cycles on both sides.
TEST(CoreEdge, InstructionWindowsFetchedFromMemory) {
  std::string body = "  li r27, 3\ntop:\n  dma.load desc=word src=r0 dst=r0 flag=f1\n";
  for (int i = 0; i < 1100; ++i) body += "  nop\n";
  body += "  loop r27, top\n  wait f1, 3\n  li r3, 0x100000\n  dma.store desc=word src=r0 dst=r3 flag=f2\n"
          "  wait f2\n  halt\n";
  const std::string head =
      ".tensor x role=input dtype=uint8 shape=[4] addr=0x0\n.tensor o role=output dtype=uint8 shape=[4] addr=0x100000\n"
      ".desc word bytes=4\n";
  const CoreModelParams& p = core_model("core_4x4");
  const config::Config cfg = config::load_preset(p.preset);
  const uint64_t fetch = config::imem_fetch_cycles(cfg, 1108);
  ASSERT_GT(fetch, 1000u);  // 64 KiB at 16 B/cycle, and the access latency
  uint64_t cycles = 0;
  EXPECT_EQ(cross_check(p, fmt::format(".config {}\n{}{}", p.preset, head, body), nullptr, 7, "instruction windows",
                        &cycles),
            "");
  EXPECT_GE(cycles, 5 * fetch + 3 * 1100);
  EXPECT_LT(cycles, 6 * fetch);

  // With core.scalar.imem_prefetch: windows of 512, 0 and 1 loaded before the start; each
  // pass enters window 1 (which starts window 2's fetch), waits for window 2, then branches
  // back into window 0, no longer resident (a fetch on demand after the one under way, into
  // the slot window 1 held), whose entry starts window 1's fetch again.
  auto prefetch = [](config::Config& c) { c.core.scalar.imem_prefetch = true; };
  config::Config ahead = cfg;
  prefetch(ahead);
  const uint64_t half = config::imem_fetch_cycles(ahead, 1108);
  ASSERT_GT(half, 512u);
  uint64_t ahead_cycles = 0;
  EXPECT_EQ(cross_check(p, fmt::format(".config {}\n{}{}", p.preset, head, body), nullptr, 7,
                        "instruction windows fetched ahead", &ahead_cycles, prefetch),
            "");
  EXPECT_GT(ahead_cycles, 3 * half);
  EXPECT_NE(ahead_cycles, cycles);
}

TEST(CoreEdge, DmaDrainsAfterHalt) {
  // halt right after a long load: total cycles come from the DMA's done, not the halt.
  const std::string head =
      ".tensor x role=input dtype=uint8 shape=[4096] addr=0x0\n"
      ".tensor o role=output dtype=uint8 shape=[64] addr=0x100000\n"
      ".desc big bytes=64 dim=[64, 64, 64]\n";
  EXPECT_EQ(edge("core_8x8", "li r1, 0x100\n  dma.load desc=big src=r0 dst=r1 flag=f1\n  halt\n", head), "");
}

TEST(CoreEdge, DmaInFlightLimitAndPortSharing) {
  // Six transfers back to back: the fifth waits for a free slot (max_in_flight = 4); loads
  // and stores share the DMA's unified-buffer port in issue order.
  const std::string head =
      ".tensor x role=input dtype=uint8 shape=[2048] addr=0x0\n"
      ".tensor o role=output dtype=uint8 shape=[512] addr=0x100000\n"
      ".desc row bytes=64 dim=[8, 64, 64]\n";
  const std::string body = R"(
  li r1, 0 || li r2, 0x400
  dma.load desc=row src=r1 dst=r2 flag=f1 || addi r1, r1, 512 || li r4, 0x800
  dma.load desc=row src=r1 dst=r0 flag=f2 || addi r1, r1, 512 || li r5, 0xc00
  dma.load desc=row src=r1 dst=r4 flag=f3 || addi r1, r1, 512
  dma.load desc=row src=r1 dst=r5 flag=f3 || li r3, 0x100000
  wait f1
  dma.store desc=row src=r2 dst=r3 flag=f4 || li r6, 0x1000
  dma.load desc=row src=r0 dst=r6 flag=f5
  wait f4
  halt
)";
  EXPECT_EQ(edge("core_4x4", body, head), "");
}

TEST(CoreEdge, WeightFifoFullStall) {
  // Three tiles into a two-tile FIFO: the third dma.wfifo stalls until the first
  // mxu.wload's shift starts; a swap and the next load in one bundle.
  const std::string head =
      ".tensor x role=input dtype=int8 shape=[8, 4] addr=0x0\n"
      ".tensor w role=input dtype=int8 shape=[3, 4, 4] addr=0x1000\n"
      ".tensor o role=output dtype=uint8 shape=[128] addr=0x100000\n"
      ".desc xin bytes=32 dim=[1, 32, 32]\n"
      ".desc wt bytes=4 dim=[4, 4, 0] dtype=int8\n"
      ".desc out bytes=64 dim=[2, 64, 64]\n";
  const std::string body = R"(
  li r1, 0x1000 || li r2, 0x4000
  dma.load desc=xin src=r0 dst=r0 flag=f1
  dma.wfifo desc=wt src=r1 mxu=0 || addi r1, r1, 16
  dma.wfifo desc=wt src=r1 mxu=0 || addi r1, r1, 16
  mxu.wload mxu=0
  dma.wfifo desc=wt src=r1 mxu=0
  wait f1
  mxu.matmul mxu=0 src=0 dst=0 rows=8 dtype=int8 swap=1 flag=f2 || mxu.wload mxu=0
  mxu.matmul mxu=0 src=0 dst=0 rows=8 dtype=int8 acc=1 swap=1 flag=f2
  mxu.wload mxu=0
  mxu.matmul mxu=0 src=0 dst=0 rows=8 dtype=int8 acc=1 swap=1 flag=f2
  wait f2, 3
  vec.copy dst=ub[r2+0] a=acc[r0+0] rows=8 dt=int32 flag=f3
  wait f3
  li r3, 0x100000
  dma.store desc=out src=r2 dst=r3 flag=f4
  halt
)";
  EXPECT_EQ(edge("core_4x4", body, head), "");
}

TEST(CoreEdge, VectorBankConflicts) {
  // fp32 rows at addresses that straddle blocks: a, b and dst in the same bank cost extra
  // cycles per row (docs/microarch.md, "Unified buffer: banks and ports").
  const std::string head =
      ".tensor x role=input dtype=uint8 shape=[1024] addr=0x0\n"
      ".tensor o role=output dtype=uint8 shape=[1024] addr=0x100000\n"
      ".desc img bytes=64 dim=[16, 64, 64]\n";
  const std::string body = R"(
  dma.load desc=img src=r0 dst=r0 flag=f1
  wait f1
  vec.add dst=ub[r0+516] a=ub[r0+4] b=ub[r0+36] rows=5 dt=fp32 flag=f2
  vec.max dst=ub[r0+260] a=ub[r0+12] b=ub[r0+100] rows=3 dt=int32 bcast=1 flag=f2
  vec.sub dst=ub[r0+772] a=ub[r0+20] b=ub[r0+20] rows=4 dt=fp32 flag=f2
  vec.relu dst=ub[r0+900] a=ub[r0+28] rows=6 dt=fp32 flag=f2
  vec.min dst=ub[r0+400] a=ub[r0+44] b=ub[r0+300] rows=2 dt=fp32 flag=f2
  wait f2, 5
  li r3, 0x100000
  dma.store desc=img src=r0 dst=r3 flag=f3
  halt
)";
  EXPECT_EQ(edge("core_4x4", body, head), "");
}

// A program over an image of special words at UB 0 (loaded from HBM 0x1000): vector
// operations write their results one after another from UB 0x400, and the whole result
// area is stored as output `o` for the byte-by-byte comparison.
struct SpecialValueProgram {
  std::string head, body;
  uint32_t out = 0x400, nops = 0;
  SpecialValueProgram(const uint32_t* words, size_t n) {
    std::string hex;
    for (size_t i = 0; i < n; ++i) {
      uint32_t w = words[i];
      hex += fmt::format("{:02x}{:02x}{:02x}{:02x}", w & 0xFF, (w >> 8) & 0xFF, (w >> 16) & 0xFF, w >> 24);
    }
    head = fmt::format(".data addr=0x1000 hex=\"{}\"\n", hex);
    head += fmt::format(".desc img bytes=64 dim=[{}, 64, 64]\n", n * 4 / 64);
    body = "  li r1, 0x1000\n  dma.load desc=img src=r1 dst=r0 flag=f1\n  wait f1\n";
  }
  // `text` (an operation without dst, rows and flag) over `rows` rows of `drow` result bytes.
  void op(const std::string& text, uint32_t rows, uint32_t drow) {
    body += fmt::format("  {} dst=ub[r0+{}] rows={} flag=f2\n", text, out, rows);
    out += (rows * drow + 63) / 64 * 64;
    ++nops;
  }
  void finish() {
    body += fmt::format("  wait f2, {}\n  li r3, 0x100000 || li r4, 0x400\n", nops);
    head += fmt::format(".tensor o role=output dtype=uint8 shape=[{}] addr=0x100000\n", out - 0x400);
    head += fmt::format(".desc res bytes=64 dim=[{}, 64, 64]\n", (out - 0x400) / 64);
    body += "  dma.store desc=res src=r4 dst=r3 flag=f3\n  halt\n";
  }
};

TEST(CoreEdge, ConversionsRescaleAndClampOnSpecialValues) {
  // An image of special fp32 and int32 words (NaNs with payloads, infinities, signed zeros,
  // denormals, rounding ties for int, bf16 and fp32 results, saturation edges) converted
  // between every pair of types, requantized with double rounding, large shifts and zero
  // points, and clamped to fractional bounds.
  static const uint32_t kWords[] = {
      0x7FC00000, 0xFFC00001, 0x7F800001, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001,
      0x807FFFFF, 0x7F7FFFFF, 0x3F800000, 0x3FC00000, 0x40200000, 0xBFC00000, 0x4F000000, 0xCF000001,
      0x3F000000, 0x3F400000, 0x3F808000, 0x3F818000, 0x477FFF80, 0x7F7FC000, 0x7FFFFFFF, 0x80000000,
      0x00FFFFFF, 0x01000001, 0x01000003, 0xFFFFFF80, 0x0000007F, 0x00000080, 0x000000FF, 0x00000100,
      0xFFFFFF7F, 0x00007FFF, 0x00008000, 0xFFFF7FFF, 0x00018000, 0x00018001, 0x43FF8000, 0xC3000000,
      0x42FE0000, 0x437F0000, 0xC7000080, 0x46FFFE00, 0x3EFFFFFF, 0x4B000001, 0xCB7FFFFF, 0x00800000};
  for (const char* model : {"core_4x4", "core_16x16"}) {
    const CoreModelParams& p = core_model(model);
    const uint32_t C = p.cols, img = sizeof(kWords);  // 192 bytes
    static const char* kTypes[] = {"int8", "bf16", "int32", "fp32", "uint8", "int16"};
    static const uint32_t kSize[] = {1, 2, 4, 4, 1, 2};
    SpecialValueProgram prog(kWords, std::size(kWords));
    prog.head += ".vparam rq1 mult=[1073741824] shift=[30] in_zp=-3 out_zp=5 double_round=1\n";
    prog.head += ".vparam rq2 mult=[2147483647] shift=[62] in_zp=2147483647 out_zp=-7 double_round=1 min=-100.5 max=99.5\n";
    prog.head += ".vparam rq3 mult=[1518500250] shift=[37] in_zp=0 out_zp=0 double_round=0\n";
    prog.head += ".vparam cl min=-2.5 max=1e30\n";
    for (unsigned dt = 0; dt < 6; ++dt)
      for (unsigned odt = 0; odt < 6; ++odt) {
        const uint32_t rows = img / (C * kSize[dt]);
        if (rows == 0) continue;
        prog.op(fmt::format("vec.cvt a=ub[r0+0] dt={} odt={}", kTypes[dt], kTypes[odt]), rows, C * kSize[odt]);
      }
    for (const char* rq : {"rq1", "rq2", "rq3"})
      for (unsigned odt : {0u, 2u, 4u, 5u})
        prog.op(fmt::format("vec.rescale a=ub[r0+0] dt=int32 odt={} param={}", kTypes[odt], rq), img / (4 * C),
                C * kSize[odt]);
    prog.op("vec.clamp a=ub[r0+0] dt=fp32 param=cl", img / (4 * C), 4 * C);
    prog.op("vec.clamp a=ub[r0+0] dt=int32 param=cl", img / (4 * C), 4 * C);
    prog.finish();
    EXPECT_EQ(edge(model, prog.body, prog.head), "") << model;
  }
}

TEST(CoreEdge, TableFunctionsOnSpecialValues) {
  // The table functions on an image of special fp32 words, read as fp32 and as bf16 pairs:
  // NaNs, infinities, signed zeros, denormals, the largest and smallest normals, exp's range
  // ends (89, -104) and the edges where its result overflows or flushes, tanh's switch at
  // 0.5, erf's and gelu's path switches (|x| = 1 and 4; x / sqrt 2 = 0.4, 1 and 9.5), and
  // negatives (recip, rsqrt).
  static const uint32_t kWords[] = {
      0x7FC00000, 0xFFC00001, 0x7F800001, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000, 0x00000001,
      0x807FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00800000, 0x80800000, 0x00800001, 0x3F800000, 0xBF800000,
      0x42B20000, 0x42B20001, 0xC2D00000, 0xC2D00001, 0x42B17217, 0x42B17218, 0x42B17219, 0xC2AEAC4F,
      0xC2AEAC50, 0xC2AEAC51, 0x3F000000, 0x3EFFFFFF, 0xBF000000, 0xBEFFFFFF, 0x33800000, 0xB3800000,
      0x41100000, 0xC1100000, 0x40800000, 0xC0800000, 0x3DCCCCCD, 0xBDCCCCCD, 0x7E800000, 0xFE800000,
      0x01000000, 0x81000000, 0x4B400000, 0xCB400000, 0x3F3504F3, 0x40490FDB, 0xC0490FDB, 0x3C23D70A,
      0x3F7FFFFF, 0xBF7FFFFF, 0x40800001, 0xC0800001, 0xBF10C5E2, 0x3FB504F3, 0xBFB504F3, 0x41570A3D,
      0xC1570A3D, 0xC1570A3E, 0xC15A0000, 0x41200000, 0xC1200000, 0x3F000001, 0xC0000000, 0x40000000};
  for (const char* model : {"core_4x4", "core_16x16"}) {
    const CoreModelParams& p = core_model(model);
    const uint32_t C = p.cols, img = sizeof(kWords);  // 256 bytes
    SpecialValueProgram prog(kWords, std::size(kWords));
    for (const char* f : {"vec.exp", "vec.tanh", "vec.sigmoid", "vec.gelu", "vec.erf", "vec.recip", "vec.rsqrt", "vec.log"})
      for (uint32_t esize : {4u, 2u})
        prog.op(fmt::format("{} a=ub[r0+0] dt={}", f, esize == 4 ? "fp32" : "bf16"), img / (C * esize), C * esize);
    prog.finish();
    EXPECT_EQ(edge(model, prog.body, prog.head), "") << model;
  }
}

TEST(CoreEdge, UnsupportedOperationIsAClearError) {
  const CoreModelParams& p = core_model("core_4x4");
  const config::Config cfg = config::load_preset(p.preset);
  const isa::Program prog = isa::assemble(
      ".config tiny-4x4\n.desc d bytes=64\n  dma.send desc=d src=r0 dst=r0 link=0\n  halt\n", "unsupported.s");
  const CoreRunResult r = run_rtl(p.name, cfg, prog, {}, 1000);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("bundle 0: dma.send"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("Supported subset"), std::string::npos) << r.error;
}

TEST(CoreHarness, CatchesOneBitAndOneCycle) {
  // The comparison is not vacuous: a flipped output bit, a shifted event and a different
  // total each produce a report naming the value or the cycle.
  const CoreModelParams& p = core_model("core_4x4");
  const config::Config cfg = config::load_preset(p.preset);
  const std::string text = random_core_program(cfg, 3, "bf16");
  const isa::Program prog = isa::assemble(text, "t.s");
  const Inputs in = random_core_inputs(prog, 3);
  const CoreRunResult sim = run_sim(cfg, prog, in);
  ASSERT_TRUE(sim.ok) << sim.error;
  CoreRunResult rtl = run_rtl(p.name, cfg, prog, in, sim.total_cycles * 2 + 1000);
  ASSERT_TRUE(rtl.ok) << rtl.error;
  ASSERT_EQ(compare_runs(sim, rtl, prog), "");
  CoreRunResult bad = rtl;
  bad.outputs["out"][37] ^= 0x10;
  const std::string msg = compare_runs(sim, bad, prog);
  EXPECT_NE(msg.find("byte 37"), std::string::npos) << msg;
  EXPECT_NE(msg.find("the RTL wrote it at cycle"), std::string::npos) << msg;
  if (env("VTPU_COSIM_VERBOSE")) std::printf("%s\n", msg.c_str());
  bad = rtl;
  bad.total_cycles += 1;
  EXPECT_NE(compare_runs(sim, bad, prog).find("total cycles"), std::string::npos);
  bad = rtl;
  ASSERT_FALSE(bad.events.empty());
  bad.events[bad.events.size() / 2].end += 1;
  EXPECT_NE(compare_runs(sim, bad, prog).find("unit event"), std::string::npos);
}

}  // namespace
}  // namespace vtpu::rtl
