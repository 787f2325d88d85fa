// The dtype properties are read from the one table (ir/dtype_table.h) in ir/dtype.h; this file
// checks the table's order and converts PJRT numbers.
#include "ir/dtype.h"

namespace kiln::ir {
namespace {

// The table lists the types in their numbering's order, without gaps.
constexpr bool InOrder() {
  int i = 0;
#define KILN_DTYPE_CHECK(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  if (pjrt != i++) return false;
  KILN_DTYPES(KILN_DTYPE_CHECK)
#undef KILN_DTYPE_CHECK
  return true;
}
static_assert(InOrder(), "ir/dtype_table.h must list the types by number, from 0, without gaps");

}  // namespace

std::optional<DType> DTypeFromPjrt(int pjrt_type) {
  if (pjrt_type <= 0 || pjrt_type > kMaxDType) return std::nullopt;
  return static_cast<DType>(pjrt_type);
}

}  // namespace kiln::ir
