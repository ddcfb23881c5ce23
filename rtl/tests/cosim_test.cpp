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

#include "cosim_env.h"
#include "mxu_harness.h"
#include "vtpu/config/config.h"

namespace vtpu::rtl {
namespace {


// Programs of every fifth seed are long (more tiles, longer streams); the seed alone
// determines the program.
bool long_seed(uint64_t seed) { return seed % 5 == 0; }

// Quick (default): 940 programs over the six models, a few seconds; full: ten times more.
unsigned case_count(const MxuParams& p) {
  const unsigned pes = p.rows * p.cols;
  const unsigned quick = pes >= 256 ? 40 : pes >= 64 ? 100 : 200;
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

// Reruns one seed (VTPU_COSIM_SEED, default 1) on one model (VTPU_COSIM_MODEL) or on all.
TEST(MxuCosim, Reproduce) {
  const char* seed = env("VTPU_COSIM_SEED");
  if (!seed) seed = "1";
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

// The checker itself: a model seen through a distorting port must fail the run, with a
// message that names the seed, the program and the first difference.
class Distort final : public MxuPort {
 public:
  Distort(std::unique_ptr<MxuPort> m, MxuParams p, unsigned flip_write) : m_(std::move(m)), p_(std::move(p)), flip_(flip_write) {}
  const MxuParams& params() const override { return p_; }
  void set_rst_n(bool v) override { m_->set_rst_n(v); }
  void set_mm(bool valid, unsigned rows, unsigned dst, bool acc, bool swap, bool bf16) override {
    m_->set_mm(valid, rows, dst, acc, swap, bf16);
  }
  void set_wl(bool valid) override { m_->set_wl(valid); }
  void set_wf(bool avail, unsigned k, unsigned n) override { m_->set_wf(avail, k, n); }
  void set_ext_write(bool we, unsigned addr, const uint32_t* row) override { m_->set_ext_write(we, addr, row); }
  void set_acc_rd_addr(unsigned addr) override { m_->set_acc_rd_addr(addr); }
  void set_in_data(const uint16_t* lanes) override { m_->set_in_data(lanes); }
  void set_wf_data(const uint16_t* lanes) override { m_->set_wf_data(lanes); }
  void eval() override { m_->eval(); }
  void tick() override { m_->tick(); }
  bool mm_data_free() const override { return m_->mm_data_free(); }
  bool mm_shadow_ready() const override { return m_->mm_shadow_ready(); }
  bool wl_ready() const override { return m_->wl_ready(); }
  bool in_req() const override { return m_->in_req(); }
  unsigned in_req_row() const override { return m_->in_req_row(); }
  bool wf_pop() const override { return m_->wf_pop(); }
  bool wf_rd() const override { return m_->wf_rd(); }
  unsigned wf_row() const override { return m_->wf_row(); }
  bool acc_we() const override { return m_->acc_we(); }
  unsigned acc_waddr() const override { return m_->acc_waddr(); }
  void acc_wdata(uint32_t* row) const override {
    m_->acc_wdata(row);
    if (++writes_ == flip_) row[p_.cols - 1] ^= 1u;  // one bit of one write
  }
  void acc_rd_data(uint32_t* row) const override { m_->acc_rd_data(row); }
  bool done() const override { return m_->done(); }

 private:
  std::unique_ptr<MxuPort> m_;
  MxuParams p_;
  unsigned flip_;
  mutable unsigned writes_ = 0;
};

TEST(MxuHarness, CatchesAOneCycleShift) {
  const MxuParams real = mxu_models().front();
  MxuParams lie = real;
  lie.out_lat += 1;  // the checker expects every write and done one cycle later
  Distort d(make_mxu(real.name), lie, 0);
  const RunResult r = run(d, random_program(real, 3));
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("seed 3"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("first difference"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("mxu.matmul"), std::string::npos) << r.message;
}

TEST(MxuHarness, CatchesOneWrongBit) {
  const MxuParams p = mxu_models().front();
  Distort d(make_mxu(p.name), p, 2);
  const RunResult r = run(d, random_program(p, 7));
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.message.find("first differing value"), std::string::npos) << r.message;
  std::printf("%s\n", r.message.c_str());
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
