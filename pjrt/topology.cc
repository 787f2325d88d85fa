// PJRT_TopologyDescription_* and PJRT_Client_TopologyDescription (pjrt/topology.h).
//
// Serialized form, little-endian: "KILNTOPO" | u32 format (1) | u32 process count | u64 device
// count per process. Two topologies are equal when their bytes are; the fingerprint is FNV-1a of
// them.
#include "pjrt/topology.h"

#include <cstring>
#include <string>
#include <string_view>

#include "pjrt/args_check.h"
#include "pjrt/client.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

struct PJRT_SerializedTopology {
  std::string bytes;
};

namespace kiln::pjrt {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'T', 'O', 'P', 'O'};
constexpr uint32_t kFormat = 1;

// Names PJRT_TopologyDescription_Create accepts: Kiln's own, and "cpu" (Kiln is a CPU backend).
constexpr std::string_view kTopologyNames[] = {"kiln", "cpu"};

// Attribute names (literals: they outlive every topology).
constexpr char kAttrDeviceCount[] = "device_count";
constexpr char kAttrProcessCount[] = "process_count";
constexpr char kAttrDevicesPerProcess[] = "devices_per_process";

template <typename T>
void AppendInt(std::string& out, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

template <typename T>
bool ReadInt(std::string_view& in, T* v) {
  if (in.size() < sizeof(T)) return false;
  T x = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    x |= static_cast<T>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  in.remove_prefix(sizeof(T));
  *v = x;
  return true;
}

uint64_t Fnv1a(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

PJRT_NamedValue Int64Value(const char* name, int64_t value) {
  PJRT_NamedValue v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v.name = name;
  v.name_size = std::strlen(name);
  v.type = PJRT_NamedValue_kInt64;
  v.int64_value = value;
  v.value_size = 1;
  return v;
}

PJRT_NamedValue Int64ListValue(const char* name, const std::vector<int64_t>& list) {
  PJRT_NamedValue v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = PJRT_NamedValue_STRUCT_SIZE;
  v.name = name;
  v.name_size = std::strlen(name);
  v.type = PJRT_NamedValue_kInt64List;
  v.int64_array_value = list.data();
  v.value_size = list.size();
  return v;
}

// The options of PJRT_TopologyDescription_Create: devices per process (`kiln_device_count`, the
// client's option, or `cpu_device_count`, XLA:CPU's), the total (`num_devices`) and the process
// count (`num_processes`). Any other option is an error naming it.
struct TopologyOptions {
  int64_t per_process = 0;  // 0: not given
  int64_t total = 0;        // 0: not given
  int64_t processes = 1;
};

StatusOr<TopologyOptions> ReadTopologyOptions(const PJRT_NamedValue* options, size_t n,
                                              const char* fn) {
  if (n > 0 && options == nullptr) {
    return InvalidArgument(Prefix(fn) + "create_options is NULL but num_options is " +
                           std::to_string(n));
  }
  TopologyOptions out;
  for (size_t i = 0; i < n; ++i) {
    const PJRT_NamedValue& o = options[i];
    if (o.name == nullptr && o.name_size > 0) {
      return InvalidArgument(Prefix(fn) + "create option " + std::to_string(i) + " has no name");
    }
    const std::string_view name(o.name == nullptr ? "" : o.name, o.name_size);
    int64_t* field = (name == "kiln_device_count" || name == "cpu_device_count") ? &out.per_process
                     : name == "num_devices"                                     ? &out.total
                     : name == "num_processes"                                   ? &out.processes
                                                                                 : nullptr;
    if (field == nullptr) {
      return InvalidArgument(Prefix(fn) + "unknown create option '" + std::string(name) +
                             "'; Kiln's topology takes kiln_device_count (or cpu_device_count): "
                             "devices per process, num_devices: devices in all, and "
                             "num_processes");
    }
    if (RawEnum(o.type) != PJRT_NamedValue_kInt64) {
      return InvalidArgument(Prefix(fn) + "create option '" + std::string(name) +
                             "' must be an int64");
    }
    if (o.int64_value < 1 || o.int64_value > kMaxDeviceCount) {
      return InvalidArgument(Prefix(fn) + "create option '" + std::string(name) +
                             "' must be between 1 and " + std::to_string(kMaxDeviceCount) +
                             ", got " + std::to_string(o.int64_value));
    }
    *field = o.int64_value;
  }
  return out;
}

StatusOr<std::vector<int64_t>> DeviceCounts(const TopologyOptions& o, const char* fn) {
  int64_t per_process = o.per_process;
  if (o.total > 0) {
    if (o.total % o.processes != 0) {
      return InvalidArgument(Prefix(fn) + "num_devices " + std::to_string(o.total) +
                             " is not a multiple of num_processes " + std::to_string(o.processes));
    }
    if (per_process > 0 && per_process * o.processes != o.total) {
      return InvalidArgument(Prefix(fn) + "num_devices " + std::to_string(o.total) + " is not " +
                             std::to_string(o.processes) + " processes of " +
                             std::to_string(per_process) + " devices");
    }
    per_process = o.total / o.processes;
  }
  if (per_process == 0) {
    KILN_ASSIGN_OR_RETURN(per_process, DefaultDeviceCount(fn));
  }
  return std::vector<int64_t>(static_cast<size_t>(o.processes), per_process);
}

StatusOr<PJRT_TopologyDescription*> TopologyOf(PJRT_TopologyDescription* t, const char* fn) {
  if (t == nullptr) return InvalidArgument(Prefix(fn) + "topology is NULL");
  return t;
}

}  // namespace

StatusOr<std::unique_ptr<PJRT_TopologyDescription>> MakeTopology(
    const std::vector<int64_t>& device_counts) {
  if (device_counts.empty()) return InvalidArgument("a topology needs at least one process");
  auto t = std::make_unique<PJRT_TopologyDescription>();
  t->device_counts = device_counts;
  for (size_t p = 0; p < device_counts.size(); ++p) {
    const int64_t n = device_counts[p];
    if (n < 1 || n > kMaxDeviceCount || t->device_count + n > kMaxDeviceCount) {
      return InvalidArgument("a topology has 1 to " + std::to_string(kMaxDeviceCount) +
                             " devices per process and " + std::to_string(kMaxDeviceCount) +
                             " in all; process " + std::to_string(p) + " has " + std::to_string(n));
    }
    for (int64_t i = 0; i < n; ++i) {
      auto desc = std::make_unique<PJRT_DeviceDescription>();
      FillDeviceDescription({static_cast<int>(t->device_count + i), static_cast<int>(p),
                             static_cast<int>(i), /*addressable=*/false},
                            *desc);
      t->descriptions.push_back(desc.get());
      t->owned_descriptions.push_back(std::move(desc));
    }
    t->device_count += n;
  }
  std::string& s = t->serialized;
  s.append(kMagic, sizeof(kMagic));
  AppendInt<uint32_t>(s, kFormat);
  AppendInt<uint32_t>(s, static_cast<uint32_t>(device_counts.size()));
  for (int64_t n : device_counts) AppendInt<uint64_t>(s, static_cast<uint64_t>(n));
  t->fingerprint = Fnv1a(s);
  t->attributes = {Int64Value(kAttrDeviceCount, t->device_count),
                   Int64Value(kAttrProcessCount, static_cast<int64_t>(device_counts.size())),
                   Int64ListValue(kAttrDevicesPerProcess, t->device_counts)};
  return t;
}

// ---- creation and lifetime ----

PJRT_Error* Client_TopologyDescription(PJRT_Client_TopologyDescription_Args* args) {
  constexpr char kFn[] = "PJRT_Client_TopologyDescription";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_TopologyDescription_Args, topology, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    if (args->client->topology == nullptr) return Internal(Prefix(kFn) + "client has no topology");
    args->topology = args->client->topology.get();
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_Create(PJRT_TopologyDescription_Create_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_Create";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_Create_Args, topology, kFn);
    if (args->topology_name == nullptr && args->topology_name_size > 0) {
      return InvalidArgument(Prefix(kFn) + "topology_name is NULL but topology_name_size is " +
                             std::to_string(args->topology_name_size));
    }
    const std::string_view name(args->topology_name == nullptr ? "" : args->topology_name,
                                args->topology_name_size);
    bool known = name.empty();  // JAX's get_topology_desc passes "" for "this platform's"
    for (std::string_view k : kTopologyNames) known = known || name == k;
    if (!known) {
      return InvalidArgument(Prefix(kFn) + "unknown topology name '" + std::string(name) +
                             "'; Kiln's topologies are named 'kiln' (or 'cpu', or left empty), "
                             "with the device count as a create option (kiln_device_count)");
    }
    KILN_ASSIGN_OR_RETURN(TopologyOptions options,
                          ReadTopologyOptions(args->create_options, args->num_options, kFn));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> counts, DeviceCounts(options, kFn));
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<PJRT_TopologyDescription> t, MakeTopology(counts),
                          std::string(kFn));
    args->topology = t.release();
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_Destroy(PJRT_TopologyDescription_Destroy_Args* args) {
  // Only topologies the caller owns (Create, Deserialize) may be destroyed; a client's is the
  // client's.
  constexpr char kFn[] = "PJRT_TopologyDescription_Destroy";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_Destroy_Args, topology, kFn);
    if (args->topology != nullptr && args->topology->owned_by_client) {
      return InvalidArgument(Prefix(kFn) +
                             "this topology is a client's (PJRT_Client_TopologyDescription); it "
                             "lives as long as the client");
    }
    delete args->topology;
    return Status::Ok();
  });
}

// ---- identity ----

PJRT_Error* TopologyDescription_PlatformName(PJRT_TopologyDescription_PlatformName_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_PlatformName";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_PlatformName_Args, platform_name_size, kFn);
    KILN_CHECK_NOT_NULL(args->topology, kFn);
    args->platform_name = kPlatformName;
    args->platform_name_size = sizeof(kPlatformName) - 1;
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_PlatformVersion(
    PJRT_TopologyDescription_PlatformVersion_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_PlatformVersion";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_PlatformVersion_Args, platform_version_size,
                    kFn);
    KILN_CHECK_NOT_NULL(args->topology, kFn);
    args->platform_version = kPlatformVersion;
    args->platform_version_size = sizeof(kPlatformVersion) - 1;
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_GetDeviceDescriptions(
    PJRT_TopologyDescription_GetDeviceDescriptions_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_GetDeviceDescriptions";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_GetDeviceDescriptions_Args, num_descriptions,
                    kFn);
    KILN_CHECK_NOT_NULL(args->topology, kFn);
    args->descriptions = args->topology->descriptions.data();
    args->num_descriptions = args->topology->descriptions.size();
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_Attributes(PJRT_TopologyDescription_Attributes_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_Attributes";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_Attributes_Args, num_attributes, kFn);
    KILN_ASSIGN_OR_RETURN(PJRT_TopologyDescription * t, TopologyOf(args->topology, kFn));
    args->attributes = t->attributes.data();
    args->num_attributes = t->attributes.size();
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_Fingerprint(PJRT_TopologyDescription_Fingerprint_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_Fingerprint";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_Fingerprint_Args, fingerprint, kFn);
    KILN_CHECK_NOT_NULL(args->topology, kFn);
    args->fingerprint = args->topology->fingerprint;
    return Status::Ok();
  });
}

// ---- serialization ----

PJRT_Error* TopologyDescription_Serialize(PJRT_TopologyDescription_Serialize_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_Serialize";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_Serialize_Args, serialized_topology_deleter,
                    kFn);
    KILN_ASSIGN_OR_RETURN(PJRT_TopologyDescription * t, TopologyOf(args->topology, kFn));
    auto blob = std::make_unique<PJRT_SerializedTopology>();
    blob->bytes = t->serialized;
    args->serialized_bytes = blob->bytes.data();
    args->serialized_bytes_size = blob->bytes.size();
    args->serialized_topology = blob.release();
    args->serialized_topology_deleter = [](PJRT_SerializedTopology* s) { delete s; };
    return Status::Ok();
  });
}

PJRT_Error* TopologyDescription_Deserialize(PJRT_TopologyDescription_Deserialize_Args* args) {
  constexpr char kFn[] = "PJRT_TopologyDescription_Deserialize";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_TopologyDescription_Deserialize_Args, topology, kFn);
    if (args->serialized_topology == nullptr && args->serialized_topology_size > 0) {
      return InvalidArgument(Prefix(kFn) + "serialized_topology is NULL but its size is " +
                             std::to_string(args->serialized_topology_size));
    }
    std::string_view in(args->serialized_topology == nullptr ? "" : args->serialized_topology,
                        args->serialized_topology_size);
    if (in.size() < sizeof(kMagic) || std::memcmp(in.data(), kMagic, sizeof(kMagic)) != 0) {
      return InvalidArgument(Prefix(kFn) + "not a serialized Kiln topology");
    }
    in.remove_prefix(sizeof(kMagic));
    uint32_t format = 0, processes = 0;
    if (!ReadInt(in, &format) || format != kFormat) {
      return InvalidArgument(Prefix(kFn) + "serialized topology format " + std::to_string(format) +
                             " is not Kiln's format " + std::to_string(kFormat));
    }
    if (!ReadInt(in, &processes) || processes < 1 || processes > kMaxDeviceCount) {
      return InvalidArgument(Prefix(kFn) + "bad process count in the serialized topology");
    }
    if (in.size() != static_cast<size_t>(processes) * sizeof(uint64_t)) {
      return InvalidArgument(Prefix(kFn) + "the serialized topology is " +
                             std::to_string(args->serialized_topology_size) + " bytes; " +
                             std::to_string(processes) + " processes take " +
                             std::to_string(16 + processes * sizeof(uint64_t)));
    }
    std::vector<int64_t> counts;
    for (uint32_t p = 0; p < processes; ++p) {
      uint64_t n = 0;
      ReadInt(in, &n);
      if (n < 1 || n > static_cast<uint64_t>(kMaxDeviceCount)) {
        return InvalidArgument(Prefix(kFn) + "process " + std::to_string(p) + " has " +
                               std::to_string(n) + " devices in the serialized topology");
      }
      counts.push_back(static_cast<int64_t>(n));
    }
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<PJRT_TopologyDescription> t, MakeTopology(counts),
                          std::string(kFn));
    args->topology = t.release();
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
