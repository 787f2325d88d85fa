// Calls of small functions flattened into their callers, so that a chain of calls becomes one block
// the fusion pass sees whole.
//
// jax.random.normal(key, (3,)) is @main calling @_normal calling @_normal_real calling @_uniform
// calling @threefry2x32 (for a platform other than "cpu", jaxlib 0.10.2 writes threefry's 20
// rounds out: 193 ops). Run as written that is a nest of called programs, each a step of its
// caller: the counter's iota and zero are written out in full as @threefry2x32's arguments (2^20
// values each for a uniform of 2^20 values) and a run of threefry's members cannot continue into
// the bits-to-float step after the call. compiler/inline_calls.h inlines only callees of at most
// 64 elementwise ops.
//
// This pass (before lowering, for programs not partitioned over devices) replaces a `func.call` in
// @main's block (not in a region: a loop's body inlines its calls itself, engine/flat_program.h,
// and flattening there was not shown to help on the loaded machine) by a copy of its callee's ops
// (fresh values, source locations kept; the call's results become the values the callee returns)
// when the callee is one block of at most kMaxFlattenedOps ops ending in func.return, with as many
// arguments and results as the call, and the call has no discardable attributes. Copies are
// flattened in turn, to kMaxCallDepth levels of calls; after kFlattenBudget copied ops in a module,
// calls stay calls. Each copy computes, op for op, what the callee computed, so results are the
// same bits; only the call frame leaves run-time error messages.
#pragma once

#include <cstddef>

#include "ir/module.h"

namespace kiln::compiler {

inline constexpr size_t kMaxFlattenedOps = 256;
inline constexpr int kMaxCallDepth = 8;
inline constexpr size_t kFlattenBudget = 20000;

// Whether @main has a call FlattenCalls would flatten.
bool HasFlattenableCalls(const ir::Module& module);

// Flattens those calls in @main's block, and the calls in the copies (callees are read as they were
// before the pass).
void FlattenCalls(ir::Module& module);

}  // namespace kiln::compiler
