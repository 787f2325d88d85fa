// PJRT_Client_* entry points for client lifetime, devices and memories (compile, buffers and
// executables live in executable_compile.cc, buffer.cc / buffer_transfer.cc and executable.cc).
#include "pjrt/client.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>

#include "distributed/gloo_network.h"
#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/kv_store.h"
#include "runtime/network.h"
#include "runtime/parallel.h"
#include "support/log.h"

namespace kiln::pjrt {
namespace {

constexpr char kDeviceCountOption[] = "kiln_device_count";
constexpr char kDeviceCountEnv[] = "KILN_DEVICE_COUNT";

Status CheckDeviceCount(int64_t n, const std::string& source) {
  if (n < 1 || n > kMaxDeviceCount) {
    return InvalidArgument("PJRT_Client_Create: " + source + " must be between 1 and " +
                           std::to_string(kMaxDeviceCount) + ", got " + std::to_string(n));
  }
  return Status::Ok();
}

// The device count: the create option wins over the environment; default 1. Other options are
// accepted and ignored (JAX forwards user options it does not know the meaning of).
StatusOr<int64_t> DeviceCount(const PJRT_NamedValue* options, size_t num_options) {
  if (num_options > 0 && options == nullptr) {
    return InvalidArgument("PJRT_Client_Create: create_options is NULL but num_options is " +
                           std::to_string(num_options));
  }
  for (size_t i = 0; i < num_options; ++i) {
    const PJRT_NamedValue& o = options[i];
    if (o.name == nullptr) continue;
    std::string_view name(o.name, o.name_size);
    if (name != kDeviceCountOption) continue;
    if (RawEnum(o.type) != PJRT_NamedValue_kInt64) {
      return InvalidArgument(std::string("PJRT_Client_Create: option '") + kDeviceCountOption +
                             "' must be an int64");
    }
    KILN_RETURN_IF_ERROR(
        CheckDeviceCount(o.int64_value, std::string("option '") + kDeviceCountOption + "'"));
    return o.int64_value;
  }
  return DefaultDeviceCount("PJRT_Client_Create");
}

}  // namespace

StatusOr<int64_t> DefaultDeviceCount(const char* function) {
  if (const char* env = std::getenv(kDeviceCountEnv); env != nullptr && *env != '\0') {
    errno = 0;
    char* end = nullptr;
    long long n = std::strtoll(env, &end, 10);
    if (errno != 0 || end == env || *end != '\0') {
      return InvalidArgument(Prefix(function) + "environment variable " + kDeviceCountEnv + "='" +
                             env + "' is not an integer");
    }
    if (n < 1 || n > kMaxDeviceCount) {
      return InvalidArgument(Prefix(function) + "environment variable " + kDeviceCountEnv +
                             " must be between 1 and " + std::to_string(kMaxDeviceCount) +
                             ", got " + std::to_string(n));
    }
    return static_cast<int64_t>(n);
  }
  return 1;
}

namespace {

// Where this process stands in the run: jaxlib passes `node_id` and `num_nodes` (and the
// key-value store) when `jax.distributed.initialize` has made it one of several processes.
struct ProcessOptions {
  int64_t node_id = 0;
  int64_t num_nodes = 1;
};

StatusOr<ProcessOptions> ReadProcessOptions(const PJRT_NamedValue* options, size_t num_options) {
  ProcessOptions out;
  if (options == nullptr) return out;
  for (size_t i = 0; i < num_options; ++i) {
    const PJRT_NamedValue& o = options[i];
    if (o.name == nullptr) continue;
    const std::string_view name(o.name, o.name_size);
    int64_t* field = name == "node_id"     ? &out.node_id
                     : name == "num_nodes" ? &out.num_nodes
                                           : nullptr;
    if (field == nullptr) continue;
    if (RawEnum(o.type) != PJRT_NamedValue_kInt64) {
      return InvalidArgument("PJRT_Client_Create: option '" + std::string(name) +
                             "' must be an int64");
    }
    *field = o.int64_value;
  }
  if (out.num_nodes < 1 || out.num_nodes > kMaxDeviceCount || out.node_id < 0 ||
      out.node_id >= out.num_nodes) {
    return InvalidArgument("PJRT_Client_Create: node_id " + std::to_string(out.node_id) +
                           " is not one of num_nodes " + std::to_string(out.num_nodes) +
                           " processes");
  }
  return out;
}

// Every process's device count, from the key-value store: each publishes its own and reads the
// others' (they all reached jax.distributed.initialize, so the wait is short; a process that
// never publishes makes this fail within the collective timeout).
StatusOr<std::vector<int64_t>> ExchangeDeviceCounts(distributed::KeyValueStore& kv,
                                                    const ProcessOptions& world, int64_t mine) {
  const auto key = [](int64_t p) { return "topology/process/" + std::to_string(p); };
  KILN_RETURN_IF_ERROR(kv.Put(key(world.node_id), std::to_string(mine)));
  KILN_ASSIGN_OR_RETURN(std::chrono::milliseconds timeout, runtime::CollectiveTimeout());
  std::vector<int64_t> counts;
  for (int64_t p = 0; p < world.num_nodes; ++p) {
    KILN_ASSIGN_OR_RETURN(std::string value, kv.Get(key(p), timeout),
                          "reading the device count of process " + std::to_string(p));
    char* end = nullptr;
    const long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 1 || n > kMaxDeviceCount) {
      return InvalidArgument("process " + std::to_string(p) + " published '" + value +
                             "' as its device count");
    }
    counts.push_back(n);
  }
  int64_t total = 0;
  for (int64_t n : counts) total += n;
  if (total > kMaxDeviceCount) {
    return InvalidArgument("the run has " + std::to_string(total) + " devices; Kiln supports " +
                           std::to_string(kMaxDeviceCount));
  }
  return counts;
}

}  // namespace

StatusOr<std::unique_ptr<PJRT_Client>> MakeClient(const std::vector<int64_t>& counts,
                                                  int process_index) {
  auto client = std::make_unique<PJRT_Client>();
  client->process_index = process_index;
  client->process_count = static_cast<int>(counts.size());
  KILN_ASSIGN_OR_RETURN(client->topology, MakeTopology(counts));
  client->topology->owned_by_client = true;
  int id = 0;
  for (size_t p = 0; p < counts.size(); ++p) {
    for (int64_t i = 0; i < counts[p]; ++i, ++id) {
      const bool here = static_cast<int>(p) == process_index;
      std::unique_ptr<PJRT_Device> device =
          MakeDevice({id, static_cast<int>(p), static_cast<int>(i), here});
      device->client = client.get();
      // Memory ids as XLA:CPU numbers them: device d's memories are 3d, 3d+1, 3d+2.
      for (int k = 0; k < kMemoriesPerDevice; ++k) {
        auto memory = std::make_unique<KilnMemory>();
        const std::string kind(kMemoryKinds[k].kind);
        memory->id = id * kMemoriesPerDevice + k;
        memory->kind_index = k;
        memory->debug_string = "kiln:" + std::to_string(id) + ":" + kind;
        memory->to_string = "KilnMemory(id=" + std::to_string(memory->id) + ", kind=" + kind +
                            ", device=" + std::to_string(id) + ")";
        memory->devices.push_back(device.get());
        if (k == 0) device->memory = memory.get();
        device->memories.push_back(memory.get());
        if (here) client->memories.push_back(memory.get());
        client->owned_memories.push_back(std::move(memory));
      }
      client->devices.push_back(device.get());
      if (here) client->addressable_devices.push_back(device.get());
      client->owned_devices.push_back(std::move(device));
    }
  }
  return client;
}

StatusOr<runtime::Network*> ClientNetwork(PJRT_Client& client) {
  std::lock_guard<std::mutex> lock(client.network_mu);
  if (client.network != nullptr) return client.network.get();
  if (client.kv_store == nullptr || client.process_count < 2) {
    return FailedPrecondition("a program spans processes, but this is a one-process run");
  }
  KILN_ASSIGN_OR_RETURN(
      client.network,
      distributed::MakeGlooNetwork(*client.kv_store, client.process_index, client.process_count),
      "connecting process " + std::to_string(client.process_index) + " of " +
          std::to_string(client.process_count));
  return client.network.get();
}

// ---- lifetime ----

PJRT_Error* Client_Create(PJRT_Client_Create_Args* args) {
  return Guard("PJRT_Client_Create", [&]() -> Status {
    // In single-process mode jaxlib leaves the kv_* callbacks (and the `client` out-field)
    // uninitialised, so they are read only when num_nodes > 1.
    KILN_CHECK_ARGS(args, PJRT_Client_Create_Args, client, "PJRT_Client_Create");
    KILN_ASSIGN_OR_RETURN(ProcessOptions world,
                          ReadProcessOptions(args->create_options, args->num_options));
    KILN_ASSIGN_OR_RETURN(int64_t count, DeviceCount(args->create_options, args->num_options));
    std::vector<int64_t> counts = {count};
    std::unique_ptr<distributed::KeyValueStore> kv;
    if (world.num_nodes > 1) {
      if (args->kv_get_callback == nullptr || args->kv_put_callback == nullptr) {
        return InvalidArgument(
            "PJRT_Client_Create: this is one of " + std::to_string(world.num_nodes) +
            " processes but no key-value store was given (kv_get_callback / kv_put_callback)");
      }
      kv = std::make_unique<CallbackKeyValueStore>(
          KeyValueCallbacks{args->kv_get_callback, args->kv_get_user_arg, args->kv_put_callback,
                            args->kv_put_user_arg});
      KILN_ASSIGN_OR_RETURN(counts, ExchangeDeviceCounts(*kv, world, count),
                            "PJRT_Client_Create: process " + std::to_string(world.node_id) +
                                " of " + std::to_string(world.num_nodes));
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<PJRT_Client> client,
                          MakeClient(counts, static_cast<int>(world.node_id)));
    client->kv_store = std::move(kv);
    KILN_LOG(kInfo,
             "client created: " + std::to_string(count) + " device" + (count == 1 ? "" : "s") +
                 (world.num_nodes > 1 ? " in process " + std::to_string(world.node_id) + " of " +
                                            std::to_string(world.num_nodes) + " (" +
                                            std::to_string(client->devices.size()) + " in all)"
                                      : std::string()) +
                 ", " + std::to_string(runtime::DefaultThreadCount()) + " threads");
    args->client = client.release();
    return Status::Ok();
  });
}

PJRT_Error* Client_Destroy(PJRT_Client_Destroy_Args* args) {
  return Guard("PJRT_Client_Destroy", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_Destroy_Args, client, "PJRT_Client_Destroy");
    // Destroying the devices drains their work queues: pending executions finish first.
    delete args->client;
    return Status::Ok();
  });
}

PJRT_Error* Client_UpdateGlobalProcessInfo(PJRT_Client_UpdateGlobalProcessInfo_Args* args) {
  // The coordination service's view of which processes are alive. Kiln learns of a lost process
  // from the transport (its collectives fail within the timeout, naming it), so the update is
  // accepted; jaxlib treats an error here as fatal.
  (void)args;
  return nullptr;
}

// ---- identity ----

PJRT_Error* Client_PlatformName(PJRT_Client_PlatformName_Args* args) {
  return Guard("PJRT_Client_PlatformName", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_PlatformName_Args, platform_name_size,
                    "PJRT_Client_PlatformName");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_PlatformName");
    args->platform_name = kPlatformName;
    args->platform_name_size = sizeof(kPlatformName) - 1;
    return Status::Ok();
  });
}

PJRT_Error* Client_PlatformVersion(PJRT_Client_PlatformVersion_Args* args) {
  return Guard("PJRT_Client_PlatformVersion", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_PlatformVersion_Args, platform_version_size,
                    "PJRT_Client_PlatformVersion");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_PlatformVersion");
    args->platform_version = kPlatformVersion;
    args->platform_version_size = sizeof(kPlatformVersion) - 1;
    return Status::Ok();
  });
}

PJRT_Error* Client_ProcessIndex(PJRT_Client_ProcessIndex_Args* args) {
  return Guard("PJRT_Client_ProcessIndex", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_ProcessIndex_Args, process_index, "PJRT_Client_ProcessIndex");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_ProcessIndex");
    args->process_index = args->client->process_index;
    return Status::Ok();
  });
}

// ---- devices and memories ----

PJRT_Error* Client_Devices(PJRT_Client_Devices_Args* args) {
  return Guard("PJRT_Client_Devices", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_Devices_Args, num_devices, "PJRT_Client_Devices");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_Devices");
    args->devices = args->client->devices.data();
    args->num_devices = args->client->devices.size();
    return Status::Ok();
  });
}

PJRT_Error* Client_AddressableDevices(PJRT_Client_AddressableDevices_Args* args) {
  return Guard("PJRT_Client_AddressableDevices", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_AddressableDevices_Args, num_addressable_devices,
                    "PJRT_Client_AddressableDevices");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_AddressableDevices");
    args->addressable_devices = args->client->addressable_devices.data();
    args->num_addressable_devices = args->client->addressable_devices.size();
    return Status::Ok();
  });
}

PJRT_Error* Client_LookupDevice(PJRT_Client_LookupDevice_Args* args) {
  return Guard("PJRT_Client_LookupDevice", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_LookupDevice_Args, device, "PJRT_Client_LookupDevice");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_LookupDevice");
    PJRT_Device* d = args->client->FindDevice(args->id);
    if (d == nullptr) {
      return InvalidArgument("No matching device found for device_id " + std::to_string(args->id));
    }
    args->device = d;
    return Status::Ok();
  });
}

PJRT_Error* Client_LookupAddressableDevice(PJRT_Client_LookupAddressableDevice_Args* args) {
  return Guard("PJRT_Client_LookupAddressableDevice", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_LookupAddressableDevice_Args, addressable_device,
                    "PJRT_Client_LookupAddressableDevice");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_LookupAddressableDevice");
    for (PJRT_Device* d : args->client->addressable_devices) {
      if (d->local_hardware_id == args->local_hardware_id) {
        args->addressable_device = d;
        return Status::Ok();
      }
    }
    return InvalidArgument("No matching device found for local_hardware_id " +
                           std::to_string(args->local_hardware_id));
  });
}

PJRT_Error* Client_AddressableMemories(PJRT_Client_AddressableMemories_Args* args) {
  return Guard("PJRT_Client_AddressableMemories", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_AddressableMemories_Args, num_addressable_memories,
                    "PJRT_Client_AddressableMemories");
    KILN_CHECK_NOT_NULL(args->client, "PJRT_Client_AddressableMemories");
    args->addressable_memories = args->client->memories.data();
    args->num_addressable_memories = args->client->memories.size();
    return Status::Ok();
  });
}

PJRT_Error* Client_DefaultDeviceAssignment(PJRT_Client_DefaultDeviceAssignment_Args* args) {
  return Guard("PJRT_Client_DefaultDeviceAssignment", [&]() -> Status {
    constexpr char kFn[] = "PJRT_Client_DefaultDeviceAssignment";
    KILN_CHECK_ARGS(args, PJRT_Client_DefaultDeviceAssignment_Args, default_assignment, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    const int64_t replicas = args->num_replicas;
    const int64_t partitions = args->num_partitions;
    if (replicas <= 0 || partitions <= 0) {
      return InvalidArgument(std::string(kFn) +
                             ": `num_replicas` and `num_partitions` must be positive, got " +
                             std::to_string(replicas) + " and " + std::to_string(partitions));
    }
    const int64_t total = replicas * partitions;  // both < 2^31: no 64-bit overflow
    if (args->default_assignment_size < static_cast<size_t>(total)) {
      return FailedPrecondition(std::string(kFn) + ": `default_assignment_size` " +
                                std::to_string(args->default_assignment_size) +
                                " < `num_replicas * num_partitions`, " + std::to_string(replicas) +
                                " * " + std::to_string(partitions) + " = " + std::to_string(total));
    }
    KILN_CHECK_NOT_NULL(args->default_assignment, kFn);
    // XLA's placement: computation (partition) p, replica r -> device p * replicas + r, written
    // replica-major.
    for (int64_t r = 0; r < replicas; ++r) {
      for (int64_t p = 0; p < partitions; ++p) {
        args->default_assignment[r * partitions + p] = static_cast<int>(p * replicas + r);
      }
    }
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
