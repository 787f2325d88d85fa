// f32 compares into predicate bytes with AVX2 (compare_simd_avx2.cc): the elementwise compare loop
// (elementwise_map.h: BinaryLoop with CompareOp, not total order) runs these blocks first; GCC
// -O2 for baseline x86-64 leaves the float-to-byte loop mostly scalar. The same predicates: EQ, LT
// and LE ordered (false where either is NaN), NE unordered (true there), bytes 0 or 1.
#pragma once

#include <cstdint>

namespace kiln::kernels::ew {

// y[i] = a[i] `dir` b[i] for i in [0, r), r a multiple of 8 (r <= n), where the CPU has AVX2;
// else 0. dir: 0 EQ, 1 NE, 2 LT, 3 LE (CmpDir's order).
int64_t CompareF32Blocks(int dir, const float* a, const float* b, uint8_t* y, int64_t n);

namespace compare_simd {
int64_t CompareF32Avx2(int dir, const float* a, const float* b, uint8_t* y, int64_t n);
}  // namespace compare_simd

}  // namespace kiln::kernels::ew
