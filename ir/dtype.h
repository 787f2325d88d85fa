// Element types, generated from the one dtype table (ir/dtype_table.h). The numbering deliberately
// equals PJRT_Buffer_Type so the PJRT layer converts with a range check instead of a table, and so
// a dtype printed in a log means the same thing on both sides. Dispatching on a dtype (calling a
// template with its C++ type) goes through ir/dtype_dispatch.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ir/dtype_table.h"

namespace kiln::ir {

enum class DType : uint8_t {
#define KILN_DTYPE_ENUMERATOR(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) k##name = pjrt,
  KILN_DTYPES(KILN_DTYPE_ENUMERATOR)
#undef KILN_DTYPE_ENUMERATOR
};

// The largest DType value (the table's numbers run from 0 to it without gaps).
inline constexpr int kMaxDType = 0
#define KILN_DTYPE_MAX(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) +1
                                 KILN_DTYPES(KILN_DTYPE_MAX)
#undef KILN_DTYPE_MAX
                                 - 1;

// The table's `kind` column.
enum class DTypeKind : uint8_t { kNone, kPred, kSigned, kUnsigned, kFloat, kNarrowFloat, kComplex };

namespace dtype_internal {
struct Row {
  std::string_view mlir;
  uint8_t bytes, bits;
  DTypeKind kind;
  uint8_t exp, man;
};
inline constexpr Row kRows[kMaxDType + 1] = {
#define KILN_DTYPE_ROW(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  {mlir, bytes, bits, DTypeKind::kind, exp, man},
    KILN_DTYPES(KILN_DTYPE_ROW)
#undef KILN_DTYPE_ROW
};
// Values outside the table read as kInvalid's row.
constexpr const Row& RowOf(DType t) {
  const auto i = static_cast<unsigned>(t);
  return kRows[i <= static_cast<unsigned>(kMaxDType) ? i : 0];
}
}  // namespace dtype_internal

constexpr DTypeKind KindOf(DType t) { return dtype_internal::RowOf(t).kind; }
// Storage bytes per element (sub-byte types occupy one byte each, as in MLIR dense storage).
constexpr int DTypeByteSize(DType t) { return dtype_internal::RowOf(t).bytes; }
// Bits of one element in its packed form: the width of sub-byte types (stored one per byte, in the
// low bits; int1/2/4, float4, float6), else 8 * DTypeByteSize (pred: 8).
constexpr int DTypeBits(DType t) { return dtype_internal::RowOf(t).bits; }
// MLIR spelling: "f32", "i32", "ui8", "i1", "bf16", "complex<f32>", ...
constexpr std::string_view DTypeName(DType t) { return dtype_internal::RowOf(t).mlir; }
std::optional<DType> DTypeFromPjrt(int pjrt_type);
// Exponent and explicit mantissa bits of a floating-point format (f32: 8 and 23); 0 for the other
// types.
constexpr int FloatExponentBits(DType t) { return dtype_internal::RowOf(t).exp; }
constexpr int FloatMantissaBits(DType t) { return dtype_internal::RowOf(t).man; }

// float8 (every flavour) and float4_e2m1fn: computed in f32 (compiler/narrow_float.h).
constexpr bool IsNarrowFloat(DType t) { return KindOf(t) == DTypeKind::kNarrowFloat; }
// Real floating point, any width.
constexpr bool IsFloat(DType t) { return KindOf(t) == DTypeKind::kFloat || IsNarrowFloat(t); }
constexpr bool IsComplex(DType t) { return KindOf(t) == DTypeKind::kComplex; }
constexpr bool IsSignedInt(DType t) { return KindOf(t) == DTypeKind::kSigned; }
constexpr bool IsUnsignedInt(DType t) { return KindOf(t) == DTypeKind::kUnsigned; }
constexpr bool IsInteger(DType t) { return IsSignedInt(t) || IsUnsignedInt(t); }
// Narrower than a byte in packed form (int1/2/4, uint1/2/4, float4, float6); pred is not.
constexpr bool IsSubByte(DType t) { return DTypeBits(t) > 0 && DTypeBits(t) < 8; }

}  // namespace kiln::ir
