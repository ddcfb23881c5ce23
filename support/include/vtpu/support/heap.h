#pragma once
// The process heap on transparent huge pages, for the tools that move a model's weights
// through memory (docs/compiler.md, "Compile time"). Compiling ResNet-50 touches about 470 MB
// (the protobuf, the constants, MLIR attributes, weight tiles), each byte about once: on 4 KiB
// pages that was about 170,000 page faults, a third of a cold compile on a virtual machine.
// On 2 MiB pages it is about 7,000.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>

namespace vtpu {

namespace detail {
// The reserve heap_on_huge_pages was called with (0: never), for a forked child to call it again.
inline size_t& huge_heap_reserve() {
  static size_t reserve = 0;
  return reserve;
}
}  // namespace detail

// Reserves `reserve` bytes of heap (address space only: a page is backed when first
// touched), marks them for huge pages, and keeps freed memory in the heap for the next tensor
// instead of returning it to the system. Without transparent huge pages (a kernel set to
// `never`) only the latter holds. Call once, first thing in main.
inline void heap_on_huge_pages(size_t reserve = size_t(1) << 30) {
  detail::huge_heap_reserve() = reserve;
  constexpr int kMiB = 1 << 20;
  mallopt(M_MMAP_THRESHOLD, 32 * kMiB);  // tensors of up to 32 MiB come from the heap (glibc's largest)
  // Every thread's allocations from this heap: a thread's own arena is mapped memory without
  // huge pages, and what one thread frees (an initializer read on a helper thread) is kept
  // for the next allocation of any thread.
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_TRIM_THRESHOLD, int(reserve));
  mallopt(M_TOP_PAD, int(reserve));
  auto* lo = static_cast<char*>(sbrk(0));
  // More than the heap holds yet, so it grows by `reserve` (volatile: an allocation nothing
  // reads may be left out by the optimizer).
  void* volatile grow = std::malloc(16 * kMiB);
  auto* hi = static_cast<char*>(sbrk(0));
  constexpr uintptr_t kHuge = uintptr_t(2) * kMiB;
  uintptr_t from = (reinterpret_cast<uintptr_t>(lo) + kHuge - 1) & ~(kHuge - 1);
  if (reinterpret_cast<uintptr_t>(hi) > from)
    madvise(reinterpret_cast<void*>(from), reinterpret_cast<uintptr_t>(hi) - from, MADV_HUGEPAGE);
  std::free(grow);
  mallopt(M_TOP_PAD, 64 * kMiB);
}

// In a child forked from a process that called heap_on_huge_pages: the heap on huge pages again.
// A parent gives its free memory back before forking (child_process.h, or the child would copy
// each page of it it writes to), which shrinks the heap; what the child grows it by is then a
// new mapping without the advice, and a compile in a sweep's worker ran on 4 KiB pages (ResNet-50
// INT8: 0.67 s instead of 0.35 s, none of its memory on huge pages).
inline void heap_on_huge_pages_after_fork() {
  if (size_t reserve = detail::huge_heap_reserve()) heap_on_huge_pages(reserve);
}

}  // namespace vtpu
