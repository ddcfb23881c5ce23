// The two LSTM schedules (CompileOptions::rnn_schedule, docs/compiler.md): both compute the
// ONNX LSTM (checked against the compiler's fp32 reference), do the same useful MACs, and
// per-step reads the input weights once per time step where hoisted reads them once per
// sequence: (T - 1) x gates more input-weight tiles through the weight FIFO, exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "vtpu/config/config.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"

namespace {

using namespace vtpu;

TEST(RnnSchedule, PerStepReadsTheInputWeightsEveryStepAndComputesTheSameLstm) {
  const int64_t B = 4, T = 5, H = 16, I = 16;  // one 16 x 16 tile per gate on tiny-16x16
  const auto path = std::filesystem::temp_directory_path() / ("vtpu-rnn-schedule-" + std::to_string(::getpid()) + ".onnx");
  {
    vtpu::testing::OnnxBuilder m(13, 7);
    m.input("x", {T, B, I});
    m.init("W", {1, 4 * H, I}, 0.25f);
    m.init("R", {1, 4 * H, H}, 0.25f);
    m.init("B", {1, 8 * H}, 0.05f);
    vtpu::testing::OnnxBuilder::attr(m.node("LSTM", "lstm", {"x", "W", "R", "B"}, {"y"}), "hidden_size", H);
    m.output("y", {T, 1, B, H});
    m.save_to(path);
  }
  const config::Config cfg = config::load_preset("tiny-16x16");
  struct Figures {
    uint64_t wfifo = 0, macs = 0;
    double rel = 1;
  };
  auto run = [&](compiler::RnnSchedule s) {
    std::string got = run_in_child(
        [&] {
          runtime::RunOptions o;
          o.precision = compiler::Precision::Bf16;
          o.rnn_schedule = s;
          o.check = true;
          runtime::ModelRun r = runtime::run_model(path, cfg, o);
          double rel = 0;
          for (const auto& c : r.checks) rel = std::max(rel, c.max_reference > 0 ? c.max_abs_error / c.max_reference : 1.0);
          return std::to_string(r.sim.stats.total.wfifo_bytes) + " " + std::to_string(r.sim.stats.total.macs()) + " " +
                 std::to_string(rel);
        },
        [](const std::exception& e) { return std::string("ERR ") + e.what(); }, "ERR child crashed");
    EXPECT_EQ(got.rfind("ERR", 0), std::string::npos) << got;
    Figures f;
    std::sscanf(got.c_str(), "%lu %lu %lf", &f.wfifo, &f.macs, &f.rel);
    return f;
  };
  const Figures hoisted = run(compiler::RnnSchedule::Hoisted), per_step = run(compiler::RnnSchedule::PerStep);
  std::filesystem::remove(path);
  // bf16 weights and activations against the fp32 reference (the zoo tests' threshold).
  EXPECT_LT(hoisted.rel, 0.02);
  EXPECT_LT(per_step.rel, 0.02);
  // Useful MACs: T x B x 4H x I input products, (T - 1) x B x 4H x H recurrent ones (the first
  // step's state is the constant zero, so its recurrent product is folded away).
  const uint64_t macs = uint64_t(T * B * 4 * H * I + (T - 1) * B * 4 * H * H);
  EXPECT_EQ(hoisted.macs, macs);
  EXPECT_EQ(per_step.macs, macs);
  // Each gate's input weights are one 16 x 16 bf16 tile; per-step streams them at every step.
  const uint64_t tile = uint64_t(cfg.core.mxu.rows) * cfg.core.mxu.cols * 2;
  EXPECT_EQ(per_step.wfifo - hoisted.wfifo, uint64_t((T - 1) * 4) * tile)
      << "hoisted " << hoisted.wfifo << " bytes, per-step " << per_step.wfifo;
}

}  // namespace
