// Calls of small elementwise helper functions inlined into their callers.
//
// jnp writes `%`, `//`, `where`, `clip` and friends as private functions (@remainder,
// @floor_divide, @_where, ...) called with func.call. Each callee is compiled as its own program,
// so the fusion pass (compiler/fusion.h) sees a caller's elementwise ops and the callee's apart:
// in a loop body that is a fused step per call and a map step per one-op callee, each iteration.
// This pass replaces such calls by copies of the callee's ops (fresh values; the call's results
// become the values the callee returns), so that one run fuses across them. A callee qualifies
// when its body is one block of at most kMaxInlinedOps elementwise ops (ElementwiseOpName below:
// arithmetic, logic, compares, select, converts, constants, broadcasts) and calls of callees that
// qualify, and each value it returns is a distinct result of one of its ops. Every op keeps its
// source location; only the call frame leaves error messages, and elementwise ops do not fail at
// run time.
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

inline constexpr size_t kMaxInlinedOps = 64;

// Whether some function of `module` has a call InlineElementwiseCalls would inline.
bool HasInlinableCalls(const ir::Module& module);

// Inlines those calls, in every function and region; nested calls of the copies too (up to a
// depth of 8).
void InlineElementwiseCalls(ir::Module& module);

}  // namespace kiln::compiler
