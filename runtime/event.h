// Event: a one-shot completion signal carrying a Status. PJRT events, buffer readiness and
// execution completion are all Events. Callbacks registered before completion run on the thread
// that completes the event; callbacks registered after run at once on the caller's thread. Holders
// share ownership, so a PJRT_Event destroyed inside its own callback leaves the state alive until
// the callback returns.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "support/status.h"

namespace kiln::runtime {

class Event {
 public:
  using Callback = std::function<void(const Status&)>;

  static std::shared_ptr<Event> Create() { return std::make_shared<Event>(); }
  static std::shared_ptr<Event> MakeReady(Status status = Status::Ok()) {
    auto e = Create();
    e->Set(std::move(status));
    return e;
  }

  // Completes the event; later calls are ignored (the first outcome wins).
  void Set(Status status);
  bool IsReady() const;
  // Blocks until complete and returns the outcome.
  Status Await() const;
  // The outcome; only meaningful once IsReady().
  Status status() const;
  void OnReady(Callback callback);

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::atomic<bool> ready_{false};  // written under mu_; Await polls it without the lock first
  Status status_;
  std::vector<Callback> callbacks_;
};

using EventRef = std::shared_ptr<Event>;

}  // namespace kiln::runtime
