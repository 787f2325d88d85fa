// AVX-512 forms of complex_simd.h's complex64 multiply and abs: 16 elements a step, the FMA forms
// and the operations of complex_simd_avx2.cc in the same order, so the same bits. Built with
// -mavx512f -mavx512dq -mfma -ffp-contract=off (CMakeLists.txt): the FMAs written here are the
// only ones. Run only where complex_simd::HaveAvx512(); includes no inline function of
// complex_arith.h (see complex_simd_avx2.cc).
#include <immintrin.h>

#include "kernels/complex_simd.h"

namespace kiln::kernels::ew::complex_simd {
namespace {

using C64 = std::complex<float>;

// Sixteen elements as lanes in memory order: the real parts (even floats) and the imaginary
// parts (odd floats) of two 64-byte loads, gathered across both with vpermt2ps.
struct Parts {
  __m512 re, im;
};
const __m512i kEven = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
const __m512i kOdd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
// Elements 0-7 and 8-15 interleaved again: lane 2k from re, 2k + 1 from im (index 16 + k).
const __m512i kLow = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
const __m512i kHigh =
    _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);

Parts Load16(const C64* p) {
  const float* f = reinterpret_cast<const float*>(p);
  const __m512 lo = _mm512_loadu_ps(f), hi = _mm512_loadu_ps(f + 16);
  return {_mm512_permutex2var_ps(lo, kEven, hi), _mm512_permutex2var_ps(lo, kOdd, hi)};
}
void Store16(C64* p, __m512 re, __m512 im) {
  float* f = reinterpret_cast<float*>(p);
  _mm512_storeu_ps(f, _mm512_permutex2var_ps(re, kLow, im));
  _mm512_storeu_ps(f + 16, _mm512_permutex2var_ps(re, kHigh, im));
}
__m512 Fabs(__m512 x) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}

}  // namespace

int64_t MultiplyAvx512(const C64* a, const C64* b, C64* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const Parts x = Load16(a + i), z = Load16(b + i);
    Store16(y + i, _mm512_fmsub_ps(x.re, z.re, _mm512_mul_ps(x.im, z.im)),
            _mm512_fmadd_ps(x.im, z.re, _mm512_mul_ps(x.re, z.im)));
  }
  return i;
}

int64_t AbsAvx512(const C64* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const Parts v = Load16(x + i);
    const __m512 re = Fabs(v.re), im = Fabs(v.im);
    const __mmask16 re_big = _mm512_cmp_ps_mask(re, im, _CMP_GT_OQ);
    const __m512 big = _mm512_mask_blend_ps(re_big, im, re);
    const __m512 small = _mm512_mask_blend_ps(re_big, re, im);
    const __m512 q = _mm512_div_ps(small, big);
    // (the masked form, every lane set: GCC 12 warns about _mm512_sqrt_ps's undefined source)
    const __m512 s = _mm512_fmadd_ps(q, q, _mm512_set1_ps(1.0f));
    const __m512 r = _mm512_mul_ps(big, _mm512_mask_sqrt_ps(s, 0xFFFF, s));
    const __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
    _mm512_storeu_ps(y + i, _mm512_mask_blend_ps(nan, r, _mm512_add_ps(re, im)));
  }
  return i;
}

}  // namespace kiln::kernels::ew::complex_simd
