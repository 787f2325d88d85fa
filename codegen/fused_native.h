// Native code for a fused elementwise run (lower/fused_plan.h): the run's members over a tile as
// one x86-64 loop, generated once at compile time with Xbyak, that keeps every intermediate in a
// vector register. The interpreted tile loop (RunFused) calls one range function per member over
// the whole tile, so each intermediate makes a round trip through L1 and each member pays a call;
// here a pair of vectors of 8 f32 (4 f64), or 16 (8) in zmm registers on AVX-512 CPUs, goes through
// all members before the next pair is loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "lower/fused_plan.h"

namespace kiln::codegen {

// The code for members [begin, end) of `plan` (the others' results, when these read them, are in
// memory), or null when one of them is a member the generator does not know (fused_native.cc
// lists the ones it does), when the plan covers fewer than 256 elements, when the CPU lacks AVX,
// or with KILN_FUSED_JIT=0. Results read after the code (outputs, temporaries that later members
// or the plan's row reduction read) are stored. The code runs the members that are not index maps
// (FusedPlan::Member::absolute, which the caller runs first, into their temporaries).
// Runs of fewer than kMinElements elements get none, unless `small` and the part has at least
// kMinMembersWhenSmall members (codegen/fused_tile_emitter.h).
std::shared_ptr<const lower::NativeTile> BuildNativeTile(const lower::FusedPlan& plan, size_t begin,
                                                         size_t end, bool small = false);

}  // namespace kiln::codegen
