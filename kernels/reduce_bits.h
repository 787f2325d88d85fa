// Small reductions by bitwise reducers as loop code emits them (lower::BitReduceCode,
// kernels/reduce_bits.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "ir/type.h"
#include "kernels/scalar_body.h"
#include "lower/small_ops.h"

namespace kiln::kernels {

// Reductions of at most this many input elements may have a BitReduceCode.
inline constexpr int64_t kMaxInlineBitReduce = 256;

// The BitReduceCode of a reduce of `dims` over the axes `reduced` by `kind` in `dtype`, or null
// when the reducer is not bitwise on that type (pred's and/or, integers' and/or/xor) or the
// reduction is larger than kMaxInlineBitReduce.
std::shared_ptr<const lower::BitReduceCode> PlanBitReduce(ReducerKind kind, ir::DType dtype,
                                                          const std::vector<int64_t>& dims,
                                                          const std::vector<bool>& reduced);

}  // namespace kiln::kernels
