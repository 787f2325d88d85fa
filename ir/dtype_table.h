// The one table of Kiln's element types: every property of a dtype is a column here, and the enum
// (ir/dtype.h), its predicates (ir/dtype.cc) and the one dtype dispatcher with its named subsets
// (ir/dtype_dispatch.h) are generated from it, so a new type is one line. No other file switches
// on a DType (tests/python/test_dtype_table.py holds the rule).
//
// X(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man):
//   name   the enumerator (DType::k<name>);
//   pjrt   its number, equal to PJRT_Buffer_Type's (pjrt/buffer.cc checks each one by name);
//   mlir   the MLIR spelling ("f32", "ui8", "complex<f32>");
//   bytes  storage bytes per element (sub-byte types occupy one byte each, as in MLIR dense
//          storage);
//   bits   the width of one element in its packed form (sub-byte types: 1, 2, 4, 6; pred: 8);
//   kind   kNone (invalid, token), kPred, kSigned, kUnsigned, kFloat (computed as itself),
//          kNarrowFloat (float8 and float4: computed in f32, compiler/narrow_float.h), kComplex;
//   ctype  the C++ type kernels hold one element in (ir/dtype_dispatch.h), void for the types no
//          kernel computes as themselves (sub-byte, float8/6/4, invalid, token);
//   exp    exponent bits of a floating-point format (0 for every other type);
//   man    explicit mantissa bits of a floating-point format (0 for every other type).
#pragma once

#define KILN_DTYPES(X)                                                       \
  X(Invalid, 0, "invalid", 0, 0, kNone, void, 0, 0)                          \
  X(Pred, 1, "i1", 1, 8, kPred, PredByte, 0, 0)                              \
  X(S8, 2, "i8", 1, 8, kSigned, int8_t, 0, 0)                                \
  X(S16, 3, "i16", 2, 16, kSigned, int16_t, 0, 0)                            \
  X(S32, 4, "i32", 4, 32, kSigned, int32_t, 0, 0)                            \
  X(S64, 5, "i64", 8, 64, kSigned, int64_t, 0, 0)                            \
  X(U8, 6, "ui8", 1, 8, kUnsigned, uint8_t, 0, 0)                            \
  X(U16, 7, "ui16", 2, 16, kUnsigned, uint16_t, 0, 0)                        \
  X(U32, 8, "ui32", 4, 32, kUnsigned, uint32_t, 0, 0)                        \
  X(U64, 9, "ui64", 8, 64, kUnsigned, uint64_t, 0, 0)                        \
  X(F16, 10, "f16", 2, 16, kFloat, f16_t, 5, 10)                             \
  X(F32, 11, "f32", 4, 32, kFloat, float, 8, 23)                             \
  X(F64, 12, "f64", 8, 64, kFloat, double, 11, 52)                           \
  X(BF16, 13, "bf16", 2, 16, kFloat, bf16_t, 8, 7)                           \
  X(C64, 14, "complex<f32>", 8, 64, kComplex, std::complex<float>, 0, 0)     \
  X(C128, 15, "complex<f64>", 16, 128, kComplex, std::complex<double>, 0, 0) \
  X(F8E5M2, 16, "f8E5M2", 1, 8, kNarrowFloat, void, 5, 2)                    \
  X(F8E4M3FN, 17, "f8E4M3FN", 1, 8, kNarrowFloat, void, 4, 3)                \
  X(F8E4M3B11FNUZ, 18, "f8E4M3B11FNUZ", 1, 8, kNarrowFloat, void, 4, 3)      \
  X(F8E5M2FNUZ, 19, "f8E5M2FNUZ", 1, 8, kNarrowFloat, void, 5, 2)            \
  X(F8E4M3FNUZ, 20, "f8E4M3FNUZ", 1, 8, kNarrowFloat, void, 4, 3)            \
  X(S4, 21, "i4", 1, 4, kSigned, void, 0, 0)                                 \
  X(U4, 22, "ui4", 1, 4, kUnsigned, void, 0, 0)                              \
  X(Token, 23, "token", 0, 0, kNone, void, 0, 0)                             \
  X(S2, 24, "i2", 1, 2, kSigned, void, 0, 0)                                 \
  X(U2, 25, "ui2", 1, 2, kUnsigned, void, 0, 0)                              \
  X(F8E4M3, 26, "f8E4M3", 1, 8, kNarrowFloat, void, 4, 3)                    \
  X(F8E3M4, 27, "f8E3M4", 1, 8, kNarrowFloat, void, 3, 4)                    \
  X(F8E8M0FNU, 28, "f8E8M0FNU", 1, 8, kNarrowFloat, void, 8, 0)              \
  X(F4E2M1FN, 29, "f4E2M1FN", 1, 4, kNarrowFloat, void, 2, 1)                \
  X(S1, 30, "i1s", 1, 1, kSigned, void, 0, 0)                                \
  X(U1, 31, "ui1", 1, 1, kUnsigned, void, 0, 0)                              \
  X(F6E2M3FN, 32, "f6E2M3FN", 1, 6, kFloat, void, 2, 3)                      \
  X(F6E3M2FN, 33, "f6E3M2FN", 1, 6, kFloat, void, 3, 2)
