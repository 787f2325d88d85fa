#include "distributed/gloo_reduce.h"

#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <string>
#include <type_traits>

#include "ir/dtype_dispatch.h"

namespace kiln::distributed {

using runtime::NetReduce;

namespace {

// Integer arithmetic wraps (as in-process reductions do): computed unsigned, at least 32 bits wide
// so that uint8/uint16 products do not promote to a signed int that overflows.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < 4), uint32_t, std::make_unsigned_t<T>>;

struct Sum {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    } else {
      return a + b;
    }
  }
};
struct Product {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    } else {
      return a * b;
    }
  }
};
// Max and min propagate NaN, as stablehlo.maximum / minimum do.
struct Max {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    }
    return a < b ? b : a;
  }
};
struct Min {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    }
    return b < a ? b : a;
  }
};
struct And {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};
struct Or {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};
struct Xor {
  template <typename T>
  T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

// Element-wise through memcpy: Gloo hands out pointers into segments of the caller's buffer, whose
// alignment Kiln does not promise.
template <typename T, typename Op>
void Apply(void* out, const void* a, const void* b, size_t n) {
  auto* o = static_cast<char*>(out);
  auto* x = static_cast<const char*>(a);
  auto* y = static_cast<const char*>(b);
  for (size_t i = 0; i < n; ++i) {
    T u, v;
    std::memcpy(&u, x + i * sizeof(T), sizeof(T));
    std::memcpy(&v, y + i * sizeof(T), sizeof(T));
    T r = Op{}(u, v);
    std::memcpy(o + i * sizeof(T), &r, sizeof(T));
  }
}

// Bitwise reductions exist for integers, max/min for real numbers; the rest is InvalidArgument.
template <typename T>
StatusOr<GlooReduction> For(NetReduce op) {
  constexpr bool kBitwise = std::is_integral_v<T>;
  constexpr bool kOrdered = std::is_arithmetic_v<T>;
  GlooReduction r;
  r.element_bytes = sizeof(T);
  switch (op) {
    case NetReduce::kSum:
      r.fn = &Apply<T, Sum>;
      break;
    case NetReduce::kProduct:
      r.fn = &Apply<T, Product>;
      break;
    case NetReduce::kMax:
      if constexpr (kOrdered) r.fn = &Apply<T, Max>;
      break;
    case NetReduce::kMin:
      if constexpr (kOrdered) r.fn = &Apply<T, Min>;
      break;
    case NetReduce::kAnd:
      if constexpr (kBitwise) r.fn = &Apply<T, And>;
      break;
    case NetReduce::kOr:
      if constexpr (kBitwise) r.fn = &Apply<T, Or>;
      break;
    case NetReduce::kXor:
      if constexpr (kBitwise) r.fn = &Apply<T, Xor>;
      break;
  }
  if (r.fn == nullptr) {
    return InvalidArgument(std::string("no ") + NetReduceName(op) + " for this element type");
  }
  return r;
}

// pred: one byte, 0 or 1. sum is or and product is and (as for i1 in-process), max/min the same.
StatusOr<GlooReduction> ForPred(NetReduce op) {
  GlooReduction r;
  r.element_bytes = 1;
  switch (op) {
    case NetReduce::kSum:
    case NetReduce::kMax:
    case NetReduce::kOr:
      r.fn = &Apply<uint8_t, Or>;
      break;
    case NetReduce::kProduct:
    case NetReduce::kMin:
    case NetReduce::kAnd:
      r.fn = &Apply<uint8_t, And>;
      break;
    case NetReduce::kXor:
      r.fn = &Apply<uint8_t, Xor>;
      break;
  }
  return r;
}

}  // namespace

const char* NetReduceName(NetReduce op) {
  switch (op) {
    case NetReduce::kSum:
      return "sum";
    case NetReduce::kProduct:
      return "product";
    case NetReduce::kMax:
      return "max";
    case NetReduce::kMin:
      return "min";
    case NetReduce::kAnd:
      return "and";
    case NetReduce::kOr:
      return "or";
    case NetReduce::kXor:
      return "xor";
  }
  return "?";
}

StatusOr<GlooReduction> ChooseGlooReduction(ir::DType dtype, NetReduce op) {
  StatusOr<GlooReduction> r = Unimplemented("");
  if (dtype == ir::DType::kPred) {
    r = ForPred(op);
  } else if (ir::InSet(dtype, ir::kHalfFloats)) {  // reduced in f32, rounded back once
    r = For<float>(op);
    if (r.ok()) r->widened_from = dtype;
  } else {
    r = ir::VisitDType<ir::kNumbers>(
        dtype,
        [&](auto tag) -> StatusOr<GlooReduction> { return For<ir::TagType<decltype(tag)>>(op); },
        [&]() -> StatusOr<GlooReduction> { return Unimplemented("not supported"); });
  }
  if (!r.ok()) {
    return Status(r.status().code(), "all-reduce across processes of " +
                                         std::string(ir::DTypeName(dtype)) + ": " +
                                         r.status().message());
  }
  return r;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal: exact
    return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(magnitude));
  }
  return std::bit_cast<float>(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t FloatToHalf(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN (quiet)
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // >= 65520 rounds to infinity
  if (magnitude < 0x38800000u) {
    // Below f16's smallest normal (2^-14): adding 0.5 lines the f16 subnormal grid (2^-24) up with
    // the low mantissa bits of the sum, and the float addition rounds to nearest even.
    float sum = std::bit_cast<float>(magnitude) + 0.5f;
    return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(sum) - 0x3f000000u);
  }
  uint32_t odd = (magnitude >> 13) & 1u;
  magnitude += 0xc8000fffu + odd;  // exponent rebias (-112 << 23) and round half to even
  return sign | static_cast<uint16_t>(magnitude >> 13);
}

float BFloat16ToFloat(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

uint16_t FloatToBFloat16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace kiln::distributed
