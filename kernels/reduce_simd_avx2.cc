// AVX2 reduction loops (kernels/reduce_simd.h). Built with -mavx2; called only on CPUs with AVX2.
//
// Each vector op is the scalar ReducerFn applied lane by lane:
//   add / multiply: one IEEE operation per lane (no reassociation, no contraction);
//   maximum(a, b):  isnan(a) ? a : isnan(b) ? b : (a > b ? a : b). vmaxps(a, b) is
//                   `a > b ? a : b` lane by lane, which already returns b when either is NaN
//                   (and b of two equal zeros, as the scalar rule does): one blend puts a back
//                   where a is NaN;
//   minimum(a, b):  the same with vminps and a < b.
#include <immintrin.h>

#include "kernels/reduce_simd.h"

namespace kiln::kernels::avx2 {
namespace {  // everything instantiated here stays local to this file

struct F32 {
  using T = float;
  using V = __m256;
  static constexpr int kWidth = 8;
  static V Load(const T* p) { return _mm256_loadu_ps(p); }
  static void Store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  // Lanes where a is chosen over b by `a > b` (max) or `a < b` (min), NaNs first.
  static V Pick(V a, V b, bool max) {
    const V r = max ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
    return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};

struct F64 {
  using T = double;
  using V = __m256d;
  static constexpr int kWidth = 4;
  static V Load(const T* p) { return _mm256_loadu_pd(p); }
  static void Store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static V Add(V a, V b) { return _mm256_add_pd(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V Pick(V a, V b, bool max) {
    const V r = max ? _mm256_max_pd(a, b) : _mm256_min_pd(a, b);
    return _mm256_blendv_pd(r, a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
};

// The scalar rule for the tail of a row, written here rather than taken from ReducerFn: an
// inline function instantiated in this AVX2 file could be the copy the linker keeps for the
// baseline files too.
template <ReducerKind K, typename T>
inline T ApplyScalar(T a, T b) {
  if constexpr (K == ReducerKind::kAdd) return a + b;
  if constexpr (K == ReducerKind::kMultiply) return a * b;
  if (a != a) return a;
  if (b != b) return b;
  if constexpr (K == ReducerKind::kMaximum) return a > b ? a : b;
  return a < b ? a : b;
}

template <typename S, ReducerKind K>
inline typename S::V Apply(typename S::V a, typename S::V b) {
  if constexpr (K == ReducerKind::kAdd) return S::Add(a, b);
  if constexpr (K == ReducerKind::kMultiply) return S::Mul(a, b);
  if constexpr (K == ReducerKind::kMaximum) return S::Pick(a, b, true);
  if constexpr (K == ReducerKind::kMinimum) return S::Pick(a, b, false);
}

// kReduceLanes lanes = kReduceLanes / kWidth vectors.
template <typename S, ReducerKind K>
int64_t Lanes(const typename S::T* x, int64_t n, typename S::T lanes[kReduceLanes]) {
  constexpr int kVectors = kReduceLanes / S::kWidth;
  typename S::V acc[kVectors];
  for (int v = 0; v < kVectors; ++v) acc[v] = S::Load(lanes + v * S::kWidth);
  int64_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes) {
    for (int v = 0; v < kVectors; ++v) {
      acc[v] = Apply<S, K>(acc[v], S::Load(x + i + v * S::kWidth));
    }
  }
  for (int v = 0; v < kVectors; ++v) S::Store(lanes + v * S::kWidth, acc[v]);
  return i;
}

template <typename S, ReducerKind K>
int64_t Lanes4(const typename S::T* const rows[kReduceRows], int64_t n,
               typename S::T lanes[kReduceRows][kReduceLanes]) {
  constexpr int kVectors = kReduceLanes / S::kWidth;
  typename S::V acc[kReduceRows][kVectors];
  for (int r = 0; r < kReduceRows; ++r) {
    for (int v = 0; v < kVectors; ++v) acc[r][v] = S::Load(lanes[r] + v * S::kWidth);
  }
  int64_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes) {
    for (int r = 0; r < kReduceRows; ++r) {
      for (int v = 0; v < kVectors; ++v) {
        acc[r][v] = Apply<S, K>(acc[r][v], S::Load(rows[r] + i + v * S::kWidth));
      }
    }
  }
  for (int r = 0; r < kReduceRows; ++r) {
    for (int v = 0; v < kVectors; ++v) S::Store(lanes[r] + v * S::kWidth, acc[r][v]);
  }
  return i;
}

template <typename S, ReducerKind K>
void Combine(typename S::T* acc, const typename S::T* row, int64_t n) {
  int64_t j = 0;
  for (; j + S::kWidth <= n; j += S::kWidth) {
    S::Store(acc + j, Apply<S, K>(S::Load(acc + j), S::Load(row + j)));
  }
  for (; j < n; ++j) acc[j] = ApplyScalar<K>(acc[j], row[j]);
}

// Combine with kRows rows in turn, each vector of acc loaded and stored once.
template <typename S, ReducerKind K, int kRows>
void CombineMany(typename S::T* acc, const typename S::T* const* rows, int64_t n) {
  int64_t j = 0;
  for (; j + S::kWidth <= n; j += S::kWidth) {
    auto a = S::Load(acc + j);
    for (int r = 0; r < kRows; ++r) a = Apply<S, K>(a, S::Load(rows[r] + j));
    S::Store(acc + j, a);
  }
  for (; j < n; ++j) {
    for (int r = 0; r < kRows; ++r) acc[j] = ApplyScalar<K>(acc[j], rows[r][j]);
  }
}

// fn.template operator()<K>() for the kind that has a vector loop (reduce_simd.h:
// ReduceSimdKind, the one case list of this file); R() for any other kind.
template <typename R, typename Fn>
R ForVectorKind(ReducerKind kind, Fn&& fn) {
  switch (kind) {
    case ReducerKind::kAdd:
      return fn.template operator()<ReducerKind::kAdd>();
    case ReducerKind::kMultiply:
      return fn.template operator()<ReducerKind::kMultiply>();
    case ReducerKind::kMaximum:
      return fn.template operator()<ReducerKind::kMaximum>();
    case ReducerKind::kMinimum:
      return fn.template operator()<ReducerKind::kMinimum>();
    default:
      return R();
  }
}

}  // namespace

int64_t ReduceLanes4(ReducerKind kind, const float* const rows[kReduceRows], int64_t n,
                     float lanes[kReduceRows][kReduceLanes]) {
  return ForVectorKind<int64_t>(kind,
                                [&]<ReducerKind K>() { return Lanes4<F32, K>(rows, n, lanes); });
}
int64_t ReduceLanes(ReducerKind kind, const float* x, int64_t n, float lanes[kReduceLanes]) {
  return ForVectorKind<int64_t>(kind, [&]<ReducerKind K>() { return Lanes<F32, K>(x, n, lanes); });
}
int64_t ReduceLanes(ReducerKind kind, const double* x, int64_t n, double lanes[kReduceLanes]) {
  return ForVectorKind<int64_t>(kind, [&]<ReducerKind K>() { return Lanes<F64, K>(x, n, lanes); });
}
void CombineRow(ReducerKind kind, float* acc, const float* row, int64_t n) {
  ForVectorKind<void>(kind, [&]<ReducerKind K>() { Combine<F32, K>(acc, row, n); });
}
void CombineRow(ReducerKind kind, double* acc, const double* row, int64_t n) {
  ForVectorKind<void>(kind, [&]<ReducerKind K>() { Combine<F64, K>(acc, row, n); });
}
void CombineRows4(ReducerKind kind, float* acc, const float* const rows[kReduceRows], int64_t n) {
  ForVectorKind<void>(kind,
                      [&]<ReducerKind K>() { CombineMany<F32, K, kReduceRows>(acc, rows, n); });
}
void CombineRows4(ReducerKind kind, double* acc, const double* const rows[kReduceRows], int64_t n) {
  ForVectorKind<void>(kind,
                      [&]<ReducerKind K>() { CombineMany<F64, K, kReduceRows>(acc, rows, n); });
}

}  // namespace kiln::kernels::avx2
