// AVX2 loop of kernels/reduce_rows8.h. Built with -mavx2; called only where ReduceSimdAvailable().
// Each vector op is the scalar rule lane by lane, as in reduce_simd_avx2.cc: add / multiply one
// IEEE operation per lane; maximum / minimum vmaxps / vminps (`a > b ? a : b`), then a blend that
// keeps a NaN first operand.
#include <immintrin.h>

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

}  // namespace

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
