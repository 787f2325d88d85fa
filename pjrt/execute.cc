// PJRT_LoadedExecutable_Execute: validates the argument lists, consumes donated buffers, hands out
// output buffers and completion events, and gives the run to the engine (engine/executable.h),
// which runs the program on the devices' work queues.
#include <algorithm>
#include <atomic>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compiler/entry_layouts.h"
#include "engine/executable.h"
#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/device.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "pjrt/executable.h"
#include "pjrt/ffi_extension.h"
#include "pjrt/layouts.h"

namespace kiln::pjrt {

PJRT_Error* LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args* args) {
  constexpr char kFn[] = "PJRT_LoadedExecutable_Execute";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_LoadedExecutable_Execute_Args, device_complete_events, kFn);
    KILN_CHECK_NOT_NULL(args->executable, kFn);
    PJRT_LoadedExecutable* loaded = args->executable;
    if (loaded->deleted) return FailedPrecondition(Prefix(kFn) + "the executable has been deleted");
    const std::shared_ptr<const ExecutableInfo>& info = loaded->info;
    const compiler::Executable& exe = *info->exe;

    // Where each argument list runs (not copied: this runs on every call).
    std::span<const ExecutionSlot> slots = loaded->slots;
    ExecutionSlot on_execute_device;
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
      if (exe.spmd.has_value()) {
        return InvalidArgument(Prefix(kFn) + exe.name + " is partitioned over " +
                               std::to_string(slots.size()) +
                               " devices and cannot run on execute_device alone");
      }
      on_execute_device.device = execute_device;
      slots = {&on_execute_device, 1};
    }
    // Argument and output lists are this process's devices' (a multi-process run lists the other
    // processes' devices in `slots` too).
    size_t local_slots = 0;
    for (const ExecutionSlot& s : slots) local_slots += s.device->addressable ? 1 : 0;
    if (args->num_devices != local_slots) {
      return InvalidArgument(Prefix(kFn) + exe.name + " runs on " + std::to_string(local_slots) +
                             " device(s) of this process but num_devices is " +
                             std::to_string(args->num_devices));
    }
    // A program on other processes' devices only: they run it; this process has no part in it
    // (jaxlib calls Execute with no devices here).
    if (local_slots == 0) return Status::Ok();
    engine::CrossProcess cross;
    if (local_slots != slots.size()) {
      if (!exe.spmd.has_value()) {
        return Internal(Prefix(kFn) + exe.name + " is not partitioned but lists several devices");
      }
      KILN_ASSIGN_OR_RETURN(cross.network, ClientNetwork(*loaded->client), Prefix(kFn) + exe.name);
      cross.queue = loaded->client->addressable_devices.front()->queue.get();
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
    // (The program's own list unless the caller exempts some: no copy per call.)
    const PJRT_ExecuteOptions* options = args->options;
    std::vector<bool> exempted;
    if (options != nullptr &&
        HasBytes(options, KILN_FIELD_END(PJRT_ExecuteOptions, num_non_donatable_input_indices)) &&
        options->num_non_donatable_input_indices > 0) {
      KILN_CHECK_NOT_NULL(options->non_donatable_input_indices, kFn);
      exempted = exe.donated_args;
      exempted.resize(args->num_args, false);
      for (size_t i = 0; i < options->num_non_donatable_input_indices; ++i) {
        const int64_t index = options->non_donatable_input_indices[i];
        if (index >= 0 && static_cast<size_t>(index) < exempted.size()) exempted[index] = false;
      }
    }
    const std::vector<bool>& donated = exempted.empty() ? exe.donated_args : exempted;
    auto donate = [&](size_t a) { return a < donated.size() && donated[a]; };
    std::vector<PJRT_Buffer*> consumed;
    // User data for XLA FFI handlers (pjrt/ffi_extension.h), and the launch id as the run id.
    std::shared_ptr<const runtime::FfiUserData> ffi_user_data;
    int64_t run_id = 0;
    if (options != nullptr && HasBytes(options, KILN_FIELD_END(PJRT_ExecuteOptions, context)) &&
        options->context != nullptr) {
      ffi_user_data = options->context->user_data;
    }
    if (options != nullptr && HasBytes(options, KILN_FIELD_END(PJRT_ExecuteOptions, launch_id))) {
      run_id = options->launch_id;
    }
    if (run_id == 0) {  // no launch id: one of Kiln's own, above every 32-bit launch id
      static std::atomic<int64_t> next_run_id{int64_t{1} << 32};
      run_id = next_run_id.fetch_add(1);
    }

    // Validate everything before launching anything.
    std::vector<engine::DeviceWork> launches(slots.size());
    std::vector<size_t> list_of(slots.size(), 0);  // per slot: its argument/output list
    for (size_t s = 0, next = 0; s < slots.size(); ++s) {
      engine::DeviceWork& l = launches[s];
      l.process = slots[s].device->description.process_index;
      l.local = slots[s].device->addressable;
      l.queue = slots[s].device->queue.get();
      l.ctx.device_ordinal = slots[s].device->description.id;
      l.ctx.replica_id = slots[s].replica;
      l.ctx.partition_id = slots[s].partition;
      l.ctx.ffi_user_data = ffi_user_data;
      l.ctx.run_id = run_id;
      if (!l.local) continue;
      const size_t d = next++;
      list_of[s] = d;
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
        // Only for errors: building it on every call costs more than the check.
        auto where = [&] {
          return "argument #" + std::to_string(a) +
                 (local_slots > 1 ? " for device " + std::to_string(d) : std::string());
        };
        if (buffer == nullptr) return InvalidArgument(Prefix(kFn) + where() + " is NULL");
        const ir::Type& want = exe.arg_types[a];
        const bool token = a < exe.token_args.size() && exe.token_args[a];  // any buffer will do
        // `want` is the physical type: the logical one in the layout the program asks for.
        const std::vector<int64_t>* layout =
            a < exe.arg_layouts.size() ? &exe.arg_layouts[a] : nullptr;
        if (!token && (buffer->dtype != want.dtype || buffer->physical_dims != want.dims ||
                       (layout != nullptr && buffer->minor_to_major != *layout))) {
          const std::vector<int64_t> logical =
              layout != nullptr ? compiler::LogicalDims(want.dims, *layout) : want.dims;
          return InvalidArgument(
              Prefix(kFn) + where() + " of " + exe.name + " must be " +
              ir::Type::Tensor(want.dtype, logical).ToString() +
              (layout != nullptr ? " in layout " + LayoutText(*layout) : std::string()) + ", got " +
              ir::Type::Tensor(buffer->dtype, buffer->dims).ToString() + " in layout " +
              LayoutText(buffer->minor_to_major));
        }
        StatusOr<runtime::AsyncArrayRef> array = buffer->Get(kFn);
        if (!array.ok()) {
          return FailedPrecondition(Prefix(kFn) + where() + " of " + exe.name +
                                    " has been deleted or donated");
        }
        l.args.push_back(std::move(array).value());
        l.donated.push_back(donate(a));
        if (donate(a)) {
          if (std::find(consumed.begin(), consumed.end(), buffer) != consumed.end()) {
            return InvalidArgument(Prefix(kFn) + where() + " of " + exe.name +
                                   " donates a buffer that is already used by this call");
          }
          consumed.push_back(buffer);
        }
      }
      engine::Prepare(exe, l);
    }

    // A buffer passed twice must not be donated: it would be read after being consumed.
    for (size_t d = 0; d < local_slots && !consumed.empty(); ++d) {
      for (size_t a = 0; a < args->num_args; ++a) {
        PJRT_Buffer* buffer = args->argument_lists[d][a];
        if (!donate(a) && std::find(consumed.begin(), consumed.end(), buffer) != consumed.end()) {
          return InvalidArgument(Prefix(kFn) + "argument #" + std::to_string(a) + " of " +
                                 exe.name + " is a buffer another argument donates");
        }
      }
    }
    for (PJRT_Buffer* buffer : consumed) buffer->Delete();

    // Hand out outputs and completion events, then launch. Execute returns before the work is done.
    for (size_t s = 0; s < slots.size(); ++s) {
      engine::DeviceWork& l = launches[s];
      if (!l.local) continue;
      const size_t d = list_of[s];
      for (size_t o = 0; o < l.outputs.size(); ++o) {
        // In the memory kind the program gives the output (`mhlo.memory_kind`, default device).
        const int kind = o < info->output_memory_index.size() ? info->output_memory_index[o] : 0;
        PJRT_Device* device = slots[s].device;
        args->output_lists[d][o] = new PJRT_Buffer(
            device, l.outputs[o], AsKiln(device->memories[kind]),
            o < exe.result_layouts.size() ? exe.result_layouts[o] : std::vector<int64_t>{});
      }
      if (args->device_complete_events != nullptr) {
        args->device_complete_events[d] = NewEvent(l.done);
      }
    }
    engine::Launch(info->exe, std::move(launches), cross);
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
