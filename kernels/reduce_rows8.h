// Eight short f32 rows reduced at once with AVX2 (kernels/reduce_rows8_avx2.cc), and rows shorter
// than 32 elements (f32, f64) sixteen at a time, used by
// stablehlo.reduce's row path (kernels/reduce_fast.h: ReduceRows) and so by the row reductions
// joined to fused runs (softmax over rows of 96-512 elements).
#pragma once

#include <cstdint>

#include "kernels/scalar_body.h"

namespace kiln::kernels {

// Rows of at most this many elements go eight at a time (longer ones keep the four-row loop).
inline constexpr int64_t kShortRowMax = 512;

namespace avx2 {

// out[r] = the fold of rows[r][0, n), r < m (1 <= m <= 8; rows[r] for r >= m is not read), for an
// f32 kind with a vector loop (ReduceSimdKind), n >= 1: exactly FinishLeaf's bits (reduce_fast.h)
// for one leaf: 32 lanes starting at `identity`, whole blocks of 32 elements lane by lane, the tail
// into lane 0 in order, then the lane tree of widths 16, 8, 4, 2, 1. Each row's 32 lanes stay in
// registers (two rows at a time) and fold to 8; the last three tree levels run for the eight rows
// at once after an 8x8 transpose (column k holds lane k of every row), so no per-row horizontal
// fold or memory round trip of the lanes.
void ReduceRows8(ReducerKind kind, const float* const rows[8], int m, int64_t n, float identity,
                 float out[8]);

// Rows ReduceShortRowsSimd folds at once.
inline constexpr int kShortRowsAtOnce = 16;

// out[r] = the fold of rows[r][0, n), r < m (1 <= m <= kShortRowsAtOnce; rows[r] for r >= m is not
// read), for a kind with a vector loop (ReduceSimdKind), 1 <= n < 32: exactly FinishLeaf's bits for
// a row shorter than its 32 lanes (reduce_fast.h, ReduceShortRows): a left fold of the row's
// elements in order into `identity`, then `identity` once per level of the lane tree (5). Lane r
// of a vector holds row r's fold: the rows are loaded a block of one vector's width at a time
// (masked past n, so nothing past a row is read) and transposed, so each step folds one element
// of 8 (f32) or 4 (f64) rows; the 16 rows' chains (two vectors of f32, four of f64) overlap.
void ReduceShortRowsSimd(ReducerKind kind, const float* const rows[kShortRowsAtOnce], int m,
                         int64_t n, float identity, float out[kShortRowsAtOnce]);
void ReduceShortRowsSimd(ReducerKind kind, const double* const rows[kShortRowsAtOnce], int m,
                         int64_t n, double identity, double out[kShortRowsAtOnce]);

// Rows of two elements stored back to back from x (a sum over a last axis of 2), 8 (f32) or 4
// (f64) rows per step: out[r] = init op the leaf ReduceShortRowsSimd gives row r (the same
// operations in the same order), for whole vectors of rows; returns how many rows that is (the
// caller folds the last ones).
int64_t ReducePairRows(ReducerKind kind, const float* x, int64_t rows, float identity, float init,
                       float* out);
int64_t ReducePairRows(ReducerKind kind, const double* x, int64_t rows, double identity,
                       double init, double* out);

}  // namespace avx2
}  // namespace kiln::kernels
