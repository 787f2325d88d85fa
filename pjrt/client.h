// PJRT_Client: the devices of the run and their memories. One process alone has 1 device by
// default (`kiln_device_count` create option or the KILN_DEVICE_COUNT environment variable for
// more). When jax.distributed makes this one of several processes, every process publishes its
// device count in the framework's key-value store and lists every process's devices under
// globally unique ids (process by process, in process order); only its own are addressable.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "distributed/kv_store.h"
#include "distributed/transfer_service.h"
#include "pjrt/device.h"
#include "pjrt/topology.h"
#include "runtime/network.h"
#include "support/status.h"

struct PJRT_Client {
  PJRT_Client() = default;
  PJRT_Client(const PJRT_Client&) = delete;
  PJRT_Client& operator=(const PJRT_Client&) = delete;
  // Stops the cross-host transfers (they use kv_store) before anything is freed.
  ~PJRT_Client() {
    if (transfers != nullptr) transfers->Shutdown();
  }

  std::vector<std::unique_ptr<PJRT_Device>> owned_devices;
  std::vector<std::unique_ptr<kiln::pjrt::KilnMemory>> owned_memories;
  std::vector<PJRT_Device*> devices;              // every process's, ordered by id; id == index
  std::vector<PJRT_Device*> addressable_devices;  // this process's, ordered by id
  std::vector<PJRT_Memory*> memories;  // this process's: each addressable device's, in order
  int process_index = 0;
  int process_count = 1;
  std::unique_ptr<PJRT_TopologyDescription> topology;  // every process's devices
  // Multi-process runs only: the framework's store and the network over which collectives and
  // executions exchange values (built on first use).
  std::unique_ptr<kiln::distributed::KeyValueStore> kv_store;
  std::unique_ptr<kiln::runtime::Network> network;
  std::mutex network_mu;
  // Cross-host transfers (pjrt/cross_host.cc), made on first use; shared with its own threads.
  std::shared_ptr<kiln::distributed::TransferService> transfers;
  std::mutex transfers_mu;

  PJRT_Device* FindDevice(int64_t id) const {
    if (id < 0 || id >= static_cast<int64_t>(devices.size())) return nullptr;
    return devices[static_cast<size_t>(id)];
  }
  // Whether `d` / `m` is one of this process's (addressable) devices / memories.
  bool Owns(const PJRT_Device* d) const {
    for (PJRT_Device* x : addressable_devices) {
      if (x == d) return true;
    }
    return false;
  }
  bool Owns(const PJRT_Memory* m) const {
    for (PJRT_Memory* x : memories) {
      if (x == m) return true;
    }
    return false;
  }
};

namespace kiln::pjrt {

inline constexpr const char kPlatformName[] = "kiln";
inline constexpr const char kPlatformVersion[] = "kiln 0.1.0";
inline constexpr int64_t kMaxDeviceCount = 1024;

// The device count of a process when no option sets it: the KILN_DEVICE_COUNT environment variable,
// or 1. Errors name `function`.
StatusOr<int64_t> DefaultDeviceCount(const char* function);

// The devices of a run: `counts[p]` devices in process p; this is process `process_index`.
StatusOr<std::unique_ptr<PJRT_Client>> MakeClient(const std::vector<int64_t>& counts,
                                                  int process_index);

// The network of a multi-process run, made on first use (FAILED_PRECONDITION in a one-process run).
StatusOr<runtime::Network*> ClientNetwork(PJRT_Client& client);

}  // namespace kiln::pjrt
