// The dtype properties, read from the one table (ir/dtype_table.h).
#include "ir/dtype.h"

#include <array>

namespace kiln::ir {
namespace {

enum class Kind : uint8_t { kNone, kPred, kSigned, kUnsigned, kFloat, kNarrowFloat, kComplex };

struct Row {
  std::string_view mlir;
  int bytes;
  int bits;
  Kind kind;
};

constexpr std::array<Row, kMaxDType + 1> kRows = {{
#define KILN_DTYPE_ROW(name, pjrt, mlir, bytes, bits, kind) {mlir, bytes, bits, Kind::kind},
    KILN_DTYPES(KILN_DTYPE_ROW)
#undef KILN_DTYPE_ROW
}};

// The table lists the types in their numbering's order, without gaps.
constexpr bool InOrder() {
  int i = 0;
#define KILN_DTYPE_CHECK(name, pjrt, mlir, bytes, bits, kind) \
  if (pjrt != i++) return false;
  KILN_DTYPES(KILN_DTYPE_CHECK)
#undef KILN_DTYPE_CHECK
  return true;
}
static_assert(InOrder(), "ir/dtype_table.h must list the types by number, from 0, without gaps");

const Row& RowOf(DType t) {
  const auto i = static_cast<size_t>(t);
  return kRows[i < kRows.size() ? i : 0];
}

}  // namespace

int DTypeByteSize(DType t) { return RowOf(t).bytes; }
int DTypeBits(DType t) { return RowOf(t).bits; }
std::string_view DTypeName(DType t) { return RowOf(t).mlir; }

std::optional<DType> DTypeFromPjrt(int pjrt_type) {
  if (pjrt_type <= 0 || pjrt_type > kMaxDType) return std::nullopt;
  return static_cast<DType>(pjrt_type);
}

bool IsNarrowFloat(DType t) { return RowOf(t).kind == Kind::kNarrowFloat; }
bool IsFloat(DType t) { return RowOf(t).kind == Kind::kFloat || IsNarrowFloat(t); }
bool IsComplex(DType t) { return RowOf(t).kind == Kind::kComplex; }
bool IsSignedInt(DType t) { return RowOf(t).kind == Kind::kSigned; }
bool IsUnsignedInt(DType t) { return RowOf(t).kind == Kind::kUnsigned; }

}  // namespace kiln::ir
