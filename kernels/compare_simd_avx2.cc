// AVX2 forms of compare_simd.h (built with -mavx2, CMakeLists.txt; run only where the CPU has it):
// vcmpps, the lane masks shifted to 0 / 1 and packed to bytes.
#include <immintrin.h>

#include "kernels/compare_simd.h"

namespace kiln::kernels::ew::compare_simd {
namespace {

template <int kPredicate>
int64_t Run(const float* a, const float* b, uint8_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 m = _mm256_cmp_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), kPredicate);
    const __m256i bits = _mm256_srli_epi32(_mm256_castps_si256(m), 31);
    const __m128i words =
        _mm_packs_epi32(_mm256_castsi256_si128(bits), _mm256_extracti128_si256(bits, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_packus_epi16(words, words));
  }
  return i;
}

}  // namespace

int64_t CompareF32Avx2(int dir, const float* a, const float* b, uint8_t* y, int64_t n) {
  switch (dir) {
    case 0:
      return Run<_CMP_EQ_OQ>(a, b, y, n);
    case 1:
      return Run<_CMP_NEQ_UQ>(a, b, y, n);
    case 2:
      return Run<_CMP_LT_OQ>(a, b, y, n);
    case 3:
      return Run<_CMP_LE_OQ>(a, b, y, n);
    default:
      return 0;
  }
}

}  // namespace kiln::kernels::ew::compare_simd
