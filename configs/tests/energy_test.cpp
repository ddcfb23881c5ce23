// The energy table: SRAM interpolation against hand-computed values and the
// node-scaled defaults against their sources (ANCHORS.md).
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "vtpu/config/config.h"

namespace vtpu::config {
namespace {

EnergyTable horowitz_45nm() {
  EnergyTable e;
  e.sram_pj_per_64b = {{8 << 10, 10.0}, {32 << 10, 20.0}, {1 << 20, 100.0}};
  return e;
}

// Power law between neighbours: pJ = pJ0 * (bytes / bytes0)^(log(pJ1/pJ0) / log(bytes1/bytes0)).
TEST(SramEnergy, InterpolatesLogLogBetweenPoints) {
  const EnergyTable e = horowitz_45nm();
  EXPECT_DOUBLE_EQ(sram_pj_per_64b(e, 8 << 10), 10.0);
  EXPECT_DOUBLE_EQ(sram_pj_per_64b(e, 32 << 10), 20.0);
  EXPECT_NEAR(sram_pj_per_64b(e, 1 << 20), 100.0, 1e-9);
  // 16 KiB: halfway (in log) from 8 KiB to 32 KiB: 10 * 2^(1/2).
  EXPECT_NEAR(sram_pj_per_64b(e, 16 << 10), 14.142135623730951, 1e-9);
  // 256 KiB: 3/5 of the way (in log) from 32 KiB to 1 MiB: 20 * 5^(3/5) = 52.5305...
  EXPECT_NEAR(sram_pj_per_64b(e, 256 << 10), 52.53055608807534, 1e-9);
}

TEST(SramEnergy, ExtrapolatesWithTheEndSegments) {
  const EnergyTable e = horowitz_45nm();
  // 2 KiB: two octaves below 8 KiB on the 8-32 KiB slope (x2 per 4x): 10 / 2 = 5.
  EXPECT_NEAR(sram_pj_per_64b(e, 2 << 10), 5.0, 1e-9);
  // 4 MiB: 7/5 of the 32 KiB-1 MiB segment: 20 * 5^(7/5) = 190.365...
  EXPECT_NEAR(sram_pj_per_64b(e, 4 << 20), 190.36539387158786, 1e-9);
}

TEST(SramEnergy, OnePointTableIsConstantAndTwoPointsAreAPowerLaw) {
  EnergyTable one;
  one.sram_pj_per_64b = {{4096, 3.0}};
  EXPECT_DOUBLE_EQ(sram_pj_per_64b(one, 1), 3.0);
  EXPECT_DOUBLE_EQ(sram_pj_per_64b(one, 1 << 30), 3.0);
  EnergyTable two;
  two.sram_pj_per_64b = {{1024, 1.0}, {4096, 4.0}};  // pJ grows linearly with bytes
  EXPECT_NEAR(sram_pj_per_64b(two, 2048), 2.0, 1e-12);
  EXPECT_NEAR(sram_pj_per_64b(two, 65536), 64.0, 1e-9);
}

TEST(SramEnergy, SevenNanometreTableComesFromJouppi2021) {
  const Config c = load_preset("tpu-v4-core");
  EXPECT_DOUBLE_EQ(sram_pj_per_64b(c.energy, 8 << 10), 7.5);
  EXPECT_DOUBLE_EQ(sram_pj_per_64b(c.energy, 32 << 10), 8.5);
  EXPECT_NEAR(sram_pj_per_64b(c.energy, 1 << 20), 14.0, 1e-9);
  // A 16 MiB VMEM extrapolates above 14 pJ but stays far below the 45 nm figure.
  const double vmem = sram_pj_per_64b(c.energy, c.core.unified_buffer.bytes);
  EXPECT_GT(vmem, 14.0);
  EXPECT_LT(vmem, 50.0);
}

TEST(NodeDefaults, AreHorowitzAt45AndScaledAt7) {
  const Config c45 = load_string(testing::kMinimalYaml, "45.yaml");
  EXPECT_DOUBLE_EQ(c45.energy.mac_pj.int8, 0.3);
  EXPECT_DOUBLE_EQ(c45.energy.vector_add_pj.int32, 0.1);
  EXPECT_DOUBLE_EQ(c45.energy.vector_add_pj.fp32, 0.9);
  EXPECT_DOUBLE_EQ(c45.energy.vector_mul_pj.int32, 3.1);
  EXPECT_DOUBLE_EQ(c45.energy.vector_mul_pj.fp32, 3.7);
  EXPECT_DOUBLE_EQ(c45.energy.scalar_op_pj, 0.1);

  const Config c7 =
      load_string(std::string(testing::kMinimalYaml) + "energy: {node_nm: 7}\n", "7.yaml");
  EXPECT_DOUBLE_EQ(c7.energy.mac_pj.int8, 0.105);  // 0.3 x 0.35
  EXPECT_DOUBLE_EQ(c7.energy.mac_pj.bf16, 0.525);
  EXPECT_DOUBLE_EQ(c7.energy.sram_pj_per_64b[0].pj, 7.5);
  EXPECT_DOUBLE_EQ(c7.energy.sram_pj_per_64b[1].pj, 8.5);
  EXPECT_DOUBLE_EQ(c7.energy.sram_pj_per_64b[2].pj, 14.0);
}

TEST(NodeDefaults, IntermediateNodesLieBetweenAndBf16StaysFiveTimesInt8) {
  const Config v1 = load_preset("tpu-v1");  // 28 nm
  EXPECT_GT(v1.energy.mac_pj.int8, 0.105);
  EXPECT_LT(v1.energy.mac_pj.int8, 0.3);
  // 0.3 x 0.35^(ln(45/28) / ln(45/7)) = 0.2296..., rounded to 3 digits.
  EXPECT_DOUBLE_EQ(v1.energy.mac_pj.int8, 0.23);
  for (const std::string& name : preset_names()) {
    const EnergyTable& e = load_preset(name).energy;
    EXPECT_NEAR(e.mac_pj.bf16 / e.mac_pj.int8, 5.0, 0.05) << name;
    EXPECT_LT(e.sram_pj_per_64b.front().pj, e.sram_pj_per_64b.back().pj) << name;
  }
}

// Sanity check, not a fit: TPU v1 at full MXU activity, idle 28 W plus MAC energy,
// should land near its measured 40 W busy power (ANCHORS.md).
TEST(NodeDefaults, TpuV1BusyPowerIsPlausible) {
  const Config c = load_preset("tpu-v1");
  const double macs_per_s = peak_ops_per_s_per_chip(c) / 2;
  const double mxu_w = macs_per_s * mac_pj(c.energy, DType::kInt8) * 1e-12;
  const double total_w = c.energy.static_power_w + mxu_w;
  EXPECT_GT(total_w, 34.0);
  EXPECT_LT(total_w, 46.0);
}

}  // namespace
}  // namespace vtpu::config
