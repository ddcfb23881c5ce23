// ICI transfer cycles against docs/microarch.md ("Chips and links", "ICI engine"), worked
// out here from the written rules: packets, the engine's unified-buffer port, store-and-
// forward hops, latency, router delay, the destination's write path, credits and the
// acknowledgement. Not against the simulator's own earlier output.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "multichip_util.h"

namespace vtpu::sim {
namespace {

using testing::parse_values;
using testing::run_system;
using testing::small_system;
using testing::stall;

constexpr uint64_t kSub = 65536;

struct Rules {
  uint64_t tau, lat, rd, P, setup, port_rd, port_wr, rd_lat, wr_lat, credits;
  explicit Rules(const config::Config& c) {
    double f = c.clock_mhz;
    tau = uint64_t(std::llround(65536.0 * f * 1e6 / (c.ici.link_bandwidth_gbytes_per_s * 1e9)));
    lat = uint64_t(std::llround(c.ici.link_latency_ns * f / 1000));
    rd = uint64_t(std::llround(c.ici.router_delay_ns * f / 1000));
    P = c.ici.packet_bytes;
    setup = c.core.dma.setup_cycles;
    port_rd = uint64_t(c.core.unified_buffer.row_bytes) * c.core.unified_buffer.read_ports;
    port_wr = uint64_t(c.core.unified_buffer.row_bytes) * c.core.unified_buffer.write_ports;
    rd_lat = c.core.unified_buffer.read_latency_cycles;
    wr_lat = c.core.unified_buffer.write_latency_cycles;
    credits = c.ici.buffer_packets;
  }
};

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// One unified-buffer -> unified-buffer send of N bytes issued at cycle T, alone on a route of
// `hops` links: {receiver's done cycle, sender's done cycle}.
std::pair<uint64_t, uint64_t> alone(const Rules& r, uint64_t N, uint64_t T, unsigned hops) {
  uint64_t n = ceil_div(N, r.P), S = T + r.setup;
  std::vector<uint64_t> ready(n), bytes(n);
  for (uint64_t k = 0; k < n; ++k) {
    bytes[k] = std::min(r.P, N - k * r.P);
    ready[k] = (S + ceil_div(std::min(N, (k + 1) * r.P), r.port_rd) + r.rd_lat) * kSub;
  }
  // Each link forwards whole packets, one after another.
  for (unsigned h = 0; h < hops; ++h) {
    uint64_t free = 0;
    for (uint64_t k = 0; k < n; ++k) {
      uint64_t start = std::max(ready[k], free);
      free = start + bytes[k] * r.tau;
      ready[k] = free + (r.lat + r.rd) * kSub;
    }
  }
  uint64_t written = 0;
  for (uint64_t k = 0; k < n; ++k) written = std::max(ready[k], written) + (ceil_div(bytes[k], r.port_wr) + r.wr_lat) * kSub;
  uint64_t done = ceil_div(written, kSub);
  return {done, done + hops * (r.lat + r.rd)};
}

std::string send_program(uint32_t to, uint64_t bytes) {
  return fmt::format(R"(
    .desc d bytes={}
      li r3, {}
      ici.send desc=d src=r0 dst=r0 chip=r3 flag=f1 sflag=f2
      wait f2
      halt
  )", bytes, to);
}

const char* kReceive = "  wait f1\n  halt\n";

TEST(LinkTiming, OneTransferOverOneLink) {
  config::Config cfg = small_system({2});
  Rules r(cfg);
  auto [recv, sent] = alone(r, 1024, 1, 1);
  // By hand: tau = 1/8 cycle, 4 packets of 256 bytes ready at 35, 51, 67, 83 (setup 16,
  // 16-byte port, read latency 2) leave at 35, 67, 99, 131 (32 cycles each), arrive 110
  // later and take 17 cycles to write: the last is written at 290; the ack is back 110 later.
  EXPECT_EQ(recv, 290u);
  EXPECT_EQ(sent, 400u);
  std::string out = run_system(cfg, {send_program(1, 1024), kReceive}, [](const SystemResult& s) {
    return fmt::format("recv_wait={}\nsend_wait={}\ntotal={}\nbytes={}\nbusy={}\n", stall(s, 1, StallReason::WaitIci),
                       stall(s, 0, StallReason::WaitIci), s.total_cycles, s.links[0].bytes, s.links[0].busy_cycles);
  });
  auto v = parse_values(out);
  ASSERT_TRUE(v.count("recv_wait")) << out;
  EXPECT_EQ(v["recv_wait"], recv);      // chip 1's wait (bundle 0, cycle 0) issues at its done cycle
  EXPECT_EQ(v["send_wait"], sent - 2);  // chip 0's wait on sflag is ready at cycle 2
  EXPECT_EQ(v["total"], sent + 2);      // chip 0 halts the cycle after
  EXPECT_EQ(v["bytes"], 1024u);
  EXPECT_EQ(v["busy"], 128u);  // 1024 bytes at 8 per cycle
}

TEST(LinkTiming, StoreAndForwardOverThreeHops) {
  config::Config cfg = small_system({7});
  Rules r(cfg);
  auto [recv, sent] = alone(r, 2000, 1, 3);
  std::vector<std::string> progs(7, "  halt\n");
  progs[0] = send_program(3, 2000);
  progs[3] = kReceive;
  std::string out = run_system(cfg, progs,
                               [](const SystemResult& s) {
                                 return fmt::format("recv_wait={}\nsend_wait={}\n", stall(s, 3, StallReason::WaitIci),
                                                    stall(s, 0, StallReason::WaitIci));
                               });
  auto v = parse_values(out);
  ASSERT_TRUE(v.count("recv_wait")) << out;
  EXPECT_EQ(v["recv_wait"], recv);
  EXPECT_EQ(v["send_wait"], sent - 2);
}

// Packets of two transfers that share a link: whenever the link is free it takes, among the
// packets ready for it, the oldest, a packet's age being when it would have started on its
// first link had that carried only its chip's packets (ties: the lower source chip, then
// packet number) (docs/microarch.md, "ICI engine").
TEST(LinkTiming, TransfersSharingALinkServeTheOldestPacketFirst) {
  config::Config cfg = small_system({4});
  Rules r(cfg);
  // Chip 0 sends to chip 2 over 0->1->2; chip 1, a little later, over 1->2.
  std::string late = R"(
    .desc d bytes=1024
      li r5, 47
    here:
      loop r5, here
      li r3, 2 || li r4, 1024
      ici.send desc=d src=r0 dst=r4 chip=r3 flag=f3 sflag=f2
      wait f2
      halt
  )";
  SystemOptions traced;
  traced.sim.record_trace = true;
  std::string out = run_system(cfg, {send_program(2, 1024), late, "  wait f1\n  wait f3\n  halt\n", "  halt\n"},
                               [](const SystemResult& s) {
                                 uint64_t t1 = 0;
                                 for (const auto& e : s.chips[1].trace)
                                   if (e.unit == Unit::Ici) t1 = e.begin;
                                 return fmt::format("t1={}\nwait0={}\nwait1={}\nqueue={}\n", t1,
                                                    stall(s, 0, StallReason::WaitIci), stall(s, 1, StallReason::WaitIci),
                                                    uint64_t(testing::link_between(s, 1, 2).queue_cycles));
                               },
                               traced);
  auto v = parse_values(out);
  ASSERT_TRUE(v.count("t1")) << out;
  uint64_t T0 = 1, T1 = v["t1"];
  ASSERT_GT(T1, 100u);
  // Packet k of a send is ready at the source at S + ceil((k+1)P / port) + read latency.
  auto source_ready = [&](uint64_t T, uint64_t k) { return (T + r.setup + ceil_div((k + 1) * r.P, r.port_rd) + r.rd_lat) * kSub; };
  // A packet's age: when it would start on its first link carrying only its chip's packets.
  auto age = [&](uint64_t T, uint64_t k) {
    uint64_t a = 0;
    for (uint64_t i = 0; i <= k; ++i) a = std::max(source_ready(T, i), i ? a + r.P * r.tau : 0);
    return a;
  };
  struct Pkt { uint64_t ready, age; uint32_t chip, k; };
  std::vector<Pkt> waiting;
  uint64_t free = 0;
  for (uint32_t k = 0; k < 4; ++k) {  // chip 0's packets cross 0->1 alone first
    uint64_t start = std::max(source_ready(T0, k), free);
    free = start + r.P * r.tau;
    waiting.push_back({free + (r.lat + r.rd) * kSub, age(T0, k), 0, k});
  }
  for (uint32_t k = 0; k < 4; ++k) waiting.push_back({source_ready(T1, k), age(T1, k), 1, k});
  free = 0;
  uint64_t written = 0, queue = 0;
  std::map<uint32_t, uint64_t> done;
  while (!waiting.empty()) {
    uint64_t t = free;
    bool any = false;
    for (const Pkt& p : waiting) any = any || p.ready <= t;
    if (!any) {
      t = UINT64_MAX;
      for (const Pkt& p : waiting) t = std::min(t, p.ready);
    }
    auto best = waiting.end();
    for (auto it = waiting.begin(); it != waiting.end(); ++it)
      if (it->ready <= t && (best == waiting.end() || std::tie(it->age, it->chip, it->k) < std::tie(best->age, best->chip, best->k)))
        best = it;
    queue += t - best->ready;
    free = t + r.P * r.tau;
    // Both arrive over link 1->2, through its one write path at chip 2.
    written = std::max(free + (r.lat + r.rd) * kSub, written) + (ceil_div(r.P, r.port_wr) + r.wr_lat) * kSub;
    done[best->chip] = ceil_div(written, kSub);
    waiting.erase(best);
  }
  EXPECT_GT(queue, 0u) << "the two transfers should have met on link 1->2";
  EXPECT_EQ(v["queue"], queue / kSub);
  EXPECT_EQ(v["wait0"], done[0] + 2 * (r.lat + r.rd) - 2);         // 2 hops back
  EXPECT_EQ(v["wait1"], done[1] + 1 * (r.lat + r.rd) - (T1 + 1));  // 1 hop back
}

// With few credits a link waits for its downstream slots: packet k needs the slot packet
// k - credits held, free once that one is written plus the latency back.
TEST(LinkTiming, CreditsThrottleALongHop) {
  config::Config cfg = small_system({2});
  cfg.ici.buffer_packets = 2;
  Rules r(cfg);
  const uint64_t N = 2048, n = N / r.P;
  std::vector<uint64_t> start(n), written(n);
  uint64_t free = 0, w = 0, stalled = 0;
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t ready = (1 + r.setup + ceil_div((k + 1) * r.P, r.port_rd) + r.rd_lat) * kSub;
    uint64_t credit = k >= r.credits ? written[k - r.credits] + r.lat * kSub : 0;
    start[k] = std::max({ready, free, credit});
    stalled += start[k] - std::max(ready, free);
    free = start[k] + r.P * r.tau;
    w = std::max(free + (r.lat + r.rd) * kSub, w) + (ceil_div(r.P, r.port_wr) + r.wr_lat) * kSub;
    written[k] = w;
  }
  uint64_t recv = ceil_div(w, kSub);
  EXPECT_GT(stalled, 0u);
  std::string out = run_system(cfg, {send_program(1, N), kReceive}, [](const SystemResult& s) {
    return fmt::format("recv_wait={}\nstall={}\n", stall(s, 1, StallReason::WaitIci),
                       uint64_t(std::llround(s.links[0].credit_stall_cycles * 65536)));
  });
  auto v = parse_values(out);
  ASSERT_TRUE(v.count("recv_wait")) << out;
  EXPECT_EQ(v["recv_wait"], recv);
  EXPECT_EQ(v["stall"], stalled);
}

}  // namespace
}  // namespace vtpu::sim
