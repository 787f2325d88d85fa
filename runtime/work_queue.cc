#include "runtime/work_queue.h"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "support/spin.h"

namespace kiln::runtime {

WorkQueue::WorkQueue(std::string name, size_t max_in_flight)
    : name_(std::move(name)), max_in_flight_(max_in_flight == 0 ? 1 : max_in_flight) {
  StatusOr<Thread> t = Thread::Start([this] { Loop(); });
  if (!t.ok()) {
    // A device without its worker cannot run anything; there is no caller to report to here.
    std::fprintf(stderr, "kiln: cannot start work queue %s: %s\n", name_.c_str(),
                 t.status().ToString().c_str());
    std::abort();
  }
  thread_ = std::move(t).value();
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  thread_.Join();
}

void WorkQueue::Schedule(std::function<void()> task) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    const bool on_worker = thread_id_ != 0 && pthread_self() == static_cast<pthread_t>(thread_id_);
    if (!on_worker) {
      space_cv_.wait(lock, [this] { return tasks_.size() + running_ < max_in_flight_; });
    }
    tasks_.push_back(std::move(task));
    queued_.store(tasks_.size(), std::memory_order_relaxed);
  }
  work_cv_.notify_one();
}

size_t WorkQueue::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return tasks_.size() + running_;
}

void WorkQueue::Loop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    thread_id_ = static_cast<unsigned long>(pthread_self());
  }
  for (;;) {
    std::function<void()> task;
    {
      // A caller launching executions back to back sends the next one within microseconds.
      SpinUntil([this] { return queued_.load(std::memory_order_relaxed) != 0; });
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping and drained
      task = std::move(tasks_.front());
      tasks_.pop_front();
      queued_.store(tasks_.size(), std::memory_order_relaxed);
      ++running_;
    }
    task();
    task = nullptr;  // release what the task captured before making room for the next one
    {
      std::lock_guard<std::mutex> lock(mu_);
      --running_;
    }
    space_cv_.notify_one();
  }
}

}  // namespace kiln::runtime
