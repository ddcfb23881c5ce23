#pragma once
// Internal: running the SystemC kernel and ending its threads, safely for AddressSanitizer.
//
// Debian's SystemC (2.3.4, QuickThreads coroutines) tells ASan about its stack switches only
// in part, and ASan's idea of the current stack decides what __asan_handle_no_return (run at
// every throw) cleans:
//  - a switch into wait() names the target's stack, but the main stack as {0, 0}: after
//    sc_start() returns, ASan knows no main stack;
//  - a thread that returns leaves through an unannotated switch (sc_cor_pkg_qt::abort): ASan
//    takes the dead thread's stack for the current one until the next wait() somewhere.
// A throw in either state (simulate() re-raising a thread's SimError on the main stack, the
// system's coordinator finding a deadlock just after a chip halted) gets no stack cleanup
// ("ASan is ignoring requested __asan_handle_no_return"), and the stale redzones it leaves
// end the run with a false stack-buffer-overflow. So, under ASan only:
//  - run_kernel() gives ASan the main stack's bounds back when sc_start() returns;
//  - end_thread(), a thread body's last statement, waits for ever (wait() in a thread with
//    no static sensitivity) instead of returning, so SystemC leaves the thread through an
//    annotated switch. Nothing waits for a thread to end (the simulation stops by sc_stop),
//    so results are the same.
// ASan's fake stacks (detect_stack_use_after_return) do not survive SystemC's switches
// either: run the sanitizer build with detect_stack_use_after_return=0 (its default).
// Without ASan, run_kernel() is sc_start() and end_thread() does nothing.
#include <cstddef>
#include <systemc>

#if defined(__SANITIZE_ADDRESS__)
#define VTPU_ASAN_STACKS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VTPU_ASAN_STACKS 1
#endif
#endif

#ifdef VTPU_ASAN_STACKS
#include <sanitizer/common_interface_defs.h>
#endif

namespace vtpu::sim::detail {

// sc_start(), on the main stack.
inline void run_kernel() {
#ifdef VTPU_ASAN_STACKS
  // ASan's bounds of this stack, read by switching to an empty one and straight back.
  const void* bottom = nullptr;
  size_t size = 0;
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, nullptr, 0);
  __sanitizer_finish_switch_fiber(fake, &bottom, &size);
  __sanitizer_start_switch_fiber(&fake, bottom, size);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  sc_core::sc_start();
#ifdef VTPU_ASAN_STACKS
  __sanitizer_start_switch_fiber(&fake, bottom, size);
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}

// The last statement of a thread body (SC_THREAD).
inline void end_thread() {
#ifdef VTPU_ASAN_STACKS
  sc_core::wait();  // no static sensitivity: never resumed, and no event holds it (LeakSanitizer)
#endif
}

}  // namespace vtpu::sim::detail
