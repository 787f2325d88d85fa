// The AVX2 vector types and reducer steps shared by the reduction files built with -mavx2
// (kernels/reduce_simd_avx2.cc, kernels/reduce_columns_avx2.cc); include it from no other file.
// Everything here is in an unnamed namespace: each AVX2 file gets its own copy, and no baseline
// file can end up with an AVX2 instantiation.
//
// Each vector op is the scalar ReducerFn applied lane by lane:
//   add / multiply: one IEEE operation per lane (no reassociation, no contraction);
//   maximum(a, b):  isnan(a) ? a : isnan(b) ? b : (a > b ? a : b). vmaxps(a, b) is
//                   `a > b ? a : b` lane by lane, which already returns b when either is NaN
//                   (and b of two equal zeros, as the scalar rule does): one blend puts a back
//                   where a is NaN;
//   minimum(a, b):  the same with vminps and a < b.
#pragma once

#include <immintrin.h>

#include "kernels/reduce_simd.h"

namespace kiln::kernels::avx2 {
namespace {

struct F32 {
  using T = float;
  using V = __m256;
  static constexpr int kWidth = 8;
  static V Load(const T* p) { return _mm256_loadu_ps(p); }
  static V Set1(T x) { return _mm256_set1_ps(x); }
  static void Store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_ps(a, b); }
  // Lanes where a is chosen over b by `a > b` (max) or `a < b` (min), NaNs first.
  static V Pick(V a, V b, bool max) {
    const V r = max ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
    return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
  // All ones in lanes j < n.
  static __m256i Mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V MaskLoad(const T* p, __m256i m) { return _mm256_maskload_ps(p, m); }
  // b where m is set, else a.
  static V Blend(V a, V b, __m256i m) { return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(m)); }
};

struct F64 {
  using T = double;
  using V = __m256d;
  static constexpr int kWidth = 4;
  static V Load(const T* p) { return _mm256_loadu_pd(p); }
  static V Set1(T x) { return _mm256_set1_pd(x); }
  static void Store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static V Add(V a, V b) { return _mm256_add_pd(a, b); }
  static V Mul(V a, V b) { return _mm256_mul_pd(a, b); }
  static V Pick(V a, V b, bool max) {
    const V r = max ? _mm256_max_pd(a, b) : _mm256_min_pd(a, b);
    return _mm256_blendv_pd(r, a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
  static __m256i Mask(int n) {
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
  }
  static V MaskLoad(const T* p, __m256i m) { return _mm256_maskload_pd(p, m); }
  static V Blend(V a, V b, __m256i m) { return _mm256_blendv_pd(a, b, _mm256_castsi256_pd(m)); }
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
}  // namespace kiln::kernels::avx2
