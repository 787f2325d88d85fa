// Narrow floating-point types (float8 of every flavour JAX has, float4_e2m1fn): their encodings.
//
// Kiln computes these types in f32 (compiler/narrow_float.h rewrites programs so), so kernels meet
// them only in `stablehlo.convert` to and from their stored bytes, one per element. The codec
// follows XLA:CPU bit for bit (checked over every code and millions of f32 values against
// JAX's CPU backend in tests/python/test_narrow_float.py): round to nearest, ties to even (ties
// upward for float8_e8m0fnu, whose only digits are its exponent); values past the largest finite
// become inf where the type has one, NaN where it does not (fn, fnuz, e8m0fnu), and saturate for
// float4_e2m1fn, which has neither. fnuz types have no negative zero; e8m0fnu has no sign and no
// zero (zero and negatives are NaN). One difference is known and left: XLA:CPU converts f64
// magnitudes below 2^-126 to float8_e8m0fnu by a rule not reproduced here (NaN or 2^-126 where
// Kiln rounds half up to 2^-127 or 2^-126); f32 and every other source match bit for bit.
#pragma once

#include <cstdint>

#include "ir/dtype.h"
#include "lower/kernel.h"

namespace kiln::kernels {

struct NarrowFormat {
  enum class Specials : uint8_t {
    kIeee,  // inf at the top exponent with a zero mantissa, NaN above it
    kFn,    // no inf; NaN only where exponent and mantissa are all ones
    kFnuz,  // no inf, no negative zero; NaN is the negative-zero code 0x80
    kNone,  // neither inf nor NaN (float4_e2m1fn): overflow saturates
    kE8M0,  // exponent only, unsigned; 0xFF is NaN
  };
  ir::DType dtype;
  int exponent_bits, mantissa_bits, bias;
  Specials specials;
  float decoded[256];  // every code's value (codes past the type's width: their low bits)
};

// The format of a narrow float type; nullptr for any other type.
const NarrowFormat* NarrowFormatOf(ir::DType t);

// `v` in the type, rounded as XLA:CPU rounds. `float_source` (v came from f32, f16 or bf16)
// reproduces XLA's rounding of f32 subnormals to e8m0fnu (everything above 2^-127 goes to
// 2^-126 there, unlike the value-based rule elsewhere).
uint8_t EncodeNarrow(const NarrowFormat& f, double v, bool float_source);

// Range functions for lower::MapInfo over one input: the stored codes to `to`, or `from`'s
// values to codes. nullptr when the other type is not a real, integer or predicate type.
lower::RangeFn NarrowDecodeRange(ir::DType to);
lower::RangeFn NarrowEncodeRange(ir::DType from);

}  // namespace kiln::kernels
