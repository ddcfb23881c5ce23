#include "pool.h"

#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vtpu/support/error.h"

namespace vtpu::sweep::detail {

ProcessPool::~ProcessPool() {
  for (auto& [fd, t] : tasks_) {
    kill(t.pid, SIGKILL);
    close(fd);
    waitpid(t.pid, nullptr, 0);
  }
}

uint64_t ProcessPool::launch(const std::function<std::string()>& fn,
                             const std::function<std::string(const std::exception&)>& describe) {
  int fds[2];
  if (pipe(fds) != 0) throw InternalError(std::string("pipe failed: ") + std::strerror(errno));
  pid_t parent = getpid();
  // Memory the coordinator has freed (a model imported for its inputs: hundreds of MB, kept by
  // vtpu's heap settings, support/heap.h) goes back to the system first: a worker would
  // otherwise copy each page of it it writes to.
  malloc_trim(0);
  pid_t pid = fork();
  if (pid < 0) throw InternalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the coordinator is already gone
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
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  uint64_t id = next_++;
  tasks_[fds[0]] = Task{id, pid, fds[0], {}};
  return id;
}

std::vector<ProcessPool::Done> ProcessPool::wait(int timeout_ms) {
  std::vector<Done> done;
  if (tasks_.empty()) return done;
  std::vector<pollfd> fds;
  for (const auto& [fd, t] : tasks_) fds.push_back({fd, POLLIN, 0});
  int n = poll(fds.data(), fds.size(), timeout_ms);
  if (n < 0 && errno != EINTR) throw InternalError(std::string("poll failed: ") + std::strerror(errno));
  char buf[1 << 16];
  for (const pollfd& p : fds) {
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    Task& t = tasks_.at(p.fd);
    ssize_t r = read(p.fd, buf, sizeof buf);
    if (r > 0) {
      t.out.append(buf, size_t(r));
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    close(p.fd);
    int status = 0;
    rusage ru{};
    wait4(t.pid, &status, 0, &ru);
    child_cpu_ += double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
    done.push_back({t.id, std::move(t.out), !WIFEXITED(status) || WEXITSTATUS(status) != 0});
    tasks_.erase(p.fd);
  }
  return done;
}

}  // namespace vtpu::sweep::detail
