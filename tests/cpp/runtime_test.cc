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
#include "runtime/parallel.h"
#include "runtime/work_queue.h"

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

TEST(AsyncArrayTest, ErrorsPropagateToReaders) {
  AsyncArray pending(ir::DType::kF32, {2});
  pending.SetError(Internal("kernel failed"));
  auto result = pending.Await();
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(), "kernel failed");
}

}  // namespace
}  // namespace kiln::runtime
