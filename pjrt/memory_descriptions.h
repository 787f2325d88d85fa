// The MemoryDescriptions extension (abi/pjrt_memory_descriptions_extension.h): the memory kinds
// of a device description (every Kiln device has kMemoryKinds, "device" the default), known
// without a client.
#pragma once

#include "abi/pjrt_memory_descriptions_extension.h"

namespace kiln::pjrt {

PJRT_MemoryDescriptions_Extension MakeMemoryDescriptionsExtension(PJRT_Extension_Base* next);

}  // namespace kiln::pjrt
