// vtpu/support/heap.h: the heap on transparent huge pages, in the tool and in the children it
// forks (a sweep's compiles run in forked workers, child_process.h).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "vtpu/support/child_process.h"
#include "vtpu/support/heap.h"

namespace vtpu {
namespace {

bool huge_pages_on_request() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return s.find("[madvise]") != std::string::npos || s.find("[always]") != std::string::npos;
}

// This process's anonymous memory on huge pages, in KiB.
long anon_huge_kib() {
  std::ifstream f("/proc/self/smaps_rollup");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("AnonHugePages:", 0) == 0) return std::stol(line.substr(14));
  return -1;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;  // GCC
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);  // Clang
#else
constexpr bool kAddressSanitizer = false;
#endif

TEST(Heap, AForkedChildsNewMemoryIsOnHugePagesToo) {
  if (!huge_pages_on_request()) GTEST_SKIP() << "transparent huge pages are off on this machine";
  // heap_on_huge_pages() tunes the C library's allocator, which AddressSanitizer replaces
  // with its own (the asan-ubsan preset, scripts/asan-suite.sh).
  if (kAddressSanitizer) GTEST_SKIP() << "built with AddressSanitizer, whose allocator replaces the C library's heap";
  heap_on_huge_pages();
  {  // The parent's tensors come and go: its heap grows, and is trimmed before the fork.
    std::vector<char> big(size_t(48) << 20, 1);
    ASSERT_EQ(big[12345], 1);
  }
  std::string got = run_in_child(
      [] {
        long before = anon_huge_kib();
        std::vector<char> tensor(size_t(24) << 20);  // from the heap (below the mmap threshold)
        std::memset(tensor.data(), 7, tensor.size());
        return std::to_string(anon_huge_kib() - before);
      },
      [](const std::exception& e) { return std::string(e.what()); }, "crashed");
  // 24 MiB written: all but the partial 2 MiB pages at its ends on huge pages (none before the
  // child put its heap back on huge pages).
  EXPECT_GE(std::stol(got), 16 * 1024) << got;
}

}  // namespace
}  // namespace vtpu
