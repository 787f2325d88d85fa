// Vector math kernels for avx512 (this file alone is compiled with -mavx512f; see vector_math.h).
// GCC 12's avx512fintrin.h starts _mm512_sqrt_*, _mm512_zext* and the 256-bit casts from
// _mm512_undefined_*, which -W(maybe-)uninitialized reports inside the header; the values are
// fully overwritten (or, for the casts' upper halves, never read).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>
#include <sleef.h>

#include <cstring>

#include "kernels/vector_math.h"

namespace kiln::kernels::vector_math_detail {

namespace {

// SLEEF's sin, cos and tan pick their argument reduction per vector: one lane with a huge or
// infinite argument sends every lane of its vector down the slow path, whose last bit may differ.
// Native code calls them 8 f32 (4 f64) lanes at a time (VectorMathRegister, zero-extended), so
// for these the array forms also call them on each 8-lane (4-lane) half, zero-extended: the same
// groups of lanes, hence the same bits, fused or not (tests/python/test_fused_native.py).
constexpr bool HalfVectors(MathFn fn) {
  return fn == MathFn::kSin || fn == MathFn::kCos || fn == MathFn::kTan;
}

template <bool kHalves, typename F>
__m512 ApplyF32(F f, __m512 v) {
  if constexpr (!kHalves) {
    return f(v);
  } else {
    const __m256 lo = _mm512_castps512_ps256(f(_mm512_zextps256_ps512(_mm512_castps512_ps256(v))));
    const __m256 hi = _mm512_castps512_ps256(f(
        _mm512_zextps256_ps512(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)))));
    return _mm512_castpd_ps(
        _mm512_insertf64x4(_mm512_castps_pd(_mm512_zextps256_ps512(lo)), _mm256_castps_pd(hi), 1));
  }
}

template <bool kHalves, typename F>
__m512d ApplyF64(F f, __m512d v) {
  if constexpr (!kHalves) {
    return f(v);
  } else {
    const __m256d lo = _mm512_castpd512_pd256(f(_mm512_zextpd256_pd512(_mm512_castpd512_pd256(v))));
    const __m256d hi =
        _mm512_castpd512_pd256(f(_mm512_zextpd256_pd512(_mm512_extractf64x4_pd(v, 1))));
    return _mm512_insertf64x4(_mm512_zextpd256_pd512(lo), hi, 1);
  }
}

// y[i] = f(x[i]) for i < n, 16 floats (8 doubles) at a time; the tail goes through a
// zero-padded register so no element past n is read or written.
template <bool kHalves = false, typename F>
void LoopF32(F f, const float* x, float* y, int64_t n) {
  auto g = [&](__m512 v) { return ApplyF32<kHalves>(f, v); };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, g(_mm512_loadu_ps(x + i)));
  if (i < n) {
    float buf[16] = {};
    const size_t rest = static_cast<size_t>(n - i) * sizeof(float);
    std::memcpy(buf, x + i, rest);
    _mm512_storeu_ps(buf, g(_mm512_loadu_ps(buf)));
    std::memcpy(y + i, buf, rest);
  }
}

template <bool kHalves = false, typename F>
void LoopF64(F f, const double* x, double* y, int64_t n) {
  auto g = [&](__m512d v) { return ApplyF64<kHalves>(f, v); };
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm512_storeu_pd(y + i, g(_mm512_loadu_pd(x + i)));
  if (i < n) {
    double buf[8] = {};
    const size_t rest = static_cast<size_t>(n - i) * sizeof(double);
    std::memcpy(buf, x + i, rest);
    _mm512_storeu_pd(buf, g(_mm512_loadu_pd(buf)));
    std::memcpy(y + i, buf, rest);
  }
}

}  // namespace

// One wrapper per function and width, then the tables (in MathFn order).
#define KILN_WRAP(e, f)                                                                          \
  void f##_f32(const float* x, float* y, int64_t n) {                                            \
    LoopF32<HalfVectors(MathFn::e)>([](__m512 v) { return Sleef_##f##f16_u10avx512f(v); }, x, y, \
                                    n);                                                          \
  }                                                                                              \
  void f##_f64(const double* x, double* y, int64_t n) {                                          \
    LoopF64<HalfVectors(MathFn::e)>([](__m512d v) { return Sleef_##f##d8_u10avx512f(v); }, x, y, \
                                    n);                                                          \
  }
namespace {
KILN_VECTOR_MATH_FUNCTIONS(KILN_WRAP)
void sqrt_f32(const float* x, float* y, int64_t n) {
  LoopF32([](__m512 v) { return _mm512_sqrt_ps(v); }, x, y, n);
}
void sqrt_f64(const double* x, double* y, int64_t n) {
  LoopF64([](__m512d v) { return _mm512_sqrt_pd(v); }, x, y, n);
}
}  // namespace
#undef KILN_WRAP

#define KILN_F32(e, f) &f##_f32,
#define KILN_F64(e, f) &f##_f64,
const VectorF32 kAvx512F32[static_cast<int>(MathFn::kCount)] = {
    KILN_VECTOR_MATH_FUNCTIONS(KILN_F32) & sqrt_f32};
const VectorF64 kAvx512F64[static_cast<int>(MathFn::kCount)] = {
    KILN_VECTOR_MATH_FUNCTIONS(KILN_F64) & sqrt_f64};
#undef KILN_F32
#undef KILN_F64

// For native code: 8 f32 (4 f64) lanes in ymm0, through the 16-lane (8-lane) function the loops
// above use, so each lane gets the same bits.
#define KILN_REGISTER_WRAP(e, f)                                                         \
  __m256 f##_register_f32(__m256 v) {                                                    \
    return _mm512_castps512_ps256(Sleef_##f##f16_u10avx512f(_mm512_zextps256_ps512(v))); \
  }                                                                                      \
  __m256d f##_register_f64(__m256d v) {                                                  \
    return _mm512_castpd512_pd256(Sleef_##f##d8_u10avx512f(_mm512_zextpd256_pd512(v)));  \
  }
namespace {
KILN_VECTOR_MATH_FUNCTIONS(KILN_REGISTER_WRAP)
}  // namespace
#undef KILN_REGISTER_WRAP
#define KILN_REGISTER(e, f)                          \
  {reinterpret_cast<const void*>(&f##_register_f32), \
   reinterpret_cast<const void*>(&f##_register_f64)},
const void* const kAvx512Register[static_cast<int>(MathFn::kCount)][2] = {
    KILN_VECTOR_MATH_FUNCTIONS(KILN_REGISTER){nullptr, nullptr}};
#undef KILN_REGISTER

// For native code in zmm: 16 f32 (8 f64) lanes in zmm0, computed as LoopF32/LoopF64 compute each
// whole vector (sin, cos and tan on each half), so each lane gets the same bits.
#define KILN_REGISTER_WIDE_WRAP(e, f)                                                              \
  __m512 f##_register_wide_f32(__m512 v) {                                                         \
    return ApplyF32<HalfVectors(MathFn::e)>([](__m512 x) { return Sleef_##f##f16_u10avx512f(x); }, \
                                            v);                                                    \
  }                                                                                                \
  __m512d f##_register_wide_f64(__m512d v) {                                                       \
    return ApplyF64<HalfVectors(MathFn::e)>([](__m512d x) { return Sleef_##f##d8_u10avx512f(x); }, \
                                            v);                                                    \
  }
namespace {
KILN_VECTOR_MATH_FUNCTIONS(KILN_REGISTER_WIDE_WRAP)
}  // namespace
#undef KILN_REGISTER_WIDE_WRAP
#define KILN_REGISTER_WIDE(e, f)                          \
  {reinterpret_cast<const void*>(&f##_register_wide_f32), \
   reinterpret_cast<const void*>(&f##_register_wide_f64)},
const void* const kAvx512RegisterWide[static_cast<int>(MathFn::kCount)][2] = {
    KILN_VECTOR_MATH_FUNCTIONS(KILN_REGISTER_WIDE){nullptr, nullptr}};
#undef KILN_REGISTER_WIDE

}  // namespace kiln::kernels::vector_math_detail
