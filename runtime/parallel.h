// Intra-op parallelism: splits an index range over a process-wide pool sized to the machine.
#pragma once

#include <cstdint>
#include <functional>

namespace kiln::runtime {

// Calls fn(begin, end) on disjoint chunks covering [0, n). Runs inline when the work is small
// (n < 2 * min_chunk) so tiny ops never pay for a thread handoff.
void ParallelFor(int64_t n, int64_t min_chunk, const std::function<void(int64_t, int64_t)>& fn);

int NumWorkerThreads();

}  // namespace kiln::runtime
