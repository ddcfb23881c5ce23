// `vtpu collective` as a user runs it: the figures it prints, its report and timeline, and
// the exit codes of bad input (docs/runtime.md, "Collectives across chips").
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_util.h"

namespace {

TEST(CollectiveCli, AllReducePrintsTimeBusBandwidthAndTheModel) {
  fs::path report = tmp("coll_report.json"), trace = tmp("coll_trace.json"), asm_dir = tmp("coll_asm");
  CliResult r = vtpu("collective all-reduce --bytes 256KiB -c tpu-v4-2x2x2 --report " + report.string() + " --trace " +
                     trace.string() + " --emit-asm " + asm_dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"all-reduce of 256KiB (fp32) on tpu-v4-2x2x2: 8 chips in a 2x2x2 torus", "alpha-beta model",
                           "time / model = ", "bus bandwidth", "2 (N - 1) / N x S / t", "link energy",
                           "reduce-scatter over dimension 2", "every chip's output equals the all-reduce of the inputs",
                           "chip 7 (1,1,1)"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << "\n" << r.out;
  auto j = nlohmann::json::parse(std::ifstream(report));
  EXPECT_EQ(j["kind"], "system");
  EXPECT_EQ(j["collective"]["bytes"].get<uint64_t>(), 256u << 10);
  EXPECT_TRUE(j["collective"]["checked"].get<bool>());
  double t = j["collective"]["seconds"], model = j["collective"]["model_seconds"];
  EXPECT_GE(t, j["collective"]["model_bandwidth_seconds"].get<double>());
  EXPECT_LT(t, 2 * model);
  EXPECT_EQ(j["chips"].size(), 8u);
  auto tr = nlohmann::json::parse(std::ifstream(trace));
  EXPECT_GT(tr["traceEvents"].size(), 8u);
  EXPECT_TRUE(fs::exists(asm_dir / "chip7.s"));
  fs::remove(report), fs::remove(trace), fs::remove_all(asm_dir);
}

TEST(CollectiveCli, LargePodsAreEstimatedBySymmetry) {
  CliResult r = vtpu("collective all-gather --bytes 16MiB -c tpu-v4-16x16x16");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("by symmetry: chip 0 stands for all 4096"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outputs: not checked (estimated by symmetry"), std::string::npos) << r.out;
}

TEST(CollectiveCli, BadInputSaysWhatAndExitsOne) {
  struct Case { const char* args; const char* says; };
  for (Case c : {Case{"collective all-reduce --bytes 100 -c tpu-v4-2x2x2", "whole units of 512 bytes"},
                 Case{"collective all-reduce --bytes 1MiB -c tpu-v4-core", "has one chip"},
                 Case{"collective all-reduce --bytes 12MB -c tpu-v4-2x2x2", "--bytes '12MB'"},
                 Case{"collective all-to-all --bytes 1MiB -c tpu-v4-2x2x2 --estimate symmetry --check", "--check needs"}}) {
    CliResult r = vtpu(c.args);
    EXPECT_EQ(r.code, 1) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << "\n" << r.err;
  }
  CliResult k = vtpu("collective all-sum --bytes 1MiB");
  EXPECT_EQ(k.code, 2) << k.err;
  CliResult d = vtpu("collective all-reduce --bytes 1MiB --dtype int8");
  EXPECT_EQ(d.code, 2) << d.err;
}

TEST(CollectiveCli, SimOnAMultiChipConfigSaysHowToRunIt) {
  fs::path prog = tmp("coll_halt.vtpu"), src = tmp("coll_halt.s");
  std::ofstream(src) << "  halt\n";
  ASSERT_EQ(vtpu("asm " + src.string() + " -o " + prog.string()).code, 0);
  CliResult r = vtpu("sim " + prog.string() + " -c tpu-v4-4x4x4");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("describes a system of 64 chips"), std::string::npos) << r.err;
  fs::remove(prog), fs::remove(src);
}

}  // namespace
