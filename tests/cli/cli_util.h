#pragma once
// Running build/bin/vtpu as a user would, for the CLI tests: its exit code, stdout and stderr.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace {  // each test file gets its own copy; the name vtpu() must win over namespace vtpu

namespace fs = std::filesystem;
const fs::path kRoot = VTPU_SOURCE_DIR;

struct CliResult {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

// `args` go through the shell; `env` (e.g. "VTPU_X=1 ") is put before the command.
CliResult vtpu(const std::string& args, const std::string& env = "") {
  fs::path err_file = fs::temp_directory_path() / ("vtpu_cli_err_" + std::to_string(::getpid()));
  std::string cmd = env + std::string(VTPU_BIN) + " " + args + " 2>" + err_file.string();
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

// A scratch file of this test process: its own directory, removed at exit, so two suites
// (release and asan-ubsan, say) running at once never share a file.
struct TestDir {
  pid_t owner = ::getpid();
  fs::path path = fs::temp_directory_path() / ("vtpu-cli-" + std::to_string(owner));
  TestDir() { fs::create_directories(path); }
  ~TestDir() {
    std::error_code ec;
    if (::getpid() == owner) fs::remove_all(path, ec);  // not from a forked child
  }
};
[[maybe_unused]] fs::path tmp(const std::string& name) {
  static const TestDir dir;
  return dir.path / name;
}

// A directory of this test process's own (tests of several checkouts may run at once).
[[maybe_unused]] fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("vtpu_cli_" + std::to_string(::getpid())) / name;
  fs::create_directories(d);
  return d;
}

[[maybe_unused]] std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

}  // namespace
