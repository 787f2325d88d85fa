// The HLO reader: a serialized xla.HloModuleProto (PJRT program format "hlo", what TensorFlow and
// PyTorch/XLA send through PjRtCApiClient::Compile(XlaComputation)) or HloModuleProtoWithConfig
// ("hlo_with_config") becomes the same kind of ir::Module the StableHLO readers produce: StableHLO
// op names and attribute forms, the entry computation as `main`, tuples flattened.
//
// Malformed protos are DATA_LOSS errors naming the byte offset and the instruction; opcodes,
// element types and layouts Kiln does not translate are UNIMPLEMENTED errors naming them.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "ir/module.h"
#include "support/status.h"

namespace kiln::ingest {

StatusOr<ir::Module> ReadHloModule(std::span<const uint8_t> bytes, bool with_config = false);

// A serialized HloModuleProtoWithConfig holding `hlo_module` (a serialized HloModuleProto) and a
// config with its entry_computation_layout (the module's host_program_shape), replica_count and
// num_partitions: what clients that read a compiled program back (PJRT_Executable_OptimizedProgram,
// PyTorch/XLA) need, since they refuse format "hlo" and check the layout.
StatusOr<std::string> HloModuleWithConfig(std::span<const uint8_t> hlo_module, int64_t replicas,
                                          int64_t partitions);

}  // namespace kiln::ingest
