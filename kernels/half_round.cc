#include "kernels/half_round.h"

#include <immintrin.h>

#include "kernels/float16.h"

namespace kiln::kernels {
namespace {

bool HaveAvx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return have;
}

// FloatToBf16Bits on the eight lanes of `u` (float bits), as 32-bit lanes holding the codes.
__attribute__((target("avx2"))) inline __m256i RoundLanes(__m256i u) {
  const __m256i hi = _mm256_srli_epi32(u, 16);
  const __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i magnitude = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff));
  const __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
  return _mm256_blendv_epi8(rounded, quiet, nan);
}

// Returns how many leading elements were rounded (a multiple of 16).
__attribute__((target("avx2"))) int64_t RoundAvx2(const float* from, uint16_t* to, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i a = RoundLanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i)));
    const __m256i b =
        RoundLanes(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(from + i + 8)));
    // Codes fit 16 bits, so the unsigned saturation never applies; packus interleaves 128-bit
    // halves (a0 b0 a1 b1), which the permute puts back in order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), packed);
  }
  return i;
}

}  // namespace

void RoundToBf16(const float* from, uint16_t* to, int64_t n) {
  int64_t i = HaveAvx2() ? RoundAvx2(from, to, n) : 0;
  for (; i < n; ++i) to[i] = FloatToBf16Bits(from[i]);
}

}  // namespace kiln::kernels
