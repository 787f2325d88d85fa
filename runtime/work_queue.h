// WorkQueue: one worker thread running tasks in submission order. Each device owns one, which gives
// the stream semantics PJRT expects (executions on a device complete in the order they were
// launched) while Execute itself returns at once.
//
// The queue is bounded: Schedule blocks while `max_in_flight` tasks are queued or running, so a
// caller that launches work faster than it completes (a loop calling a jitted function without
// reading results) is slowed to the device's pace instead of piling up memory and a backlog that
// takes minutes to drain (issue 14). Tasks scheduled from the worker thread itself never block.
// An idle worker polls for the next task for a while (IdleSpin) before it sleeps (support/spin.h).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "support/thread.h"

namespace kiln::runtime {

class WorkQueue {
 public:
  // Enough queued executions to keep a device busy while Python prepares the next call; few enough
  // that their pending outputs stay small. XLA's CPU client bounds in-flight work the same way.
  static constexpr size_t kDefaultMaxInFlight = 32;

  explicit WorkQueue(std::string name, size_t max_in_flight = kDefaultMaxInFlight);
  ~WorkQueue();  // drains pending tasks, then joins
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Appends `task`, first waiting while the queue is full (except on the worker thread).
  void Schedule(std::function<void()> task);

  // Tasks queued or running right now.
  size_t in_flight() const;

 private:
  void Loop();

  std::string name_;
  const size_t max_in_flight_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;   // the worker waits for tasks
  std::condition_variable space_cv_;  // producers wait for room
  std::deque<std::function<void()>> tasks_;
  std::atomic<size_t> queued_{0};  // tasks_.size(), for the worker polling without the lock
  size_t running_ = 0;
  bool stopping_ = false;
  Thread thread_;  // large stack: programs recurse once per nesting level of their regions
  unsigned long thread_id_ = 0;
};

}  // namespace kiln::runtime
