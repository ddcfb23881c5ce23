// The MXU cycle breakdown (docs/reports.md, "MXU cycle breakdown") of a program whose every
// cycle the timing rules of docs/microarch.md place by hand: a tile arriving from memory,
// its shift, one matmul, a wait for its result.
#include <fmt/format.h>

#include <cmath>

#include "sim_test_util.h"
#include "vtpu/sim/breakdown.h"

namespace vtpu::sim {
namespace {

TEST(MxuBreakdown, EveryCyclePlacedByTheTimingRules) {
  const config::Config cfg = config::load_preset("tiny-8x8");
  const auto& m = cfg.core.mxu;
  const uint64_t R = m.rows, C = m.cols, B = 3 * R;
  // Bundle 0 starts the tile's transfer, bundle 1 loads it (its shift starts when the tile is
  // in the FIFO), bundle 2's swap waits for the shift's end.
  const std::string text = fmt::format(R"(
    .desc w bytes={C} dim=[{R}, {C}, {C}]
      dma.wfifo desc=w src=r0 mxu=0
      mxu.wload mxu=0
      mxu.matmul mxu=0 src=r0+0 dst=r0+0 rows={B} dtype=int8 swap=1 flag=f2
      wait f2
      halt
  )", fmt::arg("R", R), fmt::arg("C", C), fmt::arg("B", B));
  SimOptions opt;
  opt.record_trace = true;
  const std::string out = testing::run_asm(cfg, text, [&](const RunResult& r) {
    uint64_t dma_end = 0;
    for (const TraceEvent& e : r.trace)
      if (e.unit == Unit::Dma) dma_end = e.end;
    const MxuBreakdown b = mxu_breakdown(r, isa::assemble(text, "test.s"));
    return fmt::format("{} {} {:.17g} {:.17g} {:.17g} {:.17g} {:.17g} {:.17g}", dma_end, b.cycles, b.array_active,
                       b.weight_stall, b.weight_shift, b.non_matrix, b.raw_stalls, b.input_stalls);
  }, {}, opt);
  ASSERT_EQ(out.find("EXCEPTION"), std::string::npos) << out;
  uint64_t H = 0, total = 0;
  double active, stall, shift, other, raw, input;
  ASSERT_EQ(std::sscanf(out.c_str(), "%lu %lu %lf %lf %lf %lf %lf %lf", &H, &total, &active, &stall, &shift, &other, &raw,
                        &input),
            8)
      << out;
  // The tile is in the FIFO at H; the shift runs [H, H + shift); the matmul issues at its end
  // (the sequencer waited from cycle 2), streams B rows from T + in, is done at D; wait f2
  // issues at D, halt at D + 1.
  const uint64_t T = H + m.weight_shift_cycles;
  const uint64_t D = T + m.input_latency_cycles + B + R + C - 2 + m.output_latency_cycles;
  ASSERT_EQ(total, D + 2);
  const double n = double(total);
  EXPECT_DOUBLE_EQ(active, double(B) / n);
  EXPECT_DOUBLE_EQ(stall, double(H - 2) / n);  // idle, waiting for the tile from memory
  EXPECT_DOUBLE_EQ(shift, double(m.weight_shift_cycles) / n);
  EXPECT_NEAR(other, double(total - B - (H - 2) - m.weight_shift_cycles) / n, 1e-12);
  EXPECT_DOUBLE_EQ(raw, double(D - (T + 1)) / n);  // wait f2: the matmul's result
  EXPECT_EQ(input, 0.0);
}

}  // namespace
}  // namespace vtpu::sim
