// Waiting on another thread: spin first, then sleep.
//
// Waking a thread asleep on a futex is a system call on each side and, on a virtual machine, an
// interrupt to an idle virtual CPU: on the 2-core Zen 5 VM a condition-variable round trip between
// two threads costs 37-49 us (median), against 0.08 us when both spin. That is longer than most of
// the work Kiln hands from thread to thread (an execution to its device's thread, a ParallelFor
// chunk to a pool worker), and a 10,000-iteration fori_loop paid it twice per call. So threads
// that go idle, and callers waiting on work that is usually short, poll for a bounded time with
// the CPU's pause hint before they sleep; their condition variables stay, for longer waits.
#pragma once

#include <sched.h>

#include <chrono>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_CPU_RELAX() _mm_pause()
#else
#define KILN_CPU_RELAX() ((void)0)
#endif

namespace kiln {

// How long an idle thread polls before it sleeps: a few times the cost of waking it, and longer
// than the gap between two executions a Python loop launches back to back (~5-30 us). The
// environment variable KILN_SPIN_US (0 to 10000) sets it; 0 sleeps at once.
inline std::chrono::microseconds IdleSpin() {
  static const std::chrono::microseconds spin = [] {
    long us = 100;
    if (const char* env = std::getenv("KILN_SPIN_US"); env != nullptr && *env != '\0') {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      if (end != nullptr && *end == '\0' && v >= 0 && v <= 10000) us = v;
    }
    return std::chrono::microseconds(us);
  }();
  return spin;
}

// Polls `ready` until it returns true (then returns true) or `budget` has passed (then returns
// its last answer). `ready` must be cheap and safe to call from this thread without a lock
// (typically an atomic load with acquire or relaxed ordering).
// After the first 20 us it also yields the CPU between polls, so that a machine with more runnable
// threads than cores (several processes, a test running subprocesses) runs them instead.
template <typename Ready>
bool SpinUntil(Ready&& ready, std::chrono::microseconds budget = IdleSpin()) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point polite = start + std::chrono::microseconds(20);
  const Clock::time_point deadline = start + budget;
  for (;;) {
    for (int i = 0; i < 32; ++i) {
      if (ready()) return true;
      KILN_CPU_RELAX();
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return ready();
    if (now >= polite) sched_yield();
  }
}

}  // namespace kiln
