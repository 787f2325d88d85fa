#include "runtime/event.h"

#include "support/spin.h"

namespace kiln::runtime {

void Event::Set(Status status) {
  std::vector<Callback> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ready_) return;
    status_ = std::move(status);
    ready_.store(true, std::memory_order_release);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  // Outside the lock: a callback may query or destroy handles to this very event.
  for (auto& cb : callbacks) cb(status_);
}

bool Event::IsReady() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ready_;
}

Status Event::Await() const {
  SpinUntil([this] { return ready_.load(std::memory_order_acquire); });
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return ready_.load(std::memory_order_relaxed); });
  return status_;
}

Status Event::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Event::OnReady(Callback callback) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  callback(status_);
}

}  // namespace kiln::runtime
