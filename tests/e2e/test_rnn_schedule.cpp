// The two LSTM schedules (CompileOptions::rnn_schedule, docs/compiler.md): both compute the
// ONNX LSTM (checked against the compiler's fp32 reference), and per-step multiplies each
// step's input by the input weights W in that step, where hoisted does all steps in one
// matmul per gate: per-step streams every gate's W tile once per step, hoisted once per
// sequence. With no initial cell state c0 the forget gate's first step is not needed
// (f * c0 = 0): per-step makes one input product fewer (docs/reports.md, "Useful MACs").
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include <fmt/format.h>

#include "vtpu/config/config.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"

namespace {

using namespace vtpu;

struct Figures {
  uint64_t wfifo = 0, macs = 0;
  double rel = 1;
};

constexpr int64_t B = 4, T = 5, H = 16, I = 16;  // one 16 x 16 tile per gate on tiny-16x16

// One forward LSTM, with the cell state c0 as a graph input or none (zero).
std::filesystem::path save_lstm(bool with_c0) {
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("vtpu-rnn-schedule-{}-{}.onnx", with_c0 ? "c0" : "zero", ::getpid());
  vtpu::testing::OnnxBuilder m(13, 7);
  m.input("x", {T, B, I});
  if (with_c0) m.input("c0", {1, B, H});
  m.init("W", {1, 4 * H, I}, 0.25f);
  m.init("R", {1, 4 * H, H}, 0.25f);
  m.init("B", {1, 8 * H}, 0.05f);
  std::vector<std::string> in = {"x", "W", "R", "B"};
  if (with_c0) in.insert(in.end(), {"", "", "c0"});  // no sequence_lens, no initial_h
  vtpu::testing::OnnxBuilder::attr(m.node("LSTM", "lstm", in, {"y"}), "hidden_size", H);
  m.output("y", {T, 1, B, H});
  m.save_to(path);
  return path;
}

Figures run(const std::filesystem::path& path, const config::Config& cfg, compiler::RnnSchedule s) {
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
}

TEST(RnnSchedule, PerStepReadsTheInputWeightsEveryStepAndComputesTheSameLstm) {
  const config::Config cfg = config::load_preset("tiny-16x16");
  const uint64_t tile = uint64_t(cfg.core.mxu.rows) * cfg.core.mxu.cols * 2;  // one gate's W or R, bf16
  // Useful MACs: T x B x 4H x I input products, (T - 1) x B x 4H x H recurrent ones (the first
  // step's state h0 is the constant zero, so its recurrent product is folded away).
  const uint64_t macs = uint64_t(T * B * 4 * H * I + (T - 1) * B * 4 * H * H), forget0 = uint64_t(B * H * I);
  for (bool with_c0 : {true, false}) {
    SCOPED_TRACE(with_c0 ? "c0 a graph input" : "no c0 (zero)");
    const auto path = save_lstm(with_c0);
    const Figures hoisted = run(path, cfg, compiler::RnnSchedule::Hoisted), per_step = run(path, cfg, compiler::RnnSchedule::PerStep);
    std::filesystem::remove(path);
    // bf16 weights and activations against the fp32 reference (the zoo tests' threshold).
    EXPECT_LT(hoisted.rel, 0.02);
    EXPECT_LT(per_step.rel, 0.02);
    EXPECT_EQ(hoisted.macs, macs);
    // Per-step streams each gate's W at each of the T steps, hoisted once: (T - 1) x 4 tiles
    // more; with c0 = 0 the first step's forget gate (f * c0 = 0) has no input product.
    EXPECT_EQ(per_step.macs, with_c0 ? macs : macs - forget0);
    const uint64_t more = uint64_t((T - 1) * 4) - (with_c0 ? 0 : 1);
    EXPECT_EQ(per_step.wfifo - hoisted.wfifo, more * tile) << "hoisted " << hoisted.wfifo << " bytes, per-step " << per_step.wfifo;
  }
}

}  // namespace
