// Column folds with the accumulators in registers (kernels/reduce_simd.h: ReduceColumnStrips).
// Built with -mavx2; called only on CPUs with AVX2.
//
// ReduceColumnsOf (kernels/reduce_fast.h) combines four rows at a time into the output row, so
// each output vector is loaded and stored once per four input rows. When the output row is short
// (f64[37, 129, 65] over axis 1: 65 columns), those loads and stores are a third of the work.
// Here a strip of four vectors (32 f32 or 16 f64 columns) stays in registers all the way down
// the column, with the same operations in the same order: init, then each row in turn or, when
// the rows are more than `block`, each block folded from its first row and joined to init in
// block order. Then strips of one vector, then the last columns one by one.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/reduce_simd.h"
#include "kernels/reduce_simd_avx2.h"

namespace kiln::kernels::avx2 {
namespace {

template <typename S, ReducerKind K, int kVectors>
void Strip(const typename S::T* base, const int64_t* offsets, int64_t rows, int64_t block,
           typename S::T init, typename S::T* out) {
  using V = typename S::V;
  V acc[kVectors];
  for (int v = 0; v < kVectors; ++v) acc[v] = S::Set1(init);
  if (rows <= block) {
    for (int64_t r = 0; r < rows; ++r) {
      const typename S::T* x = base + offsets[r];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[v] = Apply<S, K>(acc[v], S::Load(x + v * S::kWidth));
    }
  } else {
    for (int64_t r0 = 0; r0 < rows; r0 += block) {
      const int64_t r1 = std::min(rows, r0 + block);
      V part[kVectors];
      const typename S::T* first = base + offsets[r0];
      for (int v = 0; v < kVectors; ++v) part[v] = S::Load(first + v * S::kWidth);
      for (int64_t r = r0 + 1; r < r1; ++r) {
        const typename S::T* x = base + offsets[r];
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
          part[v] = Apply<S, K>(part[v], S::Load(x + v * S::kWidth));
        }
      }
      for (int v = 0; v < kVectors; ++v) acc[v] = Apply<S, K>(acc[v], part[v]);
    }
  }
  for (int v = 0; v < kVectors; ++v) S::Store(out + v * S::kWidth, acc[v]);
}

template <ReducerKind K, typename T>
T ColumnScalar(const T* base, const int64_t* offsets, int64_t rows, int64_t block, T init) {
  if (rows <= block) {
    for (int64_t r = 0; r < rows; ++r) init = ApplyScalar<K>(init, base[offsets[r]]);
    return init;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    const int64_t r1 = std::min(rows, r0 + block);
    T part = base[offsets[r0]];
    for (int64_t r = r0 + 1; r < r1; ++r) part = ApplyScalar<K>(part, base[offsets[r]]);
    init = ApplyScalar<K>(init, part);
  }
  return init;
}

template <typename S, ReducerKind K>
void Strips(const typename S::T* base, const int64_t* offsets, int64_t rows, int64_t block,
            int64_t w, typename S::T init, typename S::T* out) {
  constexpr int64_t kWide = 4 * S::kWidth;
  int64_t j = 0;
  for (; j + kWide <= w; j += kWide) Strip<S, K, 4>(base + j, offsets, rows, block, init, out + j);
  for (; j + S::kWidth <= w; j += S::kWidth) {
    Strip<S, K, 1>(base + j, offsets, rows, block, init, out + j);
  }
  for (; j < w; ++j) out[j] = ColumnScalar<K>(base + j, offsets, rows, block, init);
}

}  // namespace

void ReduceColumnStrips(ReducerKind kind, const float* base, const int64_t* offsets, int64_t rows,
                        int64_t block, int64_t w, float init, float* out) {
  ForVectorKind<void>(
      kind, [&]<ReducerKind K>() { Strips<F32, K>(base, offsets, rows, block, w, init, out); });
}
void ReduceColumnStrips(ReducerKind kind, const double* base, const int64_t* offsets, int64_t rows,
                        int64_t block, int64_t w, double init, double* out) {
  ForVectorKind<void>(
      kind, [&]<ReducerKind K>() { Strips<F64, K>(base, offsets, rows, block, w, init, out); });
}

}  // namespace kiln::kernels::avx2
