// PJRT_DeviceDescription_*, PJRT_Device_* and PJRT_Memory_* entry points.
#include "pjrt/device.h"

#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "runtime/array.h"

namespace kiln::pjrt {
namespace {

PJRT_NamedValue StringAttr(const std::string& name, const std::string& value) {
  PJRT_NamedValue v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(PJRT_NamedValue);
  v.name = name.c_str();
  v.name_size = name.size();
  v.type = PJRT_NamedValue_kString;
  v.string_value = value.c_str();
  v.value_size = value.size();
  return v;
}

PJRT_NamedValue Int64Attr(const std::string& name, int64_t value) {
  PJRT_NamedValue v;
  std::memset(&v, 0, sizeof(v));
  v.struct_size = sizeof(PJRT_NamedValue);
  v.name = name.c_str();
  v.name_size = name.size();
  v.type = PJRT_NamedValue_kInt64;
  v.int64_value = value;
  v.value_size = 1;
  return v;
}

}  // namespace

void FillDeviceDescription(const DevicePlace& place, PJRT_DeviceDescription& desc) {
  const int id = place.id;
  desc.id = id;
  desc.process_index = place.process_index;
  desc.kind = "kiln-cpu";
  desc.debug_string = "kiln:" + std::to_string(id);
  desc.to_string =
      "KilnDevice(id=" + std::to_string(id) +
      (place.process_index == 0 ? "" : ", process_index=" + std::to_string(place.process_index)) +
      ")";
  // Only kString / kInt64 / kInt64List attributes: jaxlib aborts on kFloat and kBool here.
  // Strings first (fixed size, never resized afterwards, so c_str() pointers stay valid).
  desc.attribute_strings = {"kiln_backend", "host-cpu", "kiln_device_index"};
  desc.attributes.clear();
  desc.attributes.push_back(StringAttr(desc.attribute_strings[0], desc.attribute_strings[1]));
  desc.attributes.push_back(Int64Attr(desc.attribute_strings[2], place.local_index));
}

std::unique_ptr<PJRT_Device> MakeDevice(const DevicePlace& place) {
  auto d = std::make_unique<PJRT_Device>();
  const int id = place.id;
  FillDeviceDescription(place, d->description);
  d->addressable = place.addressable;
  d->local_hardware_id = place.addressable ? place.local_index : -1;
  if (place.addressable) {
    d->queue = std::make_unique<runtime::WorkQueue>("kiln-device-" + std::to_string(id));
  }
  return d;
}

// ---- PJRT_DeviceDescription ----

PJRT_Error* DeviceDescription_Id(PJRT_DeviceDescription_Id_Args* args) {
  return Guard("PJRT_DeviceDescription_Id", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_Id_Args, id, "PJRT_DeviceDescription_Id");
    KILN_CHECK_NOT_NULL(args->device_description, "PJRT_DeviceDescription_Id");
    args->id = args->device_description->id;
    return Status::Ok();
  });
}

PJRT_Error* DeviceDescription_ProcessIndex(PJRT_DeviceDescription_ProcessIndex_Args* args) {
  return Guard("PJRT_DeviceDescription_ProcessIndex", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_ProcessIndex_Args, process_index,
                    "PJRT_DeviceDescription_ProcessIndex");
    KILN_CHECK_NOT_NULL(args->device_description, "PJRT_DeviceDescription_ProcessIndex");
    args->process_index = args->device_description->process_index;
    return Status::Ok();
  });
}

PJRT_Error* DeviceDescription_Attributes(PJRT_DeviceDescription_Attributes_Args* args) {
  return Guard("PJRT_DeviceDescription_Attributes", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_Attributes_Args, attributes,
                    "PJRT_DeviceDescription_Attributes");
    KILN_CHECK_NOT_NULL(args->device_description, "PJRT_DeviceDescription_Attributes");
    const auto& attrs = args->device_description->attributes;
    args->num_attributes = attrs.size();
    args->attributes = attrs.data();
    return Status::Ok();
  });
}

PJRT_Error* DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args* args) {
  return Guard("PJRT_DeviceDescription_Kind", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_Kind_Args, device_kind_size,
                    "PJRT_DeviceDescription_Kind");
    KILN_CHECK_NOT_NULL(args->device_description, "PJRT_DeviceDescription_Kind");
    const std::string& s = args->device_description->kind;
    args->device_kind = s.c_str();
    args->device_kind_size = s.size();
    return Status::Ok();
  });
}

PJRT_Error* DeviceDescription_DebugString(PJRT_DeviceDescription_DebugString_Args* args) {
  return Guard("PJRT_DeviceDescription_DebugString", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_DebugString_Args, debug_string_size,
                    "PJRT_DeviceDescription_DebugString");
    KILN_CHECK_NOT_NULL(args->device_description, "PJRT_DeviceDescription_DebugString");
    const std::string& s = args->device_description->debug_string;
    args->debug_string = s.c_str();
    args->debug_string_size = s.size();
    return Status::Ok();
  });
}

PJRT_Error* DeviceDescription_ToString(PJRT_DeviceDescription_ToString_Args* args) {
  return Guard("PJRT_DeviceDescription_ToString", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_DeviceDescription_ToString_Args, to_string_size,
                    "PJRT_DeviceDescription_ToString");
    KILN_CHECK_NOT_NULL(args->device_description, "PJRT_DeviceDescription_ToString");
    const std::string& s = args->device_description->to_string;
    args->to_string = s.c_str();
    args->to_string_size = s.size();
    return Status::Ok();
  });
}

// ---- PJRT_Device ----

PJRT_Error* Device_GetDescription(PJRT_Device_GetDescription_Args* args) {
  return Guard("PJRT_Device_GetDescription", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_GetDescription_Args, device_description,
                    "PJRT_Device_GetDescription");
    KILN_CHECK_NOT_NULL(args->device, "PJRT_Device_GetDescription");
    args->device_description = &args->device->description;
    return Status::Ok();
  });
}

PJRT_Error* Device_IsAddressable(PJRT_Device_IsAddressable_Args* args) {
  return Guard("PJRT_Device_IsAddressable", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_IsAddressable_Args, is_addressable,
                    "PJRT_Device_IsAddressable");
    KILN_CHECK_NOT_NULL(args->device, "PJRT_Device_IsAddressable");
    args->is_addressable = args->device->addressable;
    return Status::Ok();
  });
}

PJRT_Error* Device_LocalHardwareId(PJRT_Device_LocalHardwareId_Args* args) {
  return Guard("PJRT_Device_LocalHardwareId", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_LocalHardwareId_Args, local_hardware_id,
                    "PJRT_Device_LocalHardwareId");
    KILN_CHECK_NOT_NULL(args->device, "PJRT_Device_LocalHardwareId");
    args->local_hardware_id = args->device->local_hardware_id;
    return Status::Ok();
  });
}

PJRT_Error* Device_AddressableMemories(PJRT_Device_AddressableMemories_Args* args) {
  return Guard("PJRT_Device_AddressableMemories", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_AddressableMemories_Args, num_memories,
                    "PJRT_Device_AddressableMemories");
    KILN_CHECK_NOT_NULL(args->device, "PJRT_Device_AddressableMemories");
    const bool here = args->device->addressable;  // another process's memories are not
    args->memories = here ? args->device->memories.data() : nullptr;
    args->num_memories = here ? args->device->memories.size() : 0;
    return Status::Ok();
  });
}

PJRT_Error* Device_DefaultMemory(PJRT_Device_DefaultMemory_Args* args) {
  return Guard("PJRT_Device_DefaultMemory", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_DefaultMemory_Args, memory, "PJRT_Device_DefaultMemory");
    KILN_CHECK_NOT_NULL(args->device, "PJRT_Device_DefaultMemory");
    args->memory = args->device->memory;
    return Status::Ok();
  });
}

PJRT_Error* Device_MemoryStats(PJRT_Device_MemoryStats_Args* args) {
  // Kiln's devices share the host heap: the figures are the process's live array memory (what
  // every Kiln device's buffers and results hold together) and the machine's physical memory as
  // the limit. jaxlib 0.10.2 passes the 185-byte 0.112 struct: fields past it are not written.
  constexpr char kFn[] = "PJRT_Device_MemoryStats";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_MemoryStats_Args, bytes_in_use, kFn);
    KILN_CHECK_NOT_NULL(args->device, kFn);
    const runtime::MemoryCounters c = runtime::GetMemoryCounters();
    args->bytes_in_use = c.bytes_in_use;
    // jaxlib does not zero the struct: clear every optional field (and its _is_set flag) the
    // caller's struct has before setting the ones Kiln knows.
    const size_t begin = offsetof(PJRT_Device_MemoryStats_Args, peak_bytes_in_use);
    const size_t end = std::min(args->struct_size, sizeof(PJRT_Device_MemoryStats_Args));
    if (end > begin) std::memset(reinterpret_cast<char*>(args) + begin, 0, end - begin);
    const auto fits = [&](size_t end) { return args->struct_size >= end; };
#define KILN_SET_STAT(field, value)                                                  \
  if (fits(offsetof(PJRT_Device_MemoryStats_Args, field##_is_set) + sizeof(bool))) { \
    args->field = (value);                                                           \
    args->field##_is_set = true;                                                     \
  }
    KILN_SET_STAT(peak_bytes_in_use, c.peak_bytes_in_use);
    KILN_SET_STAT(num_allocs, c.num_allocs);
    KILN_SET_STAT(largest_alloc_size, c.largest_alloc_size);
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) KILN_SET_STAT(bytes_limit, static_cast<int64_t>(pages) * page);
#undef KILN_SET_STAT
    return Status::Ok();
  });
}

PJRT_Error* Device_ClearMemoryStats(PJRT_Device_ClearMemoryStats_Args* args) {
  // The counters are the process's (every Kiln device shares the host heap, see
  // Device_MemoryStats), so clearing them through one device clears them for all.
  constexpr char kFn[] = "PJRT_Device_ClearMemoryStats";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Device_ClearMemoryStats_Args, device, kFn);
    KILN_CHECK_NOT_NULL(args->device, kFn);
    runtime::ClearMemoryCounters();
    return Status::Ok();
  });
}

// ---- PJRT_Memory ----

PJRT_Error* Memory_Id(PJRT_Memory_Id_Args* args) {
  return Guard("PJRT_Memory_Id", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Memory_Id_Args, id, "PJRT_Memory_Id");
    KILN_CHECK_NOT_NULL(args->memory, "PJRT_Memory_Id");
    args->id = AsKiln(args->memory)->id;
    return Status::Ok();
  });
}

PJRT_Error* Memory_Kind(PJRT_Memory_Kind_Args* args) {
  return Guard("PJRT_Memory_Kind", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Memory_Kind_Args, kind_size, "PJRT_Memory_Kind");
    KILN_CHECK_NOT_NULL(args->memory, "PJRT_Memory_Kind");
    const std::string_view kind = kMemoryKinds[AsKiln(args->memory)->kind_index].kind;
    args->kind = kind.data();
    args->kind_size = kind.size();
    return Status::Ok();
  });
}

PJRT_Error* Memory_Kind_Id(PJRT_Memory_Kind_Id_Args* args) {
  return Guard("PJRT_Memory_Kind_Id", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Memory_Kind_Id_Args, kind_id, "PJRT_Memory_Kind_Id");
    KILN_CHECK_NOT_NULL(args->memory, "PJRT_Memory_Kind_Id");
    args->kind_id = kMemoryKinds[AsKiln(args->memory)->kind_index].kind_id;
    return Status::Ok();
  });
}

PJRT_Error* Memory_DebugString(PJRT_Memory_DebugString_Args* args) {
  return Guard("PJRT_Memory_DebugString", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Memory_DebugString_Args, debug_string_size,
                    "PJRT_Memory_DebugString");
    KILN_CHECK_NOT_NULL(args->memory, "PJRT_Memory_DebugString");
    const std::string& s = AsKiln(args->memory)->debug_string;
    args->debug_string = s.c_str();
    args->debug_string_size = s.size();
    return Status::Ok();
  });
}

PJRT_Error* Memory_ToString(PJRT_Memory_ToString_Args* args) {
  return Guard("PJRT_Memory_ToString", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Memory_ToString_Args, to_string_size, "PJRT_Memory_ToString");
    KILN_CHECK_NOT_NULL(args->memory, "PJRT_Memory_ToString");
    const std::string& s = AsKiln(args->memory)->to_string;
    args->to_string = s.c_str();
    args->to_string_size = s.size();
    return Status::Ok();
  });
}

PJRT_Error* Memory_AddressableByDevices(PJRT_Memory_AddressableByDevices_Args* args) {
  return Guard("PJRT_Memory_AddressableByDevices", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Memory_AddressableByDevices_Args, num_devices,
                    "PJRT_Memory_AddressableByDevices");
    KILN_CHECK_NOT_NULL(args->memory, "PJRT_Memory_AddressableByDevices");
    const auto& devices = AsKiln(args->memory)->devices;
    args->devices = devices.data();
    args->num_devices = devices.size();
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
