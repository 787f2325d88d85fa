// AVX2 loops of kernels/reduce_rows8.h. Built with -mavx2; called only where ReduceSimdAvailable().
// Each vector op is the scalar rule lane by lane, as in reduce_simd_avx2.cc: add / multiply one
// IEEE operation per lane; maximum / minimum vmaxps / vminps (`a > b ? a : b`), then a blend that
// keeps a NaN first operand.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/reduce_rows8.h"

namespace kiln::kernels::avx2 {
namespace {

template <ReducerKind K>
inline __m256 Op(__m256 a, __m256 b) {
  if constexpr (K == ReducerKind::kAdd) return _mm256_add_ps(a, b);
  if constexpr (K == ReducerKind::kMultiply) return _mm256_mul_ps(a, b);
  if constexpr (K == ReducerKind::kMaximum || K == ReducerKind::kMinimum) {
    const __m256 r = K == ReducerKind::kMaximum ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
    return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
}

// The scalar rule (ReducerFn's), written out here so no baseline inline copy is compiled AVX2.
template <ReducerKind K>
inline float OpScalar(float a, float b) {
  if constexpr (K == ReducerKind::kAdd) return a + b;
  if constexpr (K == ReducerKind::kMultiply) return a * b;
  if (a != a) return a;
  if (b != b) return b;
  if constexpr (K == ReducerKind::kMaximum) return a > b ? a : b;
  return a < b ? a : b;
}

// One row's 32 lanes as four vectors, after whole blocks and the tail, folded to 8 lanes
// (levels 16 and 8 of the tree).
template <ReducerKind K>
inline void TwoRows(const float* x0, const float* x1, int64_t n, __m256 id, __m256& v0,
                    __m256& v1) {
  __m256 a0 = id, a1 = id, a2 = id, a3 = id, b0 = id, b1 = id, b2 = id, b3 = id;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = Op<K>(a0, _mm256_loadu_ps(x0 + i));
    b0 = Op<K>(b0, _mm256_loadu_ps(x1 + i));
    a1 = Op<K>(a1, _mm256_loadu_ps(x0 + i + 8));
    b1 = Op<K>(b1, _mm256_loadu_ps(x1 + i + 8));
    a2 = Op<K>(a2, _mm256_loadu_ps(x0 + i + 16));
    b2 = Op<K>(b2, _mm256_loadu_ps(x1 + i + 16));
    a3 = Op<K>(a3, _mm256_loadu_ps(x0 + i + 24));
    b3 = Op<K>(b3, _mm256_loadu_ps(x1 + i + 24));
  }
  if (i < n) {  // the tail into lane 0, in order
    float l0 = _mm256_cvtss_f32(a0), m0 = _mm256_cvtss_f32(b0);
    for (int64_t j = i; j < n; ++j) {
      l0 = OpScalar<K>(l0, x0[j]);
      m0 = OpScalar<K>(m0, x1[j]);
    }
    a0 = _mm256_blend_ps(a0, _mm256_set1_ps(l0), 1);
    b0 = _mm256_blend_ps(b0, _mm256_set1_ps(m0), 1);
  }
  v0 = Op<K>(Op<K>(a0, a2), Op<K>(a1, a3));
  v1 = Op<K>(Op<K>(b0, b2), Op<K>(b1, b3));
}

template <ReducerKind K>
void Rows8(const float* const rows[8], int m, int64_t n, float identity, float out[8]) {
  const __m256 id = _mm256_set1_ps(identity);
  __m256 v[8];
  int r = 0;
  for (; r + 2 <= m; r += 2) TwoRows<K>(rows[r], rows[r + 1], n, id, v[r], v[r + 1]);
  if (r < m) {  // an odd last row goes with itself
    TwoRows<K>(rows[r], rows[r], n, id, v[r], v[r + 1]);
    r += 2;
  }
  for (; r < 8; ++r) v[r] = id;
  // Transpose: c[k] holds lane k of rows 0..7.
  __m256 t[8], u[8], c[8];
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(v[k], v[k + 1]);      // r0l0 r1l0 r0l1 r1l1 | r0l4 r1l4 r0l5 r1l5
    t[k + 1] = _mm256_unpackhi_ps(v[k], v[k + 1]);  // r0l2 r1l2 r0l3 r1l3 | r0l6 r1l6 r0l7 r1l7
  }
  for (int k = 0; k < 8; k += 4) {
    u[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);          // lane 0 (| 4) of rows k..k+3
    u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);      // lane 1 (| 5)
    u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);  // lane 2 (| 6)
    u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);  // lane 3 (| 7)
  }
  for (int k = 0; k < 4; ++k) {
    c[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
    c[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
  }
  // Levels 4, 2, 1 of the tree for the eight rows at once.
  for (int k = 0; k < 4; ++k) c[k] = Op<K>(c[k], c[k + 4]);
  c[0] = Op<K>(c[0], c[2]);
  c[1] = Op<K>(c[1], c[3]);
  if (m == 8) {
    _mm256_storeu_ps(out, Op<K>(c[0], c[1]));
    return;
  }
  alignas(32) float all[8];
  _mm256_store_ps(all, Op<K>(c[0], c[1]));
  for (int k = 0; k < m; ++k) out[k] = all[k];
}

// Short rows (n < 32), 16 at a time: lane r of a vector folds row r, elements in order.
// Vec<T>: the vector type of T, its width, loads (masked past a row's end: those lanes are not
// read, so a row at the end of a buffer is safe), the reducer op and a square transpose.
template <typename T>
struct Vec;

template <>
struct Vec<float> {
  using V = __m256;
  static constexpr int kWidth = 8;
  static V Set1(float x) { return _mm256_set1_ps(x); }
  static V Load(const float* p, int count) {
    alignas(32) static const int32_t kMask[16] = {-1, -1, -1, -1, -1, -1, -1, -1,
                                                  0,  0,  0,  0,  0,  0,  0,  0};
    if (count == kWidth) return _mm256_loadu_ps(p);
    return _mm256_maskload_ps(
        p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMask + kWidth - count)));
  }
  template <ReducerKind K>
  static V Apply(V a, V b) {
    return Op<K>(a, b);
  }
  static void Store(float* p, V v) { _mm256_storeu_ps(p, v); }
  // Element j of rows p[0..7], lane r from p[r].
  static V Column(const float* const p[8], int64_t j) {
    return _mm256_set_ps(p[7][j], p[6][j], p[5][j], p[4][j], p[3][j], p[2][j], p[1][j], p[0][j]);
  }
  // Eight rows of two elements stored one after another from p: element 0 of each row in `first`,
  // element 1 in `second`, lane r from row r.
  static void Pairs(const float* p, V& first, V& second) {
    const V a = _mm256_loadu_ps(p), b = _mm256_loadu_ps(p + 8);  // rows 0-3, rows 4-7
    // Per 128-bit half: rows 0, 1, 4, 5 | rows 2, 3, 6, 7; the 64-bit pairs back in row order.
    first = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88)), 0xD8));
    second = _mm256_castpd_ps(
        _mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD)), 0xD8));
  }
  // c[k] = lane k of v[0..7] (v is overwritten).
  static void Transpose(V v[8], V c[8]) {
    V t[8], u[8];
    for (int k = 0; k < 8; k += 2) {
      t[k] = _mm256_unpacklo_ps(v[k], v[k + 1]);
      t[k + 1] = _mm256_unpackhi_ps(v[k], v[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
      u[k] = _mm256_shuffle_ps(t[k], t[k + 2], 0x44);
      u[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], 0xEE);
      u[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0x44);
      u[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], 0xEE);
    }
    for (int k = 0; k < 4; ++k) {
      c[k] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x20);
      c[k + 4] = _mm256_permute2f128_ps(u[k], u[k + 4], 0x31);
    }
  }
};

template <ReducerKind K>
inline __m256d OpPd(__m256d a, __m256d b) {
  if constexpr (K == ReducerKind::kAdd) return _mm256_add_pd(a, b);
  if constexpr (K == ReducerKind::kMultiply) return _mm256_mul_pd(a, b);
  if constexpr (K == ReducerKind::kMaximum || K == ReducerKind::kMinimum) {
    const __m256d r = K == ReducerKind::kMaximum ? _mm256_max_pd(a, b) : _mm256_min_pd(a, b);
    return _mm256_blendv_pd(r, a, _mm256_cmp_pd(a, a, _CMP_UNORD_Q));
  }
}

template <>
struct Vec<double> {
  using V = __m256d;
  static constexpr int kWidth = 4;
  static V Set1(double x) { return _mm256_set1_pd(x); }
  static V Load(const double* p, int count) {
    alignas(32) static const int64_t kMask[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
    if (count == kWidth) return _mm256_loadu_pd(p);
    return _mm256_maskload_pd(
        p, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kMask + kWidth - count)));
  }
  template <ReducerKind K>
  static V Apply(V a, V b) {
    return OpPd<K>(a, b);
  }
  static void Store(double* p, V v) { _mm256_storeu_pd(p, v); }
  // Element j of rows p[0..3], lane r from p[r].
  static V Column(const double* const p[4], int64_t j) {
    return _mm256_set_pd(p[3][j], p[2][j], p[1][j], p[0][j]);
  }
  // Four rows of two elements stored one after another from p (as Vec<float>::Pairs).
  static void Pairs(const double* p, V& first, V& second) {
    const V a = _mm256_loadu_pd(p), b = _mm256_loadu_pd(p + 4);     // rows 0-1, rows 2-3
    first = _mm256_permute4x64_pd(_mm256_unpacklo_pd(a, b), 0xD8);  // rows 0, 2, 1, 3: reordered
    second = _mm256_permute4x64_pd(_mm256_unpackhi_pd(a, b), 0xD8);
  }
  static void Transpose(V v[4], V c[4]) {
    const V t0 = _mm256_unpacklo_pd(v[0], v[1]), t1 = _mm256_unpackhi_pd(v[0], v[1]);
    const V t2 = _mm256_unpacklo_pd(v[2], v[3]), t3 = _mm256_unpackhi_pd(v[2], v[3]);
    c[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
    c[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
    c[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
    c[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
  }
};

// acc op v with acc the first operand of the instruction, so that of two NaNs acc's is kept, as
// the scalar chains keep theirs (the compiler may swap the operands of an add or multiply; a
// maximum's or minimum's blend fixes the order itself).
template <ReducerKind K, typename T, typename V = typename Vec<T>::V>
V ApplyInOrder(V acc, V v) {
  constexpr bool kF32 = std::is_same_v<T, float>;
  V r;
  if constexpr (K == ReducerKind::kAdd && kF32) {
    asm("vaddps %2, %1, %0" : "=x"(r) : "x"(acc), "x"(v));
  } else if constexpr (K == ReducerKind::kAdd) {
    asm("vaddpd %2, %1, %0" : "=x"(r) : "x"(acc), "x"(v));
  } else if constexpr (K == ReducerKind::kMultiply && kF32) {
    asm("vmulps %2, %1, %0" : "=x"(r) : "x"(acc), "x"(v));
  } else if constexpr (K == ReducerKind::kMultiply) {
    asm("vmulpd %2, %1, %0" : "=x"(r) : "x"(acc), "x"(v));
  } else {
    r = Vec<T>::template Apply<K>(acc, v);
  }
  return r;
}

// kShortRowsAtOnce rows as kGroups vectors of kWidth rows: each block of kWidth elements of the
// rows is loaded (one vector per row), transposed (vector k: element k of each row) and folded
// into the group's accumulator in element order; the groups' chains are independent, so their
// latencies overlap. Then the identity once per level of the 32-lane tree, as FinishLeaf.
template <typename T, ReducerKind K>
void ShortRows(const T* const rows[kShortRowsAtOnce], int m, int64_t n, T identity,
               T out[kShortRowsAtOnce]) {
  using X = Vec<T>;
  using V = typename X::V;
  constexpr int kW = X::kWidth, kGroups = kShortRowsAtOnce / kW;
  const T* p[kShortRowsAtOnce];
  for (int r = 0; r < kShortRowsAtOnce; ++r) p[r] = rows[r < m ? r : m - 1];  // spares repeat
  const V id = X::Set1(identity);
  V acc[kGroups];
  for (V& a : acc) a = id;
  const int64_t whole = n - n % kW;
  for (int64_t j = 0; j < whole; j += kW) {
    V c[kGroups][kW];
    for (int g = 0; g < kGroups; ++g) {
      V v[kW];
      for (int r = 0; r < kW; ++r) v[r] = X::Load(p[g * kW + r] + j, kW);
      X::Transpose(v, c[g]);
    }
    for (int k = 0; k < kW; ++k) {
      for (int g = 0; g < kGroups; ++g) acc[g] = X::template Apply<K>(acc[g], c[g][k]);
    }
  }
  // The last n % kW elements of each row. One or two: each vector built from the rows' elements
  // directly (a row of 5 f64 has one: 4 scalar loads, not 4 masked loads and a transpose); more:
  // masked loads and a transpose. Either way the same elements in the same order.
  const int count = static_cast<int>(n - whole);
  if (count > 2) {
    V c[kGroups][kW];
    for (int g = 0; g < kGroups; ++g) {
      V v[kW];
      for (int r = 0; r < kW; ++r) v[r] = X::Load(p[g * kW + r] + whole, count);
      X::Transpose(v, c[g]);
    }
    for (int k = 0; k < count; ++k) {
      for (int g = 0; g < kGroups; ++g) acc[g] = X::template Apply<K>(acc[g], c[g][k]);
    }
  } else {
    for (int64_t j = whole; j < n; ++j) {
      for (int g = 0; g < kGroups; ++g) {
        acc[g] = ApplyInOrder<K, T>(acc[g], X::Column(p + g * kW, j));
      }
    }
  }
  // The lanes' tree applies the identity once per level (widths 16, 8, 4, 2, 1). Applying it
  // again changes nothing (x + 0 after x + 0, x * 1 after x * 1, a maximum or minimum with the
  // same value twice, NaNs kept by the blend), so one level gives the same bits as five.
  const bool idempotent = (K != ReducerKind::kAdd || identity == T(0)) &&
                          (K != ReducerKind::kMultiply || identity == T(1));
  for (int level = 0; level < (idempotent ? 1 : 5); ++level) {
    for (V& a : acc) a = X::template Apply<K>(a, id);
  }
  if (m == kShortRowsAtOnce) {
    for (int g = 0; g < kGroups; ++g) X::Store(out + g * kW, acc[g]);
    return;
  }
  alignas(32) T all[kShortRowsAtOnce];
  for (int g = 0; g < kGroups; ++g) X::Store(all + g * kW, acc[g]);
  for (int r = 0; r < m; ++r) out[r] = all[r];
}

// Rows of two stored back to back, one vector's width of rows per step: out[r] = init op leaf(row
// r), the leaf as ShortRows folds it (identity op x0 op x1, then the identity once per level of
// the lane tree, once when that is idempotent), init the first operand as ReduceShortRows applies
// it. Returns the rows done (whole vectors); the caller folds the rest.
template <typename T, ReducerKind K>
int64_t PairRows(const T* x, int64_t rows, T identity, T init, T* out) {
  using X = Vec<T>;
  using V = typename X::V;
  constexpr int kW = X::kWidth;
  const V id = X::Set1(identity), first_op = X::Set1(init);
  const bool idempotent = (K != ReducerKind::kAdd || identity == T(0)) &&
                          (K != ReducerKind::kMultiply || identity == T(1));
  int64_t r = 0;
  for (; r + kW <= rows; r += kW) {
    V a, b;
    X::Pairs(x + 2 * r, a, b);
    V leaf = ApplyInOrder<K, T>(ApplyInOrder<K, T>(id, a), b);
    for (int level = 0; level < (idempotent ? 1 : 5); ++level) {
      leaf = X::template Apply<K>(leaf, id);
    }
    X::Store(out + r, ApplyInOrder<K, T>(first_op, leaf));
  }
  return r;
}

template <typename T>
int64_t PairRowsOf(ReducerKind kind, const T* x, int64_t rows, T identity, T init, T* out) {
  switch (kind) {
    case ReducerKind::kAdd:
      return PairRows<T, ReducerKind::kAdd>(x, rows, identity, init, out);
    case ReducerKind::kMultiply:
      return PairRows<T, ReducerKind::kMultiply>(x, rows, identity, init, out);
    case ReducerKind::kMaximum:
      return PairRows<T, ReducerKind::kMaximum>(x, rows, identity, init, out);
    case ReducerKind::kMinimum:
      return PairRows<T, ReducerKind::kMinimum>(x, rows, identity, init, out);
    default:
      return 0;
  }
}

template <typename T>
void ShortRowsOf(ReducerKind kind, const T* const rows[kShortRowsAtOnce], int m, int64_t n,
                 T identity, T out[kShortRowsAtOnce]) {
  switch (kind) {
    case ReducerKind::kAdd:
      return ShortRows<T, ReducerKind::kAdd>(rows, m, n, identity, out);
    case ReducerKind::kMultiply:
      return ShortRows<T, ReducerKind::kMultiply>(rows, m, n, identity, out);
    case ReducerKind::kMaximum:
      return ShortRows<T, ReducerKind::kMaximum>(rows, m, n, identity, out);
    case ReducerKind::kMinimum:
      return ShortRows<T, ReducerKind::kMinimum>(rows, m, n, identity, out);
    default:
      return;
  }
}

}  // namespace

int64_t ReducePairRows(ReducerKind kind, const float* x, int64_t rows, float identity, float init,
                       float* out) {
  return PairRowsOf<float>(kind, x, rows, identity, init, out);
}

int64_t ReducePairRows(ReducerKind kind, const double* x, int64_t rows, double identity,
                       double init, double* out) {
  return PairRowsOf<double>(kind, x, rows, identity, init, out);
}

void ReduceShortRowsSimd(ReducerKind kind, const float* const rows[kShortRowsAtOnce], int m,
                         int64_t n, float identity, float out[kShortRowsAtOnce]) {
  ShortRowsOf<float>(kind, rows, m, n, identity, out);
}

void ReduceShortRowsSimd(ReducerKind kind, const double* const rows[kShortRowsAtOnce], int m,
                         int64_t n, double identity, double out[kShortRowsAtOnce]) {
  ShortRowsOf<double>(kind, rows, m, n, identity, out);
}

void ReduceRows8(ReducerKind kind, const float* const rows[8], int m, int64_t n, float identity,
                 float out[8]) {
  switch (kind) {
    case ReducerKind::kAdd:
      return Rows8<ReducerKind::kAdd>(rows, m, n, identity, out);
    case ReducerKind::kMultiply:
      return Rows8<ReducerKind::kMultiply>(rows, m, n, identity, out);
    case ReducerKind::kMaximum:
      return Rows8<ReducerKind::kMaximum>(rows, m, n, identity, out);
    case ReducerKind::kMinimum:
      return Rows8<ReducerKind::kMinimum>(rows, m, n, identity, out);
    default:
      return;
  }
}

}  // namespace kiln::kernels::avx2
