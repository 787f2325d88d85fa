// PJRT_Client_Compile and the PJRT_Executable_* / PJRT_LoadedExecutable_* entry points, including
// the asynchronous PJRT_LoadedExecutable_Execute.
#include "pjrt/executable.h"

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>

#include "compiler/program.h"
#include "ingest/compile_options.h"
#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/device.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "runtime/aligned_buffer.h"
#include "runtime/view.h"
#include "support/thread.h"

// Owners of bytes handed out with a deleter.
struct PJRT_DeviceAssignmentSerialized {
  std::string bytes;
};
struct PJRT_SerializedCompileOptions {
  std::string bytes;
};

namespace kiln::pjrt {
namespace {

// ---- DeviceAssignmentProto, written by hand ----

void PutVarint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void PutTag(std::string& out, int field, int wire_type) {
  PutVarint(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(wire_type));
}

// xla.DeviceAssignmentProto: replica_count = 1, computation_count = 2, computation_devices = 3
// (ComputationDevice { repeated int64 replica_device_ids = 1 }, packed), computation-major.
std::string SerializeDeviceAssignment(const std::vector<ExecutionSlot>& slots, int replicas,
                                      int partitions) {
  std::string out;
  PutTag(out, 1, 0);
  PutVarint(out, static_cast<uint64_t>(replicas));
  PutTag(out, 2, 0);
  PutVarint(out, static_cast<uint64_t>(partitions));
  for (int p = 0; p < partitions; ++p) {
    std::string ids;
    for (int r = 0; r < replicas; ++r) {
      const ExecutionSlot& s = slots[static_cast<size_t>(r * partitions + p)];
      PutVarint(ids, static_cast<uint64_t>(static_cast<int64_t>(s.device->description.id)));
    }
    std::string computation;
    PutTag(computation, 1, 2);
    PutVarint(computation, ids.size());
    computation += ids;
    PutTag(out, 3, 2);
    PutVarint(out, computation.size());
    out += computation;
  }
  return out;
}

// Binds an executable to devices: slot (r, p) runs on device_assignment[r][p]; without an
// assignment, on device_ordinal (single-device programs) or devices 0..N-1 in order.
StatusOr<std::vector<ExecutionSlot>> AssignDevices(const PJRT_Client& client,
                                                   const ingest::CompileOptions& o) {
  constexpr char kFn[] = "PJRT_Client_Compile";
  const int64_t replicas = o.num_replicas, partitions = o.num_partitions;
  if (replicas < 1 || partitions < 1 || replicas > kMaxDeviceCount ||
      partitions > kMaxDeviceCount || replicas * partitions > kMaxDeviceCount) {
    return InvalidArgument(Prefix(kFn) + "invalid replica/partition counts " +
                           std::to_string(replicas) + " x " + std::to_string(partitions));
  }
  std::vector<ExecutionSlot> slots;
  for (int64_t r = 0; r < replicas; ++r) {
    for (int64_t p = 0; p < partitions; ++p) {
      int64_t id;
      if (o.has_device_assignment()) {
        if (o.device_assignment.size() != static_cast<size_t>(replicas) ||
            o.device_assignment[static_cast<size_t>(r)].size() != static_cast<size_t>(partitions)) {
          return InvalidArgument(Prefix(kFn) +
                                 "the device assignment does not have the shape num_replicas x "
                                 "num_partitions = " +
                                 std::to_string(replicas) + " x " + std::to_string(partitions));
        }
        id = o.device_assignment[static_cast<size_t>(r)][static_cast<size_t>(p)];
      } else if (replicas * partitions == 1 && o.device_ordinal >= 0) {
        id = o.device_ordinal;
      } else {
        id = r * partitions + p;
      }
      PJRT_Device* device = client.FindDevice(id);
      if (device == nullptr) {
        return InvalidArgument(Prefix(kFn) + "the program is assigned to device " +
                               std::to_string(id) + " but the Kiln client has " +
                               std::to_string(client.devices.size()) +
                               " device(s) (set KILN_DEVICE_COUNT for more)");
      }
      slots.push_back({device, static_cast<int>(r), static_cast<int>(p)});
    }
  }
  return slots;
}

std::string TypeString(ir::DType dtype, const std::vector<int64_t>& dims) {
  return ir::Type::Tensor(dtype, dims).ToString();
}

}  // namespace

std::shared_ptr<const ExecutableInfo> MakeExecutableInfo(
    std::shared_ptr<const compiler::Executable> exe, std::string compile_options,
    std::string artifact) {
  auto info = std::make_shared<ExecutableInfo>();
  for (const ir::Type& t : exe->result_types) {
    info->output_types.push_back(static_cast<PJRT_Buffer_Type>(t.dtype));
    info->output_dims.insert(info->output_dims.end(), t.dims.begin(), t.dims.end());
    info->output_dim_sizes.push_back(t.dims.size());
    info->output_memory_kinds.push_back(kDeviceMemoryKind);
    info->output_memory_kind_sizes.push_back(sizeof(kDeviceMemoryKind) - 1);
  }
  for (size_t i = 0; i < exe->arg_types.size(); ++i) {
    info->parameter_memory_kinds.push_back(kDeviceMemoryKind);
    info->parameter_memory_kind_sizes.push_back(sizeof(kDeviceMemoryKind) - 1);
  }
  info->code_size_estimate =
      exe->main == nullptr ? 0
                           : static_cast<int64_t>(exe->main->steps.size() * sizeof(compiler::Step));
  info->compile_options = std::move(compile_options);
  info->artifact = std::move(artifact);
  info->exe = std::move(exe);
  return info;
}

// ---- compile ----

StatusOr<std::unique_ptr<PJRT_LoadedExecutable>> CompileAndLoad(
    PJRT_Client* client, std::span<const uint8_t> code, std::span<const uint8_t> options_bytes,
    const char* function) {
  // Parsed here first so a malformed blob gets the conventional PJRT message.
  StatusOr<ingest::CompileOptions> options = ingest::ParseCompileOptions(options_bytes);
  if (!options.ok()) {
    constexpr std::string_view kLead = "failed to deserialize CompileOptionsProto";
    const Status parse_error = options.status();
    std::string_view detail = parse_error.message();
    if (detail.substr(0, kLead.size()) == kLead) detail.remove_prefix(kLead.size());
    if (detail.substr(0, 2) == ": ") detail.remove_prefix(2);
    return InvalidArgument(Prefix(function) + std::string(kLead) + (detail.empty() ? "" : ": ") +
                           std::string(detail));
  }
  KILN_ASSIGN_OR_RETURN(std::vector<ExecutionSlot> slots, AssignDevices(*client, *options));
  // Reading and compiling recurse once per nesting level of the program; the caller's thread (any
  // Python thread) may have a small stack, so they run on a thread with a large one.
  std::shared_ptr<const compiler::Executable> exe;
  KILN_RETURN_IF_ERROR(RunOnLargeStack([&]() -> Status {
    KILN_ASSIGN_OR_RETURN(exe, compiler::Compile(code, "mlir", options_bytes));
    return Status::Ok();
  }));
  auto loaded = std::make_unique<PJRT_LoadedExecutable>();
  loaded->client = client;
  loaded->info = MakeExecutableInfo(
      std::move(exe),
      std::string(reinterpret_cast<const char*>(options_bytes.data()), options_bytes.size()),
      std::string(reinterpret_cast<const char*>(code.data()), code.size()));
  loaded->serialized_device_assignment = SerializeDeviceAssignment(
      slots, static_cast<int>(options->num_replicas), static_cast<int>(options->num_partitions));
  for (const ExecutionSlot& s : slots) loaded->addressable_devices.push_back(s.device);
  loaded->slots = std::move(slots);
  return loaded;
}

PJRT_Error* Client_Compile(PJRT_Client_Compile_Args* args) {
  constexpr char kFn[] = "PJRT_Client_Compile";
  return Guard(kFn, [&]() -> Status {
    // The extension chain may carry a Profiler extension (jaxlib adds one); Kiln ignores it.
    KILN_CHECK_ARGS(args, PJRT_Client_Compile_Args, executable, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_CHECK_NOT_NULL(args->program, kFn);
    const PJRT_Program* program = args->program;
    KILN_CHECK_ARGS(program, PJRT_Program, format_size, "PJRT_Client_Compile (program)");
    std::string_view format = program->format == nullptr
                                  ? std::string_view()
                                  : std::string_view(program->format, program->format_size);
    if (format != "mlir") {
      return InvalidArgument("Unknown program format '" + std::string(format) +
                             "'. Kiln compiles StableHLO portable artifacts (format \"mlir\").");
    }
    if (program->code == nullptr && program->code_size > 0) {
      return InvalidArgument(Prefix(kFn) + "program->code is NULL but code_size is " +
                             std::to_string(program->code_size));
    }
    if (args->compile_options == nullptr && args->compile_options_size > 0) {
      return InvalidArgument(Prefix(kFn) + "compile_options is NULL but compile_options_size is " +
                             std::to_string(args->compile_options_size));
    }
    std::span<const uint8_t> code(reinterpret_cast<const uint8_t*>(program->code),
                                  program->code == nullptr ? 0 : program->code_size);
    std::span<const uint8_t> options_bytes(
        reinterpret_cast<const uint8_t*>(args->compile_options),
        args->compile_options == nullptr ? 0 : args->compile_options_size);
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<PJRT_LoadedExecutable> loaded,
                          CompileAndLoad(args->client, code, options_bytes, kFn));
    args->executable = loaded.release();
    return Status::Ok();
  });
}

// ---- PJRT_Executable ----

namespace {

StatusOr<const ExecutableInfo*> InfoOf(const PJRT_Executable* e, const char* function) {
  if (e == nullptr || e->info == nullptr)
    return InvalidArgument(Prefix(function) + "executable is NULL");
  return e->info.get();
}

}  // namespace

PJRT_Error* Executable_Destroy(PJRT_Executable_Destroy_Args* args) {
  return Guard("PJRT_Executable_Destroy", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_Destroy_Args, executable, "PJRT_Executable_Destroy");
    delete args->executable;
    return Status::Ok();
  });
}

PJRT_Error* Executable_Name(PJRT_Executable_Name_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_Name";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_Name_Args, executable_name_size, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->executable_name = info->exe->name.c_str();
    args->executable_name_size = info->exe->name.size();
    return Status::Ok();
  });
}

PJRT_Error* Executable_NumReplicas(PJRT_Executable_NumReplicas_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_NumReplicas";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_NumReplicas_Args, num_replicas, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_replicas = static_cast<size_t>(info->exe->options.num_replicas);
    return Status::Ok();
  });
}

PJRT_Error* Executable_NumPartitions(PJRT_Executable_NumPartitions_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_NumPartitions";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_NumPartitions_Args, num_partitions, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_partitions = static_cast<size_t>(info->exe->options.num_partitions);
    return Status::Ok();
  });
}

PJRT_Error* Executable_NumOutputs(PJRT_Executable_NumOutputs_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_NumOutputs";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_NumOutputs_Args, num_outputs, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_outputs = info->exe->result_types.size();
    return Status::Ok();
  });
}

PJRT_Error* Executable_SizeOfGeneratedCodeInBytes(
    PJRT_Executable_SizeOfGeneratedCodeInBytes_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_SizeOfGeneratedCodeInBytes";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_SizeOfGeneratedCodeInBytes_Args, size_in_bytes, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->size_in_bytes = info->code_size_estimate;
    return Status::Ok();
  });
}

PJRT_Error* Executable_GetCostAnalysis(PJRT_Executable_GetCostAnalysis_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_GetCostAnalysis";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_GetCostAnalysis_Args, properties, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    (void)info;
    args->num_properties = 0;
    args->properties = nullptr;
    return Status::Ok();
  });
}

PJRT_Error* Executable_OutputElementTypes(PJRT_Executable_OutputElementTypes_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_OutputElementTypes";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_OutputElementTypes_Args, num_output_types, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    // The C API hands out a non-const pointer; callers only read it.
    args->output_types = const_cast<PJRT_Buffer_Type*>(info->output_types.data());
    args->num_output_types = info->output_types.size();
    return Status::Ok();
  });
}

PJRT_Error* Executable_OutputDimensions(PJRT_Executable_OutputDimensions_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_OutputDimensions";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_OutputDimensions_Args, dim_sizes, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_outputs = info->output_dim_sizes.size();
    args->dims = info->output_dims.data();
    args->dim_sizes = info->output_dim_sizes.data();
    return Status::Ok();
  });
}

PJRT_Error* Executable_OutputMemoryKinds(PJRT_Executable_OutputMemoryKinds_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_OutputMemoryKinds";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_OutputMemoryKinds_Args, memory_kind_sizes, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_outputs = info->output_memory_kinds.size();
    args->memory_kinds = info->output_memory_kinds.data();
    args->memory_kind_sizes = info->output_memory_kind_sizes.data();
    return Status::Ok();
  });
}

PJRT_Error* Executable_ParameterMemoryKinds(PJRT_Executable_ParameterMemoryKinds_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_ParameterMemoryKinds";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_ParameterMemoryKinds_Args, memory_kind_sizes, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    args->num_parameters = info->parameter_memory_kinds.size();
    args->memory_kinds = info->parameter_memory_kinds.data();
    args->memory_kind_sizes = info->parameter_memory_kind_sizes.data();
    return Status::Ok();
  });
}

PJRT_Error* Executable_Fingerprint(PJRT_Executable_Fingerprint_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_Fingerprint";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_Fingerprint_Args, executable_fingerprint_size, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    const std::string& fp = info->exe->fingerprint;
    if (fp.empty()) return Unimplemented(Prefix(kFn) + "this executable has no fingerprint");
    args->executable_fingerprint = fp.c_str();
    args->executable_fingerprint_size = fp.size();
    return Status::Ok();
  });
}

PJRT_Error* Executable_GetCompileOptions(PJRT_Executable_GetCompileOptions_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_GetCompileOptions";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_GetCompileOptions_Args,
                    serialized_compile_options_deleter, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    auto* owner = new PJRT_SerializedCompileOptions{info->compile_options};
    args->serialized_bytes = owner->bytes.data();
    args->serialized_bytes_size = owner->bytes.size();
    args->serialized_compile_options = owner;
    args->serialized_compile_options_deleter = [](PJRT_SerializedCompileOptions* o) { delete o; };
    return Status::Ok();
  });
}

// ---- PJRT_LoadedExecutable ----

PJRT_Error* LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args* args) {
  return Guard("PJRT_LoadedExecutable_Destroy", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_Destroy_Args, executable,
                    "PJRT_LoadedExecutable_Destroy");
    // Executions in flight hold their own reference to the compiled program.
    delete args->executable;
    return Status::Ok();
  });
}

PJRT_Error* LoadedExecutable_GetExecutable(PJRT_LoadedExecutable_GetExecutable_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_GetExecutable";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_GetExecutable_Args, executable, kFn);
    KILN_CHECK_NOT_NULL(args->loaded_executable, kFn);
    args->executable = new PJRT_Executable(args->loaded_executable->info);
    return Status::Ok();
  });
}

PJRT_Error* LoadedExecutable_AddressableDevices(
    PJRT_LoadedExecutable_AddressableDevices_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_AddressableDevices";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_AddressableDevices_Args, num_addressable_devices,
                    kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    args->addressable_devices = args->executable->addressable_devices.data();
    args->num_addressable_devices = args->executable->addressable_devices.size();
    return Status::Ok();
  });
}

PJRT_Error* LoadedExecutable_GetDeviceAssignment(
    PJRT_LoadedExecutable_GetDeviceAssignment_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_GetDeviceAssignment";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_GetDeviceAssignment_Args,
                    serialized_device_assignment_deleter, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    auto* owner =
        new PJRT_DeviceAssignmentSerialized{args->executable->serialized_device_assignment};
    args->serialized_bytes = owner->bytes.data();
    args->serialized_bytes_size = owner->bytes.size();
    args->serialized_device_assignment = owner;
    // jaxlib always calls the deleter, so it must be non-NULL.
    args->serialized_device_assignment_deleter = [](PJRT_DeviceAssignmentSerialized* da) {
      delete da;
    };
    return Status::Ok();
  });
}

PJRT_Error* LoadedExecutable_Delete(PJRT_LoadedExecutable_Delete_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_Delete";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_Delete_Args, executable, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    args->executable->deleted = true;
    return Status::Ok();
  });
}

PJRT_Error* LoadedExecutable_IsDeleted(PJRT_LoadedExecutable_IsDeleted_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_IsDeleted";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_IsDeleted_Args, is_deleted, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    args->is_deleted = args->executable->deleted.load();
    return Status::Ok();
  });
}

PJRT_Error* LoadedExecutable_Fingerprint(PJRT_LoadedExecutable_Fingerprint_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_Fingerprint";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_Fingerprint_Args, executable_fingerprint_size, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    const std::string& fp = args->executable->info->exe->fingerprint;
    if (fp.empty()) return Unimplemented(Prefix(kFn) + "this executable has no fingerprint");
    args->executable_fingerprint = fp.c_str();
    args->executable_fingerprint_size = fp.size();
    return Status::Ok();
  });
}

// ---- execute ----

namespace {

// One device's share of an Execute call, run on that device's work queue.
struct Launch {
  std::shared_ptr<const ExecutableInfo> info;
  compiler::ExecContext ctx;
  std::vector<runtime::AsyncArrayRef> args;
  std::vector<runtime::AsyncArrayRef> outputs;
  runtime::EventRef done;
};

// The working memory of programs run on this thread (a device's queue): frames and scratch,
// grown to the largest program seen and reused by every execution, so running allocates only the
// results it hands back.
runtime::AlignedBuffer& ThreadWorkingMemory() {
  thread_local runtime::AlignedBuffer memory;
  return memory;
}

Status RunLaunch(const Launch& launch) {
  const compiler::Executable& exe = *launch.info->exe;
  const compiler::Program& main = *exe.main;
  std::vector<runtime::Array> inputs;
  inputs.reserve(launch.args.size());
  for (size_t i = 0; i < launch.args.size(); ++i) {
    StatusOr<runtime::Array> a = launch.args[i]->Await();
    if (!a.ok())
      return a.status().WithContext("argument #" + std::to_string(i) + " of " + exe.name);
    inputs.push_back(std::move(a).value());
  }
  if (main.result_slots.size() != exe.result_types.size()) {
    return Internal(exe.name + " returns " + std::to_string(main.result_slots.size()) +
                    " results but declares " + std::to_string(exe.result_types.size()));
  }
  std::vector<runtime::Array> results;
  results.reserve(exe.result_types.size());
  for (const ir::Type& t : exe.result_types) {
    KILN_ASSIGN_OR_RETURN(runtime::Array a, runtime::Array::Allocate(t));
    results.push_back(std::move(a));
  }
  // Tokens cross the boundary as pred[0] buffers; the program sees a token (no data: any address).
  static const ir::Type kToken = ir::Type::Token();
  alignas(64) std::byte token_bytes[64] = {};
  std::vector<runtime::View> in_views, out_views;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in_views.push_back(i < exe.token_args.size() && exe.token_args[i]
                           ? runtime::View::Of(kToken, token_bytes)
                           : runtime::View::Of(inputs[i]));
  }
  for (size_t i = 0; i < results.size(); ++i) {
    out_views.push_back(i < exe.token_results.size() && exe.token_results[i]
                            ? runtime::View::Of(kToken, token_bytes)
                            : runtime::View::Of(results[i]));
  }
  runtime::AlignedBuffer& memory = ThreadWorkingMemory();
  KILN_RETURN_IF_ERROR(memory.Reserve(main.total_bytes));
  compiler::ExecContext ctx = launch.ctx;
  KILN_RETURN_IF_ERROR(compiler::RunProgram(main, ctx, in_views, out_views, memory.data()));
  for (size_t i = 0; i < results.size(); ++i) launch.outputs[i]->SetValue(std::move(results[i]));
  return Status::Ok();
}

void ExecuteLaunch(const Launch& launch) {
  Status status;
  try {
    status = RunLaunch(launch);
  } catch (const std::exception& e) {
    status = Internal(std::string("PJRT_LoadedExecutable_Execute: ") + e.what());
  } catch (...) {
    status = Internal("PJRT_LoadedExecutable_Execute: unknown exception");
  }
  // On failure every output carries the error (outputs already set keep their value: first wins).
  if (!status.ok()) {
    for (const auto& out : launch.outputs) out->SetError(status);
  }
  launch.done->Set(status);
}

}  // namespace

PJRT_Error* LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_Execute";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_Execute_Args, device_complete_events, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    PJRT_LoadedExecutable* loaded = args->executable;
    if (loaded->deleted) return FailedPrecondition(Prefix(kFn) + "the executable has been deleted");
    const std::shared_ptr<const ExecutableInfo>& info = loaded->info;
    const compiler::Executable& exe = *info->exe;

    // Where each argument list runs.
    std::vector<ExecutionSlot> slots = loaded->slots;
    PJRT_Device* execute_device =
        HasBytes(args, KILN_FIELD_END(PJRT_LoadedExecutable_Execute_Args, execute_device))
            ? args->execute_device
            : nullptr;
    if (execute_device != nullptr) {
      if (!loaded->client->Owns(execute_device)) {
        return InvalidArgument(Prefix(kFn) + "execute_device does not belong to this client");
      }
      if (args->num_devices != 1) {
        return InvalidArgument(Prefix(kFn) + "num_devices must be 1 with execute_device, got " +
                               std::to_string(args->num_devices));
      }
      slots = {{execute_device, 0, 0}};
    }
    if (args->num_devices != slots.size()) {
      return InvalidArgument(Prefix(kFn) + exe.name + " runs on " + std::to_string(slots.size()) +
                             " device(s) but num_devices is " + std::to_string(args->num_devices));
    }
    if (args->num_args != exe.arg_types.size()) {
      return InvalidArgument(Prefix(kFn) + exe.name + " expects " +
                             std::to_string(exe.arg_types.size()) + " argument(s), got " +
                             std::to_string(args->num_args));
    }
    if (args->num_args > 0) KILN_CHECK_NOT_NULL(args->argument_lists, kFn);
    if (!exe.result_types.empty()) KILN_CHECK_NOT_NULL(args->output_lists, kFn);
    if (exe.main == nullptr) return Internal(Prefix(kFn) + exe.name + " has no main program");

    // Donation: donated parameters are consumed (deleted once their array is captured) unless the
    // caller exempts them. The data lives on in the launch until the program has read it.
    std::vector<bool> donate = exe.donated_args;
    donate.resize(args->num_args, false);
    const PJRT_ExecuteOptions* options = args->options;
    if (options != nullptr &&
        HasBytes(options, KILN_FIELD_END(PJRT_ExecuteOptions, num_non_donatable_input_indices)) &&
        options->num_non_donatable_input_indices > 0) {
      KILN_CHECK_NOT_NULL(options->non_donatable_input_indices, kFn);
      for (size_t i = 0; i < options->num_non_donatable_input_indices; ++i) {
        const int64_t index = options->non_donatable_input_indices[i];
        if (index >= 0 && static_cast<size_t>(index) < donate.size()) donate[index] = false;
      }
    }
    std::vector<PJRT_Buffer*> consumed;

    // Validate everything before launching anything.
    std::vector<Launch> launches(slots.size());
    for (size_t d = 0; d < slots.size(); ++d) {
      Launch& l = launches[d];
      l.info = info;
      l.ctx.device_ordinal = slots[d].device->description.id;
      l.ctx.replica_id = slots[d].replica;
      l.ctx.partition_id = slots[d].partition;
      if (args->num_args > 0) {
        if (args->argument_lists[d] == nullptr) {
          return InvalidArgument(Prefix(kFn) + "argument_lists[" + std::to_string(d) + "] is NULL");
        }
      }
      if (!exe.result_types.empty() && args->output_lists[d] == nullptr) {
        return InvalidArgument(Prefix(kFn) + "output_lists[" + std::to_string(d) + "] is NULL");
      }
      for (size_t a = 0; a < args->num_args; ++a) {
        PJRT_Buffer* buffer = args->argument_lists[d][a];
        const std::string where =
            "argument #" + std::to_string(a) +
            (slots.size() > 1 ? " for device " + std::to_string(d) : std::string());
        if (buffer == nullptr) return InvalidArgument(Prefix(kFn) + where + " is NULL");
        const ir::Type& want = exe.arg_types[a];
        const bool token = a < exe.token_args.size() && exe.token_args[a];  // any buffer will do
        if (!token && (buffer->dtype != want.dtype || buffer->dims != want.dims)) {
          return InvalidArgument(Prefix(kFn) + where + " of " + exe.name + " must be " +
                                 want.ToString() + ", got " +
                                 TypeString(buffer->dtype, buffer->dims));
        }
        StatusOr<runtime::AsyncArrayRef> array = buffer->Get(kFn);
        if (!array.ok()) {
          return FailedPrecondition(Prefix(kFn) + where + " of " + exe.name +
                                    " has been deleted or donated");
        }
        l.args.push_back(std::move(array).value());
        if (donate[a]) {
          if (std::find(consumed.begin(), consumed.end(), buffer) != consumed.end()) {
            return InvalidArgument(Prefix(kFn) + where + " of " + exe.name +
                                   " donates a buffer that is already used by this call");
          }
          consumed.push_back(buffer);
        }
      }
      for (const ir::Type& t : exe.result_types) {
        l.outputs.push_back(std::make_shared<runtime::AsyncArray>(t.dtype, t.dims));
      }
      l.done = runtime::Event::Create();
    }

    // A buffer passed twice must not be donated: it would be read after being consumed.
    for (size_t d = 0; d < slots.size() && !consumed.empty(); ++d) {
      for (size_t a = 0; a < args->num_args; ++a) {
        PJRT_Buffer* buffer = args->argument_lists[d][a];
        if (!donate[a] && std::find(consumed.begin(), consumed.end(), buffer) != consumed.end()) {
          return InvalidArgument(Prefix(kFn) + "argument #" + std::to_string(a) + " of " +
                                 exe.name + " is a buffer another argument donates");
        }
      }
    }
    for (PJRT_Buffer* buffer : consumed) buffer->Delete();

    // Hand out outputs and completion events, then launch. Execute returns before the work is done.
    for (size_t d = 0; d < slots.size(); ++d) {
      Launch& l = launches[d];
      for (size_t o = 0; o < l.outputs.size(); ++o) {
        args->output_lists[d][o] = new PJRT_Buffer(slots[d].device, l.outputs[o]);
      }
      if (args->device_complete_events != nullptr) {
        args->device_complete_events[d] = NewEvent(l.done);
      }
    }
    // A small program on an idle device runs right here: handing it to the device's thread and
    // waking the caller again costs more than running it (XLA's CPU client does the same).
    if (slots.size() == 1 && exe.run_inline && slots[0].device->queue->in_flight() == 0 &&
        std::all_of(launches[0].args.begin(), launches[0].args.end(),
                    [](const runtime::AsyncArrayRef& a) { return a->ready()->IsReady(); })) {
      ExecuteLaunch(launches[0]);
      return Status::Ok();
    }
    for (size_t d = 0; d < slots.size(); ++d) {
      slots[d].device->queue->Schedule(
          [launch = std::move(launches[d])]() { ExecuteLaunch(launch); });
    }
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
