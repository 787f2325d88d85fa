// runtime::Network on Gloo (vendored, third_party/gloo): TCP between the processes, rendezvous
// through the framework's key-value store (gloo_store.h), a Gloo context per process set.
//
// Choosing the address Gloo listens on (the first that applies):
//   GlooOptions::interface, else $KILN_GLOO_INTERFACE: the IPv4/IPv6 address of that interface;
//   GlooOptions::hostname, else $KILN_GLOO_HOSTNAME: that name or address, resolved;
//   else this machine's hostname, resolved (Gloo's own default), and if that cannot be resolved or
//   bound, 127.0.0.1, but only when every process runs on this host (all published the same
//   hostname to the key-value store); otherwise the error says to set KILN_GLOO_INTERFACE.
//
// A failed collective leaves its communicator unusable (Gloo closes the connections of a context
// that timed out): every later call on it fails at once with the first error.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "distributed/kv_store.h"
#include "runtime/network.h"
#include "support/status.h"

namespace kiln::distributed {

struct GlooOptions {
  // The bound on rendezvous and on every collective. Unset: runtime::CollectiveTimeout().
  std::optional<std::chrono::milliseconds> timeout;
  std::string interface;  // empty: $KILN_GLOO_INTERFACE
  std::string hostname;   // empty: $KILN_GLOO_HOSTNAME
};

// The timeout `options` and the environment give (see GlooOptions::timeout).
StatusOr<std::chrono::milliseconds> CollectiveTimeout(const GlooOptions& options);

// This process's side of the run: called by every process, with the same `kv` (which must outlive
// the network). Publishes this host's name, opens the listening socket; groups connect on first
// use (Network::Group). Keys live under "kiln/gloo/".
StatusOr<std::unique_ptr<runtime::Network>> MakeGlooNetwork(KeyValueStore& kv, int process_index,
                                                            int process_count,
                                                            const GlooOptions& options = {});

}  // namespace kiln::distributed
