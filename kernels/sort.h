// stablehlo.sort's lowering rule (registered by RegisterIndexingOps in kernels/indexing.cc).
#pragma once

#include "lower/op_registry.h"

namespace kiln::kernels {

StatusOr<lower::Kernel> LowerSort(lower::LowerContext& ctx);

}  // namespace kiln::kernels
