// Vector math kernels for avx2 (this file alone is compiled with -mavx2 -mfma; see vector_math.h).
#include <immintrin.h>
#include <sleef.h>

#include <cstring>

#include "kernels/vector_math.h"

namespace kiln::kernels::vector_math_detail {
namespace {

// y[i] = f(x[i]) for i < n, 8 floats (4 doubles) at a time; the tail goes through a
// zero-padded register so no element past n is read or written.
template <typename F>
void LoopF32(F f, const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, f(_mm256_loadu_ps(x + i)));
  if (i < n) {
    float buf[8] = {};
    const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(buf, x + i, rest);
    _mm256_storeu_ps(buf, f(_mm256_loadu_ps(buf)));
    std::memcpy(y + i, buf, rest);
  }
}

template <typename F>
void LoopF64(F f, const double* x, double* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(y + i, f(_mm256_loadu_pd(x + i)));
  if (i < n) {
    double buf[4] = {};
    const size_t rest = static_cast<size_t>(n - i) * sizeof(double);
    std::memcpy(buf, x + i, rest);
    _mm256_storeu_pd(buf, f(_mm256_loadu_pd(buf)));
    std::memcpy(y + i, buf, rest);
  }
}

}  // namespace

// tanh on f32, computed in f64 and rounded once: error <= 0.5 ulp + 2^-30 relative (SLEEF's tanhf,
// which works in pairs of floats, is 1 ulp), in half the time. For a = |x| (at most 10; tanh
// rounds to 1 in f32 from 9.02 on): q = expm1(2a) = 2^k (1 + p(r)) - 1 with 2a = k ln2 + r,
// |r| <= ln2/2, p the degree-9 Taylor polynomial of expm1 (truncation < 2^-35 relative; for k = 0
// this is the polynomial alone, so small a loses nothing to cancellation), then
// tanh(a) = q / (q + 2), with x's sign. NaN stays NaN (min(10, NaN) is NaN), +-inf give +-1, -0
// gives -0.
namespace {
// expm1(r) for |r| <= ln2/2: r + r^2 (1/2! + r/3! + ... + r^7/9!), the bracket by Estrin's scheme
// (a tree of depth 3 instead of a chain of 7 multiply-adds: the latency is what limits a call).
[[gnu::always_inline]] inline __m256d Expm1Reduced(__m256d r) {
  auto c = [](double v) { return _mm256_set1_pd(v); };
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d r4 = _mm256_mul_pd(r2, r2);
  const __m256d p01 = _mm256_fmadd_pd(c(1.0 / 6), r, c(0.5));
  const __m256d p23 = _mm256_fmadd_pd(c(1.0 / 120), r, c(1.0 / 24));
  const __m256d p45 = _mm256_fmadd_pd(c(1.0 / 5040), r, c(1.0 / 720));
  const __m256d p67 = _mm256_fmadd_pd(c(1.0 / 362880), r, c(1.0 / 40320));
  const __m256d p03 = _mm256_fmadd_pd(p23, r2, p01);
  const __m256d p47 = _mm256_fmadd_pd(p67, r2, p45);
  return _mm256_fmadd_pd(_mm256_fmadd_pd(p47, r4, p03), r2, r);
}

[[gnu::always_inline]] inline __m256d TanhAbsF64(__m256d a) {
  a = _mm256_min_pd(_mm256_set1_pd(10.0), a);
  const __m256d two_a = _mm256_add_pd(a, a);
  // k = round(2a / ln2) by adding 1.5 * 2^52 + 1023: the sum's low mantissa bits are k + 1023,
  // which shifted into the exponent field make 2^k (0 <= k <= 29).
  const __m256d shifter = _mm256_set1_pd(6755399441056767.0);
  const __m256d kd = _mm256_fmadd_pd(two_a, _mm256_set1_pd(1.4426950408889634), shifter);
  const __m256d k = _mm256_sub_pd(kd, shifter);
  const __m256d p = Expm1Reduced(_mm256_fnmadd_pd(k, _mm256_set1_pd(0.6931471805599453), two_a));
  const __m256d scale = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(kd), 52));
  const __m256d q = _mm256_fmadd_pd(scale, p, _mm256_sub_pd(scale, _mm256_set1_pd(1.0)));
  return _mm256_div_pd(q, _mm256_add_pd(q, _mm256_set1_pd(2.0)));
}

}  // namespace

__m256 TanhF32(__m256 x) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 a = _mm256_andnot_ps(sign, x);
  const __m256d lo = TanhAbsF64(_mm256_cvtps_pd(_mm256_castps256_ps128(a)));
  const __m256d hi = TanhAbsF64(_mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)));
  const __m256 t = _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
  return _mm256_or_ps(t, _mm256_and_ps(x, sign));
}

void TanhViaF64(const float* x, float* y, int64_t n) {
  LoopF32([](__m256 v) { return TanhF32(v); }, x, y, n);
}

// One wrapper per function and width, then the tables (in MathFn order).
#define KILN_WRAP(e, f)                                                   \
  void f##_f32(const float* x, float* y, int64_t n) {                     \
    LoopF32([](__m256 v) { return Sleef_##f##f8_u10avx2(v); }, x, y, n);  \
  }                                                                       \
  void f##_f64(const double* x, double* y, int64_t n) {                   \
    LoopF64([](__m256d v) { return Sleef_##f##d4_u10avx2(v); }, x, y, n); \
  }
namespace {
KILN_VECTOR_MATH_FUNCTIONS(KILN_WRAP)
void sqrt_f32(const float* x, float* y, int64_t n) {
  LoopF32([](__m256 v) { return _mm256_sqrt_ps(v); }, x, y, n);
}
void sqrt_f64(const double* x, double* y, int64_t n) {
  LoopF64([](__m256d v) { return _mm256_sqrt_pd(v); }, x, y, n);
}
}  // namespace
#undef KILN_WRAP

#define KILN_F32(e, f) (MathFn::e == MathFn::kTanh ? &TanhViaF64 : &f##_f32),
#define KILN_F64(e, f) &f##_f64,
const VectorF32 kAvx2F32[static_cast<int>(MathFn::kCount)] = {KILN_VECTOR_MATH_FUNCTIONS(KILN_F32) &
                                                              sqrt_f32};
const VectorF64 kAvx2F64[static_cast<int>(MathFn::kCount)] = {KILN_VECTOR_MATH_FUNCTIONS(KILN_F64) &
                                                              sqrt_f64};
#undef KILN_F32
#undef KILN_F64

// SLEEF's own functions already take and return their lanes in ymm0.
#define KILN_REGISTER(e, f)                                                            \
  {MathFn::e == MathFn::kTanh ? reinterpret_cast<const void*>(&TanhF32)                \
                              : reinterpret_cast<const void*>(&Sleef_##f##f8_u10avx2), \
   reinterpret_cast<const void*>(&Sleef_##f##d4_u10avx2)},
const void* const kAvx2Register[static_cast<int>(MathFn::kCount)][2] = {
    KILN_VECTOR_MATH_FUNCTIONS(KILN_REGISTER){nullptr, nullptr}};
#undef KILN_REGISTER

}  // namespace kiln::kernels::vector_math_detail
