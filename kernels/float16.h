// IEEE binary16 (f16) and bfloat16 (bf16) <-> float conversions. Kernels do 16-bit float arithmetic
// in float and round once per op, which is exact for +,-,*,/,sqrt (float carries more than twice
// the precision of either format) and is what XLA:CPU does too.
//
// Everything is written with bit manipulation instead of _Float16/__bf16 so the results do not
// depend on the compiler version or target flags, and so NaN payloads and signs survive.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/dispatch.h"

namespace kiln::kernels {

// ---- bf16: the top half of a float ----------------------------------------------------------

inline float Bf16BitsToFloat(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

inline uint16_t FloatToBf16Bits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncating could clear every payload bit and turn it into an infinity; force quiet.
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  }
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit, then truncate. A carry
  // out of the mantissa correctly bumps the exponent (up to infinity for the largest floats).
  uint32_t lsb = (u >> 16) & 1u;
  return static_cast<uint16_t>((u + 0x7fffu + lsb) >> 16);
}

// ---- f16: 1 sign, 5 exponent (bias 15), 10 mantissa bits ------------------------------------

inline float HalfBitsToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);  // inf / NaN (payload kept)
  } else if (exp != 0) {
    bits = sign | ((exp + (127 - 15)) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal half: value = man * 2^-24, exactly representable as a normal float.
    float v = static_cast<float>(man) * 0x1p-24f;
    bits = sign | std::bit_cast<uint32_t>(v);
  }
  return std::bit_cast<float>(bits);
}

inline uint16_t FloatToHalfBits(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) {
    if (a == 0x7f800000u) return sign | 0x7c00u;  // inf
    // NaN: keep the top payload bits and make sure the result stays a (quiet) NaN.
    return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  // 65520 is halfway between the largest half (65504) and 2^16; ties-to-even rounds it (and
  // anything above) to infinity.
  if (a >= 0x477ff000u) return sign | 0x7c00u;
  if (a >= 0x38800000u) {
    // Normal half range (>= 2^-14). Rebias the exponent, then round the 13 dropped bits.
    uint32_t v = a - ((127u - 15u) << 23);
    uint32_t lsb = (v >> 13) & 1u;
    v += 0xfffu + lsb;
    return static_cast<uint16_t>(sign | (v >> 13));
  }
  // Subnormal half (or zero): the result is x / 2^-24 rounded to an integer, ties to even. Adding
  // 0.5f does exactly that rounding in hardware: every sum lies in [0.5, 1), where the float ulp is
  // 2^-24, and the bits above 0.5f's are the rounded count of 2^-24 steps (1024 = the smallest
  // normal half, which is also the right encoding when rounding carries over).
  float x = std::bit_cast<float>(a);
  float r = x + 0.5f;
  uint32_t m = std::bit_cast<uint32_t>(r) - std::bit_cast<uint32_t>(0.5f);  // multiples of 2^-24
  return static_cast<uint16_t>(sign | m);
}

// ---- double -> 16-bit floats without double rounding ------------------------------------------

// Rounds a double to float with "round to odd": an inexact result gets an odd last bit. A value
// rounded to odd at float precision and then to nearest-even at 16-bit precision equals a direct
// nearest-even rounding of the double, because float keeps more than two extra bits.
inline float DoubleToFloatRoundOdd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::isinf(f)) return std::copysign(std::numeric_limits<float>::max(), f);
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 1u) == 0) {
    // Even and inexact: step one ulp towards d (which makes the last bit odd).
    bool away = std::fabs(d) > std::fabs(static_cast<double>(f));
    bits = away ? bits + 1 : bits - 1;
    f = std::bit_cast<float>(bits);
  }
  return f;
}

inline uint16_t DoubleToHalfBits(double d) { return FloatToHalfBits(DoubleToFloatRoundOdd(d)); }
inline uint16_t DoubleToBf16Bits(double d) { return FloatToBf16Bits(DoubleToFloatRoundOdd(d)); }

// ---- typed wrappers ----------------------------------------------------------------------------

inline float ToFloat(f16_t h) { return HalfBitsToFloat(h.bits); }
inline float ToFloat(bf16_t h) { return Bf16BitsToFloat(h.bits); }
inline f16_t ToF16(float f) { return f16_t{FloatToHalfBits(f)}; }
inline bf16_t ToBf16(float f) { return bf16_t{FloatToBf16Bits(f)}; }

// A value of any stored float type in the type it is computed in: f16/bf16 widened to float
// (exactly, NaN payloads too), float and double as they are.
inline float WidenFloat(f16_t h) { return HalfBitsToFloat(h.bits); }
inline float WidenFloat(bf16_t h) { return Bf16BitsToFloat(h.bits); }
inline float WidenFloat(float f) { return f; }
inline double WidenFloat(double d) { return d; }

}  // namespace kiln::kernels
