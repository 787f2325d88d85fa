// Pads folded into the reduce_window that reads them, as its base dilation and padding.
//
// JAX's gradient of a sum pooling (`avg_pool`, `lax.reduce_window` with add) pads the cotangent
// with zeros between and around its elements, `pad(g, 0, low, high, interior)`, and sums stride-1
// windows of the result: in flax's 2x2 average pooling three of every four summed elements are
// those zeros. reduce_window(pad(x, v, low, high, interior), init) equals reduce_window(x, init)
// with base dilation interior + 1 and padding low + window padding (high likewise) when the pad
// value is the reduction's init and adding it changes nothing: here an add whose init and pad value
// are both zero (every byte 0: +0.0, or integer 0). A float sum folded from +0.0 is never -0.0, so
// adding +0.0 anywhere leaves every bit as it was; the windows then read only x's elements
// (kernels/window.h) and the padded array is never written. Rewritten when the pad's result has
// no other use, the reduce_window has one input and no base dilation of its own, and every
// padding is non-negative.
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

// Whether some function of `module` has a pad FoldPaddedWindows folds.
bool HasPaddedWindows(const ir::Module& module);

// Folds each such pad into its reduce_window (which then reads the pad's operand), in every
// function and region; the pad goes.
void FoldPaddedWindows(ir::Module& module);

}  // namespace kiln::compiler
