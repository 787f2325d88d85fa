// AVX2 loops for float and double reductions (add, multiply, maximum, minimum), used by
// stablehlo.reduce's fast path (kernels/reduce_fast.h) on CPUs that have AVX2. They compute exactly
// what the scalar loops compute: the same lanes in the same order with the same NaN rule
// (ReducerFn), so results are bit-identical with and without them (up to which NaN a sum of two
// NaNs is). Only reduce_simd_avx2.cc is compiled for AVX2, and it runs only where
// ReduceSimdAvailable() says so; the rest of the library stays baseline x86-64.
#pragma once

#include <cstdint>

#include "kernels/scalar_body.h"

namespace kiln::kernels {

// Whether this CPU runs the AVX2 loops (KILN_VECTOR_MATH=off turns them off too).
bool ReduceSimdAvailable();

// Whether `kind` has a vector loop.
constexpr bool ReduceSimdKind(ReducerKind kind) {
  return kind == ReducerKind::kAdd || kind == ReducerKind::kMultiply ||
         kind == ReducerKind::kMaximum || kind == ReducerKind::kMinimum;
}

// Whether `kind` has a 32-bit integer loop (avx2::ReduceInts): the kinds whose fold of wrapping
// integers gives the same result in every order.
constexpr bool ReduceSimdIntKind(ReducerKind kind) {
  return ReduceSimdKind(kind) || kind == ReducerKind::kAnd || kind == ReducerKind::kOr ||
         kind == ReducerKind::kXor;
}

// Accumulators per contiguous row: lane j folds elements j, j + kReduceLanes, ... (4 AVX2 vectors
// of floats, so consecutive adds or maxima do not wait on each other).
inline constexpr int kReduceLanes = 32;

// Rows reduced at once by ReduceLanes4: one row at a time is one memory stream, and one core
// streamed a f32[2048,2048] sum at 13-21 GB/s that way, four rows at once at 22-31 GB/s.
inline constexpr int kReduceRows = 4;

namespace avx2 {

// lanes[j] = Apply(lanes[j], x[i + j]) for every whole block of kReduceLanes elements of x[0, n),
// in order; returns how many elements it consumed (n rounded down to a multiple of kReduceLanes).
int64_t ReduceLanes(ReducerKind kind, const float* x, int64_t n, float lanes[kReduceLanes]);
int64_t ReduceLanes(ReducerKind kind, const double* x, int64_t n, double lanes[kReduceLanes]);

// ReduceLanes(kind, rows[r], n, lanes[r]) for the kReduceRows rows, their loads interleaved; the
// same bits as the four calls (each row keeps its own lanes and order).
int64_t ReduceLanes4(ReducerKind kind, const float* const rows[kReduceRows], int64_t n,
                     float lanes[kReduceRows][kReduceLanes]);

// The fold of x[0, n) by `kind` from `identity` (its reducer's identity), on 32-bit integers:
// lanes side by side, then the lanes and the tail; the result of any order (see
// ReduceSimdIntKind), so the scalar fold's.
int32_t ReduceInts(ReducerKind kind, const int32_t* x, int64_t n, int32_t identity);
uint32_t ReduceInts(ReducerKind kind, const uint32_t* x, int64_t n, uint32_t identity);

// For each output q < m, for each row bases[q] + offsets[r], r < rows, in turn: lanes[q][i %
// kReduceLanes] = Apply(lanes[q][i % kReduceLanes], row[i]) for i in [0, n), in order (a row's
// last, partial block into the first lanes only). The rows of one output of a reduction over the
// last axis and outer axes share its lanes (reduce_fast.h: ReduceSegmentRows); the loop walks
// rows outer and outputs inner, so m adjacent outputs' rows are read in memory order.
void AccumulateRows(ReducerKind kind, const float* const* bases, int m, const int64_t* offsets,
                    int64_t rows, int64_t n, float (*lanes)[kReduceLanes]);
void AccumulateRows(ReducerKind kind, const double* const* bases, int m, const int64_t* offsets,
                    int64_t rows, int64_t n, double (*lanes)[kReduceLanes]);

// The lanes' tree: lanes[j] = Apply(lanes[j], lanes[j + w]) for j < w, w = kReduceLanes / 2, ...,
// 1; returns lanes[0]. Levels of at least a vector's width run as vector ops (lane-wise, the same
// bits).
float FoldLanes(ReducerKind kind, float lanes[kReduceLanes]);
double FoldLanes(ReducerKind kind, double lanes[kReduceLanes]);

// acc[j] = Apply(acc[j], row[j]) for j in [0, n).
void CombineRow(ReducerKind kind, float* acc, const float* row, int64_t n);
void CombineRow(ReducerKind kind, double* acc, const double* row, int64_t n);
// CombineRow with rows[0], ..., rows[3] in turn (the same bits), acc loaded and stored once: one
// pass over a column block instead of four.
void CombineRows4(ReducerKind kind, float* acc, const float* const rows[kReduceRows], int64_t n);
void CombineRows4(ReducerKind kind, double* acc, const double* const rows[kReduceRows], int64_t n);

// out[j], j < w: column j of the rows base + offsets[r], r < rows, folded as ReduceColumnsOf
// (kernels/reduce_fast.h) folds it (init, then the rows in order; with more than `block` rows,
// each block from its first row, joined to init in block order): the same bits, with the
// accumulators of 32 f32 / 16 f64 columns in registers down the column
// (kernels/reduce_columns_avx2.cc).
void ReduceColumnStrips(ReducerKind kind, const float* base, const int64_t* offsets, int64_t rows,
                        int64_t block, int64_t w, float init, float* out);
void ReduceColumnStrips(ReducerKind kind, const double* base, const int64_t* offsets, int64_t rows,
                        int64_t block, int64_t w, double init, double* out);

// Arg-reduction (argmax when `max`, else argmin; JAX's reducer, kernels/arg_reduce.h) of the 8
// rows x[k * len, (k + 1) * len), k < 8, whose indices are their positions 0, 1, ..., len - 1:
// each row folds in order from (init_v, init_i), the rows side by side in vector lanes (an 8x8
// transpose per 8 columns); the same results as the scalar fold.
void ArgRows8(bool max, const float* x, int64_t len, float init_v, int32_t init_i, float* out_v,
              int32_t* out_i);

// The same for w outputs side by side (w a multiple of 8): output j folds x[r * stride + j],
// r < len, with index r; row by row, the outputs holding the folds.
void ArgColumns(bool max, const float* x, int64_t stride, int64_t len, int64_t w, float init_v,
                int32_t init_i, float* out_v, int32_t* out_i);

}  // namespace avx2
}  // namespace kiln::kernels
