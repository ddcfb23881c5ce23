// Randomized cross-check of the Verilated MXU against vtpu::numerics::ref and the cycle
// formulas of docs/microarch.md (docs/rtl.md, "Cross-check").
//
//   default               a quick subset per model (CI)
//   VTPU_COSIM_FULL=1     the long run (thousands of programs)
//   VTPU_COSIM_SEED=<n>   MxuCosim.Reproduce reruns seed n, on VTPU_COSIM_MODEL=<model>
//                         (all models if unset); the failure message prints this command.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "mxu_harness.h"
#include "vtpu/config/config.h"

namespace vtpu::rtl {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

bool full_run() {
  const char* v = env("VTPU_COSIM_FULL");
  return v && std::string(v) != "0";
}

// Programs of every fifth seed are long (more tiles, longer streams); the seed alone
// determines the program.
bool long_seed(uint64_t seed) { return seed % 5 == 0; }

// Quick: about 1.5 s per model; full: ten times the programs.
unsigned case_count(const MxuParams& p) {
  const unsigned pes = p.rows * p.cols;
  const unsigned quick = pes >= 256 ? 24 : pes >= 64 ? 50 : 100;
  return full_run() ? quick * 10 : quick;
}

std::string reproduce_hint(const MxuParams& p, uint64_t seed) {
  return fmt::format(
      "reproduce: VTPU_COSIM_SEED={} VTPU_COSIM_MODEL={} build/tests/vtpu_rtl_cosim_test "
      "--gtest_filter=MxuCosim.Reproduce",
      seed, p.name);
}

void run_seed(const MxuParams& p, uint64_t seed) {
  auto mxu = make_mxu(p.name);
  const Program prog = random_program(p, seed, long_seed(seed));
  const RunResult r = run(*mxu, prog);
  ASSERT_TRUE(r.ok) << r.message << reproduce_hint(p, seed);
}

class MxuRandom : public ::testing::TestWithParam<MxuParams> {};

TEST_P(MxuRandom, Programs) {
  const MxuParams& p = GetParam();
  const unsigned n = case_count(p);
  size_t events = 0;
  uint64_t cycles = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t seed = 1; seed <= n; ++seed) {
    auto mxu = make_mxu(p.name);
    const Program prog = random_program(p, seed, long_seed(seed));
    const RunResult r = run(*mxu, prog);
    ASSERT_TRUE(r.ok) << r.message << reproduce_hint(p, seed);
    events += r.events;
    cycles += r.cycles;
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s: %u programs, %zu events checked, %llu cycles simulated in %.2f s\n", p.name.c_str(), n, events,
              static_cast<unsigned long long>(cycles), s);
}

INSTANTIATE_TEST_SUITE_P(Cosim, MxuRandom, ::testing::ValuesIn(mxu_models()),
                         [](const auto& info) { return info.param.name; });

// Reruns one seed (VTPU_COSIM_SEED) on one model (VTPU_COSIM_MODEL) or on all of them.
TEST(MxuCosim, Reproduce) {
  const char* seed = env("VTPU_COSIM_SEED");
  if (!seed) GTEST_SKIP() << "set VTPU_COSIM_SEED (and VTPU_COSIM_MODEL) to rerun one program";
  const char* model = env("VTPU_COSIM_MODEL");
  bool any = false;
  for (const MxuParams& p : mxu_models()) {
    if (model && p.name != model) continue;
    any = true;
    const uint64_t s = std::strtoull(seed, nullptr, 0);
    if (const char* v = env("VTPU_COSIM_VERBOSE"); v && std::string(v) != "0")
      std::printf("%s seed %llu:\n%s", p.name.c_str(), static_cast<unsigned long long>(s),
                  describe(random_program(p, s, long_seed(s)), p).c_str());
    run_seed(p, s);
  }
  EXPECT_TRUE(any) << "no model named " << model;
}

// The models named after a preset have its parameters (rtl/CMakeLists.txt lists them).
TEST(MxuModels, MatchPresets) {
  unsigned checked = 0;
  for (const MxuParams& p : mxu_models()) {
    if (p.preset.empty()) continue;
    const config::Config c = config::load_preset(p.preset);
    const auto& m = c.core.mxu;
    EXPECT_EQ(p.rows, m.rows) << p.name;
    EXPECT_EQ(p.cols, m.cols) << p.name;
    EXPECT_EQ(p.in_lat, m.input_latency_cycles) << p.name;
    EXPECT_EQ(p.out_lat, m.output_latency_cycles) << p.name;
    EXPECT_EQ(p.shift, m.weight_shift_cycles) << p.name;
    EXPECT_EQ(p.acc_rows, c.core.accumulators.rows) << p.name;
    EXPECT_EQ(p.bf16, config::supports(c, config::DType::kBf16)) << p.name;
    ++checked;
  }
  EXPECT_GE(checked, 3u);
}

}  // namespace
}  // namespace vtpu::rtl
