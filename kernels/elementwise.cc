// Elementwise ops: unary and binary arithmetic, bitwise and logical ops, compare, select, clamp,
// convert, bitcast_convert, reduce_precision, complex/real/imag.
//
// Each op is a functor from kernels/elementwise_ops.h applied by a loop template instantiated per
// (op, element type), so the common f32/int paths are plain contiguous loops over __restrict
// pointers that g++ -O2 vectorises. Large arrays are split over runtime::ParallelFor.
#include <algorithm>
#include <bit>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_ops.h"
#include "kernels/lowering.h"
#include "kernels/narrow_float.h"
#include "kernels/strided.h"
#include "kernels/vector_math.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using compiler::ExecContext;
using compiler::Kernel;
using compiler::LowerContext;
using runtime::Array;
using runtime::View;
using namespace ew;        // NOLINT: the elementwise vocabulary is used throughout this file
using namespace lowering;  // NOLINT
using namespace strided;   // NOLINT

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
  template <typename T>
  using Result = typename RealPart<T>::type;
  template <typename C>
  auto operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      return std::fabs(x);
    else if constexpr (kIsComplex<C>)
      return std::abs(x);
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

// ---- binary ----

struct AddOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsPred<T> || kIsComplex<T>;
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
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_same_v<C, bool>)
      return a & b;  // pred multiply is AND
    else if constexpr (std::is_integral_v<C>)
      return WrapMul(a, b);
    else
      return a * b;
  }
};

struct DivideOp {
  template <typename T>
  static constexpr bool kSupports = kIsFloat<T> || kIsInt<T> || kIsComplex<T>;
  template <typename C>
  C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>)
      return IntDiv(a, b);
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

// ================================================================================================
// Loops and kernels
// ================================================================================================

// How the loops are written matters for speed. g++ -O2 (GCC 12+) vectorises only when the vector
// code needs neither run-time alias checks nor a scalar epilogue ("very cheap" cost model). So each
// loop (1) lives in its own non-inlined function whose __restrict parameters rule out aliasing
// (inlined into a caller, that information is lost), and (2) runs fixed-size blocks of kBlock
// elements, a trip count the vectoriser can prove, followed by a scalar tail.
#define KILN_LOOP __attribute__((noinline))
constexpr int64_t kBlock = 16;

template <typename R, typename T, typename Op>
KILN_LOOP void UnaryLoop(const T* __restrict x, R* __restrict y, int64_t n, const Op& op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) y[i + j] = Elem<R>::Store(op(Elem<T>::Load(x[i + j])));
  }
  for (; i < n; ++i) y[i] = Elem<R>::Store(op(Elem<T>::Load(x[i])));
}

template <typename R, typename T, typename Op>
KILN_LOOP void BinaryLoop(const T* __restrict a, const T* __restrict b, R* __restrict y, int64_t n,
                          const Op& op) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) {
      y[i + j] = Elem<R>::Store(op(Elem<T>::Load(a[i + j]), Elem<T>::Load(b[i + j])));
    }
  }
  for (; i < n; ++i) y[i] = Elem<R>::Store(op(Elem<T>::Load(a[i]), Elem<T>::Load(b[i])));
}

template <typename W>
KILN_LOOP void SelectLoop(const uint8_t* __restrict p, const W* __restrict a, const W* __restrict b,
                          W* __restrict y, int64_t n) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) {
      // Both loads are unconditional so the vectoriser can turn the choice into a blend.
      const W t = a[i + j], f = b[i + j];
      y[i + j] = p[i + j] ? t : f;
    }
  }
  for (; i < n; ++i) y[i] = p[i] ? a[i] : b[i];
}

// clamp(min, x, max) = minimum(maximum(x, min), max); min and max may be scalars.
template <typename T, bool kScalarLo, bool kScalarHi>
KILN_LOOP void ClampLoop(const T* __restrict lo, const T* __restrict x, const T* __restrict hi,
                         T* __restrict y, int64_t n) {
  using E = Elem<T>;
  auto one = [&](int64_t i) {
    auto l = E::Load(lo[kScalarLo ? 0 : i]);
    auto h = E::Load(hi[kScalarHi ? 0 : i]);
    y[i] = E::Store(MinOp{}(MaxOp{}(E::Load(x[i]), l), h));
  };
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) one(i + j);
  }
  for (; i < n; ++i) one(i);
}

template <typename To, typename From>
KILN_LOOP void ConvertLoop(const From* __restrict x, To* __restrict y, int64_t n) {
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) y[i + j] = ConvertElement<To>(x[i + j]);
  }
  for (; i < n; ++i) y[i] = ConvertElement<To>(x[i]);
}

// ---- the one kernel shape behind every elementwise op ----
//
// A "map" kernel checks its inputs, allocates the result and runs a typed range function over
// [begin, end) chunks in parallel. Only the range function is instantiated per (op, type); the
// kernel itself is one non-template lambda, which keeps compile time and code size in check.

using compiler::RangeFn;

struct MapSpec {
  std::string name;
  ir::Type out_type;
  std::vector<int64_t> in_elements;  // expected element count per input (1 for scalar operands)
  std::vector<int> in_widths;        // expected element byte width per input
  std::vector<int> input_order;      // which kernel input feeds RangeFn input i (operand swaps)
  int64_t chunk = kCheapChunk;
  RangeFn range = nullptr;
  std::shared_ptr<const void> state;  // the op functor (or other data) RangeFn reads
  // Sub-byte integers (NormalizeSubByte, SignExtendBits): a result out of range saturates
  // (conversions from floating point) instead of wrapping; inputs are sign-extended from this
  // many bits (0: read as stored).
  bool saturate = false;
  int sign_extend_bits = 0;
  compiler::MapCode code = {};  // what `range` computes (MapInfo::code)
};

// The MapCode of op functor Op (MapOp::kNone for those the loop code generator does not know).
template <typename Op>
inline constexpr compiler::MapOp kMapOpOf = compiler::MapOp::kNone;
#define KILN_MAP_OP(Op, code) \
  template <>                 \
  inline constexpr compiler::MapOp kMapOpOf<Op> = compiler::MapOp::code;
KILN_MAP_OP(AddOp, kAdd)
KILN_MAP_OP(SubtractOp, kSubtract)
KILN_MAP_OP(MultiplyOp, kMultiply)
KILN_MAP_OP(DivideOp, kDivide)
KILN_MAP_OP(MaxOp, kMaximum)
KILN_MAP_OP(MinOp, kMinimum)
KILN_MAP_OP(AndOp, kAnd)
KILN_MAP_OP(OrOp, kOr)
KILN_MAP_OP(XorOp, kXor)
KILN_MAP_OP(NegateOp, kNegate)
KILN_MAP_OP(AbsOp, kAbs)
KILN_MAP_OP(SqrtOp, kSqrt)
KILN_MAP_OP(NotOp, kNot)
#undef KILN_MAP_OP
template <CmpDir kDir>
inline constexpr compiler::MapOp kMapOpOf<CompareOp<kDir, false>> =
    kDir == CmpDir::kEq   ? compiler::MapOp::kEq
    : kDir == CmpDir::kNe ? compiler::MapOp::kNe
    : kDir == CmpDir::kLt ? compiler::MapOp::kLt
                          : compiler::MapOp::kLe;

template <typename Op>
compiler::MapCode MapCodeOf(ir::DType in, ir::DType out) {
  return {kMapOpOf<Op>, in, out};
}

// Sub-byte integers around an op's range function: inputs sign-extended into a stack block where
// the op reads them as numbers, results brought back to the stored form (elementwise_ops.h).
struct SubByteRangeState {
  RangeFn inner;
  std::shared_ptr<const void> inner_state;
  ir::DType out_dtype;  // normalized when it is a sub-byte type
  bool saturate;
  int sign_extend_bits;
  std::vector<bool> scalar;  // per range input
  std::vector<int> widths;   // per range input: element bytes
  int out_width;
};

void SubByteRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  const auto& s = *static_cast<const SubByteRangeState*>(state);
  auto* y = static_cast<std::byte*>(out);
  constexpr int64_t kBlock = 256;
  for (int64_t c = b; c < e; c += kBlock) {
    const int64_t len = std::min(kBlock, e - c);
    alignas(64) int8_t extended[compiler::kMaxMapInputs][kBlock];
    const void* ptrs[compiler::kMaxMapInputs] = {nullptr, nullptr, nullptr};
    for (size_t r = 0; r < s.scalar.size(); ++r) {
      const auto* x = static_cast<const uint8_t*>(in[r]) + (s.scalar[r] ? 0 : c * s.widths[r]);
      if (s.sign_extend_bits == 0) {
        ptrs[r] = x;
        continue;
      }
      const int64_t count = s.scalar[r] ? 1 : len;
      for (int64_t i = 0; i < count; ++i) extended[r][i] = SignExtend(x[i], s.sign_extend_bits);
      ptrs[r] = extended[r];
    }
    std::byte* dst = y + c * s.out_width;
    s.inner(ptrs, dst, 0, len, s.inner_state.get());
    if (SubByteBits(s.out_dtype) != 0) NormalizeSubByte(s.out_dtype, s.saturate, dst, len);
  }
}

Kernel MakeMapKernel(MapSpec spec) {
  if (spec.input_order.empty()) {
    for (size_t i = 0; i < spec.in_elements.size(); ++i)
      spec.input_order.push_back(static_cast<int>(i));
  }
  if (SubByteBits(spec.out_type.dtype) != 0 || spec.sign_extend_bits != 0) {
    // Inputs sign-extended are sub-byte operands, one byte per element.
    SubByteRangeState sub{spec.range,
                          std::move(spec.state),
                          spec.out_type.dtype,
                          spec.saturate,
                          spec.sign_extend_bits,
                          {},
                          {},
                          ir::DTypeByteSize(spec.out_type.dtype)};
    const int64_t out_elements = spec.out_type.num_elements();
    for (int order : spec.input_order) {
      const auto o = static_cast<size_t>(order);
      sub.scalar.push_back(spec.in_elements[o] == 1 && out_elements != 1);
      sub.widths.push_back(spec.in_widths[o]);
    }
    spec.state = std::make_shared<const SubByteRangeState>(std::move(sub));
    spec.range = &SubByteRange;
    spec.code = {};
  }
  auto s = std::make_shared<const MapSpec>(std::move(spec));
  auto map = std::make_shared<compiler::MapInfo>();
  map->range = s->range;
  map->code = s->code;
  map->state = s->state;
  map->input_order = s->input_order;
  map->elements = s->out_type.num_elements();
  map->out_width = ir::DTypeByteSize(s->out_type.dtype);
  map->in_widths = s->in_widths;
  map->chunk = s->chunk;
  for (size_t i = 0; i < s->input_order.size(); ++i) {
    const int64_t in_elements = s->in_elements[static_cast<size_t>(s->input_order[i])];
    map->scalar.push_back(in_elements == 1 && map->elements != 1);
  }
  Kernel kernel([s](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(s->name, out, 1));
    const size_t k = s->in_elements.size();
    for (size_t i = 0; i < k; ++i)
      KILN_RETURN_IF_ERROR(CheckInput(s->name, in, i, s->in_elements[i], s->in_widths[i]));
    const View& result = out[0];
    const void* ptrs[3] = {nullptr, nullptr, nullptr};
    for (size_t i = 0; i < k && i < 3; ++i)
      ptrs[i] = in[static_cast<size_t>(s->input_order[i])].data();
    void* y = result.data();
    runtime::ParallelFor(result.num_elements(), s->chunk,
                         [&](int64_t b, int64_t e) { s->range(ptrs, y, b, e, s->state.get()); });
    return Status::Ok();
  });
  if (s->input_order.size() <= compiler::kMaxMapInputs) kernel.map = std::move(map);
  return kernel;
}

template <typename R, typename T, typename Op>
void UnaryRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  UnaryLoop<R, T>(static_cast<const T*>(in[0]) + b, static_cast<R*>(out) + b, e - b,
                  *static_cast<const Op*>(state));
}

template <typename R, typename T, typename Op>
void BinaryRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  BinaryLoop<R, T>(static_cast<const T*>(in[0]) + b, static_cast<const T*>(in[1]) + b,
                   static_cast<R*>(out) + b, e - b, *static_cast<const Op*>(state));
}

template <typename T>
void CopyRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  const T* x = static_cast<const T*>(in[0]);
  T* y = static_cast<T*>(out);
  for (int64_t i = b; i < e; ++i) y[i] = x[i];
}

template <typename W>
void SelectRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  SelectLoop<W>(static_cast<const uint8_t*>(in[0]) + b, static_cast<const W*>(in[1]) + b,
                static_cast<const W*>(in[2]) + b, static_cast<W*>(out) + b, e - b);
}

template <typename T, bool kScalarLo, bool kScalarHi>
void ClampRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  ClampLoop<T, kScalarLo, kScalarHi>(
      static_cast<const T*>(in[0]) + (kScalarLo ? 0 : b), static_cast<const T*>(in[1]) + b,
      static_cast<const T*>(in[2]) + (kScalarHi ? 0 : b), static_cast<T*>(out) + b, e - b);
}

template <typename To, typename From>
void ConvertRange(const void* const* in, void* out, int64_t b, int64_t e, const void*) {
  ConvertLoop<To, From>(static_cast<const From*>(in[0]) + b, static_cast<To*>(out) + b, e - b);
}

Status WrongResultDType(const std::string& name, ir::DType got, ir::DType want) {
  return InvalidArgument(name + ": result element type is " + std::string(ir::DTypeName(got)) +
                         ", expected " + std::string(ir::DTypeName(want)));
}

// ---- vector math (kernels/vector_math.h) ----

// Which vector-math function computes Op on real floats, if any.
template <typename Op>
inline constexpr int kVectorMathOf = -1;
template <>
inline constexpr int kVectorMathOf<ExpOp> = static_cast<int>(MathFn::kExp);
template <>
inline constexpr int kVectorMathOf<Expm1Op> = static_cast<int>(MathFn::kExpm1);
template <>
inline constexpr int kVectorMathOf<LogOp> = static_cast<int>(MathFn::kLog);
template <>
inline constexpr int kVectorMathOf<SineOp> = static_cast<int>(MathFn::kSin);
template <>
inline constexpr int kVectorMathOf<CosineOp> = static_cast<int>(MathFn::kCos);
template <>
inline constexpr int kVectorMathOf<TanOp> = static_cast<int>(MathFn::kTan);
template <>
inline constexpr int kVectorMathOf<TanhOp> = static_cast<int>(MathFn::kTanh);
template <>
inline constexpr int kVectorMathOf<CbrtOp> = static_cast<int>(MathFn::kCbrt);
template <>
inline constexpr int kVectorMathOf<SqrtOp> = static_cast<int>(MathFn::kSqrt);

template <typename T>
using VectorFnOf = void (*)(const T*, T*, int64_t);

template <typename T>
VectorFnOf<T> FindVectorMath(MathFn fn) {
  if constexpr (std::is_same_v<T, float>) {
    return VectorMathF32(fn);
  } else {
    return VectorMathF64(fn);
  }
}

template <typename T>
void VectorRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  (*static_cast<const VectorFnOf<T>*>(state))(static_cast<const T*>(in[0]) + b,
                                              static_cast<T*>(out) + b, e - b);
}

// ---- generic unary / binary lowering ----

template <typename Op>
StatusOr<Kernel> LowerUnaryWith(LowerContext& ctx, Op op) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *in, "operand", *out, "result"));
  const std::string& name = ctx.op().name;
  // Leading zeros of a sub-byte integer are not those of its byte.
  if (SubByteBits(in->dtype) != 0 && name == "stablehlo.count_leading_zeros") {
    return UnsupportedDType(name, in->dtype);
  }
  return DispatchElem(ByteDType(in->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, in->dtype);
    } else if constexpr (!Op::template kSupports<T>) {
      return UnsupportedDType(name, in->dtype);
    } else {
      using R = ResultOf<Op, T>;
      if (ByteDType(out->dtype) != DTypeOf<R>())
        return WrongResultDType(name, out->dtype, DTypeOf<R>());
      const int64_t n = out->num_elements();
      if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>)&&std::is_same_v<R, T> &&
                    kVectorMathOf<Op> >= 0) {
        const auto fn = static_cast<MathFn>(kVectorMathOf<Op>);
        if (VectorFnOf<T> vf = FindVectorMath<T>(fn)) {
          compiler::MapCode code = MapCodeOf<Op>(in->dtype, out->dtype);
          if (const void* reg = VectorMathRegister(fn, std::is_same_v<T, double>)) {
            code = {compiler::MapOp::kVectorCall, in->dtype, out->dtype, reg};
          }
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {static_cast<int>(sizeof(T))},
                                .input_order = {},
                                .chunk = ChunkOf<Op>(),
                                .range = &VectorRange<T>,
                                .state = std::make_shared<const VectorFnOf<T>>(vf),
                                .code = code});
        }
      }
      return MakeMapKernel({.name = name,
                            .out_type = *out,
                            .in_elements = {n},
                            .in_widths = {static_cast<int>(sizeof(T))},
                            .input_order = {},
                            .chunk = ChunkOf<Op>(),
                            .range = &UnaryRange<R, T, Op>,
                            .state = std::make_shared<const Op>(op),
                            .sign_extend_bits = SignExtendBits(in->dtype, name),
                            .code = MapCodeOf<Op>(in->dtype, out->dtype)});
    }
  });
}

template <typename Op>
StatusOr<Kernel> LowerUnary(LowerContext& ctx) {
  return LowerUnaryWith(ctx, Op{});
}

// `swap` evaluates op(rhs, lhs) (compare GT/GE as LT/LE).
template <typename Op>
StatusOr<Kernel> LowerBinaryWith(LowerContext& ctx, Op op, bool swap = false) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, 2, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* lhs, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* rhs, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *lhs, "lhs", *rhs, "rhs"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *lhs, "lhs", *rhs, "rhs"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *lhs, "lhs", *out, "result"));
  const std::string& name = ctx.op().name;
  return DispatchElem(ByteDType(lhs->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, lhs->dtype);
    } else if constexpr (!Op::template kSupports<T>) {
      return UnsupportedDType(name, lhs->dtype);
    } else {
      using R = ResultOf<Op, T>;
      if (ByteDType(out->dtype) != DTypeOf<R>())
        return WrongResultDType(name, out->dtype, DTypeOf<R>());
      const int64_t n = out->num_elements();
      const int w = static_cast<int>(sizeof(T));
      return MakeMapKernel({.name = name,
                            .out_type = *out,
                            .in_elements = {n, n},
                            .in_widths = {w, w},
                            .input_order = swap ? std::vector<int>{1, 0} : std::vector<int>{0, 1},
                            .chunk = ChunkOf<Op>(),
                            .range = &BinaryRange<R, T, Op>,
                            .state = std::make_shared<const Op>(op),
                            .sign_extend_bits = SignExtendBits(lhs->dtype, name),
                            .code = MapCodeOf<Op>(lhs->dtype, out->dtype)});
    }
  });
}

template <typename Op>
StatusOr<Kernel> LowerBinary(LowerContext& ctx) {
  return LowerBinaryWith(ctx, Op{});
}

// ---- compare ----

StatusOr<Kernel> LowerCompare(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 2, 2, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* lhs, OperandTensor(ctx, 0));
  std::optional<std::string> dir = EnumAttr(ctx, "comparison_direction");
  if (!dir) return InvalidArgument(name + ": missing attribute 'comparison_direction'");
  CmpDir d;
  bool swap = false;
  if (*dir == "EQ")
    d = CmpDir::kEq;
  else if (*dir == "NE")
    d = CmpDir::kNe;
  else if (*dir == "LT")
    d = CmpDir::kLt;
  else if (*dir == "LE")
    d = CmpDir::kLe;
  else if (*dir == "GT")
    d = CmpDir::kLt, swap = true;
  else if (*dir == "GE")
    d = CmpDir::kLe, swap = true;
  else
    return InvalidArgument(name + ": unknown comparison_direction '" + *dir + "'");

  // compare_type must match the element type's category (spec constraint C3); absent or NOTYPE
  // means the default for the category.
  const ir::DType t = lhs->dtype;
  std::string ct = EnumAttr(ctx, "compare_type").value_or("NOTYPE");
  bool total = false;
  bool ok;
  if (ir::IsFloat(t)) {
    total = ct == "TOTALORDER";
    ok = total || ct == "FLOAT" || ct == "NOTYPE";
  } else if (ir::IsComplex(t)) {
    ok = ct == "FLOAT" || ct == "NOTYPE";
  } else if (ir::IsSignedInt(t)) {
    ok = ct == "SIGNED" || ct == "NOTYPE";
  } else {
    ok = ct == "UNSIGNED" || ct == "NOTYPE";
  }
  if (!ok) {
    return InvalidArgument(name + ": compare_type " + ct + " does not apply to element type " +
                           std::string(ir::DTypeName(t)));
  }
  auto lower = [&]<CmpDir kDir>() {
    return total ? LowerBinaryWith(ctx, CompareOp<kDir, true>{}, swap)
                 : LowerBinaryWith(ctx, CompareOp<kDir, false>{}, swap);
  };
  switch (d) {
    case CmpDir::kEq:
      return lower.template operator()<CmpDir::kEq>();
    case CmpDir::kNe:
      return lower.template operator()<CmpDir::kNe>();
    case CmpDir::kLt:
      return lower.template operator()<CmpDir::kLt>();
    case CmpDir::kLe:
      return lower.template operator()<CmpDir::kLe>();
  }
  return Internal(name + ": unreachable comparison direction");
}

// ---- select ----

// Copies the input `pick` chooses at run time (select with a scalar predicate).
Kernel MakeForwardKernel(std::string name, std::vector<int64_t> in_elements,
                         std::vector<int> in_widths,
                         std::function<size_t(std::span<const View>)> pick) {
  return [name = std::move(name), in_elements = std::move(in_elements),
          in_widths = std::move(in_widths), pick = std::move(pick)](
             ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
    for (size_t i = 0; i < in_elements.size(); ++i) {
      KILN_RETURN_IF_ERROR(CheckInput(name, in, i, in_elements[i], in_widths[i]));
    }
    const View& chosen = in[pick(in)];
    if (out[0].byte_size() > 0) std::memcpy(out[0].data(), chosen.data(), out[0].byte_size());
    return Status::Ok();
  };
}

// pred ? on_true : on_false, with pred either a scalar or the result's shape. A scalar pred just
// forwards one operand (arrays are immutable, so sharing storage is safe).
StatusOr<Kernel> LowerSelect(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 3, 3, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* pred, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* on_true, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* on_false, OperandTensor(ctx, 2));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  if (pred->dtype != ir::DType::kPred)
    return InvalidArgument(name + ": pred must have element type i1");
  if (*on_true != *on_false || on_true->dtype != out->dtype || on_true->dims != out->dims) {
    return InvalidArgument(name + ": on_true " + TypeString(*on_true) + ", on_false " +
                           TypeString(*on_false) + " and result " + TypeString(*out) +
                           " must have the same type");
  }
  const bool scalar_pred = pred->rank() == 0;
  if (!scalar_pred && pred->dims != out->dims) {
    return InvalidArgument(name + ": pred shape " + DimsToString(pred->dims) +
                           " must be a scalar or match the result shape " +
                           DimsToString(out->dims));
  }
  const int width = ir::DTypeByteSize(out->dtype);
  if (!IsSupportedWidth(width)) return UnsupportedDType(name, out->dtype);
  const int64_t n = out->num_elements();
  if (scalar_pred) {
    return MakeForwardKernel(name, {1, n, n}, {1, width, width},
                             [](std::span<const View> in) -> size_t {
                               return *in[0].data_as<const uint8_t>() != 0 ? 1 : 2;
                             });
  }
  RangeFn range = nullptr;
  DispatchByWidth(width, [&]<typename W>() { range = &SelectRange<W>; });
  return MakeMapKernel({.name = name,
                        .out_type = *out,
                        .in_elements = {n, n, n},
                        .in_widths = {1, width, width},
                        .input_order = {},
                        .chunk = kCheapChunk,
                        .range = range,
                        .state = nullptr,
                        .code = {compiler::MapOp::kSelect, out->dtype, out->dtype}});
}

// ---- clamp ----

StatusOr<Kernel> LowerClamp(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 3, 3, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* lo, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* x, OperandTensor(ctx, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* hi, OperandTensor(ctx, 2));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *lo, "min", *x, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *hi, "max", *x, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameDType(ctx, *out, "result", *x, "operand"));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *out, "result", *x, "operand"));
  const bool scalar_lo = lo->rank() == 0, scalar_hi = hi->rank() == 0;
  if (!scalar_lo) KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *lo, "min", *x, "operand"));
  if (!scalar_hi) KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *hi, "max", *x, "operand"));
  const int64_t n = out->num_elements();
  return DispatchElem(ByteDType(x->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, x->dtype);
    } else if constexpr (!MaxOp::kSupports<T>) {
      return UnsupportedDType(name, x->dtype);
    } else {
      RangeFn range =
          scalar_lo ? (scalar_hi ? &ClampRange<T, true, true> : &ClampRange<T, true, false>)
                    : (scalar_hi ? &ClampRange<T, false, true> : &ClampRange<T, false, false>);
      const int w = static_cast<int>(sizeof(T));
      return MakeMapKernel({.name = name,
                            .out_type = *out,
                            .in_elements = {scalar_lo ? 1 : n, n, scalar_hi ? 1 : n},
                            .in_widths = {w, w, w},
                            .input_order = {},
                            .chunk = kCheapChunk,
                            .range = range,
                            .state = nullptr,
                            .sign_extend_bits = SignExtendBits(x->dtype, name)});
    }
  });
}

// ---- convert ----

// To or from a narrow float type's stored codes (kernels/narrow_float.h). Programs compute those
// types in f32 (compiler/narrow_float.h), so one side is f32 or the source of a conversion.
StatusOr<Kernel> LowerNarrowConvert(const std::string& name, const ir::Type& in,
                                    const ir::Type& out) {
  if (in.dtype == out.dtype) return Kernel::Alias(0);
  const NarrowFormat* from = NarrowFormatOf(in.dtype);
  const NarrowFormat* to = NarrowFormatOf(out.dtype);
  if (from != nullptr && to != nullptr) {
    return Unimplemented(name + ": converting " + std::string(ir::DTypeName(in.dtype)) + " to " +
                         std::string(ir::DTypeName(out.dtype)) +
                         " directly (Kiln goes through f32)");
  }
  const RangeFn range =
      from != nullptr ? NarrowDecodeRange(out.dtype) : NarrowEncodeRange(in.dtype);
  if (range == nullptr) return UnsupportedDType(name, from != nullptr ? out.dtype : in.dtype);
  const NarrowFormat* format = from != nullptr ? from : to;
  return MakeMapKernel({.name = name,
                        .out_type = out,
                        .in_elements = {out.num_elements()},
                        .in_widths = {ir::DTypeByteSize(in.dtype)},
                        .input_order = {},
                        .chunk = kCheapChunk,
                        .range = range,
                        // Formats are static: the state does not own them.
                        .state = std::shared_ptr<const void>(std::shared_ptr<const void>(), format),
                        .saturate = false,
                        .sign_extend_bits = 0});
}

StatusOr<Kernel> LowerConvert(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameShape(ctx, *in, "operand", *out, "result"));
  if (NarrowFormatOf(in->dtype) != nullptr || NarrowFormatOf(out->dtype) != nullptr) {
    return LowerNarrowConvert(name, *in, *out);
  }
  const int64_t n = out->num_elements();
  // Sub-byte integers convert in their byte types; a result out of a sub-byte type's range wraps
  // (from an integer) or saturates (from floating point), as XLA's conversions do.
  const bool saturate = ir::IsFloat(in->dtype) || ir::IsComplex(in->dtype);
  const int in_bits = SubByteBits(in->dtype), out_bits = SubByteBits(out->dtype);
  return DispatchElem(ByteDType(in->dtype), [&]<typename From>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<From>) {
      return UnsupportedDType(name, in->dtype);
    } else {
      const int w = static_cast<int>(sizeof(From));
      // Same stored bytes (an unsigned sub-byte integer widened to a wider unsigned type of one
      // byte): the result is the operand.
      if (in->dtype == out->dtype ||
          (ByteDType(in->dtype) == ir::DType::kU8 && ByteDType(out->dtype) == ir::DType::kU8 &&
           in_bits != 0 && (out_bits == 0 || out_bits >= in_bits))) {
        (void)n;
        (void)w;
        return Kernel::Alias(0);
      }
      return DispatchElem(ByteDType(out->dtype), [&]<typename To>() -> StatusOr<Kernel> {
        if constexpr (std::is_void_v<To>) {
          return UnsupportedDType(name, out->dtype);
        } else if constexpr (std::is_same_v<To, From>) {
          // Between a byte type and a sub-byte type of its signedness, or two such sub-byte types.
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {w},
                                .input_order = {},
                                .chunk = kCheapChunk,
                                .range = &CopyRange<To>,
                                .state = nullptr,
                                .saturate = saturate,
                                .sign_extend_bits = SignExtendBits(in->dtype, name),
                                .code = {compiler::MapOp::kCopy, in->dtype, out->dtype}});
        } else {
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {w},
                                .input_order = {},
                                .chunk = kCheapChunk,
                                .range = &ConvertRange<To, From>,
                                .state = nullptr,
                                .saturate = saturate,
                                .sign_extend_bits = SignExtendBits(in->dtype, name),
                                .code = {compiler::MapOp::kConvert, in->dtype, out->dtype}});
        }
      });
    }
  });
}

// ---- bitcast_convert ----

// Packs runs of narrow elements into wider ones or splits wide ones into runs of narrow ones,
// element 0 in the lowest bits (as XLA:CPU does), when either side is a sub-byte type.
Kernel MakeBitcastRepack(std::string name, int in_bits, int out_bits, int64_t in_elements,
                         int in_bytes, int out_bytes) {
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(name, out, 1));
    const auto* x = static_cast<const uint8_t*>(in[0].data());
    auto* y = static_cast<uint8_t*>(out[0].data());
    auto load = [&](int64_t i) {
      uint64_t v = 0;
      std::memcpy(&v, x + i * in_bytes, static_cast<size_t>(in_bytes));  // little-endian
      return in_bits < 64 ? v & ((uint64_t{1} << in_bits) - 1) : v;
    };
    auto store = [&](int64_t i, uint64_t v) {
      if (out_bits < 64) v &= (uint64_t{1} << out_bits) - 1;
      std::memcpy(y + i * out_bytes, &v, static_cast<size_t>(out_bytes));
    };
    if (in_bits > out_bits) {
      const int k = in_bits / out_bits;
      for (int64_t i = 0; i < in_elements; ++i) {
        const uint64_t v = load(i);
        for (int j = 0; j < k; ++j) store(i * k + j, v >> (j * out_bits));
      }
    } else {
      const int k = out_bits / in_bits;
      for (int64_t i = 0; i < in_elements / k; ++i) {
        uint64_t v = 0;
        for (int j = 0; j < k; ++j) v |= load(i * k + j) << (j * in_bits);
        store(i, v);
      }
    }
    return Status::Ok();
  });
}

// Reinterprets the bits: the result aliases the operand's storage (little-endian, as the spec's
// example shows) when both are whole bytes per element; sub-byte types are repacked.
StatusOr<Kernel> LowerBitcastConvert(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  const int in_w = ir::DTypeByteSize(in->dtype), out_w = ir::DTypeByteSize(out->dtype);
  if (in_w == 0 || in->dtype == ir::DType::kToken) return UnsupportedDType(name, in->dtype);
  if (out_w == 0 || out->dtype == ir::DType::kToken) return UnsupportedDType(name, out->dtype);
  if (ir::IsComplex(in->dtype) != ir::IsComplex(out->dtype)) {
    return InvalidArgument(name + ": cannot bitcast between complex and non-complex types");
  }
  const int in_bits = ir::DTypeBits(in->dtype), out_bits = ir::DTypeBits(out->dtype);
  if (in_bits == 6 || out_bits == 6)
    return UnsupportedDType(name, in_bits == 6 ? in->dtype : out->dtype);
  bool shape_ok;
  if (in_bits == out_bits) {
    shape_ok = in->dims == out->dims;
  } else if (out_bits < in_bits) {
    // Each operand element becomes a trailing run of in_bits/out_bits result elements.
    shape_ok = out->rank() == in->rank() + 1 &&
               std::equal(in->dims.begin(), in->dims.end(), out->dims.begin()) &&
               out->dims.back() * out_bits == in_bits;
  } else {
    shape_ok = in->rank() == out->rank() + 1 &&
               std::equal(out->dims.begin(), out->dims.end(), in->dims.begin()) &&
               in->dims.back() * in_bits == out_bits;
  }
  if (!shape_ok) {
    return InvalidArgument(name + ": cannot bitcast " + TypeString(*in) + " to " +
                           TypeString(*out));
  }
  // Same bits in the same bytes (sub-byte types of one width share the stored form): the result
  // views the operand.
  if (in_bits == out_bits || (in_bits % 8 == 0 && out_bits % 8 == 0)) return Kernel::Alias(0);
  return MakeBitcastRepack(name, in_bits, out_bits, in->num_elements(), in_w, out_w);
}

// ---- reduce_precision ----

StatusOr<Kernel> LowerReducePrecision(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_ASSIGN_OR_RETURN(int64_t exponent_bits, IntAttr(ctx, "exponent_bits"));
  KILN_ASSIGN_OR_RETURN(int64_t mantissa_bits, IntAttr(ctx, "mantissa_bits"));
  if (exponent_bits < 1 || exponent_bits > 64 || mantissa_bits < 0 || mantissa_bits > 64) {
    return InvalidArgument(name + ": exponent_bits must be >= 1 and mantissa_bits >= 0");
  }
  if (ctx.op().operands.empty()) return InvalidArgument(name + ": missing operand");
  // f16/bf16 are reduced in float. A target at least as wide as the operand's own format must be
  // the identity, but in float it would still flush the operand's subnormals (below the reduced
  // format's smallest normal): so such fields are widened to "never reduce" (float/double have
  // at most 11 exponent and 52 mantissa bits).
  int native_exp = 11, native_mant = 52;
  switch (ctx.operand_type(0).dtype) {
    case ir::DType::kF16:
      native_exp = 5, native_mant = 10;
      break;
    case ir::DType::kBF16:
      native_exp = 8, native_mant = 7;
      break;
    case ir::DType::kF32:
      native_exp = 8, native_mant = 23;
      break;
    default:
      break;
  }
  ReducePrecisionOp op;
  op.exponent_bits = exponent_bits >= native_exp ? 11 : static_cast<int>(exponent_bits);
  op.mantissa_bits = mantissa_bits >= native_mant ? 52 : static_cast<int>(mantissa_bits);
  return LowerUnaryWith(ctx, op);
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::compiler {

void RegisterElementwiseOps(OpRegistry& registry) {
  using namespace kernels;  // NOLINT
  constexpr std::string_view kFamily = "elementwise";
  // Unary.
  registry.Add({"stablehlo.abs", kFamily, &LowerUnary<AbsOp>});
  registry.Add({"stablehlo.negate", kFamily, &LowerUnary<NegateOp>});
  registry.Add({"stablehlo.sign", kFamily, &LowerUnary<SignOp>});
  registry.Add({"stablehlo.floor", kFamily, &LowerUnary<FloorOp>});
  registry.Add({"stablehlo.ceil", kFamily, &LowerUnary<CeilOp>});
  registry.Add({"stablehlo.round_nearest_afz", kFamily, &LowerUnary<RoundAfzOp>});
  registry.Add({"stablehlo.round_nearest_even", kFamily, &LowerUnary<RoundEvenOp>});
  registry.Add({"stablehlo.sqrt", kFamily, &LowerUnary<SqrtOp>});
  registry.Add({"stablehlo.rsqrt", kFamily, &LowerUnary<RsqrtOp>});
  registry.Add({"stablehlo.cbrt", kFamily, &LowerUnary<CbrtOp>});
  registry.Add({"stablehlo.exponential", kFamily, &LowerUnary<ExpOp>});
  registry.Add({"stablehlo.exponential_minus_one", kFamily, &LowerUnary<Expm1Op>});
  registry.Add({"stablehlo.log", kFamily, &LowerUnary<LogOp>});
  registry.Add({"stablehlo.log_plus_one", kFamily, &LowerUnary<Log1pOp>});
  registry.Add({"stablehlo.logistic", kFamily, &LowerUnary<LogisticOp>});
  registry.Add({"stablehlo.sine", kFamily, &LowerUnary<SineOp>});
  registry.Add({"stablehlo.cosine", kFamily, &LowerUnary<CosineOp>});
  registry.Add({"stablehlo.tan", kFamily, &LowerUnary<TanOp>});
  registry.Add({"stablehlo.tanh", kFamily, &LowerUnary<TanhOp>});
  registry.Add({"stablehlo.not", kFamily, &LowerUnary<NotOp>});
  registry.Add({"stablehlo.is_finite", kFamily, &LowerUnary<IsFiniteOp>});
  registry.Add({"stablehlo.popcnt", kFamily, &LowerUnary<PopcntOp>});
  registry.Add({"stablehlo.count_leading_zeros", kFamily, &LowerUnary<ClzOp>});
  registry.Add({"stablehlo.real", kFamily, &LowerUnary<RealOp>});
  registry.Add({"stablehlo.imag", kFamily, &LowerUnary<ImagOp>});
  registry.Add({"stablehlo.reduce_precision", kFamily, &LowerReducePrecision});
  // Binary.
  registry.Add({"stablehlo.add", kFamily, &LowerBinary<AddOp>});
  registry.Add({"stablehlo.subtract", kFamily, &LowerBinary<SubtractOp>});
  registry.Add({"stablehlo.multiply", kFamily, &LowerBinary<MultiplyOp>});
  registry.Add({"stablehlo.divide", kFamily, &LowerBinary<DivideOp>});
  registry.Add({"stablehlo.remainder", kFamily, &LowerBinary<RemainderOp>});
  registry.Add({"stablehlo.power", kFamily, &LowerBinary<PowerOp>});
  registry.Add({"stablehlo.maximum", kFamily, &LowerBinary<MaxOp>});
  registry.Add({"stablehlo.minimum", kFamily, &LowerBinary<MinOp>});
  registry.Add({"stablehlo.atan2", kFamily, &LowerBinary<Atan2Op>});
  registry.Add({"stablehlo.and", kFamily, &LowerBinary<AndOp>});
  registry.Add({"stablehlo.or", kFamily, &LowerBinary<OrOp>});
  registry.Add({"stablehlo.xor", kFamily, &LowerBinary<XorOp>});
  registry.Add({"stablehlo.shift_left", kFamily, &LowerBinary<ShiftLeftOp>});
  registry.Add({"stablehlo.shift_right_arithmetic", kFamily, &LowerBinary<ShiftRightArithmeticOp>});
  registry.Add({"stablehlo.shift_right_logical", kFamily, &LowerBinary<ShiftRightLogicalOp>});
  registry.Add({"stablehlo.complex", kFamily, &LowerBinary<ComplexOp>});
  registry.Add({"stablehlo.compare", kFamily, &LowerCompare});
  // Other.
  registry.Add({"stablehlo.select", kFamily, &LowerSelect});
  registry.Add({"stablehlo.clamp", kFamily, &LowerClamp});
  registry.Add({"stablehlo.convert", kFamily, &LowerConvert});
  registry.Add({"stablehlo.bitcast_convert", kFamily, &LowerBitcastConvert});
}

}  // namespace kiln::compiler
