// PJRT_Compile: compiling ahead of time against a topology, with no client (jax.jit(f).lower(...)
// .compile() on a topology's compile-only devices, pypjrt's Topology.compile). The result is an
// unloaded PJRT_Executable: it answers every PJRT_Executable_* query and serializes
// (PJRT_Executable_Serialize) into the blob PJRT_Executable_DeserializeAndLoad loads into a client
// later (pjrt/executable_serialize.cc).
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "compiler/compile.h"
#include "ingest/compile_options.h"
#include "pjrt/args_check.h"
#include "pjrt/client.h"
#include "pjrt/dump.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"
#include "pjrt/topology.h"
#include "support/thread.h"

namespace kiln::pjrt {
namespace {

// The program must fit the topology: replicas x partitions devices, each id one of the topology's.
Status CheckPlacement(const ingest::CompileOptions& o, const PJRT_TopologyDescription& topology,
                      const char* fn) {
  const int64_t replicas = o.num_replicas, partitions = o.num_partitions;
  if (replicas < 1 || partitions < 1 || replicas > kMaxDeviceCount ||
      partitions > kMaxDeviceCount || replicas * partitions > topology.device_count) {
    return InvalidArgument(Prefix(fn) + "the program needs " + std::to_string(replicas) + " x " +
                           std::to_string(partitions) +
                           " (replicas x partitions) devices; the topology has " +
                           std::to_string(topology.device_count));
  }
  if (!o.has_device_assignment()) return Status::Ok();
  if (o.device_assignment.size() != static_cast<size_t>(replicas)) {
    return InvalidArgument(Prefix(fn) + "the device assignment does not have num_replicas rows");
  }
  for (const auto& row : o.device_assignment) {
    if (row.size() != static_cast<size_t>(partitions)) {
      return InvalidArgument(Prefix(fn) +
                             "the device assignment does not have num_partitions columns");
    }
    for (int64_t id : row) {
      if (id < 0 || id >= topology.device_count) {
        return InvalidArgument(Prefix(fn) + "the program is assigned to device " +
                               std::to_string(id) + " but the topology has " +
                               std::to_string(topology.device_count) + " device(s)");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

PJRT_Error* Compile(PJRT_Compile_Args* args) {
  constexpr char kFn[] = "PJRT_Compile";
  return Guard(kFn, [&]() -> Status {
    // `client` is optional and not needed: a Kiln executable depends only on the topology.
    KILN_CHECK_ARGS(args, PJRT_Compile_Args, executable, kFn);
    KILN_CHECK_NOT_NULL(args->topology, kFn);
    KILN_CHECK_NOT_NULL(args->program, kFn);
    const PJRT_Program* program = args->program;
    KILN_CHECK_ARGS(program, PJRT_Program, format_size, "PJRT_Compile (program)");
    if (program->code == nullptr && program->code_size > 0) {
      return InvalidArgument(Prefix(kFn) + "program->code is NULL but code_size is " +
                             std::to_string(program->code_size));
    }
    if (program->format == nullptr && program->format_size > 0) {
      return InvalidArgument(Prefix(kFn) + "program->format is NULL but format_size is " +
                             std::to_string(program->format_size));
    }
    if (args->compile_options == nullptr && args->compile_options_size > 0) {
      return InvalidArgument(Prefix(kFn) + "compile_options is NULL but compile_options_size is " +
                             std::to_string(args->compile_options_size));
    }
    const std::string_view format(program->format == nullptr ? "" : program->format,
                                  program->format_size);
    const std::span<const uint8_t> code(reinterpret_cast<const uint8_t*>(program->code),
                                        program->code == nullptr ? 0 : program->code_size);
    const std::span<const uint8_t> options_bytes(
        reinterpret_cast<const uint8_t*>(args->compile_options),
        args->compile_options == nullptr ? 0 : args->compile_options_size);
    KILN_ASSIGN_OR_RETURN(ingest::CompileOptions options,
                          ingest::ParseCompileOptions(options_bytes), std::string(kFn));
    KILN_RETURN_IF_ERROR(CheckPlacement(options, *args->topology, kFn));
    // As PJRT_Client_Compile: reading and compiling recurse, so they run on a large stack.
    std::shared_ptr<const compiler::Executable> exe;
    KILN_RETURN_IF_ERROR(RunOnLargeStack([&]() -> Status {
      KILN_ASSIGN_OR_RETURN(exe, compiler::Compile({code, format, options}));
      return Status::Ok();
    }));
    DumpCompiled(*exe, code, format);  // xla_dump_to (pjrt/dump.h)
    auto executable = std::make_unique<PJRT_Executable>(MakeExecutableInfo(
        std::move(exe),
        std::string(reinterpret_cast<const char*>(options_bytes.data()), options_bytes.size()),
        std::string(reinterpret_cast<const char*>(code.data()), code.size()), std::string(format)));
    args->executable = executable.release();
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
