// TransferService: runs a client's cross-host transfers (distributed/kv_transfer.h) off the
// caller's thread. A send waits for its source array, then one send thread puts the bytes in the
// key-value store, in the order the sources became ready. Each receive call gets its own thread,
// which blocks on the store and then completes the destination arrays (or fails them, with the
// transfer and the source process named); receives never wait behind one another, so transfers in
// opposite directions cannot deadlock.
//
// Shutdown (the client going away) lets queued sends finish, so that a process that sends and
// exits still delivers; it cancels pending receives and waits for their threads (each notices
// within about a second). Afterwards new work fails at once and the store is never touched again.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "distributed/kv_store.h"
#include "distributed/kv_transfer.h"
#include "runtime/async_array.h"
#include "runtime/event.h"
#include "runtime/work_queue.h"

namespace kiln::distributed {

class TransferService : public std::enable_shared_from_this<TransferService> {
 public:
  // `store` must outlive Shutdown().
  TransferService(KeyValueStore* store, std::chrono::milliseconds timeout);
  ~TransferService();

  struct Receive {
    TransferId id;
    runtime::AsyncArrayRef dst;  // its dtype and dims are what the sender must send
  };

  // Sends `src` once it is ready; `done` completes when the bytes are in the store (or failed).
  void Send(runtime::AsyncArrayRef src, TransferId id, runtime::EventRef done);
  // Fills every `dst` in order on a new thread.
  void ReceiveAll(std::vector<Receive> receives);

  void Shutdown();

 private:
  void EnqueueSend(runtime::AsyncArrayRef src, TransferId id, runtime::EventRef done);

  KeyValueStore* const store_;
  const std::chrono::milliseconds timeout_;
  std::atomic<bool> cancelled_{false};  // receives stop waiting
  std::mutex mu_;
  std::condition_variable receivers_done_;
  bool stopped_ = false;                            // guarded by mu_
  int active_receivers_ = 0;                        // guarded by mu_
  std::unique_ptr<runtime::WorkQueue> send_queue_;  // guarded by mu_ (made on first send)
};

}  // namespace kiln::distributed
