// Narrow floating-point encodings (kernels/narrow_float.h).
#include "kernels/narrow_float.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/elementwise_ops.h"

namespace kiln::kernels {
namespace {

using Specials = NarrowFormat::Specials;

int MaxExponentField(const NarrowFormat& f) {
  const int all_ones = (1 << f.exponent_bits) - 1;
  return f.specials == Specials::kIeee ? all_ones - 1 : all_ones;
}

int MaxMantissaField(const NarrowFormat& f) {
  const int all_ones = (1 << f.mantissa_bits) - 1;
  return f.specials == Specials::kFn ? all_ones - 1 : all_ones;
}

int SignBit(const NarrowFormat& f) { return 1 << (f.exponent_bits + f.mantissa_bits); }

double MaxFinite(const NarrowFormat& f) {
  const int e = MaxExponentField(f) - f.bias;
  const double mantissa = 1.0 + std::ldexp(MaxMantissaField(f), -f.mantissa_bits);
  return std::ldexp(mantissa, e);
}

// Conversions between float and double written with integer operations where f32 subnormals are
// involved, so they hold even on a thread that flushes subnormals (FTZ/DAZ), as some callers'
// threads do.
float NarrowDoubleToFloat(double v) {
  const double a = std::fabs(v);
  if (a >= 0x1p-126 || a == 0 || std::isnan(a)) return static_cast<float>(v);
  const auto mantissa = static_cast<uint32_t>(a * 0x1p149);  // exact: v is an f32 subnormal
  return std::bit_cast<float>((std::signbit(v) ? 0x80000000u : 0u) | mantissa);
}

double WidenExact(float x) {
  const auto bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7F800000u) != 0 || (bits & 0x007FFFFFu) == 0) return static_cast<double>(x);
  const double a = static_cast<double>(bits & 0x007FFFFFu) * 0x1p-149;
  return (bits & 0x80000000u) != 0 ? -a : a;
}

float DecodeCode(const NarrowFormat& f, unsigned code) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  if (f.specials == Specials::kE8M0) {
    return code == 0xFF ? nan
                        : NarrowDoubleToFloat(std::ldexp(1.0, static_cast<int>(code) - f.bias));
  }
  const unsigned width = static_cast<unsigned>(1 + f.exponent_bits + f.mantissa_bits);
  code &= (1u << width) - 1;
  const bool negative = (code & static_cast<unsigned>(SignBit(f))) != 0;
  const int exponent = static_cast<int>(code >> f.mantissa_bits) & ((1 << f.exponent_bits) - 1);
  const int mantissa = static_cast<int>(code) & ((1 << f.mantissa_bits) - 1);
  const int all_exp = (1 << f.exponent_bits) - 1, all_mant = (1 << f.mantissa_bits) - 1;
  double value;
  if (f.specials == Specials::kFnuz && code == static_cast<unsigned>(SignBit(f))) return nan;
  if (f.specials == Specials::kIeee && exponent == all_exp) {
    value = mantissa == 0 ? std::numeric_limits<double>::infinity() : nan;
  } else if (f.specials == Specials::kFn && exponent == all_exp && mantissa == all_mant) {
    value = nan;
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), 1 - f.bias - f.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<double>(mantissa + (1 << f.mantissa_bits)),
                       exponent - f.bias - f.mantissa_bits);
  }
  return NarrowDoubleToFloat(negative ? -value : value);
}

NarrowFormat Make(ir::DType t, int e, int m, int bias, Specials s) {
  NarrowFormat f{t, e, m, bias, s, {}};
  for (unsigned c = 0; c < 256; ++c) f.decoded[c] = DecodeCode(f, c);
  return f;
}

const std::array<NarrowFormat, 9>& Formats() {
  using ir::DType;
  static const std::array<NarrowFormat, 9> formats = {
      Make(DType::kF8E5M2, 5, 2, 15, Specials::kIeee),
      Make(DType::kF8E4M3, 4, 3, 7, Specials::kIeee),
      Make(DType::kF8E3M4, 3, 4, 3, Specials::kIeee),
      Make(DType::kF8E4M3FN, 4, 3, 7, Specials::kFn),
      Make(DType::kF8E4M3FNUZ, 4, 3, 8, Specials::kFnuz),
      Make(DType::kF8E5M2FNUZ, 5, 2, 16, Specials::kFnuz),
      Make(DType::kF8E4M3B11FNUZ, 4, 3, 11, Specials::kFnuz),
      Make(DType::kF8E8M0FNU, 8, 0, 127, Specials::kE8M0),
      Make(DType::kF4E2M1FN, 2, 1, 1, Specials::kNone),
  };
  return formats;
}

uint8_t NanCode(const NarrowFormat& f, bool negative) {
  switch (f.specials) {
    case Specials::kIeee:
      return static_cast<uint8_t>((negative ? SignBit(f) : 0) |
                                  (((1 << f.exponent_bits) - 1) << f.mantissa_bits) |
                                  (1 << (f.mantissa_bits - 1)));
    case Specials::kFn:
      return static_cast<uint8_t>((negative ? SignBit(f) : 0) | (SignBit(f) - 1));
    case Specials::kNone:  // XLA:CPU writes -0 for NaN
      return static_cast<uint8_t>(SignBit(f));
    case Specials::kFnuz:
      return 0x80;
    case Specials::kE8M0:
      return 0xFF;
  }
  return 0;
}

uint8_t EncodeE8M0(const NarrowFormat& f, double v, bool float_source) {
  if (!(v > 0) || std::isinf(v)) return 0xFF;  // NaN, zero, negative, inf
  const double min = std::ldexp(1.0, -f.bias);
  if (float_source && v < std::ldexp(1.0, -126)) return v > min ? 1 : 0;  // f32 subnormals
  int e;
  const double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  int exponent = e - 1;
  if (m >= 0.75) ++exponent;  // 1.5 * 2^k and above round up
  const int field = exponent + f.bias;
  if (field < 0) return 0;
  return field >= 0xFF ? 0xFF : static_cast<uint8_t>(field);
}

}  // namespace

const NarrowFormat* NarrowFormatOf(ir::DType t) {
  for (const NarrowFormat& f : Formats()) {
    if (f.dtype == t) return &f;
  }
  return nullptr;
}

uint8_t EncodeNarrow(const NarrowFormat& f, double v, bool float_source) {
  if (f.specials == Specials::kE8M0) return EncodeE8M0(f, v, float_source);
  const bool negative = std::signbit(v);
  if (std::isnan(v)) return NanCode(f, negative);
  const int sign = negative ? SignBit(f) : 0;
  const double a = std::fabs(v);
  const double max = MaxFinite(f);
  const int min_exponent = 1 - f.bias;
  double rounded = a;
  if (!std::isinf(a)) {
    // The quantum at a's binade (or the subnormal one); scaling by powers of two is exact.
    const int exponent = a == 0 ? min_exponent : std::max(std::ilogb(a), min_exponent);
    const double q = std::ldexp(a, f.mantissa_bits - exponent);
    rounded = std::ldexp(std::nearbyint(q), exponent - f.mantissa_bits);  // ties to even
  }
  if (rounded > max) {
    switch (f.specials) {
      case Specials::kIeee:
        return static_cast<uint8_t>(sign | (((1 << f.exponent_bits) - 1) << f.mantissa_bits));
      case Specials::kNone:
        rounded = max;
        break;
      default:
        return NanCode(f, negative);
    }
  }
  if (rounded == 0) return f.specials == Specials::kFnuz ? 0 : static_cast<uint8_t>(sign);
  int field, mantissa;
  const int exponent = std::ilogb(rounded);
  if (exponent < min_exponent) {
    field = 0;
    mantissa = static_cast<int>(std::ldexp(rounded, f.mantissa_bits - min_exponent));
  } else {
    field = exponent + f.bias;
    mantissa =
        static_cast<int>(std::ldexp(rounded, f.mantissa_bits - exponent)) - (1 << f.mantissa_bits);
  }
  return static_cast<uint8_t>(sign | (field << f.mantissa_bits) | mantissa);
}

namespace {

template <typename To>
void DecodeRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  const auto& f = *static_cast<const NarrowFormat*>(state);
  const auto* x = static_cast<const uint8_t*>(in[0]);
  To* y = static_cast<To*>(out);
  for (int64_t i = b; i < e; ++i) {
    if constexpr (std::is_same_v<To, double>) {
      y[i] = WidenExact(f.decoded[x[i]]);
    } else {
      y[i] = ew::ConvertElement<To>(f.decoded[x[i]]);
    }
  }
}

template <typename From>
void EncodeRange(const void* const* in, void* out, int64_t b, int64_t e, const void* state) {
  const auto& f = *static_cast<const NarrowFormat*>(state);
  const From* x = static_cast<const From*>(in[0]);
  auto* y = static_cast<uint8_t*>(out);
  for (int64_t i = b; i < e; ++i) {
    double v;
    if constexpr (ew::kIsPred<From>) {
      v = x[i].v != 0 ? 1.0 : 0.0;
    } else if constexpr (std::is_same_v<ew::ComputeOf<From>, float>) {
      v = WidenExact(ew::Elem<From>::Load(x[i]));
    } else {
      v = static_cast<double>(ew::Elem<From>::Load(x[i]));
    }
    if constexpr (ew::kIsHalf<From>) {
      // XLA:CPU narrows f16 and bf16 NaNs to float8_e5m2 as 0x7F, whatever their sign.
      if (std::isnan(v) && f.dtype == ir::DType::kF8E5M2) {
        y[i] = 0x7F;
        continue;
      }
    }
    y[i] = EncodeNarrow(f, v, std::is_same_v<ew::ComputeOf<From>, float>);
  }
}

template <typename T>
inline constexpr bool kConvertible = !std::is_void_v<T> && !ew::kIsComplex<T>;

}  // namespace

lower::RangeFn NarrowDecodeRange(ir::DType to) {
  return ew::DispatchElem(to, [&]<typename T>() -> lower::RangeFn {
    if constexpr (kConvertible<T>)
      return &DecodeRange<T>;
    else
      return nullptr;
  });
}

lower::RangeFn NarrowEncodeRange(ir::DType from) {
  return ew::DispatchElem(from, [&]<typename T>() -> lower::RangeFn {
    if constexpr (kConvertible<T>)
      return &EncodeRange<T>;
    else
      return nullptr;
  });
}

}  // namespace kiln::kernels
