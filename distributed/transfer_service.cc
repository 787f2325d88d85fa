#include "distributed/transfer_service.h"

#include <thread>
#include <utility>

#include "support/log.h"

namespace kiln::distributed {
namespace {

// Sends are scheduled from completion callbacks (device worker threads), which must not block on a
// full queue: the queue is effectively unbounded.
constexpr size_t kMaxQueuedSends = size_t{1} << 30;

}  // namespace

TransferService::TransferService(KeyValueStore* store, std::chrono::milliseconds timeout)
    : store_(store), timeout_(timeout) {}

TransferService::~TransferService() { Shutdown(); }

void TransferService::Send(runtime::AsyncArrayRef src, TransferId id, runtime::EventRef done) {
  runtime::EventRef ready = src->ready();
  std::weak_ptr<TransferService> weak = weak_from_this();
  ready->OnReady([weak, src = std::move(src), id, done](const Status&) mutable {
    std::shared_ptr<TransferService> self = weak.lock();
    if (self == nullptr) {
      done->Set(Status(StatusCode::kCancelled, id.Describe() + ": the client is gone"));
      return;
    }
    self->EnqueueSend(std::move(src), id, std::move(done));
  });
}

void TransferService::EnqueueSend(runtime::AsyncArrayRef src, TransferId id,
                                  runtime::EventRef done) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) {
    done->Set(Status(StatusCode::kCancelled, id.Describe() + ": the client is shutting down"));
    return;
  }
  if (send_queue_ == nullptr) {
    send_queue_ = std::make_unique<runtime::WorkQueue>("kiln-xfer-send", kMaxQueuedSends);
  }
  send_queue_->Schedule([this, src = std::move(src), id, done = std::move(done)] {
    StatusOr<runtime::Array> value = src->Await();  // ready already: does not block
    Status sent =
        value.ok() ? PutArray(*store_, id, *value) : PutError(*store_, id, value.status());
    if (!sent.ok()) KILN_LOG(kWarning, sent.ToString());
    done->Set(value.ok() ? std::move(sent)
                         : value.status().WithContext(id.Describe() + ": the source failed"));
  });
}

void TransferService::ReceiveAll(std::vector<Receive> receives) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopped_) {
      ++active_receivers_;
    } else {
      for (Receive& r : receives) {
        r.dst->SetError(
            Status(StatusCode::kCancelled, r.id.Describe() + ": the client is shutting down"));
      }
      return;
    }
  }
  std::shared_ptr<TransferService> self = shared_from_this();
  std::thread([self, receives = std::move(receives)] {
    for (const Receive& r : receives) {
      StatusOr<runtime::Array> got = GetArray(*self->store_, r.id, r.dst->dtype(), r.dst->dims(),
                                              self->timeout_, &self->cancelled_);
      if (got.ok()) {
        r.dst->SetValue(std::move(*got));
      } else {
        r.dst->SetError(got.status());
      }
    }
    std::lock_guard<std::mutex> lock(self->mu_);
    if (--self->active_receivers_ == 0) self->receivers_done_.notify_all();
  }).detach();
}

void TransferService::Shutdown() {
  std::unique_ptr<runtime::WorkQueue> sends;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_) return;
    stopped_ = true;
    cancelled_.store(true);
    receivers_done_.wait(lock, [this] { return active_receivers_ == 0; });
    sends = std::move(send_queue_);
  }
  sends.reset();  // drains the queued sends, then joins
}

}  // namespace kiln::distributed
