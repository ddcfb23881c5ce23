// Compiled programs in RTL (docs/rtl.md, "Compiled programs"): the compiler's output for the
// trained LeNet-5 and small conv, attention and LSTM models runs on the Verilated core and on
// the SystemC model; every output byte, the total cycles and every unit event must agree.
//
//   default                 each model in int8 and bf16 on tiny-16x16 and on the two-MXU
//                           tiny-8x8-2mxu (CI)
//   VTPU_COSIM_FULL=1       also on tiny-4x4 and tiny-8x8, with three input seeds each
//   VTPU_COSIM_VERBOSE=1    print both sides' event lists
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "compiled_programs.h"
#include "core_harness.h"
#include "cosim_env.h"
#include "vtpu/config/config.h"

int sc_main(int, char**) { return 0; }

namespace vtpu::rtl {
namespace {

std::filesystem::path model_dir() {
  auto d = std::filesystem::temp_directory_path() / "vtpu-compiled-cosim";
  std::filesystem::create_directories(d);
  return d;
}

// The core model built for a preset.
const CoreModelParams& model_for(const std::string& preset) {
  for (const auto& p : core_models())
    if (p.preset == preset) return core_model(p.name);
  throw std::invalid_argument("no RTL core model for " + preset);
}

// Compiles and cross-checks one case; empty if both sides agree, else the report.
std::string check(const std::string& model, const std::string& preset, const std::string& dtype, uint64_t seed,
                  uint64_t* cycles = nullptr) {
  const CoreModelParams& p = model_for(preset);
  const config::Config cfg = config::load_preset(preset);
  CompiledProgram c = compile_for_rtl(model, preset, dtype, model_dir(), seed);
  const std::string what = fmt::format("compiled {} on {} in {} (input seed {})", model, preset, dtype, seed);
  const CoreRunResult sim = run_sim(cfg, c.program, c.inputs);
  if (!sim.ok) return fmt::format("{}: {}", what, sim.error);
  const CoreRunResult rtl = run_rtl(p.name, cfg, c.program, c.inputs, sim.total_cycles * 2 + 1000);
  if (!rtl.ok) return fmt::format("{}: {}", what, rtl.error);
  if (env("VTPU_COSIM_VERBOSE"))
    for (const auto* r : {&sim, &rtl}) {
      std::printf("%s: total %llu\n", r == &sim ? "SystemC" : "RTL", static_cast<unsigned long long>(r->total_cycles));
      for (const auto& e : r->events)
        std::printf("  %s bundle %u [%llu, %llu)\n", e.unit.c_str(), e.bundle, static_cast<unsigned long long>(e.begin),
                    static_cast<unsigned long long>(e.end));
    }
  if (cycles) *cycles = sim.total_cycles;
  std::string diff = compare_runs(sim, rtl, c.program);
  if (diff.empty()) {
    std::printf("%s: %llu cycles, %zu unit events, %zu output bytes agree (SystemC %.2f s, RTL %.2f s)\n", what.c_str(),
                static_cast<unsigned long long>(sim.total_cycles), sim.events.size(),
                [&] {
                  size_t n = 0;
                  for (const auto& [name, v] : sim.outputs) n += v.size();
                  return n;
                }(),
                sim.seconds, rtl.seconds);
    return {};
  }
  return fmt::format("core cross-check mismatch: model {} (config {}), {}\n{}\nprogram:\n{}", p.name, preset, what, diff,
                     c.assembly);
}

struct Case {
  std::string model, dtype;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " " << c.dtype; }

std::vector<Case> quick_cases() {
  std::vector<Case> v;
  for (const auto& m : compiled_model_names())
    for (const char* dt : {"int8", "bf16"}) v.push_back({m, dt});
  return v;
}

class CompiledCosim : public ::testing::TestWithParam<Case> {};

TEST_P(CompiledCosim, Tiny16x16) {
  EXPECT_EQ(check(GetParam().model, "tiny-16x16", GetParam().dtype, 1), "");
}

// Two MXUs sharing the DMA engine and the unified buffer: the compiler spreads each layer's
// blocks over both.
TEST_P(CompiledCosim, Tiny8x8TwoMxus) {
  EXPECT_EQ(check(GetParam().model, "tiny-8x8-2mxu", GetParam().dtype, 1), "");
}

INSTANTIATE_TEST_SUITE_P(Compiled, CompiledCosim, ::testing::ValuesIn(quick_cases()), [](const auto& info) {
  std::string n = info.param.model + "_" + info.param.dtype;
  for (char& ch : n)
    if (ch == '-') ch = '_';
  return n;
});

// The full set: every model on every tiny preset, three input seeds (and calibrations) each.
TEST(CompiledFull, EveryTinyPreset) {
  if (!full_run()) GTEST_SKIP() << "set VTPU_COSIM_FULL=1 for every model on every tiny preset";
  unsigned n = 0;
  for (const char* preset : {"tiny-4x4", "tiny-8x8", "tiny-16x16", "tiny-8x8-2mxu"})
    for (const auto& m : compiled_model_names())
      for (const char* dt : {"int8", "bf16"})
        for (uint64_t seed = 1; seed <= 3; ++seed, ++n) EXPECT_EQ(check(m, preset, dt, seed), "");
  std::printf("%u compiled programs cross-checked\n", n);
}

}  // namespace
}  // namespace vtpu::rtl
