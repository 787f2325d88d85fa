// Kernels that read 16-bit float codes in place of their f32 conversion (Kernel::narrow_input):
// JAX reduces bf16 and f16 arrays in f32, as a `convert` to f32 followed by the reduction. When
// the reduction's kernel has a form reading the codes and nothing else reads the converted array,
// the pair becomes that one step, and the f32 array is never written (a bf16 column mean reads 2
// bytes per element instead of writing 4 and reading them back).
#pragma once

#include "lower/program.h"

namespace kiln::compiler {

// Rewrites program.steps in place, before fusion and the buffer plan.
void UseNarrowInputs(lower::Program& program);

}  // namespace kiln::compiler
