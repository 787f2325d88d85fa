// The key-value store jaxlib passes to PJRT_Client_Create (three C callbacks and their user
// arguments), as a distributed::KeyValueStore. Kiln's keys live under "kiln:".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "abi/pjrt_c_api.h"
#include "distributed/kv_store.h"

namespace kiln::pjrt {

struct KeyValueCallbacks {
  PJRT_KeyValueGetCallback get = nullptr;
  void* get_arg = nullptr;
  PJRT_KeyValuePutCallback put = nullptr;
  void* put_arg = nullptr;
};

class CallbackKeyValueStore final : public distributed::KeyValueStore {
 public:
  explicit CallbackKeyValueStore(KeyValueCallbacks callbacks) : cb_(callbacks) {}
  Status Put(std::string_view key, std::string_view value) override;
  StatusOr<std::string> Get(std::string_view key, std::chrono::milliseconds timeout) override;

 private:
  KeyValueCallbacks cb_;
};

}  // namespace kiln::pjrt
