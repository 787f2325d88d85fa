// PJRT_Executable_GetCompiledMemoryStats: what `compiled.memory_analysis()` reports in JAX.
//
// Kiln knows every figure at compile time (compiler/buffer_plan.h): arguments and outputs are the
// boundary types, outputs that a donated argument's buffer may become are the alias bytes, and the
// temporaries are the entry program's working memory (its frame, loop carries, callee frames and
// kernel scratch), one block per execution. Everything is host memory, which is also the device's.
#include <cstddef>
#include <cstdint>
#include <span>

#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"

namespace kiln::pjrt {
namespace {

int64_t TotalBytes(std::span<const ir::Type> types) {
  int64_t total = 0;
  for (const ir::Type& t : types) {
    if (!t.is_tensor()) continue;
    total += t.num_elements() * ir::DTypeByteSize(t.dtype);
  }
  return total;
}

}  // namespace

PJRT_Error* Executable_GetCompiledMemoryStats(PJRT_Executable_GetCompiledMemoryStats_Args* args) {
  constexpr char kFn[] = "PJRT_Executable_GetCompiledMemoryStats";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Executable_GetCompiledMemoryStats_Args, peak_memory_in_bytes, kFn);
    KILN_ASSIGN_OR_RETURN(const ExecutableInfo* info, InfoOf(args->executable, kFn));
    const compiler::Executable& exe = *info->exe;
    const int64_t arguments = TotalBytes(exe.arg_types);
    const int64_t outputs = TotalBytes(exe.result_types);
    int64_t alias = 0;
    for (size_t k = 0; k < exe.result_donor.size() && k < exe.result_types.size(); ++k) {
      if (exe.result_donor[k] >= 0) alias += TotalBytes(std::span(&exe.result_types[k], 1));
    }
    const int64_t temp = exe.main != nullptr ? static_cast<int64_t>(exe.main->total_bytes) : 0;
    args->generated_code_size_in_bytes = info->code_size_estimate;
    args->argument_size_in_bytes = arguments;
    args->output_size_in_bytes = outputs;
    args->alias_size_in_bytes = alias;
    args->temp_size_in_bytes = temp;
    args->host_generated_code_size_in_bytes = 0;
    args->host_argument_size_in_bytes = 0;
    args->host_output_size_in_bytes = 0;
    args->host_alias_size_in_bytes = 0;
    args->host_temp_size_in_bytes = 0;
    args->peak_memory_in_bytes = arguments + outputs - alias + temp;
    // Fields added in PJRT 0.104, written only when the caller's struct has them.
    const auto has = [&](size_t end) { return args->struct_size >= end; };
    using Args = PJRT_Executable_GetCompiledMemoryStats_Args;
    if (has(offsetof(Args, total_size_in_bytes) + sizeof(int64_t))) {
      args->total_size_in_bytes = args->peak_memory_in_bytes;
    }
    if (has(offsetof(Args, total_allocation_bytes) + sizeof(int64_t))) {
      args->total_allocation_bytes = outputs - alias + temp;
    }
    if (has(offsetof(Args, indefinite_allocations) + sizeof(int64_t))) {
      args->indefinite_allocations = 0;
    }
    if (has(offsetof(Args, peak_unpadded_heap_bytes) + sizeof(int64_t))) {
      args->peak_unpadded_heap_bytes = 0;
    }
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
