// Where Gloo listens (the rules are in gloo_network.h) and how long it waits: the parts of
// MakeGlooNetwork that read the options and the environment.
#pragma once

#include <gloo/transport/device.h>

#include <chrono>
#include <memory>

#include "distributed/gloo_network.h"
#include "distributed/kv_store.h"
#include "support/status.h"

namespace kiln::distributed {

// Publishes this host's name under "kiln/gloo/host/<process_index>" (MakeGlooDevice's loopback
// fallback compares them).
Status PublishHost(KeyValueStore& kv, int process_index);

// The TCP device (listening socket) for this process, chosen as gloo_network.h describes.
StatusOr<std::shared_ptr<gloo::transport::Device>> MakeGlooDevice(
    KeyValueStore& kv, int count, const GlooOptions& options, std::chrono::milliseconds timeout);

}  // namespace kiln::distributed
