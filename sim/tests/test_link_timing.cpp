// ICI transfer cycles against docs/microarch.md ("Chips and links", "ICI engine"), worked
// out here from the written rules: packets, the engine's unified-buffer port, store-and-
// forward hops, latency, router delay, the destination's write path, credits and the
// acknowledgement. Not against the simulator's own earlier output.
#include <cmath>

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

}  // namespace
}  // namespace vtpu::sim
