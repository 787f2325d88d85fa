// AVX2 forms of complex_simd.h's block functions: 8 complex64 elements a step, the FMA forms
// (complex_arith.h with kFma true). Built with -mavx2 -mfma -ffp-contract=off (CMakeLists.txt):
// the FMAs written here are the only ones. Run only where complex_simd::HaveAvx2Fma(). It includes
// no inline function of complex_arith.h: built for AVX2, such a copy could be the one the linker
// keeps for every caller (the limits go through DivideOne, compiled for baseline x86-64).
#include <immintrin.h>

#include "kernels/complex_simd.h"

namespace kiln::kernels::ew::complex_simd {
namespace {

using C64 = std::complex<float>;
using C128 = std::complex<double>;

// Eight elements as lanes. vshufps works within 128-bit halves, so the lanes hold elements
// {0, 1, 4, 5, 2, 3, 6, 7}: both parts in the same order, and unpacking them (Store8) restores
// memory order. Results of one part per element (abs) are put in order with vpermpd.
struct Parts {
  __m256 re, im;
};
Parts Load8(const C64* p) {
  const float* f = reinterpret_cast<const float*>(p);
  const __m256 lo = _mm256_loadu_ps(f), hi = _mm256_loadu_ps(f + 8);
  return {_mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
          _mm256_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1))};
}
void Store8(C64* p, __m256 re, __m256 im) {
  float* f = reinterpret_cast<float*>(p);
  _mm256_storeu_ps(f, _mm256_unpacklo_ps(re, im));
  _mm256_storeu_ps(f + 8, _mm256_unpackhi_ps(re, im));
}
__m256 InOrder(__m256 lanes) {
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(lanes), _MM_SHUFFLE(3, 1, 2, 0)));
}
__m256 Select(__m256 m, __m256 t, __m256 f) { return _mm256_blendv_ps(f, t, m); }
__m256 Fabs(__m256 x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
// complex128: four elements as lanes {0, 2, 1, 3} (vunpcklpd / vunpckhpd within halves).
struct PartsD {
  __m256d re, im;
};
PartsD Load4(const C128* p) {
  const double* f = reinterpret_cast<const double*>(p);
  const __m256d lo = _mm256_loadu_pd(f), hi = _mm256_loadu_pd(f + 4);
  return {_mm256_unpacklo_pd(lo, hi), _mm256_unpackhi_pd(lo, hi)};
}
void Store4(C128* p, __m256d re, __m256d im) {
  double* f = reinterpret_cast<double*>(p);
  _mm256_storeu_pd(f, _mm256_unpacklo_pd(re, im));
  _mm256_storeu_pd(f + 4, _mm256_unpackhi_pd(re, im));
}
__m256d InOrder(__m256d lanes) { return _mm256_permute4x64_pd(lanes, _MM_SHUFFLE(3, 1, 2, 0)); }
__m256d Select(__m256d m, __m256d t, __m256d f) { return _mm256_blendv_pd(f, t, m); }
__m256d Fabs(__m256d x) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), x); }
float Sum8(__m256 v) {
  const __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
}

}  // namespace

int64_t AddAvx2(const C64* a, const C64* b, C64* y, int64_t n, bool subtract) {
  const float* fa = reinterpret_cast<const float*>(a);
  const float* fb = reinterpret_cast<const float*>(b);
  float* fy = reinterpret_cast<float*>(y);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {  // the parts as they lie: 16 floats
    for (int h = 0; h < 2; ++h) {
      const __m256 x = _mm256_loadu_ps(fa + 2 * i + 8 * h), z = _mm256_loadu_ps(fb + 2 * i + 8 * h);
      _mm256_storeu_ps(fy + 2 * i + 8 * h, subtract ? _mm256_sub_ps(x, z) : _mm256_add_ps(x, z));
    }
  }
  return i;
}

int64_t MultiplyAvx2(const C64* a, const C64* b, C64* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Parts x = Load8(a + i), z = Load8(b + i);
    Store8(y + i, _mm256_fmsub_ps(x.re, z.re, _mm256_mul_ps(x.im, z.im)),
           _mm256_fmadd_ps(x.im, z.re, _mm256_mul_ps(x.re, z.im)));
  }
  return i;
}

int64_t AbsAvx2(const C64* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Parts v = Load8(x + i);
    const __m256 re = Fabs(v.re), im = Fabs(v.im);
    const __m256 re_big = _mm256_cmp_ps(re, im, _CMP_GT_OQ);
    const __m256 big = Select(re_big, re, im), small = Select(re_big, im, re);
    const __m256 q = _mm256_div_ps(small, big);
    const __m256 r =
        _mm256_mul_ps(big, _mm256_sqrt_ps(_mm256_fmadd_ps(q, q, _mm256_set1_ps(1.0f))));
    const __m256 abs = Select(_mm256_cmp_ps(r, r, _CMP_UNORD_Q), _mm256_add_ps(re, im), r);
    _mm256_storeu_ps(y + i, InOrder(abs));
  }
  return i;
}

int64_t DivideAvx2(const C64* a, const C64* b, C64* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const Parts x = Load8(a + i), z = Load8(b + i);
    // Smith's quotient as ComplexDivide computes it: p the divisor's larger part, s the other.
    const __m256 by_im = _mm256_cmp_ps(Fabs(z.re), Fabs(z.im), _CMP_LT_OQ);
    const __m256 p = Select(by_im, z.im, z.re), s = Select(by_im, z.re, z.im);
    const __m256 u = Select(by_im, x.im, x.re), v = Select(by_im, x.re, x.im);
    const __m256 t = _mm256_div_ps(s, p);
    const __m256 d = _mm256_fmadd_ps(s, t, p);
    const __m256 cr = _mm256_div_ps(_mm256_fmadd_ps(v, t, u), d);
    const __m256 ci =
        _mm256_div_ps(Select(by_im, _mm256_fmsub_ps(u, t, v), _mm256_fnmadd_ps(u, t, v)), d);
    const int both_nan = _mm256_movemask_ps(
        _mm256_and_ps(_mm256_cmp_ps(cr, cr, _CMP_UNORD_Q), _mm256_cmp_ps(ci, ci, _CMP_UNORD_Q)));
    if (both_nan == 0) [[likely]] {
      Store8(y + i, cr, ci);
    } else {  // a limit: the scalar form (the same quotient, then the limits)
      C64 q[8];
      for (int k = 0; k < 8; ++k) q[k] = DivideOneFma(a[i + k], b[i + k]);
      for (int k = 0; k < 8; ++k) y[i + k] = q[k];
    }
  }
  return i;
}

C64 DotAvx2(const C64* a, const C64* b, int64_t k) {
  __m256 rr = _mm256_setzero_ps(), ii = rr, ri = rr, ir = rr;
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    const Parts x = Load8(a + j), z = Load8(b + j);
    rr = _mm256_fmadd_ps(x.re, z.re, rr);
    ii = _mm256_fmadd_ps(x.im, z.im, ii);
    ri = _mm256_fmadd_ps(x.re, z.im, ri);
    ir = _mm256_fmadd_ps(x.im, z.re, ir);
  }
  float srr = Sum8(rr), sii = Sum8(ii), sri = Sum8(ri), sir = Sum8(ir);
  for (; j < k; ++j) {
    const float ar = reinterpret_cast<const float*>(a + j)[0];
    const float ai = reinterpret_cast<const float*>(a + j)[1];
    const float br = reinterpret_cast<const float*>(b + j)[0];
    const float bi = reinterpret_cast<const float*>(b + j)[1];
    srr += ar * br;
    sii += ai * bi;
    sri += ar * bi;
    sir += ai * br;
  }
  C64 r;
  reinterpret_cast<float*>(&r)[0] = srr - sii;
  reinterpret_cast<float*>(&r)[1] = sri + sir;
  return r;
}

int64_t MultiplyAvx2(const C128* a, const C128* b, C128* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const PartsD x = Load4(a + i), z = Load4(b + i);
    Store4(y + i, _mm256_fmsub_pd(x.re, z.re, _mm256_mul_pd(x.im, z.im)),
           _mm256_fmadd_pd(x.im, z.re, _mm256_mul_pd(x.re, z.im)));
  }
  return i;
}

int64_t AbsAvx2(const C128* x, double* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const PartsD v = Load4(x + i);
    const __m256d re = Fabs(v.re), im = Fabs(v.im);
    const __m256d re_big = _mm256_cmp_pd(re, im, _CMP_GT_OQ);
    const __m256d big = Select(re_big, re, im), small = Select(re_big, im, re);
    const __m256d q = _mm256_div_pd(small, big);
    const __m256d r =
        _mm256_mul_pd(big, _mm256_sqrt_pd(_mm256_fmadd_pd(q, q, _mm256_set1_pd(1.0))));
    const __m256d abs = Select(_mm256_cmp_pd(r, r, _CMP_UNORD_Q), _mm256_add_pd(re, im), r);
    _mm256_storeu_pd(y + i, InOrder(abs));
  }
  return i;
}

int64_t DivideAvx2(const C128* a, const C128* b, C128* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const PartsD x = Load4(a + i), z = Load4(b + i);
    const __m256d by_im = _mm256_cmp_pd(Fabs(z.re), Fabs(z.im), _CMP_LT_OQ);
    const __m256d p = Select(by_im, z.im, z.re), s = Select(by_im, z.re, z.im);
    const __m256d u = Select(by_im, x.im, x.re), v = Select(by_im, x.re, x.im);
    const __m256d t = _mm256_div_pd(s, p);
    const __m256d d = _mm256_fmadd_pd(s, t, p);
    const __m256d cr = _mm256_div_pd(_mm256_fmadd_pd(v, t, u), d);
    const __m256d ci =
        _mm256_div_pd(Select(by_im, _mm256_fmsub_pd(u, t, v), _mm256_fnmadd_pd(u, t, v)), d);
    const int both_nan = _mm256_movemask_pd(
        _mm256_and_pd(_mm256_cmp_pd(cr, cr, _CMP_UNORD_Q), _mm256_cmp_pd(ci, ci, _CMP_UNORD_Q)));
    if (both_nan == 0) [[likely]] {
      Store4(y + i, cr, ci);
    } else {  // a limit: the scalar form (the same quotient, then the limits)
      C128 q[4];
      for (int k = 0; k < 4; ++k) q[k] = DivideOneFma(a[i + k], b[i + k]);
      for (int k = 0; k < 4; ++k) y[i + k] = q[k];
    }
  }
  return i;
}

}  // namespace kiln::kernels::ew::complex_simd
