// Every chip's output of a collective equals what the collective means, computed here from
// the inputs (collectives::expected_output), on rings, meshes and tori.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include "vtpu/collectives/collectives.h"
#include "vtpu/support/child_process.h"

int sc_main(int, char**) { return 0; }

namespace vtpu::collectives {
namespace {

config::Config small(std::vector<uint32_t> shape, bool wrap = true) {
  config::Config c = config::load_preset("tiny-8x8");
  uint32_t n = 1, links = 0;
  for (uint32_t d : shape) n *= d, links += d >= 3 ? 2 : d == 2 ? 1 : 0;
  c.name = "mc-test";
  c.system.chips = n;
  c.ici.shape = std::move(shape);
  c.ici.wraparound = wrap;
  c.ici.links = links;
  c.ici.link_bandwidth_gbytes_per_s = 8;
  c.ici.link_latency_ns = 100;
  c.ici.router_delay_ns = 10;
  c.ici.packet_bytes = 256;
  return c;
}

std::string run_child(const config::Config& cfg, Spec s) {
  return run_in_child([&] {
    Outcome o = run(cfg, s);
    return fmt::format("checked={} mismatch={} cycles={}", o.checked, o.mismatch, o.system.total_cycles);
  }, [](const std::exception& e) { return std::string("EXCEPTION: ") + e.what(); }, "EXCEPTION: crashed");
}

struct Case {
  const char* name;
  std::vector<uint32_t> shape;
  bool wrap;
  Kind kind;
  isa::Dtype dtype;
  uint64_t bytes;
};

class Results : public ::testing::TestWithParam<Case> {};

TEST_P(Results, EveryChipGetsTheRightOutput) {
  const Case& c = GetParam();
  Spec s;
  s.kind = c.kind;
  s.dtype = c.dtype;
  s.bytes = c.bytes;
  std::string out = run_child(small(c.shape, c.wrap), s);
  EXPECT_NE(out.find("checked=true mismatch= cycles="), std::string::npos) << out;
}

INSTANTIATE_TEST_SUITE_P(Collectives, Results, ::testing::Values(
  Case{"ring4_allreduce_fp32", {4}, true, Kind::AllReduce, isa::Dtype::Fp32, 32 * 1024},
  Case{"ring2_allreduce_int32", {2}, true, Kind::AllReduce, isa::Dtype::Int32, 8 * 1024},
  Case{"ring5_allreduce_uneven", {5}, true, Kind::AllReduce, isa::Dtype::Fp32, 7 * 32},
  Case{"torus4x4_allreduce_int32", {4, 4}, true, Kind::AllReduce, isa::Dtype::Int32, 16 * 1024},
  Case{"cube2x2x2_allreduce_bf16", {2, 2, 2}, true, Kind::AllReduce, isa::Dtype::Bf16, 8 * 1024},
  Case{"mesh4_allreduce_fp32", {4}, false, Kind::AllReduce, isa::Dtype::Fp32, 8 * 1024},
  Case{"ring4_allgather", {4}, true, Kind::AllGather, isa::Dtype::Fp32, 16 * 1024},
  Case{"torus3x2_reducescatter", {3, 2}, true, Kind::ReduceScatter, isa::Dtype::Fp32, 6 * 1024},
  Case{"torus2x3_alltoall", {2, 3}, true, Kind::AllToAll, isa::Dtype::Fp32, 6 * 1024}),
  [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

}  // namespace
}  // namespace vtpu::collectives
