// Elementwise fusion: runs of elementwise ("map") steps over the same number of elements become one
// step that evaluates them tile by tile; broadcasts (index maps, MapInfo::absolute) join the run
// and produce their tiles in place of a whole broadcast array. Each tile of every intermediate
// stays in L1 (a few KiB on the stack of the thread computing it) instead of making a round trip
// through memory; only values read outside the run, or returned, are written out. A reduction of
// one of the run's values over its last axis (Direct::rows) that follows the run joins it too:
// tiles then hold whole rows, and each tile's rows are reduced right after the tile is written,
// while they are still in cache (a softmax's row sum of its exponentials). And a second run that
// reads the reduction's result broadcast back along its rows, with the first run's values (the
// division of each exponential by its row's sum), may follow it into the same tile loop: its
// members run on each tile after the tile's rows are reduced, so the first run's values need not
// leave the tile. A row reduction of an input just before a run that reads its result broadcast
// along its rows joins ahead of it (softmax's row maximum). Runs on a Program's steps before the
// buffer plan, so fused-away intermediates never get a buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lower/fused_plan.h"
#include "lower/program.h"

namespace kiln::compiler {

// Rewrites program.steps in place. Steps without code (constants, views) between elementwise steps
// do not break a run. `small_native`: runs under 256 elements of 16 members or more get native code
// too (codegen/fused_native.h); the program builder asks it for @main's own block only, since in
// loop bodies it measured slower (u_metropolis_scan_random 1.4-1.6x in CPU time).
void FuseElementwise(lower::Program& program, bool small_native = false);

}  // namespace kiln::compiler
