// Data, flags, signals and barriers across chips; the quantum rule (any quantum up to the
// lookahead gives the same run); estimating by symmetry on a small torus.
#include <cmath>

#include "multichip_util.h"

namespace vtpu::sim {
namespace {

using testing::parse_values;
using testing::run_system;
using testing::small_system;
using testing::stall;

// L = link latency + router delay = 100 + 10 cycles in small_system().
constexpr uint64_t kHop = 110;

TEST(MultiChip, SendsCarryTheBytesBetweenUnifiedBuffersAndHbm) {
  // Chip 0 stages its input through its unified buffer to chip 1's unified buffer (then chip 1
  // stores it), and also sends it straight from HBM into chip 1's HBM output.
  std::string sender = R"(
    .tensor x role=input dtype=int32 shape=[8, 8] addr=0x1000
    .desc all bytes=256
      li r1, 0x1000 || li r3, 1
      dma.load desc=all src=r1 dst=r0 flag=f1
      wait f1
      ici.send desc=all src=r0 dst=r0 chip=r3 flag=f2 sflag=f3
      li r4, 0x3000
      ici.send desc=all src=r1 dst=r4 chip=r3 src_mem=hbm dst_mem=hbm flag=f4
      wait f3
      halt
  )";
  std::string receiver = R"(
    .tensor y role=output dtype=int32 shape=[8, 8] addr=0x2000
    .tensor z role=output dtype=int32 shape=[8, 8] addr=0x3000
    .desc all bytes=256
      li r1, 0x2000
      wait f2
      dma.store desc=all src=r0 dst=r1 flag=f1
      wait f1
      wait f4
      halt
  )";
  std::map<std::string, std::vector<uint8_t>> got;
  std::string out = run_system(small_system({2}), {sender, receiver}, [](const SystemResult& s) {
    std::string x(s.chips[1].outputs.at("y").begin(), s.chips[1].outputs.at("y").end());
    std::string z(s.chips[1].outputs.at("z").begin(), s.chips[1].outputs.at("z").end());
    return x + z;
  });
  ASSERT_EQ(out.size(), 512u) << out;
  // The sender's input, generated the same way (fill_missing_inputs with seed 1).
  isa::Program p = isa::assemble(sender, "chip0.s");
  std::map<std::string, std::vector<uint8_t>> in;
  fill_missing_inputs(p, 1, in);
  std::string x(in.at("x").begin(), in.at("x").end());
  EXPECT_EQ(out.substr(0, 256), x);
  EXPECT_EQ(out.substr(256), x);
  EXPECT_NE(x, std::string(256, '\0'));
}

TEST(MultiChip, ASignalLandsOneHopLater) {
  // A signal is a packet without payload: ready at issue, no link time, one hop to land.
  std::string out = run_system(small_system({2}), {"  li r3, 1\n  ici.signal chip=r3 flag=f4\n  halt\n", "  wait f4\n  halt\n"},
                               [](const SystemResult& s) { return fmt::format("w={}\n", stall(s, 1, StallReason::WaitIci)); });
  EXPECT_EQ(parse_values(out)["w"], 1 + kHop) << out;
}

TEST(MultiChip, ABarrierReleasesEachChipWhenWordOfTheLastArrivalReachesIt) {
  // Chips of a ring of 3 reach barrier 1 at cycles 0, 5 and 20 (after nops); chip c goes on
  // at max over chips j of (arrival_j + hops(j, c) x L), every pair 1 hop apart here.
  std::string nops5 = "  nop\n  nop\n  nop\n  nop\n  nop\n";
  std::string nops20;
  for (int i = 0; i < 20; ++i) nops20 += "  nop\n";
  std::string out = run_system(small_system({3}),
                               {"  barrier 1\n  halt\n", nops5 + "  barrier 1\n  halt\n", nops20 + "  barrier 1\n  halt\n"},
                               [](const SystemResult& s) {
                                 return fmt::format("b0={}\nb1={}\nb2={}\n", stall(s, 0, StallReason::Barrier),
                                                    stall(s, 1, StallReason::Barrier), stall(s, 2, StallReason::Barrier));
                               });
  auto v = parse_values(out);
  ASSERT_TRUE(v.count("b0")) << out;
  EXPECT_EQ(v["b0"], 20 + kHop - 0);
  EXPECT_EQ(v["b1"], 20 + kHop - 5);
  EXPECT_EQ(v["b2"], std::max<uint64_t>(20, 5 + kHop) - 20);
}

// A ring exchange with contention, signals, a barrier and credit back-pressure.
std::vector<std::string> busy_ring(uint32_t n) {
  std::vector<std::string> progs;
  for (uint32_t c = 0; c < n; ++c)
    progs.push_back(fmt::format(R"(
      .desc big bytes=3000
      .desc small bytes=272
        li r3, {next} || li r4, {prev}
        li r5, 4096 || li r6, 8192
        ici.send desc=big src=r0 dst=r5 chip=r3 flag=f1 sflag=f2
        ici.send desc=small src=r0 dst=r6 chip=r4 flag=f3
        ici.signal chip=r3 flag=f5
        wait f1
        wait f3
        wait f5
        wait f2
        barrier 7
        ici.send desc=big src=r5 dst=r0 chip=r4 flag=f6 sflag=f2
        wait f6
        wait f2
        halt
    )", fmt::arg("next", (c + 1) % n), fmt::arg("prev", (c + n - 1) % n)));
  return progs;
}

std::string run_summary(const SystemResult& s) {
  std::string o = fmt::format("total={} quantum={}\n", s.total_cycles, s.quantum_cycles);
  for (const RunResult& c : s.chips) {
    o += fmt::format("chip cycles={} bundles={} stall={}", c.stats.total_cycles, c.stats.total.bundles,
                     c.stats.total.stall_cycles);
    for (auto st : c.stats.total.stall) o += fmt::format(" {}", st);
    o += "\n";
  }
  for (const LinkStats& l : s.links)
    o += fmt::format("link {}->{} bytes={} busy={} stall={} queue={}\n", l.from, l.to, l.bytes, l.busy_cycles,
                     l.credit_stall_cycles, l.queue_cycles);
  return o;
}

TEST(MultiChip, AnyQuantumUpToTheLookaheadGivesTheSameRun) {
  config::Config cfg = small_system({4});
  cfg.ici.buffer_packets = 3;
  std::string base;
  for (uint64_t q : {0u, 37u, 1u}) {
    SystemOptions o;
    o.quantum_cycles = q;
    std::string got = run_system(cfg, busy_ring(4), run_summary, o);
    ASSERT_EQ(got.find("ERROR"), std::string::npos) << got;
    ASSERT_EQ(got.find("EXCEPTION"), std::string::npos) << got;
    std::string body = got.substr(got.find('\n'));  // all but the quantum line
    if (base.empty()) base = body;
    EXPECT_EQ(body, base) << "quantum " << q;
  }
  SystemOptions too_long;
  too_long.quantum_cycles = kHop + 1;
  std::string err = run_system(cfg, busy_ring(4), run_summary, too_long);
  EXPECT_NE(err.find("exceeds the lookahead of 110 cycles"), std::string::npos) << err;
}

TEST(MultiChip, DatelineChannelsKeepARingOfTwoHopSendsFromDeadlocking) {
  // Every chip sends to the chip two ahead (both hops +1) with one credit per virtual
  // channel: without the dateline's second channel the wraparound would close a cycle of
  // full buffers.
  config::Config cfg = small_system({4});
  cfg.ici.buffer_packets = 1;
  std::vector<std::string> progs;
  for (uint32_t c = 0; c < 4; ++c)
    progs.push_back(fmt::format(".desc d bytes=8192\n  li r3, {}\n  ici.send desc=d src=r0 dst=r0 chip=r3 flag=f1 "
                                "sflag=f2\n  wait f1\n  wait f2\n  halt\n",
                                (c + 2) % 4));
  std::string out = run_system(cfg, progs, [](const SystemResult& s) { return fmt::format("total={}\n", s.total_cycles); });
  EXPECT_GT(parse_values(out)["total"], 8192u / 8) << out;
}

// A shift by two on a ring: every link carries two streams at once, which share it, so the
// exchange takes two blocks' link time (plus the pipeline's fill), whatever the dateline does.
TEST(MultiChip, AShiftByTwoSharesEachLinkBetweenTwoStreams) {
  config::Config cfg = small_system({8});
  cfg.ici.packet_bytes = 1024;
  cfg.memory.bandwidth_gbytes_per_s = 128;
  std::vector<std::string> progs;
  const uint64_t B = 131072;
  for (uint32_t c = 0; c < 8; ++c)
    progs.push_back(fmt::format(".desc d bytes={}\n  li r3, {} || li r1, 0x100000\n  li r2, 0x200000\n"
                                "  ici.send desc=d src=r1 dst=r2 chip=r3 src_mem=hbm dst_mem=hbm flag=f2 sflag=f3\n"
                                "  wait f2\n  wait f3\n  halt\n",
                                B, (c + 2) % 8));
  std::string out = run_system(cfg, progs, [](const SystemResult& s) { return fmt::format("total={}\n", s.total_cycles); });
  uint64_t total = parse_values(out)["total"];
  const uint64_t link = 2 * B / 8;  // two blocks at 8 bytes per cycle
  EXPECT_GE(total, link) << out;
  EXPECT_LE(total, link + link / 20) << out;
}

TEST(MultiChip, EstimateBySymmetryMatchesTheFullRingExchange) {
  config::Config cfg = small_system({4});
  std::string full = run_system(cfg, busy_ring(4), [](const SystemResult& s) {
    return fmt::format("total={}\nchip0={}\n", s.total_cycles, s.chips[0].stats.total_cycles);
  });
  SystemOptions o;
  o.symmetric = true;
  std::string sym = run_system(cfg, {busy_ring(4)[0]}, [](const SystemResult& s) {
    return fmt::format("total={}\nchip0={}\nsimulated={}\n", s.total_cycles, s.chips[0].stats.total_cycles, s.chips.size());
  }, o);
  auto f = parse_values(full), y = parse_values(sym);
  ASSERT_TRUE(f.count("total")) << full;
  ASSERT_TRUE(y.count("total")) << sym;
  EXPECT_EQ(y["simulated"], 1u);
  EXPECT_EQ(y["total"], f["total"]);
  EXPECT_EQ(y["chip0"], f["chip0"]);
}

}  // namespace
}  // namespace vtpu::sim
