// The binary op functors of the elementwise kernels (kernels/elementwise.cc), compare included; the
// unary ones and what they share are in kernels/elementwise_functors.h. Internal to the elementwise
// files.
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "kernels/compare_simd.h"
#include "kernels/elementwise_functors.h"
#include "kernels/elementwise_ops.h"

namespace kiln::kernels::elementwise {

// ---- binary ----

struct AddOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsPred<T> || kIsComplex<T>;
  static int64_t Blocks(const std::complex<float>* a, const std::complex<float>* b,
                        std::complex<float>* y, int64_t n) {
    return ComplexAddBlocks(a, b, y, n, false);
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a | b;  // pred add is OR (no branch)
    else if constexpr (std::is_integral_v<C>)
      return WrapAdd(a, b);
    else
      return a + b;
  }
};

struct SubtractOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  static int64_t Blocks(const std::complex<float>* a, const std::complex<float>* b,
                        std::complex<float>* y, int64_t n) {
    return ComplexAddBlocks(a, b, y, n, true);
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return WrapSub(a, b);
    else
      return a - b;
  }
};

struct MultiplyOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsPred<T> || kIsComplex<T>;
  static int64_t Blocks(const std::complex<float>* a, const std::complex<float>* b,
                        std::complex<float>* y, int64_t n) {
    return ComplexMultiplyBlocks(a, b, y, n);
  }
  static int64_t Blocks(const std::complex<double>* a, const std::complex<double>* b,
                        std::complex<double>* y, int64_t n) {
    return ComplexMultiplyBlocks(a, b, y, n);
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a & b;  // pred multiply is AND
    else if constexpr (std::is_integral_v<C>)
      return WrapMul(a, b);
    else if constexpr (kIsComplex<C>)
      // No Annex G recovery, FMAs where the CPU has them: as XLA:CPU (complex_arith.h).
      return ComplexFma() ? ComplexMultiply<true>(a, b) : ComplexMultiply<false>(a, b);
    else
      return a * b;
  }
};

struct DivideOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  static int64_t Blocks(const std::complex<float>* a, const std::complex<float>* b,
                        std::complex<float>* y, int64_t n) {
    return ComplexDivideBlocks(a, b, y, n);
  }
  static int64_t Blocks(const std::complex<double>* a, const std::complex<double>* b,
                        std::complex<double>* y, int64_t n) {
    return ComplexDivideBlocks(a, b, y, n);
  }
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return IntDiv(a, b);
    else if constexpr (kIsComplex<C>)
      // Smith's, FMAs where the CPU has them: as XLA:CPU (complex_arith.h).
      return ComplexFma() ? ComplexDivide<true>(a, b) : ComplexDivide<false>(a, b);
    else
      return a / b;
  }
};

struct RemainderOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return IntRem(a, b);
    else
      return std::fmod(a, b);  // sign of the dividend, like C's %
  }
};

struct PowerOp {
  static constexpr int64_t kChunk = kCostlyChunk;
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return IntPow(a, b);
    else
      return std::pow(a, b);
  }
};

struct MaxOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsPred<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return FloatMax(a, b);
    else
      return a > b ? a : b;
  }
};

struct MinOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsPred<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      return FloatMin(a, b);
    else
      return a < b ? a : b;
  }
};

struct Atan2Op {
  static constexpr int64_t kChunk = kCostlyChunk;
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return std::atan2(a, b);
  }
};

struct AndOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T> || kIsPred<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a & b;
    else
      return static_cast<C>(a & b);
  }
};

struct OrOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T> || kIsPred<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a | b;
    else
      return static_cast<C>(a | b);
  }
};

struct XorOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T> || kIsPred<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a != b;
    else
      return static_cast<C>(a ^ b);
  }
};

struct ShiftLeftOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return ShiftLeft(a, b);
  }
};

struct ShiftRightArithmeticOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return ShiftRightArithmetic(a, b);
  }
};

struct ShiftRightLogicalOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T>;
  template <typename C>
  C operator()(C a, C b) const {
    return ShiftRightLogical(a, b);
  }
};

// stablehlo.complex: (real, imag) -> complex.
struct ComplexOp {
  template <typename T>
  static constexpr bool kSupports = std::is_same_v<T, float> || std::is_same_v<T, double>;
  template <typename T>
  using Result = std::complex<T>;
  template <typename C>
  std::complex<C> operator()(C re, C im) const {
    return std::complex<C>(re, im);
  }
};

// GT/GE are lowered as LT/LE with swapped operands (exact for IEEE quiet compares and for
// totalOrder), so four directions suffice.
enum class CmpDir { kEq, kNe, kLt, kLe };

template <CmpDir kDir, bool kTotalOrder>
struct CompareOp {
  template <typename T>
  static constexpr bool kSupports = kTotalOrder ? kIsFloat<T> : !std::is_void_v<T>;
  template <typename T>
  using Result = PredByte;
  // f32 IEEE compares 8 at a time on AVX2 CPUs (compare_simd.h).
  static int64_t Blocks(const float* a, const float* b, PredByte* y,
                        int64_t n) requires(!kTotalOrder) {
    return CompareF32Blocks(static_cast<int>(kDir), a, b, reinterpret_cast<uint8_t*>(y), n);
  }

  template <typename K>
  static bool Apply(K a, K b) {
    if constexpr (kDir == CmpDir::kEq)
      return a == b;
    else if constexpr (kDir == CmpDir::kNe)
      return a != b;
    else if constexpr (kDir == CmpDir::kLt)
      return a < b;
    else
      return a <= b;
  }

  template <typename C>
  bool operator()(C a, C b) const {
    if constexpr (kTotalOrder) {
      return Apply(TotalOrderKey(a), TotalOrderKey(b));
    } else if constexpr (kIsComplex<C>) {
      if constexpr (kDir == CmpDir::kEq)
        return a == b;
      else if constexpr (kDir == CmpDir::kNe)
        return a != b;
      // Lexicographic on (real, imag), as the spec defines it.
      else if (a.real() != b.real())
        return Apply(a.real(), b.real());
      else
        return Apply(a.imag(), b.imag());
    } else {
      return Apply(a, b);
    }
  }
};

}  // namespace kiln::kernels::elementwise
