// Narrow floats (float8 of every flavour, float4_e2m1fn) are computed in f32.
//
// XLA:CPU does the same: it widens these types for arithmetic and rounds each result back. This
// pass rewrites a module so that every value of a narrow type becomes an f32 value holding one of
// that type's numbers:
//   * an op that can produce numbers outside the type (arithmetic, math functions, dots,
//     convolutions, iota, conversions, min/max, ...) is followed by a rounding: a convert to the
//     narrow type's stored codes and back (kernels/narrow_float.h rounds exactly as XLA:CPU);
//   * ops that only move, select or carry values (reshape, slice, gather, select, sort, while,
//     reduce, ...) need nothing: their operands are already rounded, and the reductions' bodies
//     round each step;
//   * where the stored bytes matter, the values are converted to and from the codes: @main's
//     arguments and results (the caller's buffers hold codes), constants (whose literals are
//     codes), bitcast_convert and custom calls;
//   * a conversion to a narrow type converts from its source directly, so an f64 or integer
//     source rounds once.
// Kernels therefore see narrow types only in `stablehlo.convert` and byte-moving ops.
//
// The same pass widens the f16/bf16 operands of ops whose kernels compute only in f32 and f64
// (triangular_solve and cholesky, on BLAS/LAPACK) and rounds their results back.
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

// True when `module` has values of a narrow float type or an f16/bf16 op listed above (the copy
// and rewrite are done only then).
bool NeedsF32Compute(const ir::Module& module);

// Rewrites `module` in place as described above.
void ComputeInF32(ir::Module& module);

}  // namespace kiln::compiler
