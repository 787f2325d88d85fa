// stablehlo.composite "chlo.top_k" as one kernel (top_k.cc), taken by the composite's lowering
// (kernels/control_flow.cc) in place of its decomposition when it applies.
#pragma once

#include <optional>

#include "lower/op_registry.h"

namespace kiln::kernels {

// The kernel for a "chlo.top_k" composite, or nullopt when its types, k or version are not the
// ones the kernel handles (then the decomposition runs).
std::optional<lower::Kernel> LowerTopKComposite(lower::LowerContext& ctx);

}  // namespace kiln::kernels
