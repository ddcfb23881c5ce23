#pragma once
// Loops whose items are independent, split over the processor's threads: the compiler's
// reference interpreter (convolution and matmul rows) and its INT8 weight quantization. Each
// item is computed by one thread as it would be alone, so results do not depend on the count.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "vtpu/support/error.h"

namespace vtpu {

// VTPU_THREADS when set (1 or more), else the processor count, at most 8.
inline int worker_threads() {
  static const int n = [] {
    if (const char* e = std::getenv("VTPU_THREADS")) {
      char* end = nullptr;
      long v = std::strtol(e, &end, 10);
      if (end != e && *end == '\0' && v >= 1 && v <= 1024) return int(v);
      throw UserError(std::string("VTPU_THREADS='") + e + "': give a whole number of threads, 1 or more");
    }
    return int(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  }();
  return n;
}

// Runs body(lo, hi) over ranges that split [0, n) on up to worker_threads() threads, when the
// work (n x `work_per_item`, in multiply-adds or the like) is worth a thread's start; an
// exception of the first range that throws is rethrown.
inline void parallel_for(int64_t n, double work_per_item, const std::function<void(int64_t lo, int64_t hi)>& body) {
  // A thread's start and join cost about as much as a few million multiply-adds.
  constexpr double kWorkPerThread = 4e6;
  int64_t threads = std::min<int64_t>({worker_threads(), n, int64_t(double(n) * work_per_item / kWorkPerThread)});
  if (threads <= 1) {
    if (n > 0) body(0, n);
    return;
  }
  std::vector<std::thread> pool;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  for (int64_t t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        body(n * t / threads, n * (t + 1) / threads);
      } catch (...) {
        errors[size_t(t)] = std::current_exception();
      }
    });
  try {
    body(0, n / threads);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& th : pool) th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace vtpu
