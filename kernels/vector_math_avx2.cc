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

#define KILN_F32(e, f) &f##_f32,
#define KILN_F64(e, f) &f##_f64,
const VectorF32 kAvx2F32[static_cast<int>(MathFn::kCount)] = {KILN_VECTOR_MATH_FUNCTIONS(KILN_F32) &
                                                              sqrt_f32};
const VectorF64 kAvx2F64[static_cast<int>(MathFn::kCount)] = {KILN_VECTOR_MATH_FUNCTIONS(KILN_F64) &
                                                              sqrt_f64};
#undef KILN_F32
#undef KILN_F64

// SLEEF's own functions already take and return their lanes in ymm0.
#define KILN_REGISTER(e, f)                               \
  {reinterpret_cast<const void*>(&Sleef_##f##f8_u10avx2), \
   reinterpret_cast<const void*>(&Sleef_##f##d4_u10avx2)},
const void* const kAvx2Register[static_cast<int>(MathFn::kCount)][2] = {
    KILN_VECTOR_MATH_FUNCTIONS(KILN_REGISTER){nullptr, nullptr}};
#undef KILN_REGISTER

}  // namespace kiln::kernels::vector_math_detail
