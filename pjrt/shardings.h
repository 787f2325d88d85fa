// The Shardings extension (abi/pjrt_shardings_extension.h): a partitioned executable's parameter
// and output shardings as serialized xla.OpSharding protos.
#pragma once

#include <string>

#include "abi/pjrt_shardings_extension.h"
#include "compiler/partition.h"

namespace kiln::pjrt {

// xla.OpSharding of one value of a partitioned program over `devices` logical devices.
std::string SerializeOpSharding(const lower::ValueLayout& value, int devices);

PJRT_Shardings_Extension MakeShardingsExtension(PJRT_Extension_Base* next);

}  // namespace kiln::pjrt
