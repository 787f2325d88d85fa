// PJRT_TopologyDescription: the devices of a Kiln run described without a client, so a program can
// be compiled ahead of time (PJRT_Compile) and loaded into a client later. A Kiln topology is the
// number of devices in each process; every device is a "kiln-cpu" described exactly as a client's
// (pjrt/device.h), with global ids process by process.
//
// A client's own topology (PJRT_Client_TopologyDescription) is owned by the client; one made by
// name (PJRT_TopologyDescription_Create) or from bytes (PJRT_TopologyDescription_Deserialize) is
// owned by the caller, who destroys it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "pjrt/device.h"
#include "support/status.h"

struct PJRT_TopologyDescription {
  PJRT_TopologyDescription() = default;
  PJRT_TopologyDescription(const PJRT_TopologyDescription&) = delete;
  PJRT_TopologyDescription& operator=(const PJRT_TopologyDescription&) = delete;

  std::vector<int64_t> device_counts;  // per process, in process order
  int64_t device_count = 0;            // their sum
  std::vector<std::unique_ptr<PJRT_DeviceDescription>> owned_descriptions;
  std::vector<PJRT_DeviceDescription*> descriptions;  // ordered by global id; id == index
  std::string serialized;                             // the canonical bytes (Serialize)
  uint64_t fingerprint = 0;                           // of `serialized`
  // Attribute storage: `attributes` points into the fields above.
  std::vector<PJRT_NamedValue> attributes;
  bool owned_by_client = false;  // a client's own: PJRT_TopologyDescription_Destroy refuses it
};

namespace kiln::pjrt {

// A topology of `device_counts[p]` devices in process p (at least one process, each with 1 to
// kMaxDeviceCount devices, kMaxDeviceCount in all).
StatusOr<std::unique_ptr<PJRT_TopologyDescription>> MakeTopology(
    const std::vector<int64_t>& device_counts);

}  // namespace kiln::pjrt
