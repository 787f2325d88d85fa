// The PJRT_Executable_* / PJRT_LoadedExecutable_* entry points (PJRT_Client_Compile:
// pjrt/executable_compile.cc; PJRT_LoadedExecutable_Execute: pjrt/execute.cc).
#include "pjrt/executable.h"

#include <string>

#include "pjrt/args_check.h"
#include "pjrt/client.h"
#include "pjrt/device.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

// Owners of bytes handed out with a deleter.
struct PJRT_DeviceAssignmentSerialized {
  std::string bytes;
};
struct PJRT_SerializedCompileOptions {
  std::string bytes;
};

namespace kiln::pjrt {

// ---- PJRT_Executable ----

StatusOr<const ExecutableInfo*> InfoOf(const PJRT_Executable* e, const char* function) {
  if (e == nullptr || e->info == nullptr)
    return InvalidArgument(Prefix(function) + "executable is NULL");
  return e->info.get();
}

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
    args->num_properties = info->cost_properties.size();
    args->properties = info->cost_properties.data();
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

}  // namespace kiln::pjrt
