// `vtpu sweep` as a user runs it: exit codes, messages, the progress bar only on a terminal,
// exports, merging shards, the Slurm script.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cli_util.h"

namespace {

fs::path dir(const std::string& name) {
  fs::path d = scratch("sweep-" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

fs::path write(const fs::path& p, const std::string& text) {
  std::ofstream(p) << text;
  return p;
}

constexpr const char* kSweep = "name: cli\nbase: tiny-16x16\nmodels: [lenet5]\ndtypes: [int8, bf16]\naxes:\n"
                               "  - key: memory.bandwidth_gbytes_per_s\n    values: [16, 64]\n"
                               "  - key: core.unified_buffer.bytes\n    values: [2KiB, 256KiB]\n";

TEST(SweepCli, RunsExportsAndResumes) {
  fs::path d = dir("run");
  fs::path f = write(d / "cli.yaml", kSweep), db = d / "r.sqlite";
  CliResult r = vtpu("sweep " + f.string() + " -j 2 --db " + db.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("8 points, 0 recorded before, 8 run now: 4 ok, 4 do not fit, 0 other"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no progress bar when stderr is not a terminal:\n" << r.err;
  CliResult again = vtpu("sweep " + f.string() + " -j 2 --db " + db.string());
  EXPECT_NE(again.out.find("8 recorded before, 0 run now"), std::string::npos) << again.out;
  CliResult e = vtpu("sweep export " + f.string() + " --db " + db.string() + " --csv " + (d / "out.csv").string());
  ASSERT_EQ(e.code, 0) << e.err;
  std::string csv = read_file(d / "out.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 9);  // header + 8 points
  EXPECT_NE(csv.find("does_not_fit"), std::string::npos);
  EXPECT_NE(csv.find("core.unified_buffer.bytes"), std::string::npos);
  CliResult j = vtpu("sweep export " + db.string() + " --jsonl " + (d / "out.jsonl").string());
  ASSERT_EQ(j.code, 0) << j.err;
  std::string jsonl = read_file(d / "out.jsonl");
  EXPECT_EQ(std::count(jsonl.begin(), jsonl.end(), '\n'), 8);
  // A full disk is an error naming the file, not "wrote 8 rows".
  for (const std::string& cmd : {"sweep export " + db.string() + " --csv /dev/full", "sweep plot " + db.string() + " -o /dev/full"}) {
    CliResult full = vtpu(cmd);
    EXPECT_NE(full.code, 0) << cmd << "\n" << full.err;
    EXPECT_NE(full.err.find("/dev/full: write failed"), std::string::npos) << cmd << "\n" << full.err;
  }
}

TEST(SweepCli, ShowsProgressWithAnEtaOnATerminal) {
  fs::path d = dir("tty");
  fs::path f = write(d / "cli.yaml", kSweep);
  // script(1) gives the command a pseudo-terminal, as an interactive shell would.
  std::string cmd = "script -qec '" + std::string(VTPU_BIN) + " sweep " + f.string() + " -j 2 --db " +
                    (d / "r.sqlite").string() + "' /dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  ASSERT_EQ(pclose(p), 0) << out;
  EXPECT_NE(out.find("\r"), std::string::npos) << out;
  EXPECT_NE(out.find("8/8"), std::string::npos) << out;
  EXPECT_NE(out.find("pts/s"), std::string::npos) << out;
}

TEST(SweepCli, BadInputAndBadCommandLinesGiveTheirExitCodes) {
  fs::path d = dir("bad");
  fs::path bad = write(d / "bad.yaml", "base: tiny-16x16\nmodels: [lenet5]\naxes:\n  - key: core.mxu.rowz\n    values: [8]\n");
  CliResult r = vtpu("sweep " + bad.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find(bad.string() + ":4:10: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("did you mean 'core.mxu.rows'?"), std::string::npos) << r.err;
  EXPECT_EQ(vtpu("sweep").code, 2);
  fs::path f = write(d / "cli.yaml", kSweep);
  CliResult shard = vtpu("sweep " + f.string() + " --shard 4/4");
  EXPECT_EQ(shard.code, 2);
  EXPECT_NE(shard.err.find("--shard '4/4'"), std::string::npos) << shard.err;
  EXPECT_EQ(vtpu("sweep export " + f.string()).code, 2);  // neither --csv nor --jsonl
  EXPECT_EQ(vtpu("sweep " + f.string() + " --jobs x").code, 2);
  CliResult nodb = vtpu("sweep export " + (d / "none.sqlite").string() + " --csv " + (d / "x.csv").string());
  EXPECT_EQ(nodb.code, 1);
  EXPECT_NE(nodb.err.find("none.sqlite"), std::string::npos) << nodb.err;
}

TEST(SweepCli, ShardsMergeAndTheSlurmScriptRunsThem) {
  fs::path d = dir("shards");
  fs::path f = write(d / "cli.yaml", kSweep);
  std::string shards;
  for (int i = 0; i < 3; ++i) {
    fs::path db = d / ("s" + std::to_string(i) + ".sqlite");
    CliResult r = vtpu("sweep " + f.string() + " -q -j 1 --shard " + std::to_string(i) + "/3 --db " + db.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, "");  // -q
    shards += " " + db.string();
  }
  CliResult m = vtpu("sweep merge " + (d / "all.sqlite").string() + shards);
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find("3 shards into"), std::string::npos) << m.out;
  EXPECT_NE(m.out.find("8 points added, 0 already there; 8 points in all"), std::string::npos) << m.out;

  CliResult s = vtpu("sweep " + f.string() + " --emit-slurm " + (d / "slurm").string() + " --tasks 3 --cpus-per-task 2");
  ASSERT_EQ(s.code, 0) << s.err;
  std::string script = read_file(d / "slurm/sweep.sbatch");
  EXPECT_NE(script.find("#SBATCH --array=0-2"), std::string::npos) << script;
  EXPECT_NE(script.find("#SBATCH --cpus-per-task=2"), std::string::npos) << script;
  EXPECT_NE(script.find("--shard \"$task/3\""), std::string::npos) << script;
  EXPECT_EQ(std::system(("bash -n " + (d / "slurm/sweep.sbatch").string()).c_str()), 0);
  EXPECT_EQ(std::system(("bash -n " + (d / "slurm/merge.sh").string()).c_str()), 0);
}

}  // namespace
