// PJRT_Executable (the compiled program and its metadata) and PJRT_LoadedExecutable (that program
// bound to the devices of its device assignment). Both share one immutable ExecutableInfo, so the
// PJRT_Executable returned by GetExecutable is destroyed independently of the loaded executable.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "compiler/compile.h"
#include "pjrt/layouts.h"
#include "support/status.h"

namespace kiln::pjrt {

struct ExecutableInfo {
  std::shared_ptr<const compiler::Executable> exe;
  // Output metadata in the shapes the C API hands out.
  std::vector<PJRT_Buffer_Type> output_types;
  std::vector<int64_t> output_dims;      // all outputs' dims, concatenated
  std::vector<size_t> output_dim_sizes;  // rank of each output
  // Memory kinds of the outputs and parameters (`mhlo.memory_kind` attributes of the entry
  // function, else "device"), as indices into kMemoryKinds and as the C API hands them out.
  std::vector<int> output_memory_index, parameter_memory_index;
  std::vector<const char*> output_memory_kinds;
  std::vector<size_t> output_memory_kind_sizes;
  std::vector<const char*> parameter_memory_kinds;
  std::vector<size_t> parameter_memory_kind_sizes;
  // Layouts extension (pjrt/layouts.cc): every parameter and output is dense row-major.
  std::vector<PJRT_Layouts_MemoryLayout*> parameter_layouts, output_layouts;
  std::vector<std::unique_ptr<PJRT_Layouts_MemoryLayout>> owned_layouts;
  int64_t code_size_estimate = 0;
  // compiled.cost_analysis(): flops, transcendentals, bytes accessed (compiler/cost.h).
  std::vector<PJRT_NamedValue> cost_properties;
  // Partitioned programs: serialized xla.OpSharding per parameter / output (Shardings extension).
  struct ShardingList {
    std::vector<std::string> protos;
    std::vector<const char*> pointers;
    std::vector<size_t> sizes;
  };
  ShardingList parameter_shardings, output_shardings;
  std::string compile_options;  // the serialized CompileOptionsProto, as given
  std::string artifact;         // the program it was compiled from (PJRT_Program.code)
  std::string artifact_format;  // and its PJRT_Program.format ("mlir", "hlo", ...)
};

// Where one execution instance runs: list position i of Execute's argument/output lists.
struct ExecutionSlot {
  PJRT_Device* device = nullptr;
  int replica = 0;
  int partition = 0;
};

std::shared_ptr<const ExecutableInfo> MakeExecutableInfo(
    std::shared_ptr<const compiler::Executable> exe, std::string compile_options,
    std::string artifact, std::string artifact_format = "mlir");

}  // namespace kiln::pjrt

struct PJRT_Executable {
  explicit PJRT_Executable(std::shared_ptr<const kiln::pjrt::ExecutableInfo> i)
      : info(std::move(i)) {}
  std::shared_ptr<const kiln::pjrt::ExecutableInfo> info;
};

namespace kiln::pjrt {
// The executable's info, or INVALID_ARGUMENT naming `function` when `e` is NULL.
StatusOr<const ExecutableInfo*> InfoOf(const PJRT_Executable* e, const char* function);
}  // namespace kiln::pjrt

struct PJRT_LoadedExecutable {
  PJRT_Client* client = nullptr;
  std::shared_ptr<const kiln::pjrt::ExecutableInfo> info;
  // Replica-major, partition-minor (XLA's convention and the order jaxlib fills argument lists in).
  std::vector<kiln::pjrt::ExecutionSlot> slots;
  std::vector<PJRT_Device*> addressable_devices;  // slots[i].device
  std::string serialized_device_assignment;       // a DeviceAssignmentProto
  std::atomic<bool> deleted{false};
};

namespace kiln::pjrt {

// Compiles `code` (a portable artifact) with `options_bytes` (a CompileOptionsProto) for `client`:
// the shared path of PJRT_Client_Compile and PJRT_Executable_DeserializeAndLoad. Errors name
// `function`.
StatusOr<std::unique_ptr<PJRT_LoadedExecutable>> CompileAndLoad(
    PJRT_Client* client, std::span<const uint8_t> code, std::string_view format,
    std::span<const uint8_t> options_bytes, const char* function);

}  // namespace kiln::pjrt
