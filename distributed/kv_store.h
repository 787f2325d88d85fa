// The framework's key-value store, as the distributed layer uses it: jaxlib hands one to
// PJRT_Client_Create when jax.distributed has made this one of several processes (pjrt/ adapts
// its C callbacks to this interface). Every process of the run sees the same store; it is where
// processes find each other (topology, transport addresses) without another server.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "support/status.h"

namespace kiln::distributed {

class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual Status Put(std::string_view key, std::string_view value) = 0;
  // Blocks until `key` is set or `timeout` passes (then DEADLINE_EXCEEDED or the store's error).
  virtual StatusOr<std::string> Get(std::string_view key, std::chrono::milliseconds timeout) = 0;
};

}  // namespace kiln::distributed
