// Vector math: bulk transcendental functions on f32 and f64 arrays with the widest vectors the CPU
// has, chosen at run time (AVX-512F, else AVX2+FMA, else none), from SLEEF's 1.0-ulp ("u10")
// functions, except f32 exp and tanh: Kiln's own (codegen/native_math.h: 8-lane AVX2 code on both
// paths, which native code emits inline; 0.95 and 1.48 ulp). The library is built for baseline
// x86-64; only vector_math_avx2.cc and vector_math_avx512.cc are compiled for those instruction
// sets, and they run only on CPUs that have them. Measured accuracy: docs/vector_math.md
// (tools/ulp_check.cc).
#pragma once

#include <cstdint>

namespace kiln::kernels {

// Every function with a vector path, written once: X(enumerator, SLEEF base name). Not log1p:
// SLEEF 3.5's log1pf returns inf for inputs near FLT_MAX (the C library gives 88.72).
#define KILN_VECTOR_MATH_FUNCTIONS(X) \
  X(kExp, exp)                        \
  X(kExpm1, expm1)                    \
  X(kLog, log)                        \
  X(kSin, sin)                        \
  X(kCos, cos)                        \
  X(kTan, tan)                        \
  X(kTanh, tanh)                      \
  X(kCbrt, cbrt)

enum class MathFn : uint8_t {
#define KILN_MATH_ENUM(e, f) e,
  KILN_VECTOR_MATH_FUNCTIONS(KILN_MATH_ENUM)
#undef KILN_MATH_ENUM
  // The instruction itself (correctly rounded), not SLEEF.
  kSqrt,
  kCount
};

using VectorF32 = void (*)(const float* x, float* y, int64_t n);
using VectorF64 = void (*)(const double* x, double* y, int64_t n);

// The vector kernel for `fn` on this CPU, or nullptr when it has neither AVX-512F nor AVX2+FMA (the
// caller then uses the C library). KILN_VECTOR_MATH=off disables the vector path.
VectorF32 VectorMathF32(MathFn fn);
VectorF64 VectorMathF64(MathFn fn);
// The same function for native code (lower::MapCode::fn): 32 bytes of lanes (8 f32 or 4 f64)
// in ymm0, the results in ymm0 (System V vector convention), the same bits per lane as
// VectorMathF32/F64 on this machine; nullptr for kSqrt (an instruction) or without a vector path.
const void* VectorMathRegister(MathFn fn, bool f64);
// With AVX-512 each such function also has a 64-byte form, registered with native code
// (codegen::RegisterWideCall) when this is first called: 16 f32 or 8 f64 lanes in zmm0, results in
// zmm0, each lane's bits those of VectorMathF32/F64 (the same SLEEF function on the same groups of
// lanes as their loops), so that native code calling it may use zmm registers.
// "avx512f", "avx2" or "none": what VectorMath* use on this machine.
const char* VectorMathIsa();

// Per-ISA tables, defined in the files compiled for that ISA.
namespace vector_math_detail {
extern const VectorF32 kAvx2F32[static_cast<int>(MathFn::kCount)];
extern const VectorF64 kAvx2F64[static_cast<int>(MathFn::kCount)];
extern const VectorF32 kAvx512F32[static_cast<int>(MathFn::kCount)];
extern const VectorF64 kAvx512F64[static_cast<int>(MathFn::kCount)];
// VectorMathRegister's functions: [fn][0] f32, [fn][1] f64.
extern const void* const kAvx2Register[static_cast<int>(MathFn::kCount)][2];
extern const void* const kAvx512Register[static_cast<int>(MathFn::kCount)][2];
extern const void* const kAvx512RegisterWide[static_cast<int>(MathFn::kCount)][2];
}  // namespace vector_math_detail

}  // namespace kiln::kernels
