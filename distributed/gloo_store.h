// A gloo::rendezvous::Store over Kiln's KeyValueStore: what Gloo's full-mesh connect publishes and
// reads (each member's address) goes to the framework's store, under a prefix of its own.
#pragma once

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "distributed/kv_store.h"

namespace kiln::distributed {

class GlooStore : public gloo::rendezvous::Store {
 public:
  // Keys become `prefix` + Gloo's key; waits without a timeout of their own use `timeout`.
  GlooStore(KeyValueStore& kv, std::string prefix, std::chrono::milliseconds timeout);

  // Failures are thrown as gloo::IoException (Gloo's own stores do the same); the message carries
  // the KeyValueStore's status and the full key.
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

  // Gloo's key (without the prefix) of the last get or wait that failed; empty if none did.
  const std::string& failed_key() const { return failed_key_; }

 private:
  std::vector<char> GetOrThrow(const std::string& key, std::chrono::milliseconds timeout);

  KeyValueStore& kv_;
  std::string prefix_;
  std::chrono::milliseconds timeout_;
  std::string failed_key_;
};

}  // namespace kiln::distributed
