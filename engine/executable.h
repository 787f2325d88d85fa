// Executable: what the engine runs for one compiled module, and Launch, which runs it for one
// Execute call: waits for the arguments, allocates the results (or computes a result in a donated
// argument's buffer), assembles a partitioned program's global arguments from the devices' shards
// and splits its results back, and runs @main on the devices' work queues. The C API
// (pjrt/execute.cc) only converts its arguments into DeviceWork and hands out the outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lower/kernel.h"
#include "lower/program.h"
#include "lower/spmd_layout.h"
#include "runtime/async_array.h"
#include "runtime/event.h"
#include "runtime/network.h"
#include "runtime/work_queue.h"

namespace kiln::engine {

struct Executable {
  std::string name;  // the module name, e.g. "jit_add"
  // A stable hash of the artifact and the options Kiln honours: processes of a multi-process run
  // compare it before exchanging values.
  std::string fingerprint;
  std::shared_ptr<const lower::Program> main;
  // Types at the PJRT boundary. A `!stablehlo.token` parameter or result of @main (ordered
  // effects) is a pred[0] buffer there, as JAX passes and expects its runtime tokens; inside, the
  // program still sees a token (token_args / token_results mark them).
  std::vector<ir::Type> arg_types;
  std::vector<ir::Type> result_types;
  std::vector<bool> token_args;
  std::vector<bool> token_results;
  // Parameters the program lets the caller donate (`tf.aliasing_output` or `jax.buffer_donor` on
  // @main's argument): Execute consumes such a buffer (it is deleted) unless the caller's
  // non_donatable_input_indices exempt it.
  std::vector<bool> donated_args;
  // Per result: the donated parameter whose buffer it may be computed into (compiler/donation.h),
  // or -1. Launch uses the buffer only if this call donates it and nothing else holds it.
  std::vector<int32_t> result_donor;
  // Multi-device programs (num_partitions > 1): how @main's values split over the devices. Then
  // arg_types / result_types are the per-device shard types, and `main` runs over global values.
  std::optional<lower::SpmdLayout> spmd;
  // Small enough to run on the caller's thread when its device is idle: every value
  // together under kInlineBytes. A thread handoff costs more than such a program.
  bool run_inline = false;
  static constexpr uint64_t kInlineBytes = 1 << 20;
};

// A run whose devices span processes (jax.distributed): the other processes' devices take part
// through the network. Every such run goes through one queue per process, so all processes meet
// in their exchanges in the order their programs were launched.
struct CrossProcess {
  runtime::Network* network = nullptr;
  runtime::WorkQueue* queue = nullptr;
};

// One device's share of an Execute call. A device of another process (multi-process runs) has
// no queue, arguments or outputs here: `process` says whose it is.
struct DeviceWork {
  int process = 0;
  bool local = true;
  runtime::WorkQueue* queue = nullptr;  // the device's
  lower::ExecContext ctx;               // device_ordinal, replica_id, partition_id
  std::vector<runtime::AsyncArrayRef> args;
  std::vector<bool> donated;  // per argument: this call consumed the caller's buffer
  // Made by Prepare: pending arrays typed as the results, and the completion event.
  std::vector<runtime::AsyncArrayRef> outputs;
  runtime::EventRef done;
};

// Makes `work`'s outputs and completion event for `exe`.
void Prepare(const Executable& exe, DeviceWork& work);

// Runs `exe` over `work` (one entry per device, each prepared): a partitioned program once in
// global view on the first device's queue, for every device; otherwise each device's own run on
// its queue, or on the caller's thread when the program is small (run_inline), alone, its device
// idle and its arguments ready. Returns at once. Outputs and events become ready when the run
// ends; on failure every output and event carries the error.
// With devices of other processes among `work`, `cross` gives the network and the queue to run on;
// the devices of every process assemble the global arguments from all shards, then each process
// runs the program in global view and keeps its own devices' results.
void Launch(std::shared_ptr<const Executable> exe, std::vector<DeviceWork> work,
            const CrossProcess& cross = {});

}  // namespace kiln::engine
