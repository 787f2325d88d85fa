// Small dots and bitwise reductions that loop code emits inline: what the kernels compute,
// described element by element (kernels/dot_small.cc, kernels/reduce_bits.cc fill these), and
// their direct forms, by which the loop code generator recognises them
// (codegen/native_dots.cc).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "lower/kernel.h"
#include "runtime/view.h"

namespace kiln::lower {

// A tiny f32/f64 dot_general as the dot kernel computes it: output element e (in output order)
// is a chain from +0 over terms [first[e], first[e + 1]) in order, each term the product of lhs
// element terms[t][0] and rhs element terms[t][1] (element indices into the operands' memory):
// acc = acc + a * b (two roundings) or, when `fused`, acc = fma(a, b, acc) (one).
struct SmallDotCode {
  bool f64 = false;
  bool fused = false;
  std::vector<uint32_t> first;
  std::vector<std::array<uint32_t, 2>> terms;
};

// A small reduction by a bitwise reducer (and, or, xor on integers; pred's reducers, which run
// bitwise on its bytes): output element o is input 1's element (the initial value) `op`-ed with
// input 0's elements elements[first[o] .. first[o + 1]), each `width` bytes. Bitwise operations
// are exact in any order, so this is the kernel's result whatever order it folds in.
struct BitReduceCode {
  MapOp op = MapOp::kNone;  // kAnd, kOr or kXor
  int width = 1;
  std::vector<uint32_t> first;
  std::vector<uint32_t> elements;
};

// Direct forms (Direct::fn) computing these; Direct::state is the code (for a dot, the base of the
// dot kernel's state). SmallDotDirect is defined with the dot kernel (kernels/dot.cc) and runs it;
// BitReduceDirect in lower/small_ops.cc.
void SmallDotDirect(const void* state, const runtime::View* in, const runtime::View* out);
void BitReduceDirect(const void* state, const runtime::View* in, const runtime::View* out);

// The code of a direct form above, or null when `d` is another kernel's.
inline const SmallDotCode* SmallDotOf(const Direct& d) {
  return d.fn == &SmallDotDirect ? static_cast<const SmallDotCode*>(d.state.get()) : nullptr;
}
inline const BitReduceCode* BitReduceOf(const Direct& d) {
  return d.fn == &BitReduceDirect ? static_cast<const BitReduceCode*>(d.state.get()) : nullptr;
}

}  // namespace kiln::lower
