// Devices, their descriptions and their memories. Each Kiln device is a slice of the host CPU with
// its own WorkQueue (its "stream") and three memories, as XLA:CPU's devices have: "device" (the
// default), "pinned_host" and "unpinned_host". On a CPU all three are the same host memory; a
// buffer records which one it was placed in, and programs report the kinds of their arguments and
// results.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "runtime/work_queue.h"

struct PJRT_DeviceDescription {
  int id = 0;
  int process_index = 0;
  std::string kind;          // "kiln-cpu"
  std::string debug_string;  // "kiln:0"   (str(device))
  std::string to_string;     // "KilnDevice(id=0)"  (repr(device))
  // Attribute storage: `attributes` points into `attribute_strings`, so neither may be resized
  // after the description is built.
  std::vector<std::string> attribute_strings;
  std::vector<PJRT_NamedValue> attributes;
};

namespace kiln::pjrt {

// The memory kinds of every Kiln device, in the order of its memories (the first is the default,
// JAX's default memory kind), with stable non-zero ids (PJRT_Memory_Kind_Id).
inline constexpr const char kDeviceMemoryKind[] = "device";
inline constexpr const char kPinnedHostMemoryKind[] = "pinned_host";
inline constexpr const char kUnpinnedHostMemoryKind[] = "unpinned_host";
struct MemoryKindInfo {
  std::string_view kind;
  int kind_id;
};
inline constexpr MemoryKindInfo kMemoryKinds[] = {
    {kDeviceMemoryKind, 1}, {kPinnedHostMemoryKind, 2}, {kUnpinnedHostMemoryKind, 3}};
inline constexpr int kMemoriesPerDevice = 3;

// The index in kMemoryKinds of `kind`, or -1 when Kiln has no memory of that kind.
inline int MemoryKindIndex(std::string_view kind) {
  for (int i = 0; i < kMemoriesPerDevice; ++i) {
    if (kMemoryKinds[i].kind == kind) return i;
  }
  return -1;
}

// PJRT_Memory is a header-defined struct whose first member is the vtable pointer (minor >= 105);
// Kiln derives from it and sets the vtable to NULL, which jaxlib accepts.
struct KilnMemory : PJRT_Memory {
  KilnMemory() { vtable = nullptr; }
  int id = 0;
  int kind_index = 0;                 // into kMemoryKinds
  std::string debug_string;           // "kiln:0:device"
  std::string to_string;              // "KilnMemory(id=0, kind=device)"
  std::vector<PJRT_Device*> devices;  // devices that can address this memory
};

inline KilnMemory* AsKiln(PJRT_Memory* m) { return static_cast<KilnMemory*>(m); }

}  // namespace kiln::pjrt

struct PJRT_Device {
  PJRT_DeviceDescription description;
  PJRT_Client* client = nullptr;
  // This process's device (the others of a multi-process run are listed, not addressable: no
  // queue, no buffers). Its index among its process's devices; -1 when not addressable.
  bool addressable = true;
  int local_hardware_id = 0;
  kiln::pjrt::KilnMemory* memory = nullptr;         // the default memory (kind "device")
  std::vector<PJRT_Memory*> memories;               // one per kMemoryKinds entry, in that order
  std::unique_ptr<kiln::runtime::WorkQueue> queue;  // NULL when not addressable
};

namespace kiln::pjrt {

// Where a device is: its global id, the process that holds it, its index there, and whether that
// process is this one.
struct DevicePlace {
  int id = 0;
  int process_index = 0;
  int local_index = 0;
  bool addressable = true;
};

// Fills `desc` (which must not move afterwards: its attributes point into its own strings) for the
// device at `place`; devices and topologies describe their devices alike.
void FillDeviceDescription(const DevicePlace& place, PJRT_DeviceDescription& desc);

// Builds a device (description, attributes, and a work queue when addressable); the caller wires
// memory and client.
std::unique_ptr<PJRT_Device> MakeDevice(const DevicePlace& place);

}  // namespace kiln::pjrt
