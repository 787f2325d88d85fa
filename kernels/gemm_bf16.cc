// Run-time check for kernels/gemm_bf16_avx512.cc (this file is built without AVX-512 flags).
#include "kernels/gemm_bf16.h"

namespace kiln::kernels {

bool HaveBf16Gemm() {
  static const bool have = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }();
  return have;
}

}  // namespace kiln::kernels
