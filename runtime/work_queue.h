// WorkQueue: one worker thread running tasks in submission order. Each device owns one, which gives
// the stream semantics PJRT expects (executions on a device complete in the order they were
// launched) while Execute itself returns at once.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace kiln::runtime {

class WorkQueue {
 public:
  explicit WorkQueue(std::string name);
  ~WorkQueue();  // drains pending tasks, then joins
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Schedule(std::function<void()> task);

 private:
  void Loop();

  std::string name_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace kiln::runtime
