// Hostile programs and configs (issue 19): loops that can never end are reported at once,
// the scalar unit's registers are enforced, instruction memory costs time, a descriptor of
// billions of rows needs no bookkeeping of its own, and one that cannot end in time stops the run.
#include <sys/resource.h>

#include <fmt/format.h>

#include <cmath>

#include "sim_test_util.h"

namespace vtpu::sim {
namespace {

using testing::run_asm;

std::string cycles(const RunResult& r) { return "ran " + std::to_string(r.stats.total_cycles); }

std::string run(const config::Config& cfg, const std::string& text, SimOptions opt = {}) {
  return run_asm(cfg, text, cycles, {}, opt);
}

void expect_error(const std::string& got, std::initializer_list<const char*> parts) {
  EXPECT_EQ(got.rfind("SIMERROR: ", 0), 0u) << got;
  for (const char* p : parts) EXPECT_NE(got.find(p), std::string::npos) << "missing '" << p << "' in: " << got;
}

TEST(SimHostile, JumpToItselfIsReportedAtOnce) {
  // Without the check this runs to the default cycle limit (minutes of simulation).
  expect_error(run(config::load_preset("tiny-4x4"), "top: jmp top\n"), {"loops forever", "bundle 0", "same registers"});
}

TEST(SimHostile, LoopWithoutACounterIsReportedAtOnce) {
  expect_error(run(config::load_preset("tiny-4x4"), "  li r1, 7\ntop: addi r2, r1, 1\n  beq r1, r1, top\n  halt\n"),
               {"loops forever", "bundle 2", "branches to bundle 1"});
}

TEST(SimHostile, CountingLoopRunsToItsEnd) {
  // 1000 iterations of `loop` (1 cycle + the branch penalty each), then halt.
  config::Config cfg = config::load_preset("tiny-4x4");
  std::string got = run(cfg, "  li r1, 1000\ntop: loop r1, top\n  halt\n");
  EXPECT_EQ(got.rfind("ran ", 0), 0u) << got;
}

TEST(SimHostile, LoopPastTheCycleLimitIsReportedAtOnce) {
  // r5 = 0: `loop` makes it 2^32 - 1 and repeats that often, past the default limit of 10^9
  // cycles; it once took minutes to reach the limit. A loop whose body can branch out is
  // not predicted (it may leave early), and one that fits the limit runs.
  config::Config cfg = config::load_preset("tiny-4x4");
  expect_error(run(cfg, "top: loop r5, top\n  halt\n"), {"bundle 0", "4294967295 more times", "past the cycle limit"});
  SimOptions small;
  small.max_cycles = 5000;
  // 2 bundles and a 2-cycle branch penalty per iteration (tiny-4x4).
  expect_error(run(cfg, "  li r1, 1500\ntop: nop\n  loop r1, top\n  halt\n", small), {"1499 more times", "cycle limit 5000"});
  EXPECT_EQ(run(cfg, "  li r1, 1000\ntop: nop\n  loop r1, top\n  halt\n", small).rfind("ran ", 0), 0u);
  std::string exits = run(cfg, "  li r1, 3000\n  li r2, 2990\ntop: beq r1, r2, out\n  loop r1, top\nout: halt\n", small);
  EXPECT_EQ(exits.rfind("ran ", 0), 0u) << exits;
  // Waits and signals in the body only add time: still predicted (the mutation campaign's
  // `loop r5, 0` after a softmax's waits simulated 10^9 cycles for 36 s first).
  expect_error(run(cfg, "top: signal f1, 1\n  wait f1\n  loop r5, top\n  halt\n"), {"bundle 2", "4294967295 more times"});
  // A body that writes the counter is not predicted: entered with r5 = 0 (2^32 - 1 more
  // times), it sets r5 to 1 and the loop ends after one pass.
  std::string ends = run(cfg, "  jmp check\ntop: li r5, 1\n  signal f1, 1\n  wait f1\ncheck: loop r5, top\n  halt\n", small);
  EXPECT_EQ(ends.rfind("ran ", 0), 0u) << ends;
}

TEST(SimHostile, TensorPastMemoryIsRefusedBeforeAnythingIsAllocated) {
  // A [2, 2^31 - 1] fp32 input is 16 GiB: fill_missing_inputs once allocated it (bad_alloc,
  // "internal error") before the simulator found it outside the 128 MiB of tiny-4x4.
  isa::Program p = isa::assemble(".tensor x role=input dtype=fp32 shape=[2, 2147483647] addr=0x0\n  halt\n", "test.s");
  config::Config cfg = config::load_preset("tiny-4x4");
  try {
    check_fits_memory(cfg, p);
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("input tensor 'x'"), std::string::npos) << m;
    EXPECT_NE(m.find("17179869176 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("memory.bytes"), std::string::npos) << m;
  }
  isa::Program ok = isa::assemble(".tensor x role=input dtype=fp32 shape=[2, 8] addr=0x0\n  halt\n", "test.s");
  EXPECT_NO_THROW(check_fits_memory(cfg, ok));
}

TEST(SimHostile, RegisterPastTheConfigIsRefused) {
  config::Config cfg = config::load_preset("tiny-4x4");
  cfg.core.scalar.registers = 8;
  expect_error(run(cfg, "  li r7, 1\n  li r9, 1\n  halt\n"), {"bundle 1", "r9", "8 registers", "core.scalar.registers"});
  EXPECT_EQ(run(cfg, "  li r7, 1\n  halt\n").rfind("ran ", 0), 0u);
}

TEST(SimHostile, FlagPastTheConfigIsRefused) {
  config::Config cfg = config::load_preset("tiny-4x4");
  cfg.core.scalar.sync_flags = 8;
  expect_error(run(cfg, "  signal f8, 1\n  wait f8\n  signal f9, 1\n  wait f9\n  halt\n"),
               {"bundle 2", "f9", "8 sync flags", "core.scalar.sync_flags"});
  EXPECT_EQ(run(cfg, "  signal f8, 1\n  wait f8\n  halt\n").rfind("ran ", 0), 0u);
}

// docs/microarch.md, "Instruction memory": a window of imem_bundles bundles arrives at the
// memory's bandwidth after its access latency, written out again here.
uint64_t window_fetch_cycles(const config::Config& cfg) {
  double bytes_per_cycle = cfg.memory.bandwidth_gbytes_per_s * 1e9 / (cfg.clock_mhz * 1e6);
  return uint64_t(std::ceil(cfg.core.scalar.imem_bundles * 64.0 / bytes_per_cycle)) +
         uint64_t(std::ceil(cfg.memory.access_latency_ns * cfg.clock_mhz * 1e-3));
}

TEST(SimHostile, ProgramLongerThanInstructionMemoryCostsFetchTime) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "  nop\n";
  text += "  halt\n";  // 41 bundles: windows [0, 16), [16, 32), [32, 48)
  config::Config big = config::load_preset("tiny-4x4"), small = big;
  small.core.scalar.imem_bundles = 16;
  std::string a = run(big, text), b = run(small, text);
  ASSERT_EQ(a.rfind("ran ", 0), 0u) << a;
  ASSERT_EQ(b.rfind("ran ", 0), 0u) << b;
  uint64_t ca = std::stoull(a.substr(4)), cb = std::stoull(b.substr(4));
  EXPECT_EQ(cb - ca, 2 * window_fetch_cycles(small));  // the first window is loaded before the start
  std::string stalls = run_asm(small, text, [](const RunResult& r) {
    return std::to_string(r.stats.total.stall[size_t(StallReason::ImemFetch)]);
  });
  EXPECT_EQ(stalls, std::to_string(2 * window_fetch_cycles(small)));
}

TEST(SimHostile, DescriptorOfManyRowsNeedsNoBookkeeping) {
  // 2^25 rows of 4 bytes copied onto themselves: the simulator once kept 16 bytes per row
  // (512 MiB here; 64 GiB for 2^32 - 1 rows). Under a 384 MiB address-space limit it must run.
  std::string got = testing::in_child([] {
#ifndef __SANITIZE_ADDRESS__  // AddressSanitizer reserves terabytes of address space for its shadow
    rlimit lim{384u << 20, 384u << 20};
    setrlimit(RLIMIT_AS, &lim);
#endif
    isa::Program p = isa::assemble(".desc d bytes=4 dim=[33554432, 0, 0]\n  dma.copy desc=d src=r0 dst=r0 flag=f1\n"
                                   "  wait f1\n  halt\n",
                                   "test.s");
    std::map<std::string, std::vector<uint8_t>> in;
    return cycles(simulate(config::load_preset("tiny-4x4"), p, in));
  });
  EXPECT_EQ(got.rfind("ran ", 0), 0u) << got;
}

TEST(SimHostile, TransferPastTheCycleLimitIsRefusedBeforeItRuns) {
  // 2^32 - 1 rows from one HBM address: simulated row by row this ran for hours; each row
  // takes at least a burst on the memory bus, so the transfer cannot end inside 10^9 cycles.
  config::Config cfg = config::load_preset("tiny-4x4");
  const char* many = ".desc d bytes=4 dim=[4294967295, 0, 0]\n  {} desc=d src=r0 dst=r0 flag=f1\n  wait f1\n  halt\n";
  for (const char* op : {"dma.load", "dma.store", "dma.copy"})
    expect_error(run(cfg, fmt::format(fmt::runtime(many), op)),
                 {"bundle 0", op, "descriptor 'd'", "4294967295 rows of 4 bytes", "past the cycle limit 1000000000"});
  // The bound is a lower one: a transfer whose run ends at cycle C runs under a limit of C.
  for (const char* op : {"dma.load", "dma.store", "dma.copy"}) {
    std::string fits = fmt::format(".desc d bytes=64 dim=[4096, 0, 0]\n  {} desc=d src=r0 dst=r0 flag=f1\n  wait f1\n  halt\n", op);
    std::string got = run(cfg, fits);
    ASSERT_EQ(got.rfind("ran ", 0), 0u) << got;
    SimOptions limit;
    limit.max_cycles = std::stoull(got.substr(4));
    EXPECT_EQ(run(cfg, fits, limit), got) << op;
  }
}

}  // namespace
}  // namespace vtpu::sim
