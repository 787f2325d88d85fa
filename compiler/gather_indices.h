// Index normalisation folded into the gather that reads it.
//
// JAX's indexing (`take_along_axis`, `x[i]` with mode="fill" or "clip") first maps negative
// indices to the end of the axis, `j = select(i < 0, i + N, i)` with N the axis size, then gathers
// at `reshape(j)` (which clamps). Gathering at `reshape(i)` with the gather itself adding N to a
// negative index before clamping (the op's `kiln.wrap_negative_indices`, read by kernels/gather.cc)
// gives every element the same value: i + N cannot overflow for a negative i. The gather then no
// longer waits for a separate run that writes j: its index map reads the argument, and the bounds
// check JAX builds from j (the fill mask) fuses with the select that reads the gather.
//
// Rewritten when the gather has one start index component (index vector of size 1) mapped to
// operand axis a, N (a splat or scalar constant, through broadcasts) equals that axis's size, the
// compare is `LT(i, 0)` under SIGNED (or default) ordering with 0 a splat constant, and the
// select's false branch is i itself. j and its chain stay for their other uses.
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

// Whether some gather of `module` reads a normalisation FoldGatherIndexWrap folds.
bool HasGatherIndexWrap(const ir::Module& module);

// Points each such gather at the unnormalised indices (a new reshape when the shapes differ) and
// marks it `kiln.wrap_negative_indices`, in every function and region.
void FoldGatherIndexWrap(ir::Module& module);

}  // namespace kiln::compiler
