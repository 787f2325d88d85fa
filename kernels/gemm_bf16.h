// bf16 x bf16 -> f32 matrix products with the CPU's bf16 dot-product instruction (vdpbf16ps,
// AVX512_BF16), for dots whose operands are both bf16 (kernels/dot.cc). Each product of two
// bf16 values is exact in f32; vdpbf16ps adds the products of a k-pair to the f32 accumulator,
// so the sum differs from sgemm on the widened operands only in its order (and in that the
// instruction flushes f32 denormals to zero and rounds to nearest-even, as sgemm does).
//
// Matrices are row-major 16-bit storage (bf16 bits); `ta`/`tb` read A/B transposed.
#pragma once

#include <cstdint>

namespace kiln::kernels {

// True when this CPU (and OS) runs AVX512F + AVX512_BF16 code: Bf16Gemm may be called.
bool HaveBf16Gemm();

// `batch` products C_i[m, n] = op(A_i)[m, k] x op(B_i)[k, n] in f32 (C contiguous per batch,
// ldc = n, batch stride m * n), A_i = a + i * a_batch, B_i = b + i * b_batch. Rows of C are split
// over the pool (runtime/parallel.h). Only where HaveBf16Gemm(); k >= 1.
void Bf16Gemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a,
              int64_t lda, int64_t a_batch, const uint16_t* b, int64_t ldb, int64_t b_batch,
              float* c);

}  // namespace kiln::kernels
