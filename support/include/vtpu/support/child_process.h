#pragma once
// SystemC allows one simulation per process, so anything that simulates more than once
// (the runtime's compare, tests, benches) runs each simulation in a forked child that
// sends its result back as bytes.
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "vtpu/support/error.h"

namespace vtpu {

// Runs fn in a forked child and returns the bytes it produced. If fn throws, the child
// sends describe(exception) instead; if the child dies, the result is `crashed`.
inline std::string run_in_child(const std::function<std::string()>& fn,
                                const std::function<std::string(const std::exception&)>& describe,
                                const std::string& crashed) {
  int fds[2];
  if (pipe(fds) != 0) throw InternalError("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw InternalError("fork failed");
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    try {
      out = fn();
    } catch (const std::exception& e) {
      out = describe(e);
    }
    for (size_t off = 0; off < out.size();) {
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
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return crashed;
  return got;
}

}  // namespace vtpu
