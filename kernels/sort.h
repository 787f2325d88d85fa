// stablehlo.sort's lowering rule (registered by RegisterIndexingOps in kernels/indexing.cc).
#pragma once

#include "compiler/op_registry.h"

namespace kiln::kernels {

StatusOr<compiler::Kernel> LowerSort(compiler::LowerContext& ctx);

}  // namespace kiln::kernels
