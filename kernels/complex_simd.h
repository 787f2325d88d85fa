// complex64 (and, on AVX2+FMA CPUs, complex128) multiply, divide and abs (kernels/complex_arith.h)
// over whole blocks of elements with vector instructions: the elementwise loops (elementwise_map.h)
// call these for a range first, then the scalar functions for the rest. GCC -O2 does not vectorise
// the scalar forms (interleaved parts, selects): a 256-element tile of divides took 31 ns an
// element as scalar selects, 7 through libgcc's __divsc3.
//
// The parts are split into lanes (real parts in one register, imaginary parts in another),
// computed with the scalar functions' operations in the same order, and interleaved again: the
// same bits as the scalar functions, on every path. CPUs with AVX2 and FMA take 8 elements a step
// with the FMA forms (complex_simd_avx2.cc, built with -ffp-contract=off: only the FMAs written
// are FMAs), others 4 with SSE2 (baseline x86-64) and the unfused forms. ComplexFma() tells the
// scalar functions which forms to use. KILN_COMPLEX_SIMD=sse2 takes the SSE2 path and unfused
// forms everywhere (for tests), =off the scalar loops alone (FMA forms where the CPU has them),
// =avx2 keeps AVX-512 CPUs to the AVX2 forms (complex64 multiply and abs otherwise take 16
// elements a step there, complex_simd_avx512.cc).
#pragma once

#include <complex>
#include <cstdint>

namespace kiln::kernels::ew {

// Whether complex multiply, divide and abs use the FMA forms (complex_arith.h).
bool DetectComplexFma();
inline bool ComplexFma() {
  static const bool fma = DetectComplexFma();
  return fma;
}

// Each computes y[i] for i in [0, r) and returns r, a multiple of its block size (r <= n); the
// caller computes the rest with the scalar function. y may be a or b (same element offsets).
int64_t ComplexMultiplyBlocks(const std::complex<float>* a, const std::complex<float>* b,
                              std::complex<float>* y, int64_t n);
int64_t ComplexDivideBlocks(const std::complex<float>* a, const std::complex<float>* b,
                            std::complex<float>* y, int64_t n);
int64_t ComplexAbsBlocks(const std::complex<float>* x, float* y, int64_t n);
// a + b (a - b with `subtract`): the parts' IEEE sums as they lie, 8 elements a step on AVX2 CPUs.
int64_t ComplexAddBlocks(const std::complex<float>* a, const std::complex<float>* b,
                         std::complex<float>* y, int64_t n, bool subtract);
// complex128: 4 elements a step on AVX2+FMA CPUs, else none (the scalar functions do all).
int64_t ComplexMultiplyBlocks(const std::complex<double>* a, const std::complex<double>* b,
                              std::complex<double>* y, int64_t n);
int64_t ComplexDivideBlocks(const std::complex<double>* a, const std::complex<double>* b,
                            std::complex<double>* y, int64_t n);
int64_t ComplexAbsBlocks(const std::complex<double>* x, double* y, int64_t n);

// sum over j < k of a[j] * b[j] (a vector-vector dot_general, jnp.vdot after its conj), both
// contiguous: the four products' sums in 8 lanes each (AVX2, FMAs), then real = sum(ar*br) -
// sum(ai*bi), imag = sum(ar*bi) + sum(ai*br), as BLAS's cdotu forms them. Only where
// complex_simd::HaveAvx2Fma(); elsewhere callers use BLAS.
std::complex<float> ComplexDot(const std::complex<float>* a, const std::complex<float>* b,
                               int64_t k);

// The ISA-specific forms (complex_simd.cc, complex_simd_avx2.cc), for tests.
namespace complex_simd {
int64_t MultiplySse2(const std::complex<float>* a, const std::complex<float>* b,
                     std::complex<float>* y, int64_t n);
int64_t DivideSse2(const std::complex<float>* a, const std::complex<float>* b,
                   std::complex<float>* y, int64_t n);
int64_t AbsSse2(const std::complex<float>* x, float* y, int64_t n);
int64_t MultiplyAvx2(const std::complex<float>* a, const std::complex<float>* b,
                     std::complex<float>* y, int64_t n);
int64_t DivideAvx2(const std::complex<float>* a, const std::complex<float>* b,
                   std::complex<float>* y, int64_t n);
int64_t AbsAvx2(const std::complex<float>* x, float* y, int64_t n);
int64_t AddAvx2(const std::complex<float>* a, const std::complex<float>* b, std::complex<float>* y,
                int64_t n, bool subtract);
std::complex<float> DotAvx2(const std::complex<float>* a, const std::complex<float>* b, int64_t k);
int64_t MultiplyAvx2(const std::complex<double>* a, const std::complex<double>* b,
                     std::complex<double>* y, int64_t n);
int64_t DivideAvx2(const std::complex<double>* a, const std::complex<double>* b,
                   std::complex<double>* y, int64_t n);
int64_t AbsAvx2(const std::complex<double>* x, double* y, int64_t n);
// AVX-512 complex64 multiply and abs, 16 elements a step (complex_simd_avx512.cc): the AVX2
// forms' operations, the same bits. Only where HaveAvx512().
int64_t MultiplyAvx512(const std::complex<float>* a, const std::complex<float>* b,
                       std::complex<float>* y, int64_t n);
int64_t AbsAvx512(const std::complex<float>* x, float* y, int64_t n);
// Whether the CPU has AVX512F and AVX512DQ besides AVX2 and FMA.
bool HaveAvx512();
// ComplexDivide<true>, out of line (for complex_simd_avx2.cc).
std::complex<float> DivideOneFma(std::complex<float> a, std::complex<float> b);
std::complex<double> DivideOneFma(std::complex<double> a, std::complex<double> b);
// Whether the CPU has AVX2 and FMA (the Avx2 forms may run).
bool HaveAvx2Fma();
}  // namespace complex_simd

}  // namespace kiln::kernels::ew
