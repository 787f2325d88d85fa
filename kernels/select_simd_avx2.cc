// AVX2 forms of select_simd.h (built with -mavx2, CMakeLists.txt; run only where the CPU has it):
// the predicate bytes widened to lane masks (vpmovzxbd / vpmovzxbq, then != 0), the operands
// blended by them.
#include <immintrin.h>

#include <cstring>

#include "kernels/select_simd.h"

namespace kiln::kernels::ew::select_simd {

int64_t SelectAvx2(const uint8_t* p, const uint32_t* a, const uint32_t* b, uint32_t* y, int64_t n) {
  int64_t i = 0;
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    int64_t bytes;
    std::memcpy(&bytes, p + i, 8);
    const __m256i wide = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(bytes));
    const __m256i pick_b = _mm256_cmpeq_epi32(wide, zero);  // p == 0: b
    const __m256i va = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i vb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm256_blendv_epi8(va, vb, pick_b));
  }
  return i;
}

int64_t SelectAvx2(const uint8_t* p, const uint64_t* a, const uint64_t* b, uint64_t* y, int64_t n) {
  int64_t i = 0;
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    int32_t lo, hi;
    std::memcpy(&lo, p + i, 4);
    std::memcpy(&hi, p + i + 4, 4);
    const __m256i m0 = _mm256_cmpeq_epi64(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(lo)), zero);
    const __m256i m1 = _mm256_cmpeq_epi64(_mm256_cvtepu8_epi64(_mm_cvtsi32_si128(hi)), zero);
    const auto* va = reinterpret_cast<const __m256i*>(a + i);
    const auto* vb = reinterpret_cast<const __m256i*>(b + i);
    auto* vy = reinterpret_cast<__m256i*>(y + i);
    _mm256_storeu_si256(vy, _mm256_blendv_epi8(_mm256_loadu_si256(va), _mm256_loadu_si256(vb), m0));
    _mm256_storeu_si256(
        vy + 1, _mm256_blendv_epi8(_mm256_loadu_si256(va + 1), _mm256_loadu_si256(vb + 1), m1));
  }
  return i;
}

}  // namespace kiln::kernels::ew::select_simd
