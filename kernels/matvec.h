// Matrix-vector products of small f32/f64 matrices with AVX2 and FMA (kernels/matvec_avx2.cc):
// what Gemm<T> runs when one side of the product is a vector (a gradient step's `a @ w` and
// `r @ a` inside a loop), where OpenBLAS's small-matrix gemm took ~400 ns for 128 x 16.
//
// y[i] = sum_k a[i * row + k * col] * x[k * xs] for i < m, k < n, in one of two orders:
//  * rows contiguous (col == 1, xs == 1): each y[i] a dot product of its row with x, rows in groups
//    of 8 (f32) or 4 (f64) with an accumulator each while the rows are short, else 4 x 8 (f32)
//    or 4 x 4 (f64) lanes of fused multiply-adds, the lanes then summed pairwise, then the tail;
//  * outputs contiguous (row == 1): y accumulated over k, y[i] += a[i + k * col] * x[k], in
//    lanes of outputs, fused multiply-adds into 8 / (vectors of outputs) partial sums by k modulo
//    that count (eight chains in flight), added in order at the end.
// Not the order BLAS sums in: results agree with it within rounding, not bit for bit.
#pragma once

#include <cstdint>

namespace kiln::kernels {

// Whether this CPU has AVX2 and FMA (MatVec runs only then).
bool MatVecAvailable();

// Computes y as above and returns true, or returns false (nothing written) when neither layout
// applies or MatVecAvailable() is false.
bool MatVec(const float* a, int64_t row, int64_t col, const float* x, int64_t xs, float* y,
            int64_t m, int64_t n);
bool MatVec(const double* a, int64_t row, int64_t col, const double* x, int64_t xs, double* y,
            int64_t m, int64_t n);

}  // namespace kiln::kernels
