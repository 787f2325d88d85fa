#include "distributed/gloo_store.h"

#include <gloo/common/error.h>

#include <algorithm>
#include <utility>

namespace kiln::distributed {

GlooStore::GlooStore(KeyValueStore& kv, std::string prefix, std::chrono::milliseconds timeout)
    : kv_(kv), prefix_(std::move(prefix)), timeout_(timeout) {}

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  std::string full = prefix_ + key;
  Status s = kv_.Put(full, std::string_view(data.data(), data.size()));
  if (!s.ok()) {
    throw gloo::IoException("key-value store: put '" + full + "': " + s.ToString());
  }
}

std::vector<char> GlooStore::GetOrThrow(const std::string& key, std::chrono::milliseconds timeout) {
  std::string full = prefix_ + key;
  StatusOr<std::string> value = kv_.Get(full, timeout);
  if (!value.ok()) {
    failed_key_ = key;
    throw gloo::IoException("key-value store: get '" + full + "': " + value.status().ToString());
  }
  return std::vector<char>(value->begin(), value->end());
}

std::vector<char> GlooStore::get(const std::string& key) { return GetOrThrow(key, timeout_); }

void GlooStore::wait(const std::vector<std::string>& keys) { wait(keys, timeout_); }

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  // One deadline for all the keys, not one timeout each.
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& key : keys) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    GetOrThrow(key, std::max(left, std::chrono::milliseconds(0)));
  }
}

}  // namespace kiln::distributed
