// The framework's key-value store, as distributed/ sees it: the one channel processes share before
// any connection exists. jax.distributed provides one (the coordinator's store, reached through
// PJRT_Client_Create's kv_get / kv_put callbacks; pjrt/ adapts it); Gloo rendezvous through it
// (gloo_store.h), so a multi-process run needs no server or port beyond the framework's own.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "support/status.h"

namespace kiln::distributed {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  // Publishes `value` under `key` for every process. Keys are written once.
  virtual Status Put(std::string_view key, std::string_view value) = 0;
  // The value under `key`, waiting up to `timeout` for some process to Put it; DeadlineExceeded
  // (or the store's own error) when it does not arrive in time.
  virtual StatusOr<std::string> Get(std::string_view key, std::chrono::milliseconds timeout) = 0;
};

}  // namespace kiln::distributed
