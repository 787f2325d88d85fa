// Intra-op parallelism: one process-wide pool of worker threads, and ParallelFor, which splits an
// index range over it. The pool is sized once, from KILN_NUM_THREADS when set, else from the CPUs
// this process may run on (its affinity mask, so `taskset -c 0` gives one thread).
#pragma once

#include <cstdint>

#include "support/function_ref.h"

namespace kiln::runtime {

// Calls fn(begin, end) on disjoint chunks covering [0, n), each at least `min_chunk` long except
// perhaps the last, on the calling thread and the pool's workers; returns when every chunk has
// returned. Runs inline when the work is small (n < 2 * min_chunk) or the pool has one thread.
// Safe to call from inside a pool task (the caller runs chunks itself, so nesting cannot
// deadlock). If fn throws, the remaining chunks are skipped and the first exception is rethrown
// here once no chunk is running.
void ParallelFor(int64_t n, int64_t min_chunk, FunctionRef<void(int64_t, int64_t)> fn);

// Threads that ParallelFor may use, the caller included (>= 1).
int NumWorkerThreads();

// The thread count the pool is created with: KILN_NUM_THREADS if it holds a number in [1, 1024],
// else the size of the process's CPU affinity mask, else std::thread::hardware_concurrency().
int DefaultThreadCount();

}  // namespace kiln::runtime
