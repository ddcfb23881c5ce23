// Multi-chip programs that cannot work stop with a diagnostic naming the chip, the bundle and
// the flag or field, never a hang: deadlocks, mismatched sends and barriers, bad
// destinations, races with arriving data.
#include "multichip_util.h"

namespace vtpu::sim {
namespace {

using testing::run_system;
using testing::small_system;

std::string fails(const config::Config& cfg, const std::vector<std::string>& progs, SystemOptions o = {}) {
  return run_system(cfg, progs, [](const SystemResult& s) { return "ran " + std::to_string(s.total_cycles); }, o);
}

void expect_error(const std::string& got, std::initializer_list<const char*> parts, const char* kind = "SIMERROR: ") {
  EXPECT_EQ(got.rfind(kind, 0), 0u) << got;
  for (const char* p : parts) EXPECT_NE(got.find(p), std::string::npos) << "missing '" << p << "' in: " << got;
}

TEST(MultiChipErrors, WaitingOnAFlagNoChipSignalsIsADeadlock) {
  expect_error(fails(small_system({2}), {"  li r1, 1\n  wait f5\n  halt\n", "  halt\n"}),
               {"deadlock", "chip 0 (0): bundle 1 (slot ctl, wait)", "f5 >= 1", "halted: chips 1"});
}

TEST(MultiChipErrors, FewerSendsThanTheReceiverWaitsFor) {
  std::string send = ".desc d bytes=64\n  li r3, 1\n  ici.send desc=d src=r0 dst=r0 chip=r3 flag=f1\n  halt\n";
  expect_error(fails(small_system({2}), {send, "  wait f1, 2\n  halt\n"}),
               {"deadlock", "chip 1 (1): bundle 0", "f1 >= 2", "can reach 1"});
}

TEST(MultiChipErrors, ChipsAtDifferentBarriersDeadlock) {
  expect_error(fails(small_system({3}), {"  barrier 1\n  halt\n", "  barrier 2\n  halt\n", "  barrier 1\n  halt\n"}),
               {"deadlock", "chip 0 (0): bundle 0 (slot ctl, barrier): waits at barrier 1", "not there yet: chip 1 (1)",
                "chip 1 (1): bundle 0 (slot ctl, barrier): waits at barrier 2"});
}

TEST(MultiChipErrors, AChipThatHaltsBeforeABarrierDeadlocksTheOthers) {
  expect_error(fails(small_system({2}), {"  barrier 3\n  halt\n", "  halt\n"}),
               {"deadlock", "waits at barrier 3", "not there yet: chip 1 (1)", "halted: chips 1"});
}

TEST(MultiChipErrors, DestinationChipOutOfRange) {
  expect_error(fails(small_system({2}), {"  li r3, 9\n  ici.signal chip=r3 flag=f1\n  halt\n", "  halt\n"}),
               {"chip 0 (0): bundle 1 (slot ici, ici.signal)", "destination chip 9 does not exist", "ids 0..1"});
}

TEST(MultiChipErrors, SendingToItself) {
  expect_error(fails(small_system({2}), {"  halt\n", ".desc d bytes=64\n  li r3, 1\n  ici.send desc=d src=r0 dst=r0 chip=r3\n  halt\n"}),
               {"chip 1 (1): bundle 1", "sends to its own chip", "dma.copy"});
}

TEST(MultiChipErrors, DmaSendOverALinkAMeshEdgeLacks) {
  expect_error(fails(small_system({3}, false), {".desc d bytes=64\n  dma.send desc=d src=r0 dst=r0 link=1\n  halt\n", "  halt\n", "  halt\n"}),
               {"chip 0 (0): bundle 0 (slot dma, dma.send)", "link=1 (dimension 0, - direction) leads nowhere",
                "a mesh"});
}

TEST(MultiChipErrors, DestinationPastTheUnifiedBuffer) {
  std::string send = ".desc d bytes=256\n  li r3, 1 || li r4, 131072\n  ici.send desc=d src=r0 dst=r4 chip=r3\n  halt\n";
  expect_error(fails(small_system({2}), {send, "  halt\n"}), {"chip 0 (0): bundle 1", "'dst' reaches unified-buffer bytes 131072..131327"});
}

TEST(MultiChipErrors, ReadingDataWhileItLandsIsARace) {
  // Chip 1 copies the destination range without waiting for the send's flag.
  std::string send = ".desc d bytes=2048\n  li r3, 1\n  ici.send desc=d src=r0 dst=r0 chip=r3 flag=f1\n  halt\n";
  std::string recv = R"(
    .desc d bytes=2048
      li r5, 40
    here:
      loop r5, here
      dma.copy desc=d src=r0 dst=r0 flag=f2
      wait f2
      wait f1
      halt
  )";
  std::string got = fails(small_system({2}), {send, recv});
  expect_error(got, {"chip 1 (1)", "race", "bundle 2 (dma.copy) reads unified-buffer bytes 0..2047",
                     "chip 0's bundle 1 (ici.send) writes them"});
}

TEST(MultiChipErrors, IciOperationsOnASingleChip) {
  std::string got = testing::run_asm("tiny-8x8", "  li r3, 1\n  ici.signal chip=r3 flag=f1\n  halt\n",
                                     [](const RunResult&) { return std::string("ran"); });
  expect_error(got, {"bundle 1 (slot ici, ici.signal)", "needs a multi-chip system"});
}

TEST(MultiChipErrors, WrongProgramCountAndSymmetryOnAMesh) {
  expect_error(fails(small_system({4}), {"  halt\n"}), {"has 4 chips but 1 programs"}, "EXCEPTION: ");
  SystemOptions o;
  o.symmetric = true;
  expect_error(fails(small_system({4}, false), {"  halt\n"}, o), {"needs a torus", "mesh"}, "EXCEPTION: ");
}

TEST(MultiChipErrors, SendPastTheCycleLimitIsRefusedBeforeItRuns) {
  // 2^32 - 1 rows of one UB address: a legal descriptor whose rows alone would take 64 GiB to
  // list. Its bytes take at least one link byte time each, so it cannot end inside 10^9 cycles.
  std::string send = ".desc d bytes=4 dim=[4294967295, 0, 0]\n  li r3, 1\n  ici.send desc=d src=r0 dst=r0 chip=r3 flag=f1\n  halt\n";
  expect_error(fails(small_system({2}), {send, "  halt\n"}),
               {"chip 0 (0): bundle 1 (slot ici, ici.send)", "descriptor 'd' sends 4294967295 rows of 4 bytes",
                "past the cycle limit 1000000000"});
  // The bound is a lower one: a send that fits runs under a limit of the cycles it took.
  std::string fits = ".desc d bytes=64 dim=[512, 0, 0]\n  li r3, 1\n  ici.send desc=d src=r0 dst=r0 chip=r3 sflag=f2\n  wait f2\n  halt\n";
  std::string got = fails(small_system({2}), {fits, "  halt\n"});
  ASSERT_EQ(got.rfind("ran ", 0), 0u) << got;
  SystemOptions limit;
  limit.sim.max_cycles = std::stoull(got.substr(4));
  EXPECT_EQ(fails(small_system({2}), {fits, "  halt\n"}, limit), got);
}

TEST(MultiChipErrors, ALoopThatNeverEndsHitsTheCycleLimit) {
  SystemOptions o;
  o.sim.max_cycles = 5000;
  // A counter that changes every time round: only the cycle limit can stop it.
  expect_error(fails(small_system({2}), {"here:\n  addi r1, r1, 1\n  jmp here\n", "  halt\n"}, o),
               {"chip 0 (0)", "cycle limit 5000"});
}

TEST(MultiChipErrors, AJumpToItselfIsReportedAtOnce) {
  // The same bundle with the same registers: the path repeats whatever the other chips do
  // (flags they signal change no register), so the run stops at the first repeat.
  SystemOptions o;
  o.sim.max_cycles = 5000;
  expect_error(fails(small_system({2}), {"here:\n  jmp here\n", "  halt\n"}, o), {"chip 0 (0)", "bundle 0", "loops forever"});
}

}  // namespace
}  // namespace vtpu::sim
