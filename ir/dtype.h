// Element types. The numbering deliberately equals PJRT_Buffer_Type so the PJRT layer converts with
// a range check instead of a table, and so a dtype printed in a log means the same thing on both
// sides.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace kiln::ir {

enum class DType : uint8_t {
  kInvalid = 0,
  kPred = 1,
  kS8 = 2,
  kS16 = 3,
  kS32 = 4,
  kS64 = 5,
  kU8 = 6,
  kU16 = 7,
  kU32 = 8,
  kU64 = 9,
  kF16 = 10,
  kF32 = 11,
  kF64 = 12,
  kBF16 = 13,
  kC64 = 14,
  kC128 = 15,
  kF8E5M2 = 16,
  kF8E4M3FN = 17,
  kF8E4M3B11FNUZ = 18,
  kF8E5M2FNUZ = 19,
  kF8E4M3FNUZ = 20,
  kS4 = 21,
  kU4 = 22,
  kToken = 23,
  kS2 = 24,
  kU2 = 25,
  kF8E4M3 = 26,
  kF8E3M4 = 27,
  kF8E8M0FNU = 28,
  kF4E2M1FN = 29,
  kS1 = 30,
  kU1 = 31,
  kF6E2M3FN = 32,
  kF6E3M2FN = 33,
};

inline constexpr int kMaxDType = 33;

// Storage bytes per element (sub-byte types occupy one byte each, as in MLIR dense storage).
int DTypeByteSize(DType t);
// Bits of one element in its packed form: the width of sub-byte types (stored one per byte, in the
// low bits; int1/2/4, float4, float6), else 8 * DTypeByteSize (pred: 8).
int DTypeBits(DType t);
// MLIR spelling: "f32", "i32", "ui8", "i1", "bf16", "complex<f32>", ...
std::string_view DTypeName(DType t);
std::optional<DType> DTypeFromPjrt(int pjrt_type);

bool IsFloat(DType t);  // real floating point, any width
// float8 (every flavour) and float4_e2m1fn: computed in f32 (compiler/narrow_float.h).
bool IsNarrowFloat(DType t);
bool IsComplex(DType t);
bool IsSignedInt(DType t);
bool IsUnsignedInt(DType t);
inline bool IsInteger(DType t) { return IsSignedInt(t) || IsUnsignedInt(t); }

}  // namespace kiln::ir
