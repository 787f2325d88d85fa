// Elementwise fusion: runs of elementwise ("map") steps over the same number of elements become one
// step that evaluates them tile by tile. Each tile of every intermediate stays in L1 (a few KiB on
// the stack of the thread computing it) instead of making a round trip through memory; only values
// read outside the run, or returned, are written out. Runs on a Program's steps before the buffer
// plan, so fused-away intermediates never get a buffer.
#pragma once

#include "compiler/program.h"

namespace kiln::compiler {

// Rewrites program.steps in place. Steps without code (constants, views) between elementwise steps
// do not break a run.
void FuseElementwise(Program& program);

}  // namespace kiln::compiler
