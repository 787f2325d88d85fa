// Small real matrices (order up to kSmallOrder) solved and factored in place by plain loops, for
// batches of them (jnp.linalg.solve over 4,096 3x3 systems: one BLAS trsm call costs ~150 ns and
// one LAPACK getrf ~220 ns of checks, transposition and dispatch around a few dozen flops).
// The same algorithms as the reference BLAS/LAPACK routines (xTRSM's substitution; xGETF2:
// partial pivoting on the first largest magnitude, row swaps across the whole row, the column
// scaled by the pivot's reciprocal when that is safe, a rank-1 update); the rounding of their
// sums may differ from an optimized library's by an ulp or so.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>

namespace kiln::kernels::lapack {

inline constexpr int kSmallOrder = 8;

// Solves op(a) x = b (side 'L', x and b m x n) or x op(a) = b (side 'R') in place of b (row-major,
// rows of n), a row-major triangle of order m or n (uplo 'L'/'U', diag 'U': ones on the diagonal).
// op is a or its transpose (trans 'T' or 'C': the same for real matrices).
template <typename T>
void SmallTrsm(char side, char uplo, char trans, char diag, int m, int n, const T* a, T* b) {
  // As M y = c with M (order x order) = op(a) for side 'L' (y: b's columns) and op(a)^T for side
  // 'R' (y: b's rows, as x op(a) = b is op(a)^T x^T = b^T).
  const bool transposed = (trans != 'N') != (side == 'R');
  const int order = side == 'L' ? m : n, count = side == 'L' ? n : m;
  const int64_t a_row = transposed ? 1 : order, a_col = transposed ? order : 1;
  const int64_t y_elem = side == 'L' ? n : 1, y_vec = side == 'L' ? 1 : n;
  const bool lower = (uplo == 'L') != transposed;
  const bool unit = diag == 'U';
  for (int c = 0; c < count; ++c) {
    T* y = b + c * y_vec;
    for (int s = 0; s < order; ++s) {
      const int i = lower ? s : order - 1 - s;
      T sum = y[i * y_elem];
      if (lower) {
        for (int k = 0; k < i; ++k) sum -= a[i * a_row + k * a_col] * y[k * y_elem];
      } else {
        for (int k = i + 1; k < order; ++k) sum -= a[i * a_row + k * a_col] * y[k * y_elem];
      }
      y[i * y_elem] = unit ? sum : sum / a[i * a_row + i * a_col];
    }
  }
}

// LU factorization with partial pivoting of row-major m x n `a` in place (xGETF2): ipiv[j] the
// 1-based row swapped with row j, info the 1-based index of the first exactly zero pivot, or 0.
template <typename T>
void SmallGetrf(int m, int n, T* a, int* ipiv, int* info) {
  const T safe_min = std::numeric_limits<T>::min();
  const int k = m < n ? m : n;
  *info = 0;
  for (int j = 0; j < k; ++j) {
    int p = j;
    T best = std::abs(a[j * n + j]);
    for (int i = j + 1; i < m; ++i) {
      const T v = std::abs(a[i * n + j]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    ipiv[j] = p + 1;
    const T pivot = a[p * n + j];
    if (pivot != T(0)) {
      if (p != j) {
        for (int c = 0; c < n; ++c) std::swap(a[j * n + c], a[p * n + c]);
      }
      if (std::abs(pivot) >= safe_min) {
        const T r = T(1) / pivot;
        for (int i = j + 1; i < m; ++i) a[i * n + j] *= r;
      } else {
        for (int i = j + 1; i < m; ++i) a[i * n + j] /= pivot;
      }
    } else if (*info == 0) {
      *info = j + 1;
    }
    for (int i = j + 1; i < m; ++i) {
      const T l = a[i * n + j];
      for (int c = j + 1; c < n; ++c) a[i * n + c] -= l * a[j * n + c];
    }
  }
}

// Cholesky factorization of the `uplo` triangle of row-major n x n `a` in place (xPOTF2's
// column-by-column order): 'L' makes l with a = l l^T in the lower triangle, 'U' its transpose
// u = l^T (a = u^T u) in the upper one; the other triangle is not read or written. info is the
// 1-based order of the first leading minor that is not positive definite (its pivot left on the
// diagonal and the factorization stopped there, as LAPACK does), or 0. A NaN pivot is not caught:
// it flows on into the rest of the factor with info 0, as in OpenBLAS's potrf, which XLA:CPU's
// jaxlib and Kiln's larger matrices call (reference LAPACK's xPOTF2 would stop there).
template <typename T>
void SmallPotrf(char uplo, int n, T* a, int* info) {
  // l(i, j), i >= j, lives at a[i * n + j] ('L') or a[j * n + i] ('U').
  const int64_t row = uplo == 'L' ? n : 1, col = uplo == 'L' ? 1 : n;
  *info = 0;
  for (int j = 0; j < n; ++j) {
    T* lj = a + j * row;  // row j of l
    T d = lj[j * col];
    for (int k = 0; k < j; ++k) d -= lj[k * col] * lj[k * col];
    if (d <= T(0)) {
      lj[j * col] = d;
      *info = j + 1;
      return;
    }
    d = std::sqrt(d);
    lj[j * col] = d;
    const T r = T(1) / d;
    for (int i = j + 1; i < n; ++i) {
      T* li = a + i * row;
      T s = li[j * col];
      for (int k = 0; k < j; ++k) s -= li[k * col] * lj[k * col];
      li[j * col] = s * r;
    }
  }
}

}  // namespace kiln::kernels::lapack
