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

// Reserves `reserve` bytes of heap (address space only: a page is backed when first
// touched), marks them for huge pages, and keeps freed memory in the heap for the next tensor
// instead of returning it to the system. Without transparent huge pages (a kernel set to
// `never`) only the latter holds. Call once, first thing in main.
inline void heap_on_huge_pages(size_t reserve = size_t(1) << 30) {
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

}  // namespace vtpu
