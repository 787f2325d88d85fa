// The one table of Kiln's element types: every property of a dtype is a column here, and the enum
// (ir/dtype.h) and its predicates are generated from it, so a new type is one line.
//
// X(name, pjrt, mlir, bytes, bits, kind):
//   name   the enumerator (DType::k<name>);
//   pjrt   its number, equal to PJRT_Buffer_Type's (pjrt/ converts with a range check);
//   mlir   the MLIR spelling ("f32", "ui8", "complex<f32>");
//   bytes  storage bytes per element (sub-byte types occupy one byte each, as in MLIR dense
//   storage); bits   the width of one element in its packed form (sub-byte types: 1, 2, 4, 6; pred:
//   8); kind   kNone (invalid, token), kPred, kSigned, kUnsigned, kFloat (computed as itself),
//          kNarrowFloat (float8 and float4: computed in f32, compiler/narrow_float.h), kComplex.
#pragma once

#define KILN_DTYPES(X)                                      \
  X(Invalid, 0, "invalid", 0, 0, kNone)                     \
  X(Pred, 1, "i1", 1, 8, kPred)                             \
  X(S8, 2, "i8", 1, 8, kSigned)                             \
  X(S16, 3, "i16", 2, 16, kSigned)                          \
  X(S32, 4, "i32", 4, 32, kSigned)                          \
  X(S64, 5, "i64", 8, 64, kSigned)                          \
  X(U8, 6, "ui8", 1, 8, kUnsigned)                          \
  X(U16, 7, "ui16", 2, 16, kUnsigned)                       \
  X(U32, 8, "ui32", 4, 32, kUnsigned)                       \
  X(U64, 9, "ui64", 8, 64, kUnsigned)                       \
  X(F16, 10, "f16", 2, 16, kFloat)                          \
  X(F32, 11, "f32", 4, 32, kFloat)                          \
  X(F64, 12, "f64", 8, 64, kFloat)                          \
  X(BF16, 13, "bf16", 2, 16, kFloat)                        \
  X(C64, 14, "complex<f32>", 8, 64, kComplex)               \
  X(C128, 15, "complex<f64>", 16, 128, kComplex)            \
  X(F8E5M2, 16, "f8E5M2", 1, 8, kNarrowFloat)               \
  X(F8E4M3FN, 17, "f8E4M3FN", 1, 8, kNarrowFloat)           \
  X(F8E4M3B11FNUZ, 18, "f8E4M3B11FNUZ", 1, 8, kNarrowFloat) \
  X(F8E5M2FNUZ, 19, "f8E5M2FNUZ", 1, 8, kNarrowFloat)       \
  X(F8E4M3FNUZ, 20, "f8E4M3FNUZ", 1, 8, kNarrowFloat)       \
  X(S4, 21, "i4", 1, 4, kSigned)                            \
  X(U4, 22, "ui4", 1, 4, kUnsigned)                         \
  X(Token, 23, "token", 0, 0, kNone)                        \
  X(S2, 24, "i2", 1, 2, kSigned)                            \
  X(U2, 25, "ui2", 1, 2, kUnsigned)                         \
  X(F8E4M3, 26, "f8E4M3", 1, 8, kNarrowFloat)               \
  X(F8E3M4, 27, "f8E3M4", 1, 8, kNarrowFloat)               \
  X(F8E8M0FNU, 28, "f8E8M0FNU", 1, 8, kNarrowFloat)         \
  X(F4E2M1FN, 29, "f4E2M1FN", 1, 4, kNarrowFloat)           \
  X(S1, 30, "i1s", 1, 1, kSigned)                           \
  X(U1, 31, "ui1", 1, 1, kUnsigned)                         \
  X(F6E2M3FN, 32, "f6E2M3FN", 1, 6, kFloat)                 \
  X(F6E3M2FN, 33, "f6E3M2FN", 1, 6, kFloat)
