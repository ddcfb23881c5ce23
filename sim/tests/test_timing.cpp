// Cycle counts against the formulas of docs/microarch.md, computed here by hand from the
// config — not against the simulator's own earlier output.
#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "sim_test_util.h"
#include "vtpu/config/timing.h"

namespace vtpu::sim {
namespace {

using testing::run_asm;

// Finds the first trace event of a unit (and name, when given).
const TraceEvent* find_event(const RunResult& r, Unit u, std::string_view name = {}) {
  for (const TraceEvent& e : r.trace)
    if (e.unit == u && (name.empty() || name == e.name)) return &e;
  return nullptr;
}

SimOptions traced() {
  SimOptions o;
  o.record_trace = true;
  return o;
}

// "key=value" lines, parsed by the parent.
std::map<std::string, uint64_t> parse(const std::string& s) {
  std::map<std::string, uint64_t> m;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = std::stoull(line.substr(eq + 1));
  }
  return m;
}

// "v<i>_begin=" / "v<i>_end=" lines for each vector operation of a traced run, in order.
std::string vector_events(const RunResult& r) {
  std::string s;
  int i = 0;
  for (const TraceEvent& e : r.trace)
    if (e.unit == Unit::Vector) s += fmt::format("v{}_begin={}\nv{}_end={}\n", i, e.begin, i, e.end), ++i;
  return s;
}

std::string weights_then_matmul(uint32_t R, uint32_t C, uint64_t B) {
  return fmt::format(R"(
    .desc w bytes={C} dim=[{R}, {C}, {C}]
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows={B} dtype=int8 swap=1 flag=f2
      wait f2
      halt
  )", fmt::arg("R", R), fmt::arg("C", C), fmt::arg("B", B));
}

class MatmulLatency : public ::testing::TestWithParam<std::string> {};

TEST_P(MatmulLatency, FillAndDrainOfOneMatmul) {
  config::Config cfg = config::load_preset(GetParam());
  const auto& m = cfg.core.mxu;
  uint64_t R = m.rows, C = m.cols, B = 2 * R;
  std::string out = run_asm(GetParam(), weights_then_matmul(m.rows, m.cols, B), [](const RunResult& r) {
    const TraceEvent* dma = find_event(r, Unit::Dma);
    const TraceEvent* mm = find_event(r, Unit::Mxu, "mxu.matmul");
    const TraceEvent* wl = find_event(r, Unit::WeightFifo);
    return fmt::format("dma_end={}\nmm_begin={}\nmm_end={}\nwl_begin={}\nwl_end={}\ntotal={}\nwait_weights={}\nwait_dma={}\nwait_mxu={}\n",
                       dma->end, mm->begin, mm->end, wl->begin, wl->end, r.stats.total_cycles,
                       r.stats.total.stall[size_t(StallReason::WaitWeights)],
                       r.stats.total.stall[size_t(StallReason::WaitDma)],
                       r.stats.total.stall[size_t(StallReason::WaitMxu)]);
  }, {}, traced());
  ASSERT_EQ(out.find("EXCEPTION"), std::string::npos) << out;
  auto v = parse(out);
  uint64_t D1 = v["dma_end"];
  // wait f1 issues at D1 (stalled D1 - 1 cycles after bundle 0 at cycle 0).
  EXPECT_EQ(v["wait_dma"], D1 - 1);
  // mxu.wload at D1 + 1: the shift occupies [D1 + 1, D1 + 1 + shift).
  EXPECT_EQ(v["wl_begin"], D1 + 1);
  EXPECT_EQ(v["wl_end"], D1 + 1 + m.weight_shift_cycles);
  // The swapping matmul waits for the shadow: T = D1 + 1 + shift, rows enter from T + in.
  uint64_t T = D1 + 1 + m.weight_shift_cycles;
  EXPECT_EQ(v["wait_weights"], T - (D1 + 2));
  EXPECT_EQ(v["mm_begin"], T + m.input_latency_cycles);
  EXPECT_EQ(v["mm_end"], T + m.input_latency_cycles + B);
  uint64_t done = T + m.input_latency_cycles + B + R + C - 2 + m.output_latency_cycles;
  // wait f2 at done, halt at done + 1, total = halt + 1.
  EXPECT_EQ(v["wait_mxu"], done - (T + 1));
  EXPECT_EQ(v["total"], done + 2);
}

INSTANTIATE_TEST_SUITE_P(Presets, MatmulLatency,
                         ::testing::Values("tiny-4x4", "tiny-8x8", "tiny-16x16", "edge", "tpu-v1", "tpu-v4-core"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(Timing, BackToBackMatmulsStreamWithoutBubbles) {
  config::Config cfg = config::load_preset("tiny-8x8");
  const auto& m = cfg.core.mxu;
  uint64_t R = m.rows, C = m.cols;
  std::string text = fmt::format(R"(
    .desc w bytes={C} dim=[{R}, {C}, {C}]
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=5 dtype=int8 swap=1
      mxu.matmul mxu=0 src=r0+0 dst=r0+8 rows=7 dtype=int8 flag=f2
      wait f2
      halt
  )", fmt::arg("R", R), fmt::arg("C", C));
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) {
    std::string s;
    int i = 0;
    for (const TraceEvent& e : r.trace)
      if (e.unit == Unit::Mxu) s += fmt::format("mm{}_begin={}\nmm{}_end={}\n", i, e.begin, i, e.end), ++i;
    return s + fmt::format("mxu_busy={}\ntotal={}\n", r.stats.total.stall[size_t(StallReason::MxuBusy)],
                           r.stats.total_cycles);
  }, {}, traced());
  auto v = parse(out);
  ASSERT_TRUE(v.count("mm1_begin")) << out;
  // The second matmul issues B1 = 5 cycles after the first: its rows follow with no gap.
  EXPECT_EQ(v["mm1_begin"], v["mm0_end"]);
  EXPECT_EQ(v["mxu_busy"], 5u - 1);  // earliest was the next cycle
  uint64_t done = v["mm1_begin"] + 7 + R + C - 2 + m.output_latency_cycles;
  EXPECT_EQ(v["total"], done + 2);
}

TEST(Timing, VectorOperationOccupancyAndLatency) {
  config::Config cfg = config::load_preset("tiny-8x8");
  const auto& vc = cfg.core.vector;
  uint64_t W = cfg.core.mxu.cols, rows = 6;
  std::string text = fmt::format(R"(
      vec.add dst=ub[r0+0] a=ub[r0+512] b=ub[r0+1024] rows={rows} dt=int32 flag=f1
      vec.exp dst=ub[r0+2048] a=ub[r0+3072] rows={rows} dt=fp32 flag=f2
      wait f1
      wait f2
      halt
  )", fmt::arg("rows", rows));
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) {
    return vector_events(r) + fmt::format("total={}\nvector_busy={}\n", r.stats.total_cycles,
                                          r.stats.total.stall[size_t(StallReason::VectorBusy)]);
  }, {}, traced());
  auto v = parse(out);
  // Per row: the lanes' passes or the busiest bank. int32/fp32 rows are 4W bytes.
  uint64_t passes = (W + vc.lanes - 1) / vc.lanes, rb = 4 * W, occ1 = 0, occ2 = 0;
  for (uint64_t i = 0; i < rows; ++i) {
    occ1 += std::max(passes, testing::expected_bank_cycles(cfg, {{512 + i * rb, rb}, {1024 + i * rb, rb}}, {{i * rb, rb}}));
    occ2 += std::max(passes, testing::expected_bank_cycles(cfg, {{3072 + i * rb, rb}}, {{2048 + i * rb, rb}}));
  }
  // tiny-8x8: 16-byte bank rows in 2 banks, so a and b of vec.add share both banks each row.
  EXPECT_EQ(occ1, 2 * rows);
  EXPECT_EQ(v["v0_begin"], 0u);
  EXPECT_EQ(v["v0_end"], occ1);
  EXPECT_EQ(v["v1_begin"], occ1);  // the second waits for the issue stage
  EXPECT_EQ(v["v1_end"], occ1 + occ2);
  EXPECT_EQ(v["vector_busy"], occ1 - 1);
  uint64_t occ = occ1;
  uint64_t d1 = occ + vc.latency_cycles.alu, d2 = occ1 + occ2 + vc.latency_cycles.transcendental;
  // wait f1 at max(d1, occ + 1); wait f2 the cycle after or at d2; halt next; total = halt + 1.
  uint64_t w1 = std::max(d1, occ1 + 1), w2 = std::max(d2, w1 + 1);
  EXPECT_EQ(v["total"], std::max(w2 + 2, d2));
}

// With sublanes (TPU v4: 8 x 128 lanes) the unit takes 8 rows per step: an operation over
// 20 rows takes 3 steps (8, 8, 4), each the lanes' passes or its rows' busiest bank.
TEST(Timing, VectorStepsCoverSublanesOfRows) {
  config::Config cfg = config::load_preset("tpu-v4-core");
  const auto& vc = cfg.core.vector;
  ASSERT_EQ(vc.sublanes, 8u);
  uint64_t W = cfg.core.mxu.cols, rows = 20, rb = 4 * W;
  std::string text = fmt::format(R"(
      vec.add dst=ub[r0+0] a=ub[r0+65536] b=ub[r0+131072] rows={rows} dt=fp32 flag=f1
      wait f1
      halt
  )", fmt::arg("rows", rows));
  auto v = parse(run_asm("tpu-v4-core", text, vector_events, {}, traced()));
  uint64_t passes = (W + vc.lanes - 1) / vc.lanes, occ = 0;
  for (uint64_t g = 0; g * vc.sublanes < rows; ++g) {
    // The step's rows are consecutive: one range per operand.
    uint64_t i = g * vc.sublanes, n = std::min<uint64_t>(rows, i + vc.sublanes) - i;
    occ += std::max(passes, testing::expected_bank_cycles(cfg, {{65536 + i * rb, n * rb}, {131072 + i * rb, n * rb}},
                                                          {{i * rb, n * rb}}));
  }
  EXPECT_EQ(v["v0_end"] - v["v0_begin"], occ);
  EXPECT_LT(occ, rows) << "eight rows per step should take fewer cycles than one row per cycle";
}

// With bcast=1 the b row is read in row 0 only (docs/microarch.md, "Unified buffer: banks
// and ports"): row 0's group has it, the other rows do not, even when b is the only UB
// operand.
TEST(Timing, VectorBroadcastReadsBInRowZeroOnly) {
  config::Config cfg = config::load_preset("tiny-8x8");
  const auto& vc = cfg.core.vector;
  uint64_t W = cfg.core.mxu.cols, rows = 5, rb = 4 * W;
  std::string text = fmt::format(R"(
      vec.add dst=ub[r0+4] a=ub[r0+516] b=ub[r0+1028] rows={rows} dt=int32 bcast=1 flag=f1
      vec.add dst=acc[r0+8] a=acc[r0+0] b=ub[r0+2052] rows={rows} dt=int32 bcast=1 flag=f1
      wait f1, 2
      halt
  )", fmt::arg("rows", rows));
  std::string out = run_asm("tiny-8x8", text, vector_events, {}, traced());
  auto v = parse(out);
  uint64_t passes = (W + vc.lanes - 1) / vc.lanes, occ1 = 0, occ2 = 0;
  for (uint64_t i = 0; i < rows; ++i) {
    std::vector<std::pair<uint64_t, uint64_t>> rd{{516 + i * rb, rb}};
    if (i == 0) rd.push_back({1028, rb});
    occ1 += std::max(passes, testing::expected_bank_cycles(cfg, rd, {{4 + i * rb, rb}}));
    occ2 += std::max(passes, i == 0 ? testing::expected_bank_cycles(cfg, {{2052, rb}}, {}) : 0);
  }
  // Unaligned 32-byte rows over 16-byte blocks touch a bank twice: row 0 of the second
  // operation costs 2 cycles although its only UB access is the broadcast row.
  EXPECT_EQ(occ2, rows + 1);
  EXPECT_EQ(v["v0_end"] - v["v0_begin"], occ1);
  EXPECT_EQ(v["v1_end"] - v["v1_begin"], occ2);
}

// A square (b at a's address, read every row) takes one read for both operands; the same
// values at an address one bank period away are a second read of the same bank each row.
TEST(Timing, VectorSquareReadsItsOperandOnce) {
  config::Config cfg = config::load_preset("tiny-8x8");
  const auto& vc = cfg.core.vector;
  const auto& u = cfg.core.unified_buffer;
  uint64_t W = cfg.core.mxu.cols, rows = 6, rb = 4 * W, period = uint64_t(u.row_bytes) * u.banks;
  uint64_t x = 1024, twin = x + 16 * period;
  std::string text = fmt::format(R"(
      vec.mul dst=ub[r0+0] a=ub[r0+{x}] b=ub[r0+{x}] rows={rows} dt=fp32 flag=f1
      vec.mul dst=ub[r0+{y}] a=ub[r0+{x}] b=ub[r0+{twin}] rows={rows} dt=fp32 flag=f1
      wait f1, 2
      halt
  )", fmt::arg("x", x), fmt::arg("twin", twin), fmt::arg("y", 4096), fmt::arg("rows", rows));
  auto v = parse(run_asm("tiny-8x8", text, vector_events, {}, traced()));
  uint64_t passes = (W + vc.lanes - 1) / vc.lanes, once = 0, twice = 0;
  for (uint64_t i = 0; i < rows; ++i) {
    once += std::max(passes, testing::expected_bank_cycles(cfg, {{x + i * rb, rb}}, {{i * rb, rb}}));
    twice += std::max(passes, testing::expected_bank_cycles(cfg, {{x + i * rb, rb}, {twin + i * rb, rb}}, {{4096 + i * rb, rb}}));
  }
  ASSERT_GT(twice, once);
  EXPECT_EQ(v["v0_end"] - v["v0_begin"], once);
  EXPECT_EQ(v["v1_end"] - v["v1_begin"], twice);
}

TEST(Timing, BranchPenaltyAndLoopCount) {
  config::Config cfg = config::load_preset("tiny-4x4");
  uint64_t pen = cfg.core.scalar.branch_penalty_cycles;
  std::string text = R"(
      li r1, 5
    top:
      addi r2, r2, 3 || loop r1, top
      halt
  )";
  std::string out = run_asm("tiny-4x4", text, [](const RunResult& r) {
    return fmt::format("total={}\nbundles={}\nscalar={}\n", r.stats.total_cycles, r.stats.total.bundles,
                       r.stats.total.scalar_ops);
  });
  auto v = parse(out);
  // li at 0; the loop body issues 5 times, 4 of them followed by a taken branch.
  EXPECT_EQ(v["bundles"], 1u + 5u + 1u);
  EXPECT_EQ(v["scalar"], 1u + 5u);
  uint64_t halt = 1 + 5 - 1 + 4 * pen + 1;
  EXPECT_EQ(v["total"], halt + 1);
}

// core.mxu.whole_weight_tiles (docs/microarch.md, "DMA engine"): a tile that describes fewer
// than rows x cols elements still moves a whole tile's bytes from memory, one more request
// after its rows, so its dma.wfifo ends no earlier and its bytes count as a whole tile's; a
// full tile is the same either way. The loaded weights are the described ones: the matmul's
// output is the same.
TEST(Timing, WholeWeightTilesMoveAFullTileFromMemory) {
  auto run = [](bool whole, uint32_t k, uint32_t n) {
    config::Config cfg = config::load_preset("tiny-8x8");
    cfg.core.mxu.whole_weight_tiles = whole;
    std::string text = fmt::format(R"(
    .desc w bytes={n} dim=[{k}, {n}, {n}]
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows=4 dtype=int8 swap=1 flag=f2
      wait f2
      halt
    )", fmt::arg("k", k), fmt::arg("n", n));
    return parse(run_asm(cfg, text, [](const RunResult& r) {
      const TraceEvent* d = find_event(r, Unit::Dma);
      return fmt::format("end={}\nhbm={}\nfifo={}\ncycles={}\n", d ? d->end : 0, r.stats.total.hbm_read_bytes,
                         r.stats.total.wfifo_bytes, r.stats.total_cycles);
    }, {}, traced()));
  };
  auto part = run(false, 2, 3), part_whole = run(true, 2, 3), full = run(false, 8, 8), full_whole = run(true, 8, 8);
  EXPECT_EQ(part["hbm"], 6u);
  EXPECT_EQ(part["fifo"], 6u);
  EXPECT_EQ(part_whole["hbm"], 64u);
  EXPECT_EQ(part_whole["fifo"], 64u);
  EXPECT_GT(part_whole["end"], part["end"]);
  EXPECT_EQ(full_whole["hbm"], full["hbm"]);
  EXPECT_EQ(full_whole["end"], full["end"]);
  EXPECT_EQ(full_whole["cycles"], full["cycles"]);
}

// docs/microarch.md, "Instruction memory", with core.scalar.imem_prefetch: the memory holds
// two windows of imem_bundles / 2; entering window w starts window w + 1's fetch, and a
// bundle waits only for what is left of its window's fetch. 41 nops and a halt on 16
// bundles of memory: windows of 8, 0 and 1 loaded before the start, window w >= 2 fetched
// from the cycle window w - 1 was entered, F cycles, while its 8 bundles issue one a
// cycle: each of windows 2..5 costs F - 8 cycles. Without prefetch: windows of 16, two
// fetched when entered, 2F' (F' the larger window's fetch).
TEST(Timing, PrefetchedInstructionWindowsCostWhatTheirFetchOutlasts) {
  auto run = [](bool prefetch) {
    config::Config cfg = config::load_preset("tiny-4x4");
    cfg.core.scalar.imem_bundles = 16;
    cfg.core.scalar.imem_prefetch = prefetch;
    std::string text;
    for (int i = 0; i < 41; ++i) text += "  nop\n";
    text += "  halt\n";
    return parse(run_asm(cfg, text, [](const RunResult& r) {
      return fmt::format("cycles={}\nstall={}\nhbm={}\n", r.stats.total_cycles,
                         r.stats.total.stall[size_t(StallReason::ImemFetch)], r.stats.total.hbm_read_bytes);
    }));
  };
  config::Config cfg = config::load_preset("tiny-4x4");
  cfg.core.scalar.imem_bundles = 16;
  const double bytes_per_cycle = cfg.memory.bandwidth_gbytes_per_s * 1e3 / cfg.clock_mhz;
  const uint64_t latency = uint64_t(std::ceil(cfg.memory.access_latency_ns * cfg.clock_mhz * 1e-3));
  const uint64_t f16 = uint64_t(std::ceil(16 * 64 / bytes_per_cycle)) + latency;
  const uint64_t f8 = uint64_t(std::ceil(8 * 64 / bytes_per_cycle)) + latency;
  ASSERT_GT(f8, 8u);
  cfg.core.scalar.imem_prefetch = true;
  EXPECT_EQ(config::imem_window_bundles(cfg), 8u);
  EXPECT_EQ(config::imem_fetch_cycles(cfg, 42), f8);
  auto plain = run(false), ahead = run(true);
  EXPECT_EQ(plain["stall"], 2 * f16);
  EXPECT_EQ(plain["hbm"], 2u * 16 * 64);
  EXPECT_EQ(ahead["stall"], 4 * (f8 - 8));
  EXPECT_EQ(ahead["hbm"], 4u * 8 * 64);
  EXPECT_EQ(plain["cycles"] - ahead["cycles"], 2 * f16 - 4 * (f8 - 8));
}

TEST(Timing, DmaSlotsLimitTransfersInFlight) {
  config::Config cfg = config::load_preset("tiny-8x8");
  uint32_t slots = cfg.core.dma.max_in_flight;
  std::string text = ".desc d bytes=64\n";
  for (uint32_t i = 0; i <= slots; ++i) text += fmt::format("  dma.load desc=d src=r0 dst=r0 flag=f{}\n", i + 1);
  text += "  halt\n";
  // Every transfer reads HBM 0.. and writes UB 0..: reading the same source is fine but
  // the writes race, so give each its own destination.
  text.clear();
  text += ".desc d bytes=64\n";
  for (uint32_t i = 0; i <= slots; ++i)
    text += fmt::format("  li r{}, {}\n", i + 1, i * 64);
  for (uint32_t i = 0; i <= slots; ++i)
    text += fmt::format("  dma.load desc=d src=r0 dst=r{} flag=f1\n", i + 1);
  text += fmt::format("  wait f1, {}\n  halt\n", slots + 1);
  std::string out = run_asm("tiny-8x8", text, [](const RunResult& r) {
    std::string s;
    int i = 0;
    for (const TraceEvent& e : r.trace)
      if (e.unit == Unit::Dma) s += fmt::format("d{}_begin={}\nd{}_end={}\n", i, e.begin, i, e.end), ++i;
    return s + fmt::format("dma_busy={}\n", r.stats.total.stall[size_t(StallReason::DmaBusy)]);
  }, {}, traced());
  auto v = parse(out);
  ASSERT_TRUE(v.count(fmt::format("d{}_begin", slots))) << out;
  // The extra transfer issues when the first one completes.
  EXPECT_EQ(v[fmt::format("d{}_begin", slots)], v["d0_end"]);
  EXPECT_GT(v["dma_busy"], 0u);
}

}  // namespace
}  // namespace vtpu::sim

namespace vtpu::sim {
namespace {

// A bf16 matmul whose input rows straddle two blocks of a single-bank buffer streams at
// the busiest bank's pace; the test recomputes the stream from the documented rule.
TEST(Timing, MatmulInputRowsPayForBankConflicts) {
  config::Config base = config::load_preset("tiny-8x8");
  std::string yaml = config::to_yaml(base);
  auto pos = yaml.find("  unified_buffer:\n");
  ASSERT_NE(pos, std::string::npos);
  auto banks = yaml.find("banks:", pos);
  yaml.replace(banks, yaml.find('\n', banks) - banks, "banks: 1");
  config::Config cfg = config::load_string(yaml, "one-bank.yaml");
  ASSERT_EQ(cfg.core.unified_buffer.banks, 1u);
  const auto& m = cfg.core.mxu;
  uint64_t R = m.rows, C = m.cols, B = 9, stride = 24, row = R * 2;
  std::string text = fmt::format(R"(
    .desc w bytes={wb} dtype=bf16 dim=[{R}, {wb}, {wb}]
      dma.wfifo desc=w src=r0 mxu=0 flag=f1
      wait f1
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows={B} dtype=bf16 stride={stride} swap=1 flag=f2
      wait f2
      halt
  )", fmt::arg("R", R), fmt::arg("wb", C * 2), fmt::arg("B", B), fmt::arg("stride", stride));
  std::string out = run_asm(cfg, text, [](const RunResult& r) {
    const TraceEvent* mm = nullptr;
    for (const TraceEvent& e : r.trace)
      if (e.unit == Unit::Mxu) mm = &e;
    return fmt::format("begin={}\nend={}\ntotal={}\nextra={}\n", mm->begin, mm->end, r.stats.total_cycles,
                       r.stats.total.ub_bank_extra_cycles);
  }, {}, traced());
  auto v = parse(out);
  ASSERT_TRUE(v.count("begin")) << out;
  uint64_t stream = 0;
  for (uint64_t j = 0; j < B; ++j) stream += testing::expected_bank_cycles(cfg, {{j * stride, row}}, {});
  EXPECT_GT(stream, B);  // the rule really charges something here
  EXPECT_EQ(v["end"] - v["begin"], stream);
  EXPECT_EQ(v["extra"], stream - B);
  uint64_t done = v["begin"] + stream + R + C - 2 + m.output_latency_cycles;
  EXPECT_EQ(v["total"], done + 2);
}

}  // namespace
}  // namespace vtpu::sim
