// The vtpu command line, run as a user would: outputs, messages and exit codes.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

#include "vtpu/isa/assembler.h"

namespace {

namespace fs = std::filesystem;
const fs::path kRoot = VTPU_SOURCE_DIR;

struct CliResult {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

CliResult vtpu(const std::string& args) {
  fs::path err_file = fs::temp_directory_path() / ("vtpu_cli_err_" + std::to_string(::getpid()));
  std::string cmd = std::string(VTPU_BIN) + " " + args + " 2>" + err_file.string();
  CliResult r{};
  FILE* p = ::popen(cmd.c_str(), "r");
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  std::ifstream e(err_file);
  r.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err_file);
  return r;
}

fs::path tmp(const std::string& name) { return fs::temp_directory_path() / name; }

TEST(Cli, AssembleDisassembleExample) {
  fs::path out = tmp("cli_matmul.vtpu");
  CliResult a = vtpu("asm " + (kRoot / "examples/matmul_tiled.s").string() + " -o " + out.string());
  ASSERT_EQ(a.code, 0) << a.err;
  EXPECT_NE(a.err.find("tiny-8x8"), std::string::npos) << a.err;
  CliResult d = vtpu("disasm " + out.string());
  ASSERT_EQ(d.code, 0) << d.err;
  EXPECT_NE(d.out.find("mxu.matmul mxu=0 src=r0+128 dst=r0+16 rows=16 dtype=int8 acc=1 swap=1 flag=f2"),
            std::string::npos)
      << d.out;
  // The listing assembles back to the same binary, config binding included.
  vtpu::isa::Program orig = vtpu::isa::read_program(out);
  EXPECT_NE(orig.config_fingerprint, 0u);
  EXPECT_EQ(vtpu::isa::assemble(d.out, "listing.s"), orig);
  fs::remove(out);
}

TEST(Cli, AssemblyErrorsExitOneWithLocation) {
  CliResult r = vtpu("asm " + (kRoot / "isa/tests/bad/rows_zero.s").string() + " -o " + tmp("x.vtpu").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("rows_zero.s:2:61: error:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out of range [1, 65535]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp("x.vtpu")));
}

TEST(Cli, MissingInputIsAUserError) {
  CliResult r = vtpu("asm /nonexistent/prog.s");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/prog.s: cannot open"), std::string::npos) << r.err;
}

TEST(Cli, DisasmRejectsGarbage) {
  fs::path junk = tmp("cli_junk.vtpu");
  std::ofstream(junk) << "this is not a program";
  CliResult r = vtpu("disasm " + junk.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("bad magic"), std::string::npos) << r.err;
  fs::remove(junk);
}

TEST(Cli, ConfigCheckPrintsResolvedPreset) {
  CliResult r = vtpu("config check tpu-v1");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("tpu-v1"), std::string::npos);
  EXPECT_NE(r.out.find("fingerprint 0x"), std::string::npos);
  EXPECT_NE(r.out.find("256"), std::string::npos);  // the 256x256 array
}

TEST(Cli, ConfigCheckUnknownPresetListsPresets) {
  CliResult r = vtpu("config check tpu-v99");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("tpu-v99"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tpu-v4-core"), std::string::npos) << r.err;
}

TEST(Cli, ConfigCheckBadFileExitsOne) {
  fs::path bad = tmp("cli_bad.yaml");
  std::ofstream(bad) << "name: x\nclock_mhz: -5\n";
  CliResult r = vtpu("config check " + bad.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cli_bad.yaml:2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("clock_mhz"), std::string::npos) << r.err;
  fs::remove(bad);
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(vtpu("").code, 2);
  EXPECT_EQ(vtpu("frobnicate").code, 2);
  EXPECT_EQ(vtpu("asm").code, 2);
  CliResult v = vtpu("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("vtpu "), std::string::npos);
}

}  // namespace
