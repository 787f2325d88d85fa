// Scalar semantics of the elementwise ops, separated from the loops that apply them so they can be
// unit-tested on single values and reused (clamp = min(max(...)), select, convert, ...).
//
// Vocabulary:
//  * storage type: how an element sits in memory (float, int8_t, f16_t, PredByte, complex<float>).
//  * compute type: what the arithmetic is done in (f16/bf16 -> float, pred -> bool, else itself).
//    Elem<T>::Load / Elem<T>::Store convert between the two; they are identities for native types,
//    so f32/f64/int loops stay plain loops that the compiler vectorises.
//  * an op functor: operator() on compute types, plus `kSupports<T>` over storage types saying
//  which
//    element types the op accepts (StableHLO's per-op type constraints), plus optionally
//    `Result<T>` when the result element type differs from the operand's (compare, is_finite, ...)
//    and `kChunk` (elements per parallel task) for expensive ops.
//
// Integer semantics follow XLA where StableHLO leaves them open: wrap-around arithmetic, x/0 = -1
// (all bits set), x%0 = x, INT_MIN/-1 = INT_MIN, INT_MIN%-1 = 0, shifts by >= the bit width give 0
// (or the sign fill for arithmetic right shifts), float->int conversion saturates with NaN -> 0.
#pragma once

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/dtype_dispatch.h"
#include "kernels/dispatch.h"
#include "kernels/float16.h"

namespace kiln::kernels::ew {

using ir::PredByte;  // i1 storage (ir/dtype_dispatch.h)

// ---- element categories -------------------------------------------------------------------------

template <typename T>
inline constexpr bool kIsHalf = std::is_same_v<T, f16_t> || std::is_same_v<T, bf16_t>;
template <typename T>
inline constexpr bool kIsFloat =
    std::is_same_v<T, float> || std::is_same_v<T, double> || kIsHalf<T>;
template <typename T>
inline constexpr bool kIsSigned = std::is_integral_v<T>&& std::is_signed_v<T>;
template <typename T>
inline constexpr bool kIsUnsigned =
    std::is_integral_v<T>&& std::is_unsigned_v<T> && !std::is_same_v<T, bool>;
template <typename T>
inline constexpr bool kIsInt = kIsSigned<T> || kIsUnsigned<T>;
template <typename T>
inline constexpr bool kIsPred = std::is_same_v<T, PredByte>;
template <typename T>
inline constexpr bool kIsComplex =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;
template <typename T>
inline constexpr bool kIsReal = kIsFloat<T> || kIsInt<T>;

// ---- storage <-> compute ---------------------------------------------------------------------

template <typename T>
struct Elem {
  using Compute = T;
  static Compute Load(T x) { return x; }
  static T Store(Compute x) { return x; }
};
template <>
struct Elem<f16_t> {
  using Compute = float;
  static float Load(f16_t x) { return HalfBitsToFloat(x.bits); }
  static f16_t Store(float x) { return f16_t{FloatToHalfBits(x)}; }
};
template <>
struct Elem<bf16_t> {
  using Compute = float;
  static float Load(bf16_t x) { return Bf16BitsToFloat(x.bits); }
  static bf16_t Store(float x) { return bf16_t{FloatToBf16Bits(x)}; }
};
template <>
struct Elem<PredByte> {
  using Compute = bool;
  static bool Load(PredByte x) { return x.v != 0; }
  static PredByte Store(bool x) { return PredByte{static_cast<uint8_t>(x)}; }
};

template <typename T>
using ComputeOf = typename Elem<T>::Compute;

// The DType of a storage type (used to check result types at lowering).
using ir::DTypeOf;

// Calls fn.template operator()<T>() with the storage type of `t`, or fn.template operator()<void>()
// for element types the elementwise kernels do not model (sub-byte ints, fp8, tokens).
template <typename Fn>
decltype(auto) DispatchElem(ir::DType t, Fn&& fn) {
  return ir::VisitDType<ir::kStored>(
      t, [&](auto tag) { return fn.template operator()<ir::TagType<decltype(tag)>>(); },
      [&] { return fn.template operator()<void>(); });
}

// ---- sub-byte integers -----------------------------------------------------------------------
//
// int4/uint4 and int2/uint2 are stored one per byte: the value's low bits, the upper bits zero
// (as ml_dtypes and JAX hand them over; -8 as int4 is the byte 0x08). Elementwise kernels compute
// them in the byte type of their signedness: inputs are sign-extended first where the op reads
// them as numbers (SignExtendBits), and results are brought back to the stored form, wrapping as
// integer arithmetic and integer conversions do, or saturating as conversions from floating point
// do (NormalizeSubByte).

// The width of int4/uint4 and int2/uint2 (the 1-bit integers are not computed), else 0.
inline int SubByteBits(ir::DType t) {
  const int bits = ir::DTypeBits(t);
  return ir::IsInteger(t) && (bits == 2 || bits == 4) ? bits : 0;
}

// The type elementwise kernels compute `t` in.
inline ir::DType ByteDType(ir::DType t) {
  if (SubByteBits(t) == 0) return t;
  return ir::IsSignedInt(t) ? ir::DType::kS8 : ir::DType::kU8;
}

// How many low bits of each input byte `op` must see sign-extended when its operands are of type
// `t` (0: the stored bytes as they are). Signed values are sign-extended; a logical shift and a
// population count want the bits as stored (the spec's popcnt counts the element's own bits;
// XLA:CPU counts those of the sign-extended byte for int4, 5 for -8, but not for int2); an
// arithmetic shift reads even unsigned operands as their bit width's two's complement.
inline int SignExtendBits(ir::DType t, std::string_view op) {
  const int bits = SubByteBits(t);
  if (bits == 0 || op == "stablehlo.shift_right_logical" || op == "stablehlo.popcnt") return 0;
  if (ByteDType(t) == ir::DType::kS8 || op == "stablehlo.shift_right_arithmetic") return bits;
  return 0;
}

inline int8_t SignExtend(uint8_t v, int bits) {
  const int shift = 8 - bits;
  return static_cast<int8_t>(static_cast<int8_t>(static_cast<uint8_t>(v << shift)) >> shift);
}

// Brings n results of the sub-byte type `t`, computed in its byte type, to its stored form.
inline void NormalizeSubByte(ir::DType t, bool saturate, void* data, int64_t n) {
  const int bits = SubByteBits(t);
  const auto mask = static_cast<uint8_t>((1 << bits) - 1);
  auto* y = static_cast<uint8_t*>(data);
  if (saturate) {
    const bool is_signed = ByteDType(t) == ir::DType::kS8;
    const int lo = is_signed ? -(1 << (bits - 1)) : 0;
    const int hi = is_signed ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    for (int64_t i = 0; i < n; ++i) {
      const int v =
          is_signed ? static_cast<int>(static_cast<int8_t>(y[i])) : static_cast<int>(y[i]);
      y[i] = static_cast<uint8_t>(static_cast<uint8_t>(v < lo ? lo : (v > hi ? hi : v)) & mask);
    }
    return;
  }
  for (int64_t i = 0; i < n; ++i) y[i] &= mask;
}

// ---- integer helpers -------------------------------------------------------------------------

// Arithmetic type for wrap-around integer math: unsigned, and at least 32 bits so that operands
// promoted from 8/16-bit types can never overflow a signed int (uint16*uint16 would, as int).
template <typename T>
using WrapT = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

template <typename T>
inline T WrapAdd(T a, T b) {
  return static_cast<T>(static_cast<WrapT<T>>(a) + static_cast<WrapT<T>>(b));
}
template <typename T>
inline T WrapSub(T a, T b) {
  return static_cast<T>(static_cast<WrapT<T>>(a) - static_cast<WrapT<T>>(b));
}
template <typename T>
inline T WrapMul(T a, T b) {
  return static_cast<T>(static_cast<WrapT<T>>(a) * static_cast<WrapT<T>>(b));
}
template <typename T>
inline T WrapNeg(T a) {
  return static_cast<T>(WrapT<T>(0) - static_cast<WrapT<T>>(a));
}

template <typename T>
inline T IntDiv(T a, T b) {
  if (b == 0) return static_cast<T>(-1);  // all bits set, for signed and unsigned alike
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  }
  return static_cast<T>(a / b);
}

template <typename T>
inline T IntRem(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;  // also avoids the INT_MIN % -1 trap
  }
  return static_cast<T>(a % b);
}

template <typename T>
inline T IntPow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      // Only +-1 have integer reciprocals; every other base truncates to 0.
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? T(-1) : T(1);
      return 0;
    }
  }
  using W = WrapT<T>;
  W result = 1, b = static_cast<W>(base);
  auto e = static_cast<std::make_unsigned_t<T>>(exp);
  while (e != 0) {
    if (e & 1) result = static_cast<W>(result * b);
    b = static_cast<W>(b * b);
    e >>= 1;
  }
  return static_cast<T>(result);
}

// Shift amounts are read as unsigned, so negative amounts count as "too large", as in XLA.
template <typename T>
inline T ShiftLeft(T a, T amount) {
  using U = std::make_unsigned_t<T>;
  const U n = static_cast<U>(amount);
  if (n >= sizeof(T) * 8) return 0;
  return static_cast<T>(static_cast<WrapT<T>>(a) << n);
}
template <typename T>
inline T ShiftRightLogical(T a, T amount) {
  using U = std::make_unsigned_t<T>;
  const U n = static_cast<U>(amount);
  if (n >= sizeof(T) * 8) return 0;
  return static_cast<T>(static_cast<U>(a) >> n);
}
template <typename T>
inline T ShiftRightArithmetic(T a, T amount) {
  using U = std::make_unsigned_t<T>;
  using S = std::make_signed_t<T>;
  U n = static_cast<U>(amount);
  if (n >= sizeof(T) * 8) n = sizeof(T) * 8 - 1;  // shifting by width-1 is the sign fill
  // Arithmetic shift on the signed view (well defined since C++20), also for unsigned T.
  return static_cast<T>(static_cast<S>(a) >> n);
}

// ---- floating-point helpers ----------------------------------------------------------------

// IEEE 754-2019 maximum/minimum: NaN if either input is NaN, and -0 < +0.
template <typename C>
inline C FloatMax(C a, C b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename C>
inline C FloatMin(C a, C b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

// Maps a float to a signed integer whose order is IEEE totalOrder:
// -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN. Negative floats are sign-magnitude, so their
// magnitude bits are flipped to make larger magnitudes compare smaller.
inline int32_t TotalOrderKey(float x) {
  int32_t i = std::bit_cast<int32_t>(x);
  return i ^ static_cast<int32_t>(static_cast<uint32_t>(i >> 31) >> 1);
}
inline int64_t TotalOrderKey(double x) {
  int64_t i = std::bit_cast<int64_t>(x);
  return i ^ static_cast<int64_t>(static_cast<uint64_t>(i >> 63) >> 1);
}

// ---- conversion -------------------------------------------------------------------------------

// Float -> integer: truncate toward zero, saturate out-of-range values, NaN -> 0 (XLA semantics).
template <typename I, typename F>
inline I SaturatingFloatToInt(F x) {
  if (x != x) return 0;
  // 2^digits is exactly representable in F and is one past the largest value of I.
  const F upper = std::ldexp(F(1), std::numeric_limits<I>::digits);
  if (x >= upper) return std::numeric_limits<I>::max();
  if constexpr (std::is_signed_v<I>) {
    if (x <= -upper) return std::numeric_limits<I>::min();
  } else {
    if (x <= F(-1)) return 0;
  }
  return static_cast<I>(x);
}

// Converts one element between storage types with StableHLO/XLA `convert` semantics.
template <typename To, typename From>
inline To ConvertElement(From x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (kIsComplex<From> && !kIsComplex<To>) {
    // complex -> anything else: the imaginary part is dropped (to pred: any non-zero part counts).
    if constexpr (kIsPred<To>)
      return PredByte{static_cast<uint8_t>(x != From(0))};
    else
      return ConvertElement<To>(x.real());
  } else if constexpr (kIsPred<To>) {
    return PredByte{static_cast<uint8_t>(Elem<From>::Load(x) != 0)};
  } else if constexpr (kIsPred<From>) {
    // false -> 0, true -> 1 in every type.
    return ConvertElement<To>(static_cast<uint8_t>(x.v != 0));
  } else if constexpr (kIsComplex<To>) {
    using P = typename To::value_type;
    if constexpr (kIsComplex<From>)
      return To(static_cast<P>(x.real()), static_cast<P>(x.imag()));
    else
      return To(ConvertElement<P>(x), P(0));
  } else if constexpr (kIsHalf<To>) {
    // Go through double + round-to-odd so 32/64-bit sources round once, correctly (ints up to
    // 2^53 are exact in double).
    double d;
    if constexpr (kIsHalf<From>)
      d = Elem<From>::Load(x);
    else
      d = static_cast<double>(x);
    if constexpr (std::is_same_v<To, f16_t>)
      return f16_t{DoubleToHalfBits(d)};
    else
      return bf16_t{DoubleToBf16Bits(d)};
  } else if constexpr (kIsHalf<From>) {
    return ConvertElement<To>(Elem<From>::Load(x));  // f16/bf16 -> float is exact
  } else if constexpr (kIsInt<To> && (std::is_floating_point_v<From>)) {
    return SaturatingFloatToInt<To>(x);
  } else {
    // int <-> int wraps modulo 2^N (defined since C++20); int -> float and float <-> float round
    // to nearest.
    return static_cast<To>(x);
  }
}

// ---- reduce_precision ------------------------------------------------------------------------

// Rounds x to a float format with `exponent_bits`/`mantissa_bits` (ties to even), overflowing to
// infinity and flushing values below its smallest normal to zero, and returns it in x's format.
template <typename F>
inline F ReducePrecision(F x, int exponent_bits, int mantissa_bits) {
  using U = std::conditional_t<sizeof(F) == 4, uint32_t, uint64_t>;
  constexpr int kMant = std::numeric_limits<F>::digits - 1;  // 23 or 52
  constexpr int kExp = static_cast<int>(sizeof(F) * 8) - 1 - kMant;
  if (x != x) return x;
  U bits = std::bit_cast<U>(x);
  if (mantissa_bits < kMant) {
    const int drop = kMant - mantissa_bits;
    const U last_kept = U(1) << drop;
    const U half_minus_one = (last_kept >> 1) - 1;
    const U round_bias = half_minus_one + ((bits >> drop) & 1);
    bits = (bits + round_bias) & ~(last_kept - 1);
  }
  if (exponent_bits < kExp) {
    const U sign = bits & (U(1) << (sizeof(F) * 8 - 1));
    const U exp_mask = ((U(1) << kExp) - 1) << kMant;
    const int64_t bias = (int64_t(1) << (kExp - 1)) - 1;
    const int64_t reduced_bias = (int64_t(1) << (exponent_bits - 1)) - 1;
    const U max_exp = static_cast<U>(bias + reduced_bias) << kMant;
    const U min_exp = static_cast<U>(bias - reduced_bias) << kMant;
    const U e = bits & exp_mask;
    if (e > max_exp)
      bits = sign | exp_mask;  // overflow: signed infinity
    else if (e <= min_exp)
      bits = sign;  // underflow: signed zero
  }
  return std::bit_cast<F>(bits);
}

}  // namespace kiln::kernels::ew
