#pragma once
// Internal: a pool of forked workers. SystemC allows one simulation per process, so every
// task runs in a child of its own (forked from the coordinator, so it inherits the loaded
// program at no cost) and sends its result back through a pipe. Children die with the
// coordinator (PR_SET_PDEATHSIG): a killed sweep leaves no workers behind.
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace vtpu::sweep::detail {

class ProcessPool {
 public:
  struct Done {
    uint64_t id;
    std::string output;  // what the task returned
    bool crashed;        // the child died without finishing (signal, abort)
  };

  ProcessPool() = default;
  ProcessPool(const ProcessPool&) = delete;
  ProcessPool& operator=(const ProcessPool&) = delete;
  ~ProcessPool();

  // Starts fn in a child; an exception in fn becomes its output through `describe`.
  uint64_t launch(const std::function<std::string()>& fn, const std::function<std::string(const std::exception&)>& describe);
  // Blocks until at least one task finishes (or `timeout_ms` passes, -1: forever).
  std::vector<Done> wait(int timeout_ms = -1);
  size_t running() const { return tasks_.size(); }
  // CPU seconds used by finished children (getrusage of the reaped ones).
  double child_cpu_seconds() const { return child_cpu_; }

 private:
  struct Task {
    uint64_t id;
    pid_t pid;
    int fd;
    std::string out;
  };
  std::map<int, Task> tasks_;  // by pipe fd
  uint64_t next_ = 1;
  double child_cpu_ = 0;
};

}  // namespace vtpu::sweep::detail
