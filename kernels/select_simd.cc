// The choice between select_simd_avx2.cc's blocks and none (select_simd.h).
#include "kernels/select_simd.h"

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

}  // namespace kiln::kernels::ew
