#include "kernels/vector_math.h"

#include <cstdlib>
#include <cstring>

#include "codegen/native_math.h"

namespace kiln::kernels {
namespace {

enum class Isa { kNone, kAvx2, kAvx512 };

Isa DetectIsa() {
  if (const char* env = std::getenv("KILN_VECTOR_MATH");
      env != nullptr && std::strcmp(env, "off") == 0) {
    return Isa::kNone;
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return Isa::kAvx512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::kAvx2;
  return Isa::kNone;
}

Isa TheIsa() {
  static const Isa isa = DetectIsa();
  return isa;
}

// Kiln's own function for f32 `fn` (codegen/native_math.h), if it has one and it could be built:
// the same on both vector paths.
codegen::NativeMath OwnF32(MathFn fn) {
  if (TheIsa() == Isa::kNone) return codegen::NativeMath::kNone;
  switch (fn) {
    case MathFn::kExp:
      return codegen::NativeMath::kExpF32;
    case MathFn::kTanh:
      return codegen::NativeMath::kTanhF32;
    default:
      return codegen::NativeMath::kNone;
  }
}

}  // namespace

VectorF32 VectorMathF32(MathFn fn) {
  if (auto own = codegen::NativeMathArray(OwnF32(fn))) return own;
  const int i = static_cast<int>(fn);
  switch (TheIsa()) {
    case Isa::kAvx512:
      return vector_math_detail::kAvx512F32[i];
    case Isa::kAvx2:
      return vector_math_detail::kAvx2F32[i];
    case Isa::kNone:
      break;
  }
  return nullptr;
}

VectorF64 VectorMathF64(MathFn fn) {
  const int i = static_cast<int>(fn);
  switch (TheIsa()) {
    case Isa::kAvx512:
      return vector_math_detail::kAvx512F64[i];
    case Isa::kAvx2:
      return vector_math_detail::kAvx2F64[i];
    case Isa::kNone:
      break;
  }
  return nullptr;
}

const void* VectorMathRegister(MathFn fn, bool f64) {
  // The AVX-512 register forms' wide forms, for native code (once).
  [[maybe_unused]] static const bool wide = [] {
    if (TheIsa() != Isa::kAvx512) return false;
    for (int i = 0; i < static_cast<int>(MathFn::kCount); ++i) {
      for (int w = 0; w < 2; ++w) {
        codegen::RegisterWideCall(vector_math_detail::kAvx512Register[i][w],
                                  vector_math_detail::kAvx512RegisterWide[i][w]);
      }
    }
    return true;
  }();
  if (!f64) {
    if (const void* own = codegen::NativeMathRegister(OwnF32(fn))) return own;
  }
  const int i = static_cast<int>(fn);
  switch (TheIsa()) {
    case Isa::kAvx512:
      return vector_math_detail::kAvx512Register[i][f64 ? 1 : 0];
    case Isa::kAvx2:
      return vector_math_detail::kAvx2Register[i][f64 ? 1 : 0];
    case Isa::kNone:
      break;
  }
  return nullptr;
}

const char* VectorMathIsa() {
  switch (TheIsa()) {
    case Isa::kAvx512:
      return "avx512f";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kNone:
      break;
  }
  return "none";
}

}  // namespace kiln::kernels
