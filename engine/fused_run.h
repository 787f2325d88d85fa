// Running a fused elementwise step (lower/fused_plan.h), which the fusion pass (compiler/fusion.h)
// makes.
#pragma once

#include <span>

#include "lower/fused_plan.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::engine {

// Runs a fused step: tile by tile, in parallel, each tile's members in order (native code when the
// plan has it), the joined reductions ahead of and between them.
Status RunFused(const lower::FusedPlan& f, std::span<const runtime::View> in,
                std::span<const runtime::View> out);

}  // namespace kiln::engine
