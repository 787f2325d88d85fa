// AVX2 reduction loops (kernels/reduce_simd.h). Built with -mavx2; called only on CPUs with AVX2.
//
// Each vector op is the scalar ReducerFn applied lane by lane (kernels/reduce_simd_avx2.h).
// 32-bit integer folds (ReduceInts) combine 32 lanes and then the lanes: every order of wrapping
// integer adds and multiplies, maxima, minima and bitwise ops gives the same result.
#include "kernels/reduce_simd_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <type_traits>

#include "kernels/reduce_simd.h"

namespace kiln::kernels::avx2 {
namespace {  // everything instantiated here stays local to this file

// kReduceLanes lanes = kReduceLanes / kWidth vectors.
template <typename S, ReducerKind K>
int64_t Lanes(const typename S::T* x, int64_t n, typename S::T lanes[kReduceLanes]) {
  constexpr int kVectors = kReduceLanes / S::kWidth;
  typename S::V acc[kVectors];
  for (int v = 0; v < kVectors; ++v) acc[v] = S::Load(lanes + v * S::kWidth);
  int64_t i = 0;
  for (; i + kReduceLanes <= n; i += kReduceLanes) {
#pragma GCC unroll 8
    for (int v = 0; v < kVectors; ++v) {
      acc[v] = Apply<S, K>(acc[v], S::Load(x + i + v * S::kWidth));
    }
  }
  for (int v = 0; v < kVectors; ++v) S::Store(lanes + v * S::kWidth, acc[v]);
  return i;
}

// Two rows at a time (8 vector accumulators and the temporaries fit the 16 registers; all four
// rows at once spilled accumulators to the stack every step).
template <typename S, ReducerKind K>
int64_t Lanes4(const typename S::T* const rows[kReduceRows], int64_t n,
               typename S::T lanes[kReduceRows][kReduceLanes]) {
  constexpr int kVectors = kReduceLanes / S::kWidth;
  int64_t i = 0;
  for (int r0 = 0; r0 < kReduceRows; r0 += 2) {
    typename S::V acc[2][kVectors];
    for (int r = 0; r < 2; ++r) {
      for (int v = 0; v < kVectors; ++v) acc[r][v] = S::Load(lanes[r0 + r] + v * S::kWidth);
    }
    for (i = 0; i + kReduceLanes <= n; i += kReduceLanes) {
#pragma GCC unroll 2
      for (int r = 0; r < 2; ++r) {
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
          acc[r][v] = Apply<S, K>(acc[r][v], S::Load(rows[r0 + r] + i + v * S::kWidth));
        }
      }
    }
    for (int r = 0; r < 2; ++r) {
      for (int v = 0; v < kVectors; ++v) S::Store(lanes[r0 + r] + v * S::kWidth, acc[r][v]);
    }
  }
  return i;
}

template <typename S, ReducerKind K>
typename S::T Fold(typename S::T* lanes) {
  int w = kReduceLanes / 2;
  for (; w >= S::kWidth; w /= 2) {
    for (int j = 0; j < w; j += S::kWidth) {
      S::Store(lanes + j, Apply<S, K>(S::Load(lanes + j), S::Load(lanes + j + w)));
    }
  }
  for (; w > 0; w /= 2) {
    for (int j = 0; j < w; ++j) lanes[j] = ApplyScalar<K>(lanes[j], lanes[j + w]);
  }
  return lanes[0];
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
#pragma GCC unroll 4
    for (int r = 0; r < kRows; ++r) a = Apply<S, K>(a, S::Load(rows[r] + j));
    S::Store(acc + j, a);
  }
  for (; j < n; ++j) {
    for (int r = 0; r < kRows; ++r) acc[j] = ApplyScalar<K>(acc[j], rows[r][j]);
  }
}

// For each row offset r < rows and then each output q < m: the row bases[q] + offsets[r] into
// lanes[q], element i into lane i % kReduceLanes (reduce_simd.h: AccumulateRows). Rows outer, so
// consecutive outputs' rows (adjacent in memory) stream in order; each output's lanes see its own
// rows in order. The last vector of a row whose length is not a multiple of kWidth is a masked
// load, and its masked lanes keep the accumulator (a blend), so nothing past the row is read or
// combined.
template <typename S, ReducerKind K>
void Segments(const typename S::T* const* bases, int m, const int64_t* offsets, int64_t rows,
              int64_t n, typename S::T (*lanes)[kReduceLanes]) {
  using V = typename S::V;
  constexpr int kVectors = kReduceLanes / S::kWidth;
  const int64_t whole = n / kReduceLanes * kReduceLanes;
  // The tail block's vectors as masked loads: all of a whole vector's lanes, the first of a partial
  // one, none past the row (constant indices throughout, so the accumulators stay in registers).
  __m256i masks[kVectors];
  for (int v = 0; v < kVectors; ++v) {
    masks[v] =
        S::Mask(static_cast<int>(std::clamp<int64_t>(n - whole - v * S::kWidth, 0, S::kWidth)));
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int q = 0; q < m; ++q) {
      const typename S::T* x = bases[q] + offsets[r];
      V acc[kVectors];
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) acc[v] = S::Load(lanes[q] + v * S::kWidth);
      for (int64_t i = 0; i < whole; i += kReduceLanes) {
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
          acc[v] = Apply<S, K>(acc[v], S::Load(x + i + v * S::kWidth));
        }
      }
      if (whole < n) {
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) {
          if (whole + v * S::kWidth >= n) break;  // no lane of this vector or the next in the row
          const V y = S::MaskLoad(x + whole + v * S::kWidth, masks[v]);
          acc[v] = S::Blend(acc[v], Apply<S, K>(acc[v], y), masks[v]);
        }
      }
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) S::Store(lanes[q] + v * S::kWidth, acc[v]);
    }
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
void AccumulateRows(ReducerKind kind, const float* const* bases, int m, const int64_t* offsets,
                    int64_t rows, int64_t n, float (*lanes)[kReduceLanes]) {
  ForVectorKind<void>(
      kind, [&]<ReducerKind K>() { Segments<F32, K>(bases, m, offsets, rows, n, lanes); });
}
void AccumulateRows(ReducerKind kind, const double* const* bases, int m, const int64_t* offsets,
                    int64_t rows, int64_t n, double (*lanes)[kReduceLanes]) {
  ForVectorKind<void>(
      kind, [&]<ReducerKind K>() { Segments<F64, K>(bases, m, offsets, rows, n, lanes); });
}
float FoldLanes(ReducerKind kind, float lanes[kReduceLanes]) {
  return ForVectorKind<float>(kind, [&]<ReducerKind K>() { return Fold<F32, K>(lanes); });
}
double FoldLanes(ReducerKind kind, double lanes[kReduceLanes]) {
  return ForVectorKind<double>(kind, [&]<ReducerKind K>() { return Fold<F64, K>(lanes); });
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

namespace {

// JAX's arg reducer (kernels/arg_reduce.cc: ArgStep), one element; its vector form is below.
// Written here rather than shared for the reason ApplyScalar is: an inline function instantiated
// in this AVX2 file could be the copy the linker keeps for the baseline files too.
template <bool kMax>
inline void ArgStepScalar(float& av, int32_t& ai, float bv, int32_t bi) {
  const bool keep_value = (kMax ? av > bv : av < bv) || av != av;  // NOLINT: NaN test
  const bool keep_index = keep_value || (av == bv && ai < bi);
  av = keep_value ? av : bv;
  ai = keep_index ? ai : bi;
}

// ArgStepScalar lane by lane; the ordered compares are C++'s >, <, == on floats.
template <bool kMax>
inline void ArgStepVector(__m256& av, __m256i& ai, __m256 bv, __m256i bi) {
  const __m256 wins = _mm256_cmp_ps(av, bv, kMax ? _CMP_GT_OQ : _CMP_LT_OQ);
  const __m256 keep_value = _mm256_or_ps(wins, _mm256_cmp_ps(av, av, _CMP_UNORD_Q));
  const __m256 tie = _mm256_and_ps(_mm256_cmp_ps(av, bv, _CMP_EQ_OQ),
                                   _mm256_castsi256_ps(_mm256_cmpgt_epi32(bi, ai)));
  const __m256 keep_index = _mm256_or_ps(keep_value, tie);
  av = _mm256_blendv_ps(bv, av, keep_value);
  ai = _mm256_castps_si256(
      _mm256_blendv_ps(_mm256_castsi256_ps(bi), _mm256_castsi256_ps(ai), keep_index));
}

// t[k] = column k of the 8x8 block whose rows are r[0..7].
inline void Transpose8(__m256 r[8]) {
  __m256 a[8], b[8];
  for (int k = 0; k < 8; k += 2) {
    a[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    a[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    b[k] = _mm256_shuffle_ps(a[k], a[k + 2], 0x44);
    b[k + 1] = _mm256_shuffle_ps(a[k], a[k + 2], 0xEE);
    b[k + 2] = _mm256_shuffle_ps(a[k + 1], a[k + 3], 0x44);
    b[k + 3] = _mm256_shuffle_ps(a[k + 1], a[k + 3], 0xEE);
  }
  for (int k = 0; k < 4; ++k) {
    r[k] = _mm256_permute2f128_ps(b[k], b[k + 4], 0x20);
    r[k + 4] = _mm256_permute2f128_ps(b[k], b[k + 4], 0x31);
  }
}

template <bool kMax>
void ArgRows(const float* x, int64_t len, float init_v, int32_t init_i, float* out_v,
             int32_t* out_i) {
  // Lane k folds row k.
  __m256 av = _mm256_set1_ps(init_v);
  __m256i ai = _mm256_set1_epi32(init_i);
  int64_t r0 = 0;
  for (; r0 + 8 <= len; r0 += 8) {
    __m256 t[8];
    for (int k = 0; k < 8; ++k) t[k] = _mm256_loadu_ps(x + k * len + r0);
    Transpose8(t);
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      ArgStepVector<kMax>(av, ai, t[c], _mm256_set1_epi32(static_cast<int32_t>(r0 + c)));
    }
  }
  alignas(32) float v[8];
  alignas(32) int32_t i[8];
  _mm256_store_ps(v, av);
  _mm256_store_si256(reinterpret_cast<__m256i*>(i), ai);
  for (int k = 0; k < 8; ++k) {
    for (int64_t r = r0; r < len; ++r) {
      ArgStepScalar<kMax>(v[k], i[k], x[k * len + r], static_cast<int32_t>(r));
    }
    out_v[k] = v[k];
    out_i[k] = i[k];
  }
}

template <bool kMax>
void ArgColumns(const float* x, int64_t stride, int64_t len, int64_t w, float init_v,
                int32_t init_i, float* out_v, int32_t* out_i) {
  // The accumulators live in the outputs (L1 for a block of columns); the rows stream through in
  // memory order.
  for (int64_t j = 0; j < w; j += 8) {
    _mm256_storeu_ps(out_v + j, _mm256_set1_ps(init_v));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out_i + j), _mm256_set1_epi32(init_i));
  }
  for (int64_t r = 0; r < len; ++r) {
    const __m256i bi = _mm256_set1_epi32(static_cast<int32_t>(r));
    const float* row = x + r * stride;
    for (int64_t j = 0; j < w; j += 8) {
      __m256 av = _mm256_loadu_ps(out_v + j);
      __m256i ai = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out_i + j));
      ArgStepVector<kMax>(av, ai, _mm256_loadu_ps(row + j), bi);
      _mm256_storeu_ps(out_v + j, av);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out_i + j), ai);
    }
  }
}

}  // namespace

void ArgColumns(bool max, const float* x, int64_t stride, int64_t len, int64_t w, float init_v,
                int32_t init_i, float* out_v, int32_t* out_i) {
  if (max) {
    ArgColumns<true>(x, stride, len, w, init_v, init_i, out_v, out_i);
  } else {
    ArgColumns<false>(x, stride, len, w, init_v, init_i, out_v, out_i);
  }
}

void ArgRows8(bool max, const float* x, int64_t len, float init_v, int32_t init_i, float* out_v,
              int32_t* out_i) {
  if (max) {
    ArgRows<true>(x, len, init_v, init_i, out_v, out_i);
  } else {
    ArgRows<false>(x, len, init_v, init_i, out_v, out_i);
  }
}

namespace {

template <typename T, ReducerKind K>
inline __m256i IntApply(__m256i a, __m256i b) {
  constexpr bool kSigned = std::is_signed_v<T>;
  if constexpr (K == ReducerKind::kAdd) return _mm256_add_epi32(a, b);
  if constexpr (K == ReducerKind::kMultiply) return _mm256_mullo_epi32(a, b);
  if constexpr (K == ReducerKind::kMaximum) {
    return kSigned ? _mm256_max_epi32(a, b) : _mm256_max_epu32(a, b);
  }
  if constexpr (K == ReducerKind::kMinimum) {
    return kSigned ? _mm256_min_epi32(a, b) : _mm256_min_epu32(a, b);
  }
  if constexpr (K == ReducerKind::kAnd) return _mm256_and_si256(a, b);
  if constexpr (K == ReducerKind::kOr) return _mm256_or_si256(a, b);
  if constexpr (K == ReducerKind::kXor) return _mm256_xor_si256(a, b);
}

// The scalar rule (wrapping, as WrapAdd and WrapMul), written here for ApplyScalar's reason.
template <typename T, ReducerKind K>
inline T IntScalar(T a, T b) {
  const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  if constexpr (K == ReducerKind::kAdd) return static_cast<T>(ua + ub);
  if constexpr (K == ReducerKind::kMultiply) return static_cast<T>(ua * ub);
  if constexpr (K == ReducerKind::kMaximum) return a > b ? a : b;
  if constexpr (K == ReducerKind::kMinimum) return a < b ? a : b;
  if constexpr (K == ReducerKind::kAnd) return static_cast<T>(ua & ub);
  if constexpr (K == ReducerKind::kOr) return static_cast<T>(ua | ub);
  if constexpr (K == ReducerKind::kXor) return static_cast<T>(ua ^ ub);
}

// Four vectors of lanes (the adds of a row do not wait on each other), a vector at a time for the
// rest of whole vectors, then the lanes and the last elements.
template <typename T, ReducerKind K>
T Ints(const T* x, int64_t n, T identity) {
  constexpr int kVectors = 4;
  __m256i acc[kVectors];
  for (__m256i& a : acc) a = _mm256_set1_epi32(static_cast<int32_t>(identity));
  int64_t i = 0;
  for (; i + 8 * kVectors <= n; i += 8 * kVectors) {
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 8 * v));
      acc[v] = IntApply<T, K>(acc[v], y);
    }
  }
  for (; i + 8 <= n; i += 8) {
    acc[0] = IntApply<T, K>(acc[0], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
  }
  acc[0] = IntApply<T, K>(IntApply<T, K>(acc[0], acc[1]), IntApply<T, K>(acc[2], acc[3]));
  alignas(32) T lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), acc[0]);
  T r = identity;
  for (T v : lanes) r = IntScalar<T, K>(r, v);
  for (; i < n; ++i) r = IntScalar<T, K>(r, x[i]);
  return r;
}

template <typename T>
T IntsOfKind(ReducerKind kind, const T* x, int64_t n, T identity) {
  switch (kind) {
    case ReducerKind::kAdd:
      return Ints<T, ReducerKind::kAdd>(x, n, identity);
    case ReducerKind::kMultiply:
      return Ints<T, ReducerKind::kMultiply>(x, n, identity);
    case ReducerKind::kMaximum:
      return Ints<T, ReducerKind::kMaximum>(x, n, identity);
    case ReducerKind::kMinimum:
      return Ints<T, ReducerKind::kMinimum>(x, n, identity);
    case ReducerKind::kAnd:
      return Ints<T, ReducerKind::kAnd>(x, n, identity);
    case ReducerKind::kOr:
      return Ints<T, ReducerKind::kOr>(x, n, identity);
    case ReducerKind::kXor:
      return Ints<T, ReducerKind::kXor>(x, n, identity);
    default:
      return identity;
  }
}

}  // namespace

int32_t ReduceInts(ReducerKind kind, const int32_t* x, int64_t n, int32_t identity) {
  return IntsOfKind(kind, x, n, identity);
}
uint32_t ReduceInts(ReducerKind kind, const uint32_t* x, int64_t n, uint32_t identity) {
  return IntsOfKind(kind, x, n, identity);
}

}  // namespace kiln::kernels::avx2
