#include "pool.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vtpu/support/child_process.h"
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
  ForkedWriter child = fork_writer(fn, describe, /*die_with_parent=*/true);
  fcntl(child.out, F_SETFD, FD_CLOEXEC);
  uint64_t id = next_++;
  tasks_[child.out] = Task{id, child.pid, child.out, {}};
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
