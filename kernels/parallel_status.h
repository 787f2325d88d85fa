// ParallelFor for chunk bodies that can fail (kernels whose window walks or per-slice work return
// a Status: reduce_window, select_and_scatter, sort).
#pragma once

#include <cstdint>
#include <mutex>
#include <utility>

#include "runtime/parallel.h"
#include "support/function_ref.h"
#include "support/status.h"

namespace kiln::kernels {

// Runs fn over [0, n) as runtime::ParallelFor does; every chunk runs (a failing chunk does not
// stop the others), and the result is Ok or the error of one failing chunk (the first recorded).
inline Status ParallelForStatus(int64_t n, int64_t min_chunk,
                                FunctionRef<Status(int64_t, int64_t)> fn) {
  Status status = Status::Ok();
  std::mutex mu;
  runtime::ParallelFor(n, min_chunk, [&](int64_t begin, int64_t end) {
    Status s = fn(begin, end);
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(mu);
    if (status.ok()) status = std::move(s);
  });
  return status;
}

}  // namespace kiln::kernels
