// The shards a run needs from other processes (multi-process runs, jax.distributed): every
// process of the run contributes its own devices' shards of the sharded arguments and receives
// everyone else's, so each can assemble the global arguments (engine/executable.cc).
#pragma once

#include <optional>
#include <vector>

#include "engine/executable.h"
#include "runtime/array.h"

namespace kiln::engine {

// remote[d][a]: device d's shard of argument a, for the other processes' devices and the arguments
// that are not replicated (nullopt elsewhere).
using RemoteShards = std::vector<std::vector<std::optional<runtime::Array>>>;

// Collective over the processes of `work`: each calls it for the same launch, in the same order.
// Fails (naming the program and the processes) when the processes run different programs or a
// process does not arrive within the collective timeout.
StatusOr<RemoteShards> ExchangeShards(const Executable& exe, const std::vector<DeviceWork>& work,
                                      const CrossProcess& cross);

}  // namespace kiln::engine
