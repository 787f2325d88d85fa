// Moving one array from a process to another through the framework's key-value store: the
// transport behind PJRT cross-host transfers (pjrt/cross_host.cc).
//
// The sender puts the array's bytes under "xfer/<transfer key>/<src device>-<dst device>/", in
// chunks of at most kTransferChunkBytes ("c0", "c1", ...), then a small header ("h": status, dtype,
// dims, byte and chunk counts) that tells the receiver every chunk is there. A failed source array
// is sent as a header carrying its error, so the receiver fails at once instead of timing out.
//
// Bulk bytes therefore travel through the coordination service that jax.distributed runs. That is
// fine for what JAX moves this way (device_put of arrays between processes' shardings, a few MiB
// at most in practice), but every byte crosses the coordinator twice and entries are never
// deleted (the store offers no delete): a Gloo point-to-point path can replace the chunks later
// without changing the header or the keys.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "distributed/kv_store.h"
#include "ir/dtype.h"
#include "runtime/array.h"
#include "support/status.h"

namespace kiln::distributed {

inline constexpr size_t kTransferChunkBytes = size_t{1} << 20;

// Names one transfer on both sides: the framework's transfer key and the two global device ids.
struct TransferId {
  int64_t key = 0;
  int64_t src_device = 0;
  int64_t dst_device = 0;
  int src_process = 0;

  // "xfer/<key>/<src>-<dst>/"
  std::string KeyPrefix() const;
  // "cross-host transfer 7 (device 0 of process 0 -> device 1)", for messages.
  std::string Describe() const;
};

// Sender: the array's bytes, then the header.
Status PutArray(KeyValueStore& store, const TransferId& id, const runtime::Array& array);
// Sender whose source failed: a header carrying `error` (never OK).
Status PutError(KeyValueStore& store, const TransferId& id, const Status& error);

// Receiver: waits for the header up to `timeout` (polling, so that `cancelled` is noticed within
// about a second), checks it against the expected dtype and dims, and reads the chunks.
// DEADLINE_EXCEEDED naming the transfer and the source process when nothing arrives in time; the
// sender's error when it sent one; CANCELLED when `cancelled` became true.
StatusOr<runtime::Array> GetArray(KeyValueStore& store, const TransferId& id, ir::DType dtype,
                                  std::span<const int64_t> dims, std::chrono::milliseconds timeout,
                                  const std::atomic<bool>* cancelled = nullptr);

}  // namespace kiln::distributed
