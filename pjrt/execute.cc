// PJRT_LoadedExecutable_Execute: validates the argument lists, hands out output buffers and
// completion events, and runs the program on the devices' work queues. A single-device program
// runs once per argument list; a partitioned (SPMD) program runs once in global view on the first
// device's queue (compiler/partition.h): its arguments are assembled from the devices' shards and
// its results split into theirs.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/run_program.h"
#include "lower/program.h"
#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/device.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "pjrt/executable.h"
#include "runtime/aligned_buffer.h"
#include "runtime/box_copy.h"
#include "runtime/view.h"
#include "support/log.h"

namespace kiln::pjrt {

namespace {

// One device's share of an Execute call, run on that device's work queue.
struct Launch {
  std::shared_ptr<const ExecutableInfo> info;
  lower::ExecContext ctx;
  std::vector<runtime::AsyncArrayRef> args;
  std::vector<bool> donated;  // per argument: this call consumed the caller's buffer
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

// Runs @main over `inputs` into `results` (typed as the program's boundary; tokens cross it as
// pred[0] buffers, and the program sees a token, which has no data: any address will do).
Status RunMain(const compiler::Executable& exe, const lower::ExecContext& launch_ctx,
               const std::vector<runtime::Array>& inputs, std::vector<runtime::Array>& results) {
  const lower::Program& main = *exe.main;
  if (main.result_slots.size() != results.size()) {
    return Internal(exe.name + " returns " + std::to_string(main.result_slots.size()) +
                    " results but declares " + std::to_string(results.size()));
  }
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
  lower::ExecContext ctx = launch_ctx;
  return engine::RunProgram(main, ctx, in_views, out_views, memory.data());
}

StatusOr<runtime::Array> AwaitArgument(const runtime::AsyncArrayRef& arg, size_t i,
                                       const compiler::Executable& exe) {
  StatusOr<runtime::Array> a = arg->Await();
  if (!a.ok()) return a.status().WithContext("argument #" + std::to_string(i) + " of " + exe.name);
  return a;
}

// Whether a result the plan lets take argument `a`'s buffer (Executable::result_donor) really can:
// the caller donated it and nothing else holds the memory (no other buffer, DLPack consumer or
// external reference shares the array, and Kiln owns the memory). Nobody can start sharing it
// now: the caller's buffer is deleted, and this launch holds the only reference.
bool TakesDonatedBuffer(const Launch& launch, const std::vector<runtime::Array>& inputs, size_t a) {
  if (a >= inputs.size() || a >= launch.donated.size() || !launch.donated[a]) return false;
  const runtime::Array& in = inputs[a];
  return launch.args[a].use_count() == 1 && in.storage != nullptr && in.storage->owned() &&
         in.storage.use_count() == 2;  // the argument's AsyncArray and `inputs`
}

Status RunLaunch(const Launch& launch) {
  const compiler::Executable& exe = *launch.info->exe;
  std::vector<runtime::Array> inputs;
  inputs.reserve(launch.args.size());
  for (size_t i = 0; i < launch.args.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(runtime::Array a, AwaitArgument(launch.args[i], i, exe));
    inputs.push_back(std::move(a));
  }
  std::vector<runtime::Array> results;
  results.reserve(exe.result_types.size());
  for (size_t r = 0; r < exe.result_types.size(); ++r) {
    const int32_t donor = r < exe.result_donor.size() ? exe.result_donor[r] : -1;
    if (donor >= 0 && TakesDonatedBuffer(launch, inputs, static_cast<size_t>(donor))) {
      results.push_back(inputs[static_cast<size_t>(donor)]);  // computed in place
      continue;
    }
    KILN_ASSIGN_OR_RETURN(runtime::Array a, runtime::Array::Allocate(exe.result_types[r]));
    results.push_back(std::move(a));
  }
  const auto start = std::chrono::steady_clock::now();
  KILN_RETURN_IF_ERROR(RunMain(exe, launch.ctx, inputs, results));
  KILN_LOG(kDebug, "ran " + exe.name + ": " + std::to_string(inputs.size()) + " arguments, " +
                       std::to_string(results.size()) + " results, " +
                       std::to_string(std::chrono::duration<double, std::micro>(
                                          std::chrono::steady_clock::now() - start)
                                          .count()) +
                       " us");
  for (size_t i = 0; i < results.size(); ++i) launch.outputs[i]->SetValue(std::move(results[i]));
  return Status::Ok();
}

// A partitioned program's one run for all its devices.
struct SpmdLaunch {
  std::shared_ptr<const ExecutableInfo> info;
  lower::ExecContext ctx;
  std::vector<std::vector<runtime::AsyncArrayRef>> args, outputs;  // [device][index]
  std::vector<runtime::EventRef> done;                             // per device
};

using Holder = lower::TensorSharding::Holder;

size_t ElementBytes(const ir::Type& t) { return static_cast<size_t>(ir::DTypeByteSize(t.dtype)); }

Status RunSpmd(const SpmdLaunch& launch) {
  const compiler::Executable& exe = *launch.info->exe;
  const compiler::SpmdLayout& layout = *exe.spmd;
  const size_t devices = launch.args.size();
  // Global arguments: a replicated one is any device's buffer (the first's); a sharded one is
  // assembled from every device's shard; an unreduced one is the sum of the devices' partial sums
  // (which also pass per device to the manual computations that take them).
  std::vector<runtime::Array> inputs;
  std::vector<runtime::Array> kept;  // device buffers the program reads through `device_values`
  std::vector<lower::DeviceValues> device_values;
  for (size_t a = 0; a < layout.args.size(); ++a) {
    const compiler::ValueLayout& v = layout.args[a];
    if (v.replicated()) {
      KILN_ASSIGN_OR_RETURN(runtime::Array whole, AwaitArgument(launch.args[0][a], a, exe));
      inputs.push_back(std::move(whole));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(runtime::Array global, runtime::Array::Allocate(v.global));
    const std::vector<int64_t> zero(v.local.dims.size(), 0);
    // Each device's shard, awaited once and only if something reads it.
    std::vector<std::optional<runtime::Array>> shards(devices);
    auto shard_of = [&](size_t d) -> StatusOr<runtime::Array> {
      if (!shards[d].has_value()) {
        KILN_ASSIGN_OR_RETURN(runtime::Array s, AwaitArgument(launch.args[d][a], a, exe));
        shards[d] = std::move(s);
      }
      return *shards[d];
    };
    // Primary holders first (they tile the array), then partial sums along unreduced axes;
    // replicas hold copies of their primary's block.
    for (Holder pass : {Holder::kPrimary, Holder::kPartial}) {
      for (size_t d = 0; d < devices; ++d) {
        if (v.holders[d] != pass) continue;
        KILN_ASSIGN_OR_RETURN(runtime::Array shard, shard_of(d));
        const auto* src = static_cast<const std::byte*>(shard.data());
        auto* dst = static_cast<std::byte*>(global.data());
        if (pass == Holder::kPrimary) {
          runtime::CopyBox(src, v.local.dims, zero, dst, v.global.dims, v.pieces[d].offsets,
                           v.pieces[d].dims, ElementBytes(v.global));
        } else {
          KILN_RETURN_IF_ERROR(
              runtime::AddBox(src, v.local.dims, zero, dst, v.global.dims, v.pieces[d].offsets,
                              v.pieces[d].dims, v.global.dtype)
                  .WithContext("argument #" + std::to_string(a) + " of " + exe.name));
        }
      }
    }
    for (ir::ValueId link : v.device_links) {
      lower::DeviceValues p;
      p.value = link;
      for (size_t d = 0; d < devices; ++d) {
        KILN_ASSIGN_OR_RETURN(runtime::Array shard, shard_of(d));
        p.per_device.push_back(runtime::View::Of(shard));
        p.offsets.push_back(v.pieces[d].offsets);
        kept.push_back(std::move(shard));
      }
      device_values.push_back(std::move(p));
    }
    inputs.push_back(std::move(global));
  }
  std::vector<runtime::Array> results;
  // Results made by a manual computation: each device's own instance's value (an unreduced
  // one's partial sum), written by the manual computation ([result] -> per device; empty for
  // other results).
  std::vector<std::vector<runtime::Array>> device_results(layout.results.size());
  for (size_t r = 0; r < layout.results.size(); ++r) {
    const compiler::ValueLayout& v = layout.results[r];
    KILN_ASSIGN_OR_RETURN(runtime::Array a, runtime::Array::Allocate(v.global));
    results.push_back(std::move(a));
    if (v.device_links.empty()) continue;
    lower::DeviceValues p;
    p.value = v.device_links.front();  // a result is made by one manual computation
    for (size_t d = 0; d < devices; ++d) {
      KILN_ASSIGN_OR_RETURN(runtime::Array piece, runtime::Array::Allocate(v.local));
      p.per_device.push_back(runtime::View::Of(piece));
      p.offsets.push_back(v.pieces[d].offsets);
      device_results[r].push_back(std::move(piece));
    }
    device_values.push_back(std::move(p));
  }
  lower::ExecContext ctx = launch.ctx;
  ctx.device_values = device_values;
  KILN_RETURN_IF_ERROR(RunMain(exe, ctx, inputs, results));
  // Every device's share of each result: its own when a manual computation made it, the array
  // itself when replicated (shared, read-only), else a copy of its piece.
  for (size_t r = 0; r < results.size(); ++r) {
    const compiler::ValueLayout& v = layout.results[r];
    const std::vector<int64_t> zero(v.local.dims.size(), 0);
    for (size_t d = 0; d < devices; ++d) {
      if (!device_results[r].empty()) {
        launch.outputs[d][r]->SetValue(std::move(device_results[r][d]));
        continue;
      }
      if (v.replicated()) {
        launch.outputs[d][r]->SetValue(results[r]);
        continue;
      }
      // An unreduced total made in global view: the devices at the unreduced axes' origin hold
      // it, the others zeros (compiler/partition.h).
      KILN_ASSIGN_OR_RETURN(bool holds, v.sharding.AtUnreducedOrigin(static_cast<int64_t>(d)));
      KILN_ASSIGN_OR_RETURN(runtime::Array shard, runtime::Array::Allocate(v.local, !holds));
      if (holds) {
        runtime::CopyBox(static_cast<const std::byte*>(results[r].data()), v.global.dims,
                         v.pieces[d].offsets, static_cast<std::byte*>(shard.data()), v.local.dims,
                         zero, v.pieces[d].dims, ElementBytes(v.global));
      }
      launch.outputs[d][r]->SetValue(std::move(shard));
    }
  }
  return Status::Ok();
}

template <typename Run>
Status Guarded(Run&& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    return Internal(std::string("PJRT_LoadedExecutable_Execute: ") + e.what());
  } catch (...) {
    return Internal("PJRT_LoadedExecutable_Execute: unknown exception");
  }
}

void ExecuteSpmd(const SpmdLaunch& launch) {
  Status status = Guarded([&] { return RunSpmd(launch); });
  for (size_t d = 0; d < launch.outputs.size(); ++d) {
    if (!status.ok()) {
      for (const auto& out : launch.outputs[d]) out->SetError(status);
    }
    launch.done[d]->Set(status);
  }
}

void ExecuteLaunch(const Launch& launch) {
  Status status = Guarded([&] { return RunLaunch(launch); });
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
      if (exe.spmd.has_value()) {
        return InvalidArgument(Prefix(kFn) + exe.name + " is partitioned over " +
                               std::to_string(slots.size()) +
                               " devices and cannot run on execute_device alone");
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
                                 ir::Type::Tensor(buffer->dtype, buffer->dims).ToString());
        }
        StatusOr<runtime::AsyncArrayRef> array = buffer->Get(kFn);
        if (!array.ok()) {
          return FailedPrecondition(Prefix(kFn) + where + " of " + exe.name +
                                    " has been deleted or donated");
        }
        l.args.push_back(std::move(array).value());
        l.donated.push_back(donate[a]);
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
    if (exe.spmd.has_value()) {
      // One run in global view, on the first device's queue, for every device.
      SpmdLaunch spmd;
      spmd.info = info;
      spmd.ctx = launches[0].ctx;
      for (Launch& l : launches) {
        spmd.args.push_back(std::move(l.args));
        spmd.outputs.push_back(std::move(l.outputs));
        spmd.done.push_back(std::move(l.done));
      }
      slots[0].device->queue->Schedule([spmd = std::move(spmd)]() { ExecuteSpmd(spmd); });
      return Status::Ok();
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
