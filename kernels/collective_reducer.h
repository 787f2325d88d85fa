// How the members of an all_reduce or reduce_scatter combine (kernels/collectives.cc): the
// reduction region matched to a typed accumulate function, and the same reduction across
// processes. Members combine in group order, so every device computes bit-identical reductions.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/dtype.h"
#include "lower/op_registry.h"
#include "runtime/network.h"
#include "support/status.h"

namespace kiln::kernels {

// acc[i] = op(acc[i], x[i]) for a matched reducer; complex sums run as sums of their parts.
using Accumulate = void (*)(void* acc, const void* x, int64_t n);

// acc[i] = op(acc[i], float(x[i])) for bf16 x.
using AccumulateWide = void (*)(float* acc, const void* x, int64_t n);

struct Reducer {
  std::optional<runtime::NetReduce> net;  // the same reduction across processes
  Accumulate fn = nullptr;
  AccumulateWide bf16_wide = nullptr;  // bf16: all_reduce accumulates in f32, rounds once
  int64_t scale = 1;                   // elements per logical element (2 for complex)
};

// The reducer of the op's one reduction region for elements of `dtype`.
StatusOr<Reducer> LowerReducer(lower::LowerContext& ctx, ir::DType dtype);

}  // namespace kiln::kernels
