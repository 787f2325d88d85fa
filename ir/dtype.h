// Element types, generated from the one dtype table (ir/dtype_table.h). The numbering deliberately
// equals PJRT_Buffer_Type so the PJRT layer converts with a range check instead of a table, and so
// a dtype printed in a log means the same thing on both sides.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "ir/dtype_table.h"

namespace kiln::ir {

enum class DType : uint8_t {
#define KILN_DTYPE_ENUMERATOR(name, pjrt, mlir, bytes, bits, kind) k##name = pjrt,
  KILN_DTYPES(KILN_DTYPE_ENUMERATOR)
#undef KILN_DTYPE_ENUMERATOR
};

// The largest DType value (the table's numbers run from 0 to it without gaps).
inline constexpr int kMaxDType = 0
#define KILN_DTYPE_MAX(name, pjrt, mlir, bytes, bits, kind) +1
                                 KILN_DTYPES(KILN_DTYPE_MAX)
#undef KILN_DTYPE_MAX
                                 - 1;

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
