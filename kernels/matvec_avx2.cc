// Small matrix-vector products with AVX2 and FMA (kernels/matvec.h). Built with -mavx2 -mfma;
// MatVec checks the CPU before running any of it.
#include <immintrin.h>

#include <cstdint>

#include "kernels/matvec.h"

namespace kiln::kernels {
namespace {

struct F32 {
  using T = float;
  using V = __m256;
  static constexpr int kLanes = 8;
  static V Zero() { return _mm256_setzero_ps(); }
  static V Load(const T* p) { return _mm256_loadu_ps(p); }
  static V Set1(T v) { return _mm256_set1_ps(v); }
  static void Store(T* p, V v) { _mm256_storeu_ps(p, v); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V Add(V a, V b) { return _mm256_add_ps(a, b); }
  static T Sum(V v) {  // (l0 + l4) + (l2 + l6) + ((l1 + l5) + (l3 + l7))
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  // The sums of a[0..8) as one vector: lane r is a[r]'s lanes summed.
  static V Sums(const V* a) {
    const V t0 = _mm256_hadd_ps(a[0], a[1]), t1 = _mm256_hadd_ps(a[2], a[3]);
    const V t2 = _mm256_hadd_ps(a[4], a[5]), t3 = _mm256_hadd_ps(a[6], a[7]);
    const V u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20),
                         _mm256_permute2f128_ps(u0, u1, 0x31));
  }
};

struct F64 {
  using T = double;
  using V = __m256d;
  static constexpr int kLanes = 4;
  static V Zero() { return _mm256_setzero_pd(); }
  static V Load(const T* p) { return _mm256_loadu_pd(p); }
  static V Set1(T v) { return _mm256_set1_pd(v); }
  static void Store(T* p, V v) { _mm256_storeu_pd(p, v); }
  static V Fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static V Add(V a, V b) { return _mm256_add_pd(a, b); }
  static T Sum(V v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
  }
  static V Sums(const V* a) {  // lane r: a[r]'s lanes summed, r < 4
    const V t0 = _mm256_hadd_pd(a[0], a[1]), t1 = _mm256_hadd_pd(a[2], a[3]);
    return _mm256_add_pd(_mm256_permute2f128_pd(t0, t1, 0x20),
                         _mm256_permute2f128_pd(t0, t1, 0x31));
  }
};

// y[i] = row i of a (contiguous, rows `row` apart) . x (contiguous). A group of kLanes rows at a
// time while n fills lanes (one accumulator per row, their sums made one vector); else row by row
// with four accumulators.
template <typename S>
void RowDots(const typename S::T* a, int64_t row, const typename S::T* x, typename S::T* y,
             int64_t m, int64_t n) {
  using T = typename S::T;
  using V = typename S::V;
  constexpr int64_t L = S::kLanes;
  int64_t i = 0;
  if (n >= L && n <= 8 * L) {
    for (; i + L <= m; i += L) {
      V acc[L];
#pragma GCC unroll 8
      for (int64_t r = 0; r < L; ++r) acc[r] = S::Zero();
      int64_t k = 0;
      for (; k + L <= n; k += L) {
        const V xk = S::Load(x + k);
#pragma GCC unroll 8
        for (int64_t r = 0; r < L; ++r) acc[r] = S::Fma(S::Load(a + (i + r) * row + k), xk, acc[r]);
      }
      S::Store(y + i, S::Sums(acc));
      for (; k < n; ++k) {
        for (int64_t r = 0; r < L; ++r)
          y[i + r] = __builtin_fma(a[(i + r) * row + k], x[k], y[i + r]);
      }
    }
  }
  for (; i < m; ++i) {
    const T* r = a + i * row;
    V acc[4] = {S::Zero(), S::Zero(), S::Zero(), S::Zero()};
    int64_t k = 0;
    for (; k + 4 * L <= n; k += 4 * L) {
      for (int u = 0; u < 4; ++u) {
        acc[u] = S::Fma(S::Load(r + k + u * L), S::Load(x + k + u * L), acc[u]);
      }
    }
    for (; k + L <= n; k += L) acc[0] = S::Fma(S::Load(r + k), S::Load(x + k), acc[0]);
    T sum = S::Sum(S::Add(S::Add(acc[0], acc[1]), S::Add(acc[2], acc[3])));
    for (; k < n; ++k) sum = __builtin_fma(r[k], x[k], sum);
    y[i] = sum;
  }
}

// y[i .. i + v L) over k: v vectors of outputs, each with p = 8 / v partial sums (k mod p) so
// that eight multiply-add chains run at once, added in order at the end.
template <typename S, int v>
void AxpyBlock(const typename S::T* a, int64_t col, const typename S::T* x, int64_t xs,
               typename S::T* y, int64_t n) {
  using V = typename S::V;
  constexpr int64_t L = S::kLanes;
  constexpr int p = 8 / v;
  V acc[v][p];
  for (int u = 0; u < v; ++u) {
    for (int q = 0; q < p; ++q) acc[u][q] = S::Zero();
  }
  int64_t k = 0;
  for (; k + p <= n; k += p) {
#pragma GCC unroll 8
    for (int q = 0; q < p; ++q) {
      const V xk = S::Set1(x[(k + q) * xs]);
      const typename S::T* c = a + (k + q) * col;
#pragma GCC unroll 4
      for (int u = 0; u < v; ++u) acc[u][q] = S::Fma(S::Load(c + u * L), xk, acc[u][q]);
    }
  }
  for (; k < n; ++k) {
    const V xk = S::Set1(x[k * xs]);
    for (int u = 0; u < v; ++u) acc[u][0] = S::Fma(S::Load(a + k * col + u * L), xk, acc[u][0]);
  }
  for (int u = 0; u < v; ++u) {
    V sum = acc[u][0];
    for (int q = 1; q < p; ++q) sum = S::Add(sum, acc[u][q]);
    S::Store(y + u * L, sum);
  }
}

// y[i] = sum_k a[i + k * col] x[k * xs]: lanes of outputs (AxpyBlock), the last few one by one.
template <typename S>
void ColumnAxpys(const typename S::T* a, int64_t col, const typename S::T* x, int64_t xs,
                 typename S::T* y, int64_t m, int64_t n) {
  using T = typename S::T;
  constexpr int64_t L = S::kLanes;
  int64_t i = 0;
  for (; i + 4 * L <= m; i += 4 * L) AxpyBlock<S, 4>(a + i, col, x, xs, y + i, n);
  const int64_t left = (m - i) / L;
  if (left == 3) AxpyBlock<S, 3>(a + i, col, x, xs, y + i, n);
  if (left == 2) AxpyBlock<S, 2>(a + i, col, x, xs, y + i, n);
  if (left == 1) AxpyBlock<S, 1>(a + i, col, x, xs, y + i, n);
  i += left * L;
  for (; i < m; ++i) {
    T sum = 0;
    for (int64_t k = 0; k < n; ++k) sum = __builtin_fma(a[i + k * col], x[k * xs], sum);
    y[i] = sum;
  }
}

template <typename S>
bool Run(const typename S::T* a, int64_t row, int64_t col, const typename S::T* x, int64_t xs,
         typename S::T* y, int64_t m, int64_t n) {
  if (!MatVecAvailable()) return false;
  if (col == 1 && xs == 1) {
    RowDots<S>(a, row, x, y, m, n);
    return true;
  }
  if (row == 1) {
    ColumnAxpys<S>(a, col, x, xs, y, m, n);
    return true;
  }
  return false;
}

}  // namespace

bool MatVecAvailable() {
  static const bool available = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return available;
}

bool MatVec(const float* a, int64_t row, int64_t col, const float* x, int64_t xs, float* y,
            int64_t m, int64_t n) {
  return Run<F32>(a, row, col, x, xs, y, m, n);
}

bool MatVec(const double* a, int64_t row, int64_t col, const double* x, int64_t xs, double* y,
            int64_t m, int64_t n) {
  return Run<F64>(a, row, col, x, xs, y, m, n);
}

}  // namespace kiln::kernels
