#pragma once
// Helpers for simulator tests. SystemC allows one simulation per process, so each run
// happens in a forked child that sends back what the test needs.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "vtpu/config/config.h"
#include "vtpu/isa/assembler.h"
#include "vtpu/sim/simulator.h"

namespace vtpu::sim::testing {

// Runs fn in a child process and returns what it wrote; "EXCEPTION: msg" if it threw.
inline std::string in_child(const std::function<std::string()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "EXCEPTION: pipe failed";
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = fn();
    } catch (const SimError& e) {
      out = std::string("SIMERROR: ") + e.what();
    } catch (const std::exception& e) {
      out = std::string("EXCEPTION: ") + e.what();
    }
    size_t off = 0;
    while (off < out.size()) {
      ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += size_t(n);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string got;
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) got.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "EXCEPTION: child crashed";
  return got;
}

// Runs an assembly program on a preset; the callback turns the result into text.
inline std::string run_asm(const std::string& preset, const std::string& text,
                           const std::function<std::string(const RunResult&)>& report,
                           std::map<std::string, std::vector<uint8_t>> inputs = {}, SimOptions opt = {}) {
  return in_child([&] {
    config::Config cfg = config::load_preset(preset);
    isa::Program p = isa::assemble(text, "test.s");
    fill_missing_inputs(p, 1, inputs);
    return report(simulate(cfg, p, inputs, opt));
  });
}

}  // namespace vtpu::sim::testing
