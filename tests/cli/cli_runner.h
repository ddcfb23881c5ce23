#pragma once
// Runs build/bin/vtpu as a user would and captures its output and exit code, for the
// command-line tests.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace vtpu::testing {

struct CliResult {
  int code;
  std::string out;  // stdout
  std::string err;  // stderr
};

inline CliResult vtpu(const std::string& args) {
  namespace fs = std::filesystem;
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

inline std::filesystem::path tmp(const std::string& name) { return std::filesystem::temp_directory_path() / name; }

}  // namespace vtpu::testing
