// Small dots and bitwise reductions that loop code emits inline: what the kernels compute,
// described element by element (kernels/dot_small.cc, kernels/reduce_bits.cc fill these), and
// what the loop code generator emits for them (codegen/native_dots.cc, codegen/native_reduce.cc).
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

// The direct form of a BitReduceCode (Direct::fn; Direct::state is the code). A tiny dot's is the
// dot kernel's own (kernels/dot.cc), so that interpreted loops keep its bits, NaN payloads
// included.
void BitReduceDirect(const void* state, const runtime::View* in, const runtime::View* out);

// What a direct form computes, when it is one of these (Direct::small_dot, Direct::bit_reduce), or
// null.
inline const SmallDotCode* SmallDotOf(const Direct& d) { return d.small_dot.get(); }
inline const BitReduceCode* BitReduceOf(const Direct& d) { return d.bit_reduce.get(); }

}  // namespace kiln::lower
