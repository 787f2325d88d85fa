// The choice between the AVX2 blocks of select_simd_avx2.cc (select_simd.h) and
// compare_simd_avx2.cc (compare_simd.h) and none.
#include "kernels/select_simd.h"

#include "kernels/compare_simd.h"

namespace kiln::kernels::ew {
namespace {

bool HaveAvx2() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
  }();
  return have;
}

}  // namespace

int64_t SelectBlocks(const uint8_t* p, const uint32_t* a, const uint32_t* b, uint32_t* y,
                     int64_t n) {
  return HaveAvx2() ? select_simd::SelectAvx2(p, a, b, y, n) : 0;
}

int64_t SelectBlocks(const uint8_t* p, const uint64_t* a, const uint64_t* b, uint64_t* y,
                     int64_t n) {
  return HaveAvx2() ? select_simd::SelectAvx2(p, a, b, y, n) : 0;
}

int64_t CompareF32Blocks(int dir, const float* a, const float* b, uint8_t* y, int64_t n) {
  return HaveAvx2() ? compare_simd::CompareF32Avx2(dir, a, b, y, n) : 0;
}

}  // namespace kiln::kernels::ew
