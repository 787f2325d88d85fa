// Kiln's own f32 vector functions as x86-64 instruction sequences (AVX2 + FMA): written once here,
// emitted inline by the code generators of fused runs and loops, and built once per process as
// the array and register forms that kernels/vector_math.h hands out. Every form runs the same
// instructions on each lane, so interpreted, fused and loop code give the same bits.
//
// exp:  x clamped to [-104, 89] (NaN stays NaN), x = k ln2 + r + d with k = round(x / ln2), r =
//       x - k ln2_hi exact and d = -k ln2_lo kept apart; e^r - 1 = r + q with q = r^2 P(r), P of
//       degree 5 (Estrin's scheme); p = r + (q + d (1 + r + q)); then 2^k (1 + p) as
//       fma(s1, p, s1) * s2 with 2^k = s1 s2 split so both are normal (results reach the
//       subnormals and overflow to inf). 0.95 ulp (docs/vector_math.md), as SLEEF's.
// tanh: a = min(|x|, 9.5); below a = 0.5493, a + a^3 Q(a^2) with Q of degree 4; above, q =
//       expm1(2a) by the same reduction (d rounded into r) and then q / (q + 2); x's sign put
//       back. 1.48 ulp.
// The coefficients: tools/tanh_coefficients.py (a least-squares fit iterated toward minimax).
//
// This header is the built forms, for kernels/vector_math.cc, without Xbyak; the instruction
// sequences, for the code generators, are codegen/native_math_emit.h.
#pragma once

#include <cstdint>

namespace kiln::codegen {

enum class NativeMath : uint8_t { kNone, kExpF32, kTanhF32 };

// Whether this CPU runs the sequences (AVX2 and FMA) and their forms could be built.
bool NativeMathAvailable();

// fn over n floats (y may be x), and the register form: 8 lanes in ymm0 and back in ymm0 (System
// V vector convention; it clobbers ymm1-ymm7). nullptr when not available.
using NativeArrayF32 = void (*)(const float* x, float* y, int64_t n);
NativeArrayF32 NativeMathArray(NativeMath fn);
const void* NativeMathRegister(NativeMath fn);

// The function whose register form is `fn` (a MapOp::kVectorCall's MapCode::fn), if it is one of
// these: generators then emit it inline instead of calling it.
NativeMath NativeMathOf(const void* fn);

// Wide forms of called vector functions: `wide` computes what register form `fn` (a MapOp::
// kVectorCall's MapCode::fn) computes, on 64 bytes of lanes in zmm0 (16 f32 / 8 f64), the same bits
// per lane. kernels/vector_math.cc registers them (AVX-512 machines); WideCallOf(fn) is nullptr for
// a function without one, and native code calling such a function stays in ymm.
void RegisterWideCall(const void* fn, const void* wide);
const void* WideCallOf(const void* fn);

}  // namespace kiln::codegen
