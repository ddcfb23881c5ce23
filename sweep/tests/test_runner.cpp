// Running sweeps end to end on small models: every point recorded once with the right status,
// resuming after a kill, sharding and merging, the caches, and a point's figures against a
// plain `vtpu run` of the same config.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "vtpu/compiler/compiler.h"
#include "vtpu/models/zoo.h"
#include "vtpu/runtime/runtime.h"
#include "vtpu/support/child_process.h"
#include "vtpu/sweep/database.h"
#include "vtpu/sweep/points.h"
#include "vtpu/sweep/runner.h"

namespace vtpu::sweep {
namespace {
namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("vtpu-sweep-run-test-" + std::to_string(getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

RunOptions options(const fs::path& dir, const std::string& db = "results.sqlite") {
  RunOptions o;
  o.jobs = 2;
  o.db = dir / db;
  o.cache_dir = dir / "cache";
  return o;
}

// lenet5 on tiny-16x16: 2 dtypes x 3 buffers (2 KiB does not fit, even in row bands) x 2 bandwidths, plus
// accumulator rows that are invalid with the array (8 rows per bank < 16 rows of a tile).
constexpr const char* kSweep = R"(name: small
base: tiny-16x16
models: [lenet5]
dtypes: [int8, bf16]
axes:
  - key: core.unified_buffer.bytes
    values: [2KiB, 64KiB, 256KiB]
  - key: memory.bandwidth_gbytes_per_s
    values: [16, 64]
  - key: core.accumulators.rows
    values: [16, 1024]
)";

std::map<std::string, PointResult> by_key(const fs::path& db) {
  std::map<std::string, PointResult> m;
  for (PointResult& r : Database(db, true).all()) m[r.key] = std::move(r);
  return m;
}

TEST(SweepRun, RecordsEveryPointOnceWithItsStatusAndResumes) {
  fs::path dir = scratch("once");
  SweepSpec s = parse_sweep(kSweep, "small.yaml", ".");
  RunSummary a = run_sweep(s, options(dir));
  EXPECT_EQ(a.points, 24u);
  EXPECT_EQ(a.ran, 24u);
  auto rows = by_key(dir / "results.sqlite");
  ASSERT_EQ(rows.size(), 24u);
  std::map<std::string, int> status;
  for (const auto& [k, r] : rows) {
    ++status[r.status];
    if (r.status == "ok") {
      EXPECT_GT(r.cycles, 0u);
    }
  }
  EXPECT_EQ(status["invalid"], 12);      // 16 accumulator rows
  EXPECT_EQ(status["does_not_fit"], 4);  // 2 KiB of unified buffer, both dtypes and bandwidths
  EXPECT_EQ(status["ok"], 8);
  // INT8 calibration ran once for all int8 programs; one compile per compiler fingerprint.
  EXPECT_EQ(a.calibrations, 1u);
  std::set<uint64_t> fingerprints;
  for (const Point& p : initial_points(s)) {
    try {
      fingerprints.insert(compiler::config_fingerprint(apply_sets(s.base_yaml, point_sets(s, p), "p")) * 2 + p.dtype);
    } catch (const config::ConfigError&) {
    }
  }
  EXPECT_EQ(a.compiles, fingerprints.size());
  // Again: nothing runs, nothing compiles.
  RunSummary b = run_sweep(s, options(dir));
  EXPECT_EQ(b.ran, 0u);
  EXPECT_EQ(b.already_done, 24u);
  EXPECT_EQ(b.compiles, 0u);
}

TEST(SweepRun, KeysOnlyWhatTheCompilerReadsIntoPrograms) {
  // Static power and DRAM energy change no program: one compile serves the whole sweep, and
  // the cached program gives what a fresh compile would.
  fs::path dir = scratch("cache");
  SweepSpec s = parse_sweep("base: tiny-16x16\nmodels: [lenet5]\naxes:\n  - key: energy.static_power_w\n    values: [0, 1, 2]\n"
                            "  - key: energy.dram_pj_per_bit\n    values: [4, 8]\n",
                            "energy.yaml", ".");
  RunSummary a = run_sweep(s, options(dir));
  EXPECT_EQ(a.ran, 6u);
  EXPECT_EQ(a.compiles, 1u);
  std::set<uint64_t> cycles;
  std::set<double> energy;
  for (const auto& [k, r] : by_key(dir / "results.sqlite")) cycles.insert(r.cycles), energy.insert(r.energy_per_inference_j);
  EXPECT_EQ(cycles.size(), 1u);
  EXPECT_EQ(energy.size(), 6u);
}

TEST(SweepRun, AKilledSweepContinuesWhereItStoppedAndRunsNoPointTwice) {
  fs::path dir = scratch("killed");
  SweepSpec s = parse_sweep(kSweep, "small.yaml", ".");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    RunOptions o = options(dir);
    o.progress = [](const Progress& p) {
      if (p.done >= 15) kill(getpid(), SIGKILL);  // as a user's kill -9 would
    };
    run_sweep(s, o);
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFSIGNALED(st));
  size_t before = Database(dir / "results.sqlite", true).count();
  EXPECT_GE(before, 15u);
  EXPECT_LT(before, 24u);
  RunSummary b = run_sweep(s, options(dir));
  EXPECT_EQ(b.already_done, before);
  EXPECT_EQ(b.ran, 24u - before);
  EXPECT_EQ(Database(dir / "results.sqlite", true).count(), 24u);
}

TEST(SweepRun, ShardsMergeIntoTheWholeSweep) {
  fs::path dir = scratch("shards");
  SweepSpec s = parse_sweep(kSweep, "small.yaml", ".");
  run_sweep(s, options(dir, "whole.sqlite"));
  Database merged(dir / "merged.sqlite");
  size_t ran = 0;
  for (uint32_t i = 0; i < 3; ++i) {
    RunOptions o = options(dir, "shard" + std::to_string(i) + ".sqlite");
    o.shard = Shard{i, 3};
    ran += run_sweep(s, o).ran;
    merged.merge_from(o.db);
  }
  EXPECT_EQ(ran, 24u);
  auto whole = by_key(dir / "whole.sqlite"), parts = by_key(dir / "merged.sqlite");
  ASSERT_EQ(parts.size(), whole.size());
  for (const auto& [k, r] : whole) {
    ASSERT_TRUE(parts.count(k)) << k;
    EXPECT_EQ(parts[k].status, r.status);
    EXPECT_EQ(parts[k].cycles, r.cycles);
  }
  EXPECT_THROW(parse_shard("3/3"), UserError);
  EXPECT_THROW(parse_shard("1"), UserError);
  EXPECT_EQ(parse_shard("2/8").index, 2u);
}

TEST(SweepRun, OneAtATimeAxesMayShareKeysAndEachMovesAlone) {
  fs::path dir = scratch("alone");
  SweepSpec s = parse_sweep("base: tiny-16x16\nmodels: [lenet5]\nsearch: {kind: one_at_a_time}\naxes:\n"
                            "  - {name: clock, key: clock_mhz, scale: [0.5, 1, 2]}\n"
                            "  - {name: clock+, keys: [clock_mhz, core.accumulators.rows], scale: [0.5, 1, 2]}\n",
                            "alone.yaml", ".");
  RunSummary r = run_sweep(s, options(dir));
  EXPECT_EQ(r.points, 5u);  // the base point, then each axis through its two other values
  std::set<std::string> seen;
  for (const auto& [k, row] : by_key(dir / "results.sqlite")) {
    ASSERT_EQ(row.status, "ok") << row.message;
    seen.insert(fmt::format("{}@{}", row.params, row.clock_mhz));
  }
  EXPECT_EQ(seen, (std::set<std::string>{R"({"clock":"1x","clock+":"1x"}@1000)", R"({"clock":"0.5x","clock+":"1x"}@500)",
                                         R"({"clock":"2x","clock+":"1x"}@2000)", R"({"clock":"1x","clock+":"0.5x"}@500)",
                                         R"({"clock":"1x","clock+":"2x"}@2000)"}));
}

TEST(SweepRun, DoesNotFitSaysWhichBufferAndByHowMuch) {
  fs::path dir = scratch("dnf");
  SweepSpec s = parse_sweep("base: tiny-16x16\nmodels: [lenet5]\naxes:\n  - key: core.unified_buffer.bytes\n    values: [2KiB]\n",
                            "dnf.yaml", ".");
  run_sweep(s, options(dir));
  PointResult r = by_key(dir / "results.sqlite").begin()->second;
  ASSERT_EQ(r.status, "does_not_fit");
  EXPECT_EQ(r.dnf_buffer, "core.unified_buffer.bytes");
  // The same figures as the compiler's message states them.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.message, m, std::regex(R"(needs (\d+) bytes of the unified buffer)"))) << r.message;
  EXPECT_EQ(std::stoull(m[1]), r.dnf_needed);
  ASSERT_TRUE(std::regex_search(r.message, m, std::regex(R"(at least (\d+) bytes too small)"))) << r.message;
  EXPECT_EQ(std::stoull(m[1]), r.dnf_short);
  EXPECT_EQ(r.dnf_needed - r.dnf_available, r.dnf_short);
  EXPECT_EQ(r.batch, 1);  // the model's own batch, known without compiling
}

TEST(SweepRun, APointGivesWhatAPlainRunOfItsConfigGives) {
  // The sweep (programs compiled several to a worker from one lowering, cached, restamped,
  // read without their constant bytes, timing-only simulation) against runtime::run_model
  // (fresh compile, full simulation) on the same config.
  fs::path dir = scratch("plain");
  SweepSpec s = parse_sweep("base: tiny-16x16\nmodels: [lenet5]\ndtypes: [int8, bf16]\naxes:\n"
                            "  - key: memory.bandwidth_gbytes_per_s\n    values: [16, 24, 48, 96]\n",
                            "plain.yaml", ".");
  run_sweep(s, options(dir));
  for (const Point& p : initial_points(s)) {
    config::Config c = apply_sets(s.base_yaml, point_sets(s, p), "p");
    std::string key_cycles = run_in_child(
        [&] {
          runtime::RunOptions o;
          o.precision = s.dtypes[p.dtype] == "int8" ? compiler::Precision::Int8 : compiler::Precision::Bf16;
          auto run = runtime::run_model(models::materialize("lenet5", models::default_dir()), c, o);
          return std::to_string(run.sim.stats.total_cycles) + " " +
                 std::to_string(run.sim.stats.total.energy_total_pj()) + " " + std::to_string(run.sim.stats.total.macs());
        },
        [](const std::exception& e) { return std::string(e.what()); }, "crashed");
    std::istringstream plain(key_cycles);
    uint64_t cycles = 0, macs = 0;
    double pj = 0;
    ASSERT_TRUE(plain >> cycles >> pj >> macs) << key_cycles;
    bool found = false;
    for (const auto& [k, r] : by_key(dir / "results.sqlite")) {
      if (r.index != int64_t(p.index)) continue;
      found = true;
      EXPECT_EQ(r.cycles, cycles);
      EXPECT_EQ(r.macs, macs);
      EXPECT_NEAR(r.energy_per_inference_j * 1e12, pj, pj * 1e-9);  // lenet5's batch is 1
    }
    EXPECT_TRUE(found);
  }
}

}  // namespace
}  // namespace vtpu::sweep
