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

// tanh on f32 in f32 arithmetic, 8 lanes, no call: error <= 1.5 ulp (tools/ulp_check; SLEEF's
// tanhf is 1.0 ulp at about three times the time, XLA:CPU's rational approximation 4.6 ulp). An
// earlier version computed in f64 and rounded once (0.5 ulp) but cost 1.6-1.8 ns per element
// against 1.0-1.2 here, and tanh was 40% of the elementwise chain's time. For a = min(|x|, 9.5)
// (tanh rounds to 1 in f32 from 9.02 on):
//   a < 0.5493 (tanh(a) < 1/2): a + a^3 Q(a^2), Q of degree 4 fitted for relative error 2^-30;
//   otherwise: q = expm1(2a) = 2^k (1 + p(r)) - 1 with 2a = k ln2 + r, |r| <= ln2/2, p(r) = r + r^2
//   P(r) with P of degree 5 (relative error 2^-32), then tanh(a) = q / (q + 2); q >= 2 there, so
//   q's own error reaches the quotient damped by 2 / (q + 2).
// Both branches are computed and blended; x's sign is put back last. NaN stays NaN (min(9.5, NaN)
// is NaN), +-inf give +-1, -0 gives -0. The coefficients come from a weighted least-squares fit
// iterated toward minimax (Lawson) in f64 and were checked in f32 against std::tanh in f64.
__m256 TanhF32(__m256 x) {
  auto c = [](float v) { return _mm256_set1_ps(v); };
  const __m256 sign = c(-0.0f);
  const __m256 a = _mm256_min_ps(c(9.5f), _mm256_andnot_ps(sign, x));
  const __m256 s = _mm256_mul_ps(a, a);
  const __m256 s2 = _mm256_mul_ps(s, s);
  const __m256 q01 = _mm256_fmadd_ps(c(0.13332593095835246f), s, c(-0.3333331774584304f));
  const __m256 q23 = _mm256_fmadd_ps(c(0.021075182963989497f), s, c(-0.05385310235219783f));
  const __m256 q = _mm256_fmadd_ps(_mm256_fmadd_ps(c(-0.0062795168559057965f), s2, q23), s2, q01);
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(a, s), q, a);
  // k = round(2a / ln2) by adding 1.5 * 2^23 + 127: the sum's low mantissa bits are k + 127, which
  // shifted into the exponent field make 2^k (0 <= k <= 28); ln2 in two parts, the first exact in
  // k * ln2_hi.
  const __m256 two_a = _mm256_add_ps(a, a);
  const __m256 shifter = c(12582912.0f + 127.0f);
  const __m256 kf = _mm256_fmadd_ps(two_a, c(1.44269504088896341f), shifter);
  const __m256 k = _mm256_sub_ps(kf, shifter);
  __m256 r = _mm256_fnmadd_ps(k, c(0.693145751953125f), two_a);
  r = _mm256_fnmadd_ps(k, c(1.428606765330187045e-06f), r);
  const __m256 r2 = _mm256_mul_ps(r, r);
  const __m256 r4 = _mm256_mul_ps(r2, r2);
  const __m256 p01 = _mm256_fmadd_ps(c(0.16666666370644484f), r, c(0.5000000044137473f));
  const __m256 p23 = _mm256_fmadd_ps(c(0.008333389345958411f), r, c(0.041666361035623475f));
  const __m256 p45 = _mm256_fmadd_ps(c(0.00019845877171505806f), r, c(0.0013940616964402026f));
  const __m256 p = _mm256_fmadd_ps(_mm256_fmadd_ps(p45, r4, _mm256_fmadd_ps(p23, r2, p01)), r2, r);
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(kf), 23));
  const __m256 em1 = _mm256_fmadd_ps(scale, p, _mm256_sub_ps(scale, c(1.0f)));
  const __m256 large = _mm256_div_ps(em1, _mm256_add_ps(em1, c(2.0f)));
  const __m256 t = _mm256_blendv_ps(large, small, _mm256_cmp_ps(a, c(0.5493f), _CMP_LT_OQ));
  return _mm256_or_ps(t, _mm256_and_ps(x, sign));
}

void TanhF32Array(const float* x, float* y, int64_t n) {
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

#define KILN_F32(e, f) (MathFn::e == MathFn::kTanh ? &TanhF32Array : &f##_f32),
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
