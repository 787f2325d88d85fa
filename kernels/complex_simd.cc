// SSE2 forms (unfused: complex_arith.h with kFma false) of complex_simd.h's block functions and the
// choice between them and the AVX2 ones.
#include "kernels/complex_simd.h"

#include <emmintrin.h>

#include <cstdlib>
#include <cstring>

#include "kernels/complex_arith.h"

namespace kiln::kernels::ew {
namespace complex_simd {
namespace {

using C64 = std::complex<float>;

struct Parts {
  __m128 re, im;
};
// Four elements as lanes: {re0..re3}, {im0..im3}.
Parts Load4(const C64* p) {
  const float* f = reinterpret_cast<const float*>(p);
  const __m128 lo = _mm_loadu_ps(f), hi = _mm_loadu_ps(f + 4);
  return {_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
          _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))};
}
void Store4(C64* p, __m128 re, __m128 im) {
  float* f = reinterpret_cast<float*>(p);
  _mm_storeu_ps(f, _mm_unpacklo_ps(re, im));
  _mm_storeu_ps(f + 4, _mm_unpackhi_ps(re, im));
}
__m128 Select(__m128 m, __m128 t, __m128 f) {
  return _mm_or_ps(_mm_and_ps(m, t), _mm_andnot_ps(m, f));
}
__m128 Fabs(__m128 x) { return _mm_andnot_ps(_mm_set1_ps(-0.0f), x); }

enum class Path { kScalar, kSse2, kAvx2, kAvx512 };

Path Choose() {
  const char* env = std::getenv("KILN_COMPLEX_SIMD");
  if (env != nullptr && std::strcmp(env, "off") == 0) return Path::kScalar;
  if (env != nullptr && std::strcmp(env, "sse2") == 0) return Path::kSse2;
  if (!HaveAvx2Fma()) return Path::kSse2;
  if (env != nullptr && std::strcmp(env, "avx2") == 0) return Path::kAvx2;
  return HaveAvx512() ? Path::kAvx512 : Path::kAvx2;
}

Path ThePath() {
  static const Path path = Choose();
  return path;
}

}  // namespace

std::complex<float> DivideOneFma(std::complex<float> a, std::complex<float> b) {
  return ComplexDivide<true>(a, b);
}

std::complex<double> DivideOneFma(std::complex<double> a, std::complex<double> b) {
  return ComplexDivide<true>(a, b);
}

bool HaveAvx512() {
  static const bool have = [] {
    __builtin_cpu_init();
    return HaveAvx2Fma() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
  }();
  return have;
}

bool HaveAvx2Fma() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return have;
}

int64_t MultiplySse2(const C64* a, const C64* b, C64* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const Parts x = Load4(a + i), z = Load4(b + i);
    Store4(y + i, _mm_sub_ps(_mm_mul_ps(x.re, z.re), _mm_mul_ps(x.im, z.im)),
           _mm_add_ps(_mm_mul_ps(x.re, z.im), _mm_mul_ps(x.im, z.re)));
  }
  return i;
}

int64_t AbsSse2(const C64* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const Parts v = Load4(x + i);
    const __m128 re = Fabs(v.re), im = Fabs(v.im);
    const __m128 re_big = _mm_cmpgt_ps(re, im);
    const __m128 big = Select(re_big, re, im), small = Select(re_big, im, re);
    const __m128 q = _mm_div_ps(small, big);
    const __m128 r = _mm_mul_ps(big, _mm_sqrt_ps(_mm_add_ps(_mm_set1_ps(1.0f), _mm_mul_ps(q, q))));
    _mm_storeu_ps(y + i, Select(_mm_cmpunord_ps(r, r), _mm_add_ps(re, im), r));
  }
  return i;
}

int64_t DivideSse2(const C64* a, const C64* b, C64* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const Parts x = Load4(a + i), z = Load4(b + i);
    // Smith's quotient as ComplexDivide computes it: p the divisor's larger part, s the other.
    const __m128 by_im = _mm_cmplt_ps(Fabs(z.re), Fabs(z.im));
    const __m128 p = Select(by_im, z.im, z.re), s = Select(by_im, z.re, z.im);
    const __m128 u = Select(by_im, x.im, x.re), v = Select(by_im, x.re, x.im);
    const __m128 t = _mm_div_ps(s, p);
    const __m128 d = _mm_add_ps(p, _mm_mul_ps(s, t));
    const __m128 cr = _mm_div_ps(_mm_add_ps(u, _mm_mul_ps(v, t)), d);
    const __m128 ut = _mm_mul_ps(u, t);
    const __m128 ci = _mm_div_ps(Select(by_im, _mm_sub_ps(ut, v), _mm_sub_ps(v, ut)), d);
    const int both_nan =
        _mm_movemask_ps(_mm_and_ps(_mm_cmpunord_ps(cr, cr), _mm_cmpunord_ps(ci, ci)));
    if (both_nan == 0) [[likely]] {
      Store4(y + i, cr, ci);
    } else {  // a limit: the scalar form (the same quotient, then the limits)
      C64 q[4];
      for (int k = 0; k < 4; ++k) q[k] = ComplexDivide<false>(a[i + k], b[i + k]);
      for (int k = 0; k < 4; ++k) y[i + k] = q[k];
    }
  }
  return i;
}

}  // namespace complex_simd

bool DetectComplexFma() {
  using namespace complex_simd;  // NOLINT
  switch (ThePath()) {
    case Path::kAvx512:
    case Path::kAvx2:
      return true;
    case Path::kSse2:
      return false;
    case Path::kScalar:
      break;
  }
  return HaveAvx2Fma();
}

std::complex<float> ComplexDot(const std::complex<float>* a, const std::complex<float>* b,
                               int64_t k) {
  return complex_simd::DotAvx2(a, b, k);
}

int64_t ComplexMultiplyBlocks(const std::complex<float>* a, const std::complex<float>* b,
                              std::complex<float>* y, int64_t n) {
  using namespace complex_simd;  // NOLINT
  switch (ThePath()) {
    case Path::kAvx512: {
      const int64_t i = MultiplyAvx512(a, b, y, n);
      return i + MultiplyAvx2(a + i, b + i, y + i, n - i);
    }
    case Path::kAvx2:
      return MultiplyAvx2(a, b, y, n);
    case Path::kSse2:
      return MultiplySse2(a, b, y, n);
    case Path::kScalar:
      break;
  }
  return 0;
}

int64_t ComplexDivideBlocks(const std::complex<float>* a, const std::complex<float>* b,
                            std::complex<float>* y, int64_t n) {
  using namespace complex_simd;  // NOLINT
  switch (ThePath()) {
    case Path::kAvx512:
    case Path::kAvx2:
      return DivideAvx2(a, b, y, n);
    case Path::kSse2:
      return DivideSse2(a, b, y, n);
    case Path::kScalar:
      break;
  }
  return 0;
}

int64_t ComplexAbsBlocks(const std::complex<float>* x, float* y, int64_t n) {
  using namespace complex_simd;  // NOLINT
  switch (ThePath()) {
    case Path::kAvx512: {
      const int64_t i = AbsAvx512(x, y, n);
      return i + AbsAvx2(x + i, y + i, n - i);
    }
    case Path::kAvx2:
      return AbsAvx2(x, y, n);
    case Path::kSse2:
      return AbsSse2(x, y, n);
    case Path::kScalar:
      break;
  }
  return 0;
}

int64_t ComplexAddBlocks(const std::complex<float>* a, const std::complex<float>* b,
                         std::complex<float>* y, int64_t n, bool subtract) {
  using namespace complex_simd;  // NOLINT
  return ThePath() >= Path::kAvx2 ? AddAvx2(a, b, y, n, subtract) : 0;
}

int64_t ComplexMultiplyBlocks(const std::complex<double>* a, const std::complex<double>* b,
                              std::complex<double>* y, int64_t n) {
  using namespace complex_simd;  // NOLINT
  return ThePath() >= Path::kAvx2 ? MultiplyAvx2(a, b, y, n) : 0;
}

int64_t ComplexDivideBlocks(const std::complex<double>* a, const std::complex<double>* b,
                            std::complex<double>* y, int64_t n) {
  using namespace complex_simd;  // NOLINT
  return ThePath() >= Path::kAvx2 ? DivideAvx2(a, b, y, n) : 0;
}

int64_t ComplexAbsBlocks(const std::complex<double>* x, double* y, int64_t n) {
  using namespace complex_simd;  // NOLINT
  return ThePath() >= Path::kAvx2 ? AbsAvx2(x, y, n) : 0;
}

}  // namespace kiln::kernels::ew
