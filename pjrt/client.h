// PJRT_Client: the set of Kiln devices (1 by default; `kiln_device_count` create option or the
// KILN_DEVICE_COUNT environment variable for more) and their memories. All devices are addressable
// and belong to process 0.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "pjrt/device.h"
#include "support/status.h"

struct PJRT_Client {
  std::vector<std::unique_ptr<PJRT_Device>> owned_devices;
  std::vector<std::unique_ptr<kiln::pjrt::KilnMemory>> owned_memories;
  std::vector<PJRT_Device*> devices;   // ordered by id; id == index
  std::vector<PJRT_Memory*> memories;  // ordered by id; memory i belongs to device i

  PJRT_Device* FindDevice(int64_t id) const {
    if (id < 0 || id >= static_cast<int64_t>(devices.size())) return nullptr;
    return devices[static_cast<size_t>(id)];
  }
  bool Owns(const PJRT_Device* d) const {
    for (PJRT_Device* x : devices) {
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

StatusOr<std::unique_ptr<PJRT_Client>> MakeClient(int64_t device_count);

}  // namespace kiln::pjrt
