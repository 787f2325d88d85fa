// Runtime primitives: events, work queues, intra-op parallelism, array storage.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/array.h"
#include "runtime/async_array.h"
#include "runtime/event.h"
#include "runtime/large_blocks.h"
#include "runtime/parallel.h"
#include "runtime/work_queue.h"
#include "support/spin.h"

namespace kiln::runtime {
namespace {

TEST(EventTest, CallbacksRunOnceWithTheOutcome) {
  auto event = Event::Create();
  int calls = 0;
  StatusCode seen = StatusCode::kOk;
  event->OnReady([&](const Status& s) {
    ++calls;
    seen = s.code();
  });
  EXPECT_FALSE(event->IsReady());
  event->Set(Internal("boom"));
  event->Set(Status::Ok());  // ignored: the first outcome wins
  EXPECT_TRUE(event->IsReady());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, StatusCode::kInternal);
  EXPECT_EQ(event->Await().code(), StatusCode::kInternal);
}

TEST(EventTest, CallbackAfterCompletionRunsInline) {
  auto event = Event::MakeReady();
  bool ran = false;
  event->OnReady([&](const Status& s) { ran = s.ok(); });
  EXPECT_TRUE(ran);
}

TEST(EventTest, HolderMayDropTheLastReferenceInsideItsCallback) {
  // Mirrors PJRT: jaxlib destroys the PJRT_Event from inside the OnReady callback.
  auto holder = std::make_unique<EventRef>(Event::Create());
  EventRef producer = *holder;
  bool ran = false;
  (*holder)->OnReady([&](const Status&) {
    holder.reset();
    ran = true;
  });
  producer->Set(Status::Ok());
  EXPECT_TRUE(ran);
  EXPECT_EQ(holder, nullptr);
}

TEST(EventTest, AwaitWakesAcrossThreads) {
  auto event = Event::Create();
  std::thread t([event] { event->Set(Status::Ok()); });
  EXPECT_TRUE(event->Await().ok());
  t.join();
}

TEST(SpinTest, SeesAStoreFromAnotherThread) {
  std::atomic<bool> flag{false};
  std::thread t([&] { flag.store(true, std::memory_order_release); });
  // Polls up to 10 s: the store lands long before, unless SpinUntil never re-reads the flag.
  EXPECT_TRUE(
      SpinUntil([&] { return flag.load(std::memory_order_acquire); }, std::chrono::seconds(10)));
  t.join();
}

TEST(SpinTest, GivesUpWhenTheBudgetRunsOut) {
  int polls = 0;
  EXPECT_FALSE(SpinUntil(
      [&] {
        ++polls;
        return false;
      },
      std::chrono::microseconds(50)));
  EXPECT_GT(polls, 1);
  EXPECT_TRUE(SpinUntil([] { return true; }, std::chrono::microseconds(0)));
}

TEST(WorkQueueTest, RunsTasksInSubmissionOrder) {
  std::vector<int> order;
  auto done = Event::Create();
  {
    WorkQueue queue("test");
    for (int i = 0; i < 100; ++i) queue.Schedule([&order, i] { order.push_back(i); });
    queue.Schedule([done] { done->Set(Status::Ok()); });
    EXPECT_TRUE(done->Await().ok());
  }
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(WorkQueueTest, DestructorDrainsPendingTasks) {
  std::atomic<int> count{0};
  {
    WorkQueue queue("drain");
    for (int i = 0; i < 50; ++i) queue.Schedule([&count] { count.fetch_add(1); });
  }
  EXPECT_EQ(count.load(), 50);
}

TEST(WorkQueueTest, ScheduleWaitsWhileTheQueueIsFull) {
  // Four slots; the first task holds the worker until `gate` opens.
  std::mutex mu;
  std::condition_variable cv;
  bool gate = false;
  std::atomic<int> ran{0};
  WorkQueue queue("bounded", 4);
  queue.Schedule([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return gate; });
    ran.fetch_add(1);
  });
  for (int i = 0; i < 3; ++i) queue.Schedule([&] { ran.fetch_add(1); });
  EXPECT_EQ(queue.in_flight(), 4u);
  std::atomic<bool> fifth_scheduled{false};
  std::thread producer([&] {
    queue.Schedule([&] { ran.fetch_add(1); });
    fifth_scheduled.store(true);
  });
  // The producer cannot get in while the queue is full, however long it tries.
  for (int i = 0; i < 50; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_FALSE(fifth_scheduled.load());
    ASSERT_LE(queue.in_flight(), 4u);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    gate = true;
  }
  cv.notify_all();
  producer.join();
  EXPECT_TRUE(fifth_scheduled.load());
  auto done = Event::Create();
  queue.Schedule([done] { done->Set(Status::Ok()); });
  EXPECT_TRUE(done->Await().ok());
  EXPECT_EQ(ran.load(), 5);
}

TEST(WorkQueueTest, TheWorkerMaySchedulePastTheBound) {
  // A task that schedules follow-up work on its own queue must not wait for itself.
  auto done = Event::Create();
  WorkQueue queue("self", 1);
  queue.Schedule([&queue, done] {
    for (int i = 0; i < 3; ++i) queue.Schedule([] {});
    queue.Schedule([done] { done->Set(Status::Ok()); });
  });
  EXPECT_TRUE(done->Await().ok());
}

TEST(ParallelForTest, CoversTheRangeExactlyOnce) {
  for (int64_t n : {0, 1, 7, 1000, 100001}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    ParallelFor(n, 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
}

TEST(ArrayTest, AllocateComputesSizesAndRejectsBadShapes) {
  auto a = Array::Allocate(ir::DType::kF32, {3, 4}, /*zero=*/true);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->num_elements(), 12);
  EXPECT_EQ(a->byte_size(), 48u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data()) % kStorageAlignment, 0u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a->data_as<float>()[i], 0.0f);

  EXPECT_FALSE(Array::Allocate(ir::DType::kF32, {-1}).ok());
  int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(Array::Allocate(ir::DType::kF64, {big, 4}).ok());

  auto empty = Array::Allocate(ir::DType::kS32, {0, 5});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->byte_size(), 0u);
}

TEST(ArrayTest, ReshapeAliasesStorage) {
  auto a = Array::Allocate(ir::DType::kS32, {2, 3});
  ASSERT_TRUE(a.ok());
  Array b = a->Reshaped({6});
  EXPECT_EQ(a->data(), b.data());
  EXPECT_EQ(b.dims, (std::vector<int64_t>{6}));
}

TEST(ArrayTest, BorrowedStorageRunsReleaseOnce) {
  int released = 0;
  static float host[4] = {1, 2, 3, 4};
  {
    auto storage = Storage::Borrow(host, sizeof(host), [&released] { ++released; });
    auto copy = storage;
  }
  EXPECT_EQ(released, 1);
}

TEST(LargeBlocksTest, FreedBlocksServeTheNextRequestOfTheirSize) {
  ReleaseCachedLargeBlocks();
  const size_t bytes = (size_t{3} << 20) + 5;  // rounds to 4 MiB of huge pages
  EXPECT_EQ(LargeBlockSize(bytes), size_t{4} << 20);
  EXPECT_EQ(LargeBlockSize(kLargeBlockMin + 1), kLargeBlockMin + 4096);
  auto* a = static_cast<unsigned char*>(AllocateLargeBlock(bytes));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % (size_t{2} << 20), 0u);
  a[0] = 7;
  a[LargeBlockSize(bytes) - 1] = 9;  // the whole rounded size is usable
  FreeLargeBlock(a, bytes);
  void* other = AllocateLargeBlock(size_t{2} << 20);  // another size: a fresh block
  EXPECT_NE(other, a);
  auto* b = static_cast<unsigned char*>(AllocateLargeBlock(bytes));
  EXPECT_EQ(b, a);
  EXPECT_EQ(b[0], 7);
  FreeLargeBlock(b, bytes);
  FreeLargeBlock(other, size_t{2} << 20);
  ReleaseCachedLargeBlocks();
}

TEST(LargeBlocksTest, TheCacheKeepsTheNewestBlocksWithinItsBounds) {
  ReleaseCachedLargeBlocks();
  const size_t bytes = kLargeBlockMin;
  std::vector<void*> blocks;
  for (size_t i = 0; i < kMaxCachedBlocks + 2; ++i) blocks.push_back(AllocateLargeBlock(bytes));
  for (void* b : blocks) FreeLargeBlock(b, bytes);  // the first two are evicted
  std::vector<void*> again;
  for (size_t i = 0; i < kMaxCachedBlocks; ++i) again.push_back(AllocateLargeBlock(bytes));
  for (size_t i = 0; i < kMaxCachedBlocks; ++i) {
    EXPECT_EQ(again[i], blocks[blocks.size() - 1 - i]) << i;  // newest first
  }
  for (void* b : again) FreeLargeBlock(b, bytes);
  // A block larger than the cache's byte bound goes straight back without evicting anything.
  void* huge = AllocateLargeBlock(kMaxCachedBytes + 1);
  ASSERT_NE(huge, nullptr);
  FreeLargeBlock(huge, kMaxCachedBytes + 1);
  for (size_t i = kMaxCachedBlocks; i-- > 0;) EXPECT_EQ(AllocateLargeBlock(bytes), again[i]);
  for (void* b : again) FreeLargeBlock(b, bytes);
  ReleaseCachedLargeBlocks();
}

TEST(ArrayTest, LargeArraysAreZeroedWhenAskedEvenFromReusedMemory) {
  const int64_t n = int64_t{1} << 20;  // 4 MiB of f32
  {
    auto dirty = Array::Allocate(ir::DType::kF32, {n});
    ASSERT_TRUE(dirty.ok());
    for (int64_t i = 0; i < n; ++i) dirty->data_as<float>()[i] = 1.0f;
  }
  auto clean = Array::Allocate(ir::DType::kF32, {n}, /*zero=*/true);
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(clean->data()) % kStorageAlignment, 0u);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(clean->data_as<float>()[i], 0.0f) << i;
}

TEST(AsyncArrayTest, ErrorsPropagateToReaders) {
  AsyncArray pending(ir::DType::kF32, {2});
  pending.SetError(Internal("kernel failed"));
  auto result = pending.Await();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "kernel failed");
}

}  // namespace
}  // namespace kiln::runtime
