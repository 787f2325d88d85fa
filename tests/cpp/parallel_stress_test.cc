// ParallelFor under stress: the completion protocol must never let a worker touch a caller's frame
// after ParallelFor returned (issue 14: the old protocol did, and aborted training loops).
//
// The stress loop makes that race likely and its effect loud: tiny chunks so that workers finish
// at the same moment as the caller, several caller threads at once, and after every call the
// caller scribbles over the stack where the finished call's frame was, so a worker that still
// touches it reads garbage (a mutex that never unlocks, a corrupted owner: the old code hung or
// aborted within seconds here). It also runs under ThreadSanitizer and ASan
// (detect_stack_use_after_return) in CI.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime/parallel.h"

namespace kiln::runtime {
namespace {

// Overwrites the stack below the caller with non-zero bytes.
__attribute__((noinline)) void ScribbleStack(unsigned char pattern) {
  volatile unsigned char junk[4096];
  for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = pattern;
}

// One ParallelFor at a given extra stack depth, so consecutive calls put their frames at
// different addresses, as kernels called from different places do.
__attribute__((noinline)) int64_t SumAtDepth(int depth, int64_t n) {
  if (depth > 0) {
    volatile char pad[64];
    pad[0] = static_cast<char>(depth);
    return SumAtDepth(depth - 1, n) + pad[0] - static_cast<char>(depth);
  }
  std::atomic<int64_t> sum{0};
  ParallelFor(n, 1, [&](int64_t b, int64_t e) {
    int64_t s = 0;
    for (int64_t i = b; i < e; ++i) s += i;
    sum.fetch_add(s, std::memory_order_relaxed);
  });
  return sum.load();
}

int64_t StressIterations() {
  // Sanitizer builds are ~10x slower per call; the window is hit often enough either way.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 20000;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return 20000;
#else
  return 200000;
#endif
#else
  return 200000;
#endif
}

// A lost wake-up or a worker spinning on a corrupted mutex shows up as a hang: fail loudly instead
// of waiting for ctest's timeout. The deadline is 30x what the loop takes on a loaded 2-core
// machine under sanitizers; it bounds a hang, it does not measure speed.
void RunOrDieAfter(std::chrono::seconds deadline, const std::function<void()>& body) {
  auto done = std::async(std::launch::async, body);
  if (done.wait_for(deadline) != std::future_status::ready) {
    std::fprintf(stderr, "ParallelFor stress loop hung for %lld s: lost completion\n",
                 static_cast<long long>(deadline.count()));
    std::fflush(stderr);
    std::_Exit(3);
  }
  done.get();
}

TEST(ParallelStressTest, TightLoopNeverTouchesAReturnedFrame) {
  RunOrDieAfter(std::chrono::seconds(120), [] {
    const int64_t iterations = StressIterations();
    const int callers = 3;
    std::atomic<int64_t> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < callers; ++t) {
      threads.emplace_back([&, t] {
        for (int64_t i = 0; i < iterations; ++i) {
          const int64_t n = 2 + (i % 7);
          if (SumAtDepth(static_cast<int>((i + t) % 5), n) != n * (n - 1) / 2) wrong.fetch_add(1);
          ScribbleStack(static_cast<unsigned char>(0xA5 ^ i));
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
  });
}

TEST(ParallelStressTest, NestedCallsFromWorkersComplete) {
  for (int rep = 0; rep < 200; ++rep) {
    std::atomic<int64_t> count{0};
    ParallelFor(8, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        ParallelFor(64, 4, [&](int64_t bb, int64_t ee) { count.fetch_add(ee - bb); });
      }
    });
    ASSERT_EQ(count.load(), 8 * 64);
  }
}

// Every call of fn must have returned before ParallelFor returns or rethrows, and none may start
// afterwards; `live` is heap-held so a late call would be counted rather than read a dead frame.
TEST(ParallelStressTest, ExceptionIsRethrownAfterEveryChunkReturned) {
  for (int rep = 0; rep < 500; ++rep) {
    auto live = std::make_shared<std::atomic<int>>(0);
    auto late = std::make_shared<std::atomic<int>>(0);
    auto returned = std::make_shared<std::atomic<bool>>(false);
    const int64_t thrower = rep % 16;  // sometimes the caller's chunk, sometimes a worker's
    bool caught = false;
    try {
      ParallelFor(16, 1, [live, late, returned, thrower](int64_t b, int64_t e) {
        if (returned->load()) late->fetch_add(1);
        live->fetch_add(1);
        struct Leave {
          std::atomic<int>* live;
          ~Leave() { live->fetch_sub(1); }
        } leave{live.get()};
        for (int64_t i = b; i < e; ++i) {
          if (i == thrower) throw std::runtime_error("chunk failed");
        }
      });
    } catch (const std::runtime_error& e) {
      caught = std::strcmp(e.what(), "chunk failed") == 0;
    }
    EXPECT_EQ(live->load(), 0) << "a chunk was still running when ParallelFor threw";
    returned->store(true);
    EXPECT_TRUE(caught);
    // Give any straggler the chance to (wrongly) start.
    std::this_thread::yield();
    EXPECT_EQ(late->load(), 0);
  }
}

TEST(ParallelStressTest, ThreadCountFollowsTheEnvironment) {
  EXPECT_GE(NumWorkerThreads(), 1);
  EXPECT_EQ(NumWorkerThreads(), DefaultThreadCount());
}

}  // namespace
}  // namespace kiln::runtime
