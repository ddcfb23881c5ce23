#pragma once
// SystemC allows one simulation per process, so anything that simulates more than once
// (the runtime's compare, tests, benches) runs each simulation in a forked child that
// sends its result back as bytes. And other programs run as child processes (run_command:
// onnxruntime through Node.js for `vtpu run --check`).
#include <fcntl.h>
#include <malloc.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "vtpu/support/error.h"
#include "vtpu/support/heap.h"

extern char** environ;

namespace vtpu {

// A child forked to run fn, whose bytes come back through `out` (read it to its end, then
// reap `pid`).
struct ForkedWriter {
  pid_t pid;
  int out;
};

// Forks a child that runs fn and writes what it returns (or describe(exception) if fn throws)
// to a pipe, then exits. Freed memory goes back to the system first (kept otherwise:
// vtpu/support/heap.h), or the child would copy each page of it it writes to. With
// `die_with_parent`, the child is killed when this process dies (a sweep's workers).
inline ForkedWriter fork_writer(const std::function<std::string()>& fn,
                                const std::function<std::string(const std::exception&)>& describe,
                                bool die_with_parent = false) {
  int fds[2];
  if (pipe(fds) != 0) throw InternalError(std::string("pipe failed: ") + std::strerror(errno));
  pid_t parent = getpid();
  malloc_trim(0);
  pid_t pid = fork();
  if (pid < 0) throw InternalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    heap_on_huge_pages_after_fork();
    if (die_with_parent) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(1);  // the parent is already gone
    }
    close(fds[0]);
    std::string out;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = describe(e);
    }
    for (size_t off = 0; off < out.size();) {
      ssize_t n = write(fds[1], out.data() + off, out.size() - off);
      if (n <= 0) _exit(1);
      off += size_t(n);
    }
    _exit(0);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Runs fn in a forked child and returns the bytes it produced. If fn throws, the child
// sends describe(exception) instead; if the child dies, the result is `crashed`.
inline std::string run_in_child(const std::function<std::string()>& fn,
                                const std::function<std::string(const std::exception&)>& describe,
                                const std::string& crashed) {
  ForkedWriter child = fork_writer(fn, describe);
  std::string got;
  char buf[65536];
  for (ssize_t n; (n = read(child.out, buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(child.out);
  int status = 0;
  waitpid(child.pid, &status, 0);
  if (!WIFEXITED(status)) return crashed;
  return got;
}

// Runs another program: argv[0] looked up on PATH, the environment this process's plus
// `extra_env` ("NAME=value" each, overriding), standard output and error both into `log`.
// Returns its exit code; -1 when it could not be started, 128 + the signal when one ended it.
inline int run_command(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                       const std::filesystem::path& log) {
  std::vector<std::string> env_strings = extra_env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    std::string name = kv.substr(0, kv.find('='));
    bool overridden = false;
    for (const auto& x : extra_env) overridden |= x.compare(0, name.size() + 1, name + "=") == 0;
    if (!overridden) env_strings.push_back(kv);
  }
  std::vector<char*> args, env;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env_strings) env.push_back(const_cast<char*>(e.c_str()));
  env.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace vtpu
