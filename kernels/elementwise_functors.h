// The op functors of the elementwise kernels (kernels/elementwise.cc): for each StableHLO
// elementwise op, which storage types it accepts (kSupports) and what it computes on one element
// (on the Compute types of kernels/elementwise_ops.h). This file holds the unary ones and what
// every functor shares; the binary ones are in kernels/elementwise_binary_functors.h. Internal to
// the elementwise files.
#pragma once

#include <algorithm>
#include <bit>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "kernels/complex_arith.h"
#include "kernels/complex_simd.h"
#include "kernels/elementwise_ops.h"
#include "kernels/lowering.h"
#include "kernels/strided.h"

namespace kiln::kernels::elementwise {

using namespace ew;       // NOLINT: the elementwise vocabulary is used throughout this file
using namespace strided;  // NOLINT

// Elements per parallel task: cheap ops need big chunks to amortise the hand-off; transcendental
// ops cost ~10-50x more per element, so smaller chunks already pay off.
constexpr int64_t kCheapChunk = 1 << 14;
constexpr int64_t kCostlyChunk = 1 << 11;

template <typename Op>
constexpr int64_t ChunkOf() {
  if constexpr (requires { Op::kChunk; })
    return Op::kChunk;
  else
    return kCheapChunk;
}

// Result storage type of Op applied to storage type T (the operand type unless Op says otherwise).
template <typename Op, typename T>
struct ResultOfImpl {
  using type = T;
};
template <typename Op, typename T>
requires requires { typename Op::template Result<T>; }
struct ResultOfImpl<Op, T> {
  using type = typename Op::template Result<T>;
};
template <typename Op, typename T>
using ResultOf = typename ResultOfImpl<Op, T>::type;

// ================================================================================================
// Op functors. Each declares the storage types it accepts (kSupports) and computes on Compute
// types. They are stateless unless noted.
// ================================================================================================

template <typename T>
inline constexpr bool kFloatOrComplex = kIsFloat<T> || kIsComplex<T>;

// Real part's storage type for complex, the type itself otherwise.
template <typename T>
struct RealPart {
  using type = T;
};
template <typename P>
struct RealPart<std::complex<P>> {
  using type = P;
};

// ---- unary ----

struct AbsOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  static int64_t Blocks(const std::complex<float>* x, float* y, int64_t n) {
    return ComplexAbsBlocks(x, y, n);
  }
  static int64_t Blocks(const std::complex<double>* x, double* y, int64_t n) {
    return ComplexAbsBlocks(x, y, n);
  }
  template <typename T>
  using Result = typename RealPart<T>::type;
  template <typename C>
  auto operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return std::fabs(x);
    else if constexpr (kIsComplex<C>)
      return ComplexFma() ? ComplexAbs<true>(x) : ComplexAbs<false>(x);  // XLA:CPU's formula
    else if constexpr (std::is_signed_v<C>)
      return x < 0 ? WrapNeg(x) : x;  // abs(INT_MIN) = INT_MIN
    else
      return x;
  }
};

struct NegateOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return WrapNeg(x);
    else
      return -x;
  }
};

struct SignOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      // NaN -> NaN and +-0 -> +-0 fall out of returning x itself.
      if (x > 0) return C(1);
      if (x < 0) return C(-1);
      return x;
    } else if constexpr (kIsComplex<C>) {
      using P = typename C::value_type;
      P m = std::abs(x);
      if (m == P(0)) return C(0);
      return C(x.real() / m, x.imag() / m);
    } else if constexpr (std::is_signed_v<C>) {
      return static_cast<C>((x > 0) - (x < 0));
    } else {
      return static_cast<C>(x != 0);
    }
  }
};

// Float-only unary ops share this shape: a std:: function on the compute type.
#define KILN_FLOAT_UNARY(Name, expr, chunk)        \
  struct Name {                                    \
    static constexpr int64_t kChunk = chunk;       \
    template <typename T>                          \
    static constexpr bool kSupports = kIsFloat<T>; \
    template <typename C>                          \
    C operator()(C x) const {                      \
      return expr;                                 \
    }                                              \
  };

KILN_FLOAT_UNARY(FloorOp, std::floor(x), kCheapChunk)
KILN_FLOAT_UNARY(CeilOp, std::ceil(x), kCheapChunk)
KILN_FLOAT_UNARY(RoundAfzOp, std::round(x), kCheapChunk)
// nearbyint honours the current rounding mode, which Kiln never changes from round-to-nearest-even.
KILN_FLOAT_UNARY(RoundEvenOp, std::nearbyint(x), kCheapChunk)
KILN_FLOAT_UNARY(CbrtOp, std::cbrt(x), kCostlyChunk)
#undef KILN_FLOAT_UNARY

// Float-or-complex unary ops (std:: overloads cover both).
#define KILN_FLOAT_COMPLEX_UNARY(Name, expr, chunk)       \
  struct Name {                                           \
    static constexpr int64_t kChunk = chunk;              \
    template <typename T>                                 \
    static constexpr bool kSupports = kFloatOrComplex<T>; \
    template <typename C>                                 \
    C operator()(C x) const {                             \
      return expr;                                        \
    }                                                     \
  };

KILN_FLOAT_COMPLEX_UNARY(SqrtOp, std::sqrt(x), kCheapChunk)
KILN_FLOAT_COMPLEX_UNARY(RsqrtOp, C(1) / std::sqrt(x), kCheapChunk)
KILN_FLOAT_COMPLEX_UNARY(ExpOp, std::exp(x), kCostlyChunk)
KILN_FLOAT_COMPLEX_UNARY(LogOp, std::log(x), kCostlyChunk)
KILN_FLOAT_COMPLEX_UNARY(SineOp, std::sin(x), kCostlyChunk)
KILN_FLOAT_COMPLEX_UNARY(CosineOp, std::cos(x), kCostlyChunk)
KILN_FLOAT_COMPLEX_UNARY(TanOp, std::tan(x), kCostlyChunk)
KILN_FLOAT_COMPLEX_UNARY(TanhOp, std::tanh(x), kCostlyChunk)
#undef KILN_FLOAT_COMPLEX_UNARY

struct Expm1Op {
  static constexpr int64_t kChunk = kCostlyChunk;
  template <typename T>
  static constexpr bool kSupports = kFloatOrComplex<T>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsComplex<C>)
      return std::exp(x) - C(1);
    else
      return std::expm1(x);
  }
};

struct Log1pOp {
  static constexpr int64_t kChunk = kCostlyChunk;
  template <typename T>
  static constexpr bool kSupports = kFloatOrComplex<T>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (kIsComplex<C>)
      return std::log(C(1) + x);
    else
      return std::log1p(x);
  }
};

struct LogisticOp {
  static constexpr int64_t kChunk = kCostlyChunk;
  template <typename T>
  static constexpr bool kSupports = kFloatOrComplex<T>;
  template <typename C>
  C operator()(C x) const {
    // exp(-x) overflows to +inf for very negative x, giving exactly 0: the right limit.
    return C(1) / (C(1) + std::exp(-x));
  }
};

struct NotOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T> || kIsPred<T>;
  template <typename C>
  C operator()(C x) const {
    if constexpr (std::is_same_v<C, bool>)
      return !x;
    else
      return static_cast<C>(~x);
  }
};

struct IsFiniteOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T>;
  template <typename T>
  using Result = PredByte;
  template <typename C>
  bool operator()(C x) const {
    return std::isfinite(x);
  }
};

struct PopcntOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T>;
  template <typename C>
  C operator()(C x) const {
    return static_cast<C>(std::popcount(static_cast<std::make_unsigned_t<C>>(x)));
  }
};

struct ClzOp {
  template <typename T>
  static constexpr bool kSupports = kIsInt<T>;
  template <typename C>
  C operator()(C x) const {
    return static_cast<C>(std::countl_zero(static_cast<std::make_unsigned_t<C>>(x)));
  }
};

struct RealOp {
  template <typename T>
  static constexpr bool kSupports = kFloatOrComplex<T>;
  template <typename T>
  using Result = typename RealPart<T>::type;
  template <typename C>
  auto operator()(C x) const {
    if constexpr (kIsComplex<C>)
      return x.real();
    else
      return x;
  }
};

struct ImagOp {
  template <typename T>
  static constexpr bool kSupports = kFloatOrComplex<T>;
  template <typename T>
  using Result = typename RealPart<T>::type;
  template <typename C>
  auto operator()(C x) const {
    if constexpr (kIsComplex<C>)
      return x.imag();
    else
      return C(0);
  }
};

// Stateful: the target format comes from the op's attributes.
struct ReducePrecisionOp {
  int exponent_bits = 8;
  int mantissa_bits = 23;
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T>;
  template <typename C>
  C operator()(C x) const {
    return ReducePrecision(x, exponent_bits, mantissa_bits);
  }
};

}  // namespace kiln::kernels::elementwise
