// `vtpu run --parallel data|pipeline` as a user runs it: the outputs against a plain
// single-chip run of the same batch (separate command, byte for byte), the tables and report
// figures against each other, and bad input (docs/runtime.md, "Models across chips").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <cmath>
#include <cstring>
#include <set>

#include "cli_util.h"
#include "vtpu/config/config.h"
#include "vtpu/models/onnx_builder.h"
#include "vtpu/runtime/npy.h"

namespace {

// tiny-8x8 chips in a ring of `n` (a YAML file of its own), and the chip alone.
// `flags`: core.scalar.sync_flags, when given (a tensor-parallel all-reduce's schedule
// needs more than tiny-8x8's 32).
fs::path ring_of_tiny(uint32_t n, const std::string& chip = "tiny-8x8", uint32_t flags = 0) {
  vtpu::config::Config c = vtpu::config::load_preset(chip);
  c.name = chip + "-ring" + std::to_string(n) + (flags ? "-f" + std::to_string(flags) : "");
  if (flags) c.core.scalar.sync_flags = flags;
  c.system.chips = n;
  c.ici.shape = {n};
  c.ici.links = 2;
  c.ici.wraparound = true;
  fs::path p = scratch("parallel") / (c.name + ".yaml");
  std::ofstream(p) << vtpu::config::to_yaml(c);
  return p;
}

// Every output .npy of `a` equals `b`'s byte for byte, or (tolerance > 0) every value is
// within tolerance x the output's largest |value| (docs/runtime.md: bf16 where the order of a
// reduction changes).
void expect_same_outputs(const fs::path& a, const fs::path& b, double tolerance) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(a)) {
    ++n;
    fs::path other = b / e.path().filename();
    ASSERT_TRUE(fs::exists(other)) << e.path();
    if (tolerance == 0) {
      EXPECT_EQ(read_file(e.path()), read_file(other)) << e.path().filename();
      continue;
    }
    vtpu::runtime::NpyArray x = vtpu::runtime::read_npy(e.path()), y = vtpu::runtime::read_npy(other);
    ASSERT_EQ(x.descr, "<f4");
    ASSERT_EQ(x.shape, y.shape);
    std::vector<float> u(x.data.size() / 4), w(y.data.size() / 4);
    std::memcpy(u.data(), x.data.data(), x.data.size());
    std::memcpy(w.data(), y.data.data(), y.data.size());
    double largest = 0, worst = 0;
    for (size_t i = 0; i < u.size(); ++i)
      largest = std::max(largest, double(std::fabs(u[i]))), worst = std::max(worst, double(std::fabs(u[i] - w[i])));
    EXPECT_LE(worst, tolerance * largest) << e.path().filename() << ": largest |value| " << largest;
  }
  EXPECT_GT(n, 0u);
}

TEST(ParallelCli, DataParallelOutputsEqualTheSingleChipRunOfTheBatch) {
  const std::string ring = ring_of_tiny(4).string();
  struct Case { const char* model; const char* dtype; int batch; std::string chip, system; double tolerance; };
  // lenet5 (images) on 4 tiny chips, int8 batch 6: slices of 2, 2, 1, 1, bit-exact; bf16
  // likewise. gpt2-block (a transformer block over 128 tokens) on a TPU v4 slice of 8: bf16
  // within 2^-7 of the largest |value| (its matmuls tile differently at batch 1 and 8).
  for (const Case& c : {Case{"lenet5", "int8", 6, "tiny-8x8", ring, 0}, Case{"lenet5", "bf16", 4, "tiny-8x8", ring, 0},
                        Case{"gpt2-block", "bf16", 8, "tpu-v4-core", "tpu-v4-2x2x2", 1.0 / 128}}) {
    SCOPED_TRACE(std::string(c.model) + " " + c.dtype);
    fs::path one = scratch(std::string("one_") + c.model + c.dtype), par = scratch(std::string("par_") + c.model + c.dtype);
    std::string common = std::string(c.model) + " --dtype " + c.dtype + " --batch " + std::to_string(c.batch) + " -q";
    CliResult a = vtpu("run " + common + " -c " + c.chip + " --output-dir " + one.string());
    ASSERT_EQ(a.code, 0) << a.err;
    CliResult b = vtpu("run " + common + " -c " + c.system + " --parallel data --no-baseline --output-dir " + par.string());
    ASSERT_EQ(b.code, 0) << b.err;
    expect_same_outputs(one, par, c.tolerance);
  }
}

TEST(ParallelCli, TablesAndReportAgree) {
  fs::path ring = ring_of_tiny(4), dir = scratch("tables");
  CliResult r = vtpu("run lenet5 --dtype int8 --batch 6 -c " + ring.string() + " --parallel data --report " +
                     (dir / "r.json").string() + " --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"data parallel: a batch of 6 over 4 chips", "speed-up", "efficiency", "in collectives",
                           "outputs: every byte equal to the single-chip run's", "one chip", "link"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  auto j = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  EXPECT_EQ(j["kind"], "system");
  const auto& p = j["parallel"];
  EXPECT_EQ(p["kind"], "data");
  EXPECT_EQ(p["batch"], 6);
  // Slices as even as they come, in order: 2, 2, 1, 1.
  std::vector<int> sizes, begins;
  for (const auto& part : p["parts"]) sizes.push_back(part["batch"]), begins.push_back(part["batch_begin"]);
  EXPECT_EQ(sizes, (std::vector<int>{2, 2, 1, 1}));
  EXPECT_EQ(begins, (std::vector<int>{0, 2, 4, 5}));
  EXPECT_TRUE(p["outputs_identical"].get<bool>());
  // The system ends with its slowest chip; the chips with two samples take longer.
  uint64_t slowest = 0;
  std::vector<uint64_t> cycles;
  for (const auto& c : j["chips"]) cycles.push_back(c["cycles"]), slowest = std::max(slowest, cycles.back());
  EXPECT_EQ(j["totals"]["cycles"].get<uint64_t>(), slowest);
  EXPECT_GT(cycles[0], cycles[3]);
  // Speed-up and efficiency from the times they are defined by.
  double t1 = p["baseline"]["seconds"], tn = p["seconds"];
  EXPECT_NEAR(p["speedup"].get<double>(), t1 / tn, 1e-9);
  EXPECT_NEAR(p["efficiency"].get<double>(), t1 / tn / 4, 1e-9);
  EXPECT_GT(t1 / tn, 1.0);
  EXPECT_LT(t1 / tn, 4.0 + 1e-9);  // never better than ideal
  // Inference by batch needs no communication: idle links, no time in collectives.
  EXPECT_EQ(j["totals"]["link_bytes"].get<double>(), 0.0);
  EXPECT_EQ(p["collective_seconds"].get<double>(), 0.0);
  auto trace = nlohmann::json::parse(std::ifstream(dir / "t.json"));
  std::set<int> pids;
  for (const auto& e : trace["traceEvents"]) pids.insert(e["pid"].get<int>());
  EXPECT_GE(pids.size(), 4u);  // a process per chip
}

TEST(ParallelCli, PipelineOutputsEqualTheSingleChipRunOfTheBatch) {
  const std::string tiny = ring_of_tiny(4).string(), v4 = ring_of_tiny(3, "tpu-v4-core").string();
  struct Case { const char* model; const char* dtype; int batch; std::string chip, system, extra; };
  // INT8 in micro-batches: bit-exact (integer accumulation; every stage quantizes with the
  // whole batch's scales). bf16 in one micro-batch: bit-exact too (the same code as the
  // single-chip program, cut between layers).
  for (const Case& c : {Case{"lenet5", "int8", 8, "tiny-8x8", tiny, "--micro-batches 4"},
                        Case{"lenet5", "bf16", 4, "tiny-8x8", tiny, "--micro-batches 1"},
                        Case{"gpt2-block", "int8", 2, "tpu-v4-core", v4, ""}}) {
    SCOPED_TRACE(std::string(c.model) + " " + c.dtype);
    fs::path one = scratch(std::string("pone_") + c.model + c.dtype), par = scratch(std::string("ppar_") + c.model + c.dtype);
    std::string common = std::string(c.model) + " --dtype " + c.dtype + " --batch " + std::to_string(c.batch) + " -q";
    CliResult a = vtpu("run " + common + " -c " + c.chip + " --output-dir " + one.string());
    ASSERT_EQ(a.code, 0) << a.err;
    CliResult b = vtpu("run " + common + " -c " + c.system + " --parallel pipeline --no-baseline " + c.extra +
                       " --output-dir " + par.string());
    ASSERT_EQ(b.code, 0) << b.err;
    expect_same_outputs(one, par, 0);
  }
}

TEST(ParallelCli, PipelineTablesAndReportAgree) {
  fs::path ring = ring_of_tiny(4), dir = scratch("ptables");
  CliResult r = vtpu("run lenet5 --dtype int8 --batch 8 --micro-batches 4 -c " + ring.string() +
                     " --parallel pipeline --report " + (dir / "r.json").string() + " --trace " + (dir / "t.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"pipeline parallel: a batch of 8 over 4 chips", "layers", "est. share",
                           "flows through the stages in 4 micro-batches of 2",
                           "outputs: every byte equal to the single-chip run's", "speed-up"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  auto j = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  const auto& p = j["parallel"];
  EXPECT_EQ(p["kind"], "pipeline");
  EXPECT_EQ(p["micro_batches"], 4);
  EXPECT_TRUE(p["outputs_identical"].get<bool>());
  const auto& parts = p["parts"];
  ASSERT_EQ(parts.size(), 4u);
  // A chain: the first stage receives nothing, the last sends nothing, each sends what the
  // next receives; the estimated shares add up to the whole model.
  EXPECT_EQ(parts[0]["receives"], "");
  EXPECT_EQ(parts[3]["sends"], "");
  EXPECT_EQ(parts[0]["first_layer"], "conv1");
  double share = 0;
  for (size_t c = 0; c < 4; ++c) {
    share += parts[c]["estimated_share"].get<double>();
    EXPECT_EQ(parts[c]["batch"], 8);
    if (c + 1 < 4) EXPECT_EQ(parts[c]["sends"], parts[c + 1]["receives"]) << c;
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  // One send per micro-batch from every stage but the last; what one chip sends, the next
  // receives; each stage ends after the one before it, and the system with the last.
  const auto& chips = j["chips"];
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_EQ(chips[c]["ici"]["sends"].get<int>(), c + 1 < 4 ? 4 : 0) << c;
    if (c + 1 < 4) {
      EXPECT_GT(chips[c]["ici"]["bytes_sent"].get<double>(), 0) << c;
      EXPECT_EQ(chips[c]["ici"]["bytes_sent"], chips[c + 1]["ici"]["bytes_received"]) << c;
      EXPECT_LT(chips[c]["cycles"].get<uint64_t>(), chips[c + 1]["cycles"].get<uint64_t>()) << c;
    }
  }
  EXPECT_EQ(j["totals"]["cycles"], chips[3]["cycles"]);
  EXPECT_GT(p["collective_seconds"].get<double>(), 0.0);
  // The timeline: a process per chip, the stages' sends, and each link of the chain.
  auto trace = nlohmann::json::parse(std::ifstream(dir / "t.json"));
  std::set<int> pids;
  std::set<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    pids.insert(e["pid"].get<int>());
    if (e.contains("name") && e["name"].is_string()) names.insert(e["name"].get<std::string>());
  }
  EXPECT_GE(pids.size(), 4u);
  for (const char* want : {"ici.send", "wait_ici", "chip 0 -> chip 1", "chip 1 -> chip 2", "chip 2 -> chip 3"})
    EXPECT_TRUE(names.count(want)) << want;
}

TEST(ParallelCli, TensorOutputsEqualTheSingleChipRunOfTheBatch) {
  const std::string tiny = ring_of_tiny(4, "tiny-8x8", 63).string(), v4 = ring_of_tiny(2, "tpu-v4-core").string(),
                    v4x5 = ring_of_tiny(5, "tpu-v4-core").string();
  struct Case { const char* model; const char* dtype; int batch; std::string chip, system; double tolerance; };
  // INT8: bit-exact (int32 partial sums add up exactly; the row shares quantized with their
  // whole columns' scales). bf16: fp32 partial sums added in another order. BERT's 12 heads
  // over 5 chips: 2 or 3 a chip; GPT-2's MLP: a chain of elementwise ops and per-channel
  // steps between its matmuls.
  for (const Case& c : {Case{"lenet5", "int8", 4, "tiny-8x8", tiny, 0}, Case{"lenet5", "bf16", 4, "tiny-8x8", tiny, 0.01},
                        Case{"mlp1", "int8", 8, "tpu-v4-core", v4, 0}, Case{"mlp1", "bf16", 8, "tpu-v4-core", v4, 0.01},
                        Case{"bert-base-layer", "int8", 2, "tpu-v4-core", v4x5, 0},
                        Case{"gpt2-block", "bf16", 1, "tpu-v4-core", v4, 0.01}}) {
    SCOPED_TRACE(std::string(c.model) + " " + c.dtype);
    fs::path one = scratch(std::string("tone_") + c.model + c.dtype), par = scratch(std::string("tpar_") + c.model + c.dtype);
    std::string common = std::string(c.model) + " --dtype " + c.dtype + " --batch " + std::to_string(c.batch) + " -q";
    CliResult a = vtpu("run " + common + " -c " + c.chip + " --output-dir " + one.string());
    ASSERT_EQ(a.code, 0) << a.err;
    CliResult b = vtpu("run " + common + " -c " + c.system + " --parallel tensor --no-baseline --output-dir " + par.string());
    ASSERT_EQ(b.code, 0) << b.err;
    expect_same_outputs(one, par, c.tolerance);
  }
}

// Links fast enough (400 GB/s, 6 ns a hop) against tiny MXUs that each row-parallel
// all-reduce goes in chunks overlapped with the next chunk's matmuls (TensorParallel.
// AllReduceOverlapsTheNextChunkWhenComputeOutlastsIt checks the programs): still bit-exact.
TEST(ParallelCli, TensorOverlappedAllReducesKeepTheOutputs) {
  vtpu::testing::OnnxBuilder m;
  m.input("x", {32, 256});
  m.init("w1", {256, 1024}, 0.1f);
  m.init("w2", {1024, 256}, 0.1f);
  m.node("MatMul", "up", {"x", "w1"}, {"h"});
  m.node("Relu", "act", {"h"}, {"r"});
  m.node("MatMul", "down", {"r", "w2"}, {"y"});
  m.output("y", {32, 256});
  fs::path dir = scratch("toverlap"), model = dir / "mlp.onnx";
  m.save_to(model);
  vtpu::config::Config c = vtpu::config::load_preset("tiny-8x8");
  c.name = "tiny-8x8-fast-ring4";
  c.system.chips = 4;
  c.ici.shape = {4};
  c.ici.links = 2;
  c.ici.wraparound = true;
  c.core.scalar.sync_flags = 63;
  c.ici.link_bandwidth_gbytes_per_s = 400;
  c.ici.link_latency_ns = 5;
  c.ici.router_delay_ns = 1;
  fs::path ring = dir / (c.name + ".yaml");
  std::ofstream(ring) << vtpu::config::to_yaml(c);
  for (const char* dtype : {"int8", "bf16"}) {
    SCOPED_TRACE(dtype);
    CliResult r = vtpu("run " + model.string() + " --dtype " + dtype + " -c " + ring.string() + " --parallel tensor -q --report " +
                       (dir / (std::string(dtype) + ".json")).string());
    ASSERT_EQ(r.code, 0) << r.err;
    auto j = nlohmann::json::parse(std::ifstream(dir / (std::string(dtype) + ".json")));
    EXPECT_TRUE(j["parallel"]["chips_agree"].get<bool>());
    if (std::string(dtype) == "int8") EXPECT_TRUE(j["parallel"]["outputs_identical"].get<bool>());
    else EXPECT_LE(j["parallel"]["max_relative_difference"].get<double>(), 0.01);
  }
}

TEST(ParallelCli, TensorTablesAndReportAgree) {
  fs::path ring = ring_of_tiny(4, "tiny-8x8", 63), dir = scratch("ttables");
  CliResult r = vtpu("run lenet5 --dtype int8 --batch 4 -c " + ring.string() + " --parallel tensor --report " +
                     (dir / "r.json").string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"tensor parallel: a batch of 4 over 4 chips", "share", "1/4 of 1 group", "fc1 -> fc2 (120 columns)",
                           "computed whole on every chip:", "fc3: its input comes from fc2, which another group splits",
                           "outputs: every byte equal to the single-chip run's"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  auto j = nlohmann::json::parse(std::ifstream(dir / "r.json"));
  const auto& p = j["parallel"];
  EXPECT_EQ(p["kind"], "tensor");
  EXPECT_TRUE(p["outputs_identical"].get<bool>());
  EXPECT_TRUE(p["chips_agree"].get<bool>());
  ASSERT_EQ(p["splits"].size(), 1u);
  EXPECT_EQ(p["splits"][0]["column_parallel"], "fc1");
  EXPECT_EQ(p["splits"][0]["row_parallel"], "fc2");
  // A ring all-reduce: every chip sends and receives the same bytes, over both directions.
  const auto& chips = j["chips"];
  ASSERT_EQ(chips.size(), 4u);
  for (size_t c = 0; c < 4; ++c) {
    EXPECT_GT(chips[c]["ici"]["bytes_sent"].get<double>(), 0) << c;
    EXPECT_EQ(chips[c]["ici"]["bytes_sent"], chips[0]["ici"]["bytes_sent"]) << c;
    EXPECT_EQ(chips[c]["ici"]["bytes_received"], chips[c]["ici"]["bytes_sent"]) << c;
  }
}

TEST(ParallelCli, BadInputSaysWhy) {
  fs::path ring = ring_of_tiny(4);
  struct Case { std::string args; int code; const char* says; };
  for (const Case& c : std::vector<Case>{
           {"lenet5 -c tiny-8x8 --parallel data", 1, "needs a config of several chips"},
           {"lenet5 -c " + ring.string() + " --parallel data --batch 2", 1, "give --batch 4 or more"},
           {"lenet5 -c " + ring.string() + " --parallel tensor", 1, "raise core.scalar.sync_flags"},
           {"lenet5 -c " + ring.string() + " --parallel tensor --micro-batches 2", 1,
            "--micro-batches is for --parallel pipeline; tensor parallelism"},
           {"lenet5 -c " + ring.string() + " --parallel model", 2, "--parallel"},
           {"lenet5 -c " + ring.string() + " --parallel data --csv x.csv", 2, "--csv"},
           {"lenet5 -c " + ring.string() + " --batch 4", 1, "--parallel"},
           {"lenet5 -c " + ring.string() + " --parallel pipeline --batch 8 --micro-batches 3", 1,
            "does not divide into 3 equal micro-batches"},
           {"lenet5 -c " + ring_of_tiny(8).string() + " --parallel pipeline", 1, "at most 6 pipeline stages"},
           {"lenet5 -c " + ring.string() + " --parallel data --micro-batches 2", 1, "--micro-batches is for --parallel pipeline"},
           {"lenet5 -c " + ring.string() + " --micro-batches 2", 2, "--micro-batches"},
       }) {
    CliResult r = vtpu("run " + c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
  }
}

}  // namespace
