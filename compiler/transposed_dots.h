// Transposes of dot_general results folded into the dot.
//
// JAX differentiates `x @ w` into a dot_general whose result is transposed at once: the gradient of
// w of an MLP layer is transpose(dot_general(dh^T, x)), a [784, 128] transpose of a fresh [128,
// 784] result. A transpose that only swaps the dot's lhs-free and rhs-free axes (batch axes staying
// in front) is the dot with its operands swapped: transpose(dot_general(a, b)) == dot_general(b, a)
// with the lhs and rhs dimension numbers exchanged, which the dot kernel writes directly in the
// transposed layout (its GEMM swaps operands and transpose flags). This pass rewrites such pairs
// when the dot's result has no other use. Each element is the same sum of the same products (BLAS
// may block the contraction differently, as for any dot).
#pragma once

#include "ir/module.h"

namespace kiln::compiler {

// Whether some function of `module` has a transpose FoldTransposedDots rewrites.
bool HasTransposedDots(const ir::Module& module);

// Replaces each such dot and transpose by the swapped dot, which produces the transpose's result
// (and keeps the dot's source location), in every function and region.
void FoldTransposedDots(ir::Module& module);

}  // namespace kiln::compiler
