// The step runner: runs a Program (lower/program.h) on memory its plan laid out.
#pragma once

#include <cstddef>
#include <span>

#include "lower/kernel.h"
#include "lower/program.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::engine {

// Runs `program`. `params` and `results` are views of the caller's memory, one per parameter and
// result, typed as the program declares; results must not overlap params, except that a result
// may be the very memory of the parameter PlanDonations (compiler/donation.h) allows it to take.
// `memory` is program.total_bytes bytes, 64-byte aligned, which the program may overwrite. Errors
// carry the failing step's description.
Status RunProgram(const lower::Program& program, lower::ExecContext& ctx,
                  std::span<const runtime::View> params, std::span<const runtime::View> results,
                  std::byte* memory);

}  // namespace kiln::engine
