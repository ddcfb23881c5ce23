// The area estimate against the figures it is built from (docs/sweeps.md, "Area estimate").
#include <gtest/gtest.h>

#include "vtpu/sweep/area.h"
#include "vtpu/sweep/spec.h"

namespace vtpu::sweep {
namespace {

TEST(SweepArea, TpuV1ReproducesItsFloorPlan) {
  // Jouppi et al., ISCA 2017: die < 331 mm^2; unified buffer 29%, matrix unit 24%,
  // accumulators 6% of it. The weight FIFO (256 KiB), not in the floor plan, adds a little.
  AreaEstimate a = estimate_area(config::load_preset("tpu-v1"));
  EXPECT_NEAR(a.total_mm2, 331, 331 * 0.01);
  EXPECT_NEAR(a.unified_buffer_mm2 / 331, 0.29, 1e-9);
  EXPECT_NEAR(a.mxu_mm2 / 331, 0.24, 1e-9);
  EXPECT_NEAR(a.accumulators_mm2 / 331, 0.06, 1e-9);
  EXPECT_EQ(onchip_bytes(config::load_preset("tpu-v1")), 24u * 1024 * 1024 + 4u * 1024 * 1024 + 4u * 64 * 1024);
}

config::Config tpu_v1_with(const std::vector<std::pair<std::string, std::string>>& sets) {
  return apply_sets(config::preset_yaml("tpu-v1"), sets, "t");
}

TEST(SweepArea, ScalesWithWhatItCounts) {
  AreaEstimate base = estimate_area(config::load_preset("tpu-v1"));
  AreaEstimate ub = estimate_area(tpu_v1_with({{"core.unified_buffer.bytes", "48MiB"}}));
  EXPECT_NEAR(ub.unified_buffer_mm2, 2 * base.unified_buffer_mm2, 1e-9);
  EXPECT_NEAR(ub.mxu_mm2, base.mxu_mm2, 1e-9);
  AreaEstimate big = estimate_area(tpu_v1_with({{"core.mxu.rows", "512"},
                                                {"core.mxu.cols", "512"},
                                                {"core.unified_buffer.row_bytes", "512"},
                                                {"core.vector.lanes", "512"},
                                                {"core.accumulators.rows", "4096"}}));
  EXPECT_NEAR(big.mxu_mm2, 4 * base.mxu_mm2, 1e-9);
  EXPECT_NEAR(big.accumulators_mm2, 2 * base.accumulators_mm2, 1e-9);  // rows x cols x 4 bytes
  // A PE that also multiplies bf16: 3332 / 799 cells (docs/area.md).
  AreaEstimate bf16 = estimate_area(tpu_v1_with({{"core.mxu.dtypes", "[int8, bf16]"}, {"core.unified_buffer.row_bytes", "512"}}));
  EXPECT_NEAR(bf16.mxu_mm2 / base.mxu_mm2, 3332.0 / 799.0, 1e-9);
  // Area goes with the square of the node.
  AreaEstimate n7 = estimate_area(tpu_v1_with({{"energy.node_nm", "7"}}));
  EXPECT_NEAR(n7.mxu_mm2, base.mxu_mm2 / 16, 1e-9);
}

}  // namespace
}  // namespace vtpu::sweep
