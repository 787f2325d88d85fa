// Running an executable for one Execute call (engine/executable.h).
#include "engine/executable.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/cross_process.h"
#include "engine/run_program.h"
#include "runtime/aligned_buffer.h"
#include "runtime/box_copy.h"
#include "runtime/view.h"
#include "support/log.h"

namespace kiln::engine {

using lower::DeviceValues;
using lower::ExecContext;
using lower::Program;
using lower::SpmdLayout;
using lower::ValueLayout;

namespace {

// The working memory of programs run on this thread (a device's queue): frames and scratch,
// grown to the largest program seen and reused by every execution, so running allocates only the
// results it hands back.
runtime::AlignedBuffer& ThreadWorkingMemory() {
  thread_local runtime::AlignedBuffer memory;
  return memory;
}

// Views of `arrays` (those `tokens` marks: of a token at `token_bytes`), in `small` when they fit,
// else in `large`: no allocation per call for programs of few parameters and results.
constexpr size_t kInlineViews = 8;
std::span<const runtime::View> ViewsOf(const std::vector<runtime::Array>& arrays,
                                       const std::vector<bool>& tokens, std::byte* token_bytes,
                                       std::array<runtime::View, kInlineViews>& small,
                                       std::vector<runtime::View>& large) {
  static const ir::Type kToken = ir::Type::Token();
  runtime::View* views = small.data();
  if (arrays.size() > kInlineViews) {
    large.resize(arrays.size());
    views = large.data();
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    views[i] = i < tokens.size() && tokens[i] ? runtime::View::Of(kToken, token_bytes)
                                              : runtime::View::Of(arrays[i]);
  }
  return {views, arrays.size()};
}

// Runs @main over `inputs` into `results` (typed as the program's boundary; tokens cross it as
// pred[0] buffers, and the program sees a token, which has no data: any address will do).
Status RunMain(const Executable& exe, const ExecContext& launch_ctx,
               const std::vector<runtime::Array>& inputs, std::vector<runtime::Array>& results) {
  const Program& main = *exe.main;
  if (main.result_slots.size() != results.size()) {
    return Internal(exe.name + " returns " + std::to_string(main.result_slots.size()) +
                    " results but declares " + std::to_string(results.size()));
  }
  alignas(64) std::byte token_bytes[64] = {};
  std::array<runtime::View, kInlineViews> in_small, out_small;
  std::vector<runtime::View> in_large, out_large;
  const std::span<const runtime::View> in_views =
      ViewsOf(inputs, exe.token_args, token_bytes, in_small, in_large);
  const std::span<const runtime::View> out_views =
      ViewsOf(results, exe.token_results, token_bytes, out_small, out_large);
  runtime::AlignedBuffer& memory = ThreadWorkingMemory();
  KILN_RETURN_IF_ERROR(memory.Reserve(main.total_bytes));
  ExecContext ctx = launch_ctx;
  return RunProgram(main, ctx, in_views, out_views, memory.data());
}

StatusOr<runtime::Array> AwaitArgument(const runtime::AsyncArrayRef& arg, size_t i,
                                       const Executable& exe) {
  KILN_ASSIGN_OR_RETURN(runtime::Array a, arg->Await(),
                        "argument #" + std::to_string(i) + " of " + exe.name);
  return a;
}

// Whether a result the plan lets take argument `a`'s buffer (Executable::result_donor) really can:
// the caller donated it and nothing else holds the memory (no other buffer, DLPack consumer or
// external reference shares the array, and Kiln owns the memory). Nobody can start sharing it
// now: the caller's buffer is deleted, and this launch holds the only reference.
bool TakesDonatedBuffer(const DeviceWork& launch, const std::vector<runtime::Array>& inputs,
                        size_t a) {
  if (a >= inputs.size() || a >= launch.donated.size() || !launch.donated[a]) return false;
  const runtime::Array& in = inputs[a];
  return launch.args[a].use_count() == 1 && in.storage != nullptr && in.storage->owned() &&
         in.storage.use_count() == 2;  // the argument's AsyncArray and `inputs`
}

Status RunDevice(const Executable& exe, const DeviceWork& launch) {
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

using Holder = lower::TensorSharding::Holder;

size_t ElementBytes(const ir::Type& t) { return static_cast<size_t>(ir::DTypeByteSize(t.dtype)); }

Status RunSpmd(const Executable& exe, const std::vector<DeviceWork>& work,
               const CrossProcess& cross) {
  const SpmdLayout& layout = *exe.spmd;
  const size_t devices = work.size();
  // This process's first device: it reads the replicated arguments and gives the run its context.
  const auto first =
      std::find_if(work.begin(), work.end(), [](const DeviceWork& w) { return w.local; });
  if (first == work.end()) return Internal(exe.name + ": none of its devices is in this process");
  // Devices of other processes: their shards come over the network.
  const bool spans_processes =
      std::any_of(work.begin(), work.end(), [](const DeviceWork& w) { return !w.local; });
  // A per-device program runs only this process's devices' instances, which read only their own
  // shards (the other devices' pieces of the global arguments stay unset); any other program runs
  // whole in every process, from every device's shards.
  const bool per_device_run = spans_processes && layout.per_device;
  if (per_device_run && cross.network == nullptr) {
    return FailedPrecondition(exe.name + " runs on devices of other processes, but this process " +
                              "has no network to reach them");
  }
  RemoteShards remote;
  if (spans_processes && !per_device_run) {
    KILN_ASSIGN_OR_RETURN(remote, ExchangeShards(exe, work, cross));
  }
  // Global arguments: a replicated one is any device's buffer (the first's); a sharded one is
  // assembled from every device's shard; an unreduced one is the sum of the devices' partial sums
  // (which also pass per device to the manual computations that take them).
  std::vector<runtime::Array> inputs;
  std::vector<runtime::Array> kept;  // device buffers the program reads through `device_values`
  std::vector<DeviceValues> device_values;
  for (size_t a = 0; a < layout.args.size(); ++a) {
    const ValueLayout& v = layout.args[a];
    if (v.replicated()) {
      KILN_ASSIGN_OR_RETURN(runtime::Array whole, AwaitArgument(first->args[a], a, exe));
      inputs.push_back(std::move(whole));
      continue;
    }
    KILN_ASSIGN_OR_RETURN(runtime::Array global, runtime::Array::Allocate(v.global));
    const std::vector<int64_t> zero(v.local.dims.size(), 0);
    // Read only through its device pieces: the global array stays unwritten (never read).
    const bool assemble = !v.only_per_device;
    // Each device's shard, awaited once and only if something reads it.
    std::vector<std::optional<runtime::Array>> shards(devices);
    auto shard_of = [&](size_t d) -> StatusOr<runtime::Array> {
      if (!shards[d].has_value() && !work[d].local) {
        if (!remote[d][a].has_value()) return Internal("a shard of another process is missing");
        shards[d] = *remote[d][a];
      }
      if (!shards[d].has_value()) {
        KILN_ASSIGN_OR_RETURN(runtime::Array s, AwaitArgument(work[d].args[a], a, exe));
        shards[d] = std::move(s);
      }
      return *shards[d];
    };
    // Primary holders first (they tile the array), then partial sums along unreduced axes;
    // replicas hold copies of their primary's block.
    for (Holder pass : {Holder::kPrimary, Holder::kPartial}) {
      for (size_t d = 0; d < devices && assemble; ++d) {
        if (v.holders[d] != pass || (per_device_run && !work[d].local)) continue;
        KILN_ASSIGN_OR_RETURN(runtime::Array shard, shard_of(d));
        const auto* src = static_cast<const std::byte*>(shard.data());
        auto* dst = static_cast<std::byte*>(global.data());
        if (pass == Holder::kPrimary) {
          runtime::CopyBox(src, v.local.dims, zero, dst, v.global.dims, v.pieces[d].offsets,
                           v.pieces[d].dims, ElementBytes(v.global));
        } else {
          KILN_RETURN_IF_ERROR(
              runtime::AddBox(src, v.local.dims, zero, dst, v.global.dims, v.pieces[d].offsets,
                              v.pieces[d].dims, v.global.dtype),
              "argument #" + std::to_string(a) + " of " + exe.name);
        }
      }
    }
    for (ir::ValueId link : v.device_links) {
      DeviceValues p;
      p.value = link;
      for (size_t d = 0; d < devices; ++d) {
        if (per_device_run && !work[d].local) {  // never read: that device runs elsewhere
          p.per_device.emplace_back();
          p.offsets.push_back(v.pieces[d].offsets);
          continue;
        }
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
  // one's partial sum), written by the manual computation; or by a dot_general, each device's
  // partial sum (SpmdLayout::partial_sums), written by the dot ([result] -> per device; empty for
  // other results).
  std::vector<std::vector<runtime::Array>> device_results(layout.results.size());
  for (size_t r = 0; r < layout.results.size(); ++r) {
    const ValueLayout& v = layout.results[r];
    KILN_ASSIGN_OR_RETURN(runtime::Array a, runtime::Array::Allocate(v.global));
    results.push_back(std::move(a));
    if (v.device_links.empty()) continue;
    DeviceValues p;
    p.value = v.device_links.front();  // a result is made by one manual computation
    for (size_t d = 0; d < devices; ++d) {
      KILN_ASSIGN_OR_RETURN(runtime::Array piece, runtime::Array::Allocate(v.local));
      p.per_device.push_back(runtime::View::Of(piece));
      p.offsets.push_back(v.pieces[d].offsets);
      device_results[r].push_back(std::move(piece));
    }
    device_values.push_back(std::move(p));
  }
  ExecContext ctx = first->ctx;
  ctx.device_values = device_values;
  std::vector<uint8_t> remote_devices;
  std::vector<int> process_of;
  if (spans_processes) {
    for (const DeviceWork& w : work) {
      remote_devices.push_back(w.local ? 0 : 1);
      process_of.push_back(w.process);
    }
    ctx.remote = remote_devices;
    if (per_device_run) {
      ctx.network = cross.network;
      ctx.process_of = process_of;
      ctx.program_id = std::hash<std::string>()(exe.name + '\n' + exe.fingerprint);
    }
  }
  KILN_RETURN_IF_ERROR(RunMain(exe, ctx, inputs, results));
  // Every device's share of each result: its own when a manual computation made it, the array
  // itself when replicated (shared, read-only), else a copy of its piece.
  for (size_t r = 0; r < results.size(); ++r) {
    const ValueLayout& v = layout.results[r];
    const std::vector<int64_t> zero(v.local.dims.size(), 0);
    for (size_t d = 0; d < devices; ++d) {
      if (!work[d].local) continue;  // its own process hands it out
      if (!device_results[r].empty()) {
        work[d].outputs[r]->SetValue(std::move(device_results[r][d]));
        continue;
      }
      if (v.replicated()) {
        work[d].outputs[r]->SetValue(results[r]);
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
      work[d].outputs[r]->SetValue(std::move(shard));
    }
  }
  return Status::Ok();
}

template <typename Run>
Status Guarded(Run&& run) {
  try {
    return run();
  } catch (const std::exception& e) {
    return Internal(std::string("running a program: ") + e.what());
  } catch (...) {
    return Internal("running a program: unknown exception");
  }
}

void ExecuteSpmd(const Executable& exe, const std::vector<DeviceWork>& work,
                 const CrossProcess& cross) {
  Status status = Guarded([&] { return RunSpmd(exe, work, cross); });
  for (const DeviceWork& w : work) {
    if (!w.local) continue;
    if (!status.ok()) {
      for (const auto& out : w.outputs) out->SetError(status);
    }
    w.done->Set(status);
  }
}

void ExecuteDevice(const Executable& exe, const DeviceWork& launch) {
  Status status = Guarded([&] { return RunDevice(exe, launch); });
  // On failure every output carries the error (outputs already set keep their value: first wins).
  if (!status.ok()) {
    for (const auto& out : launch.outputs) out->SetError(status);
  }
  launch.done->Set(status);
}

}  // namespace

void Prepare(const Executable& exe, DeviceWork& work) {
  work.outputs.clear();
  for (const ir::Type& t : exe.result_types) {
    work.outputs.push_back(std::make_shared<runtime::AsyncArray>(t.dtype, t.dims));
  }
  work.done = runtime::Event::Create();
}

void Launch(std::shared_ptr<const Executable> exe, std::vector<DeviceWork> work,
            const CrossProcess& cross) {
  if (work.empty()) return;
  if (exe->spmd.has_value()) {
    // One run in global view, for every device: on this process's first device's queue, or on
    // the one queue of runs that span processes.
    const bool spans_processes =
        std::any_of(work.begin(), work.end(), [](const DeviceWork& w) { return !w.local; });
    runtime::WorkQueue* queue = nullptr;
    if (spans_processes && cross.queue != nullptr) {
      queue = cross.queue;
    } else {
      for (const DeviceWork& w : work) {
        if (w.local && queue == nullptr) queue = w.queue;
      }
    }
    if (queue == nullptr) return;  // no device of this process: nothing to run here
    queue->Schedule([exe = std::move(exe), work = std::move(work), cross]() {
      ExecuteSpmd(*exe, work, cross);
    });
    return;
  }
  // A small program on an idle device runs right here: handing it to the device's thread and
  // waking the caller again costs more than running it (XLA's CPU client does the same).
  if (work.size() == 1 && exe->run_inline && work[0].queue->in_flight() == 0 &&
      std::all_of(work[0].args.begin(), work[0].args.end(),
                  [](const runtime::AsyncArrayRef& a) { return a->ready()->IsReady(); })) {
    ExecuteDevice(*exe, work[0]);
    return;
  }
  for (DeviceWork& w : work) {
    runtime::WorkQueue* queue = w.queue;
    queue->Schedule([exe, w = std::move(w)]() { ExecuteDevice(*exe, w); });
  }
}

}  // namespace kiln::engine
