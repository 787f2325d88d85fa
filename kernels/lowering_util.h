// Helpers shared by the lowering rules of the reduction, linalg, indexing and sort kernels: reading
// attributes defensively, validating axes and static shapes, and row-major index arithmetic.
// Lowering rules validate everything up front so kernels can index without further checks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"
#include "kernels/strided.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::kernels {

// Checks at run time that the arrays handed to a kernel have the types it was lowered for (the
// first types.size() of them), so a mismatch becomes an error instead of an out-of-bounds access.
Status CheckArrays(std::string_view op, std::span<const runtime::View> arrays,
                   std::span<const ir::Type> types);

// INVALID_ARGUMENT "<op name>: <message>".
Status OpError(const ir::Op& op, std::string_view message);

// Looks an attribute up by name on the op; failing that, inside any dictionary attribute of the op
// (StableHLO's textual form nests gather/scatter/dot dimension numbers in one struct attribute).
// Returns nullptr when absent or when it is VHLO's `none` placeholder.
const ir::Attr* FindAttr(const ir::Op& op, std::string_view name);

// Integer-list attribute (array or dense literal, any shape: a [N,2] literal comes back flattened).
StatusOr<std::vector<int64_t>> RequiredInts(const ir::Op& op, std::string_view name);
// As above, but an absent attribute yields `fallback`.
StatusOr<std::vector<int64_t>> OptionalInts(const ir::Op& op, std::string_view name,
                                            std::vector<int64_t> fallback = {});
StatusOr<int64_t> RequiredInt(const ir::Op& op, std::string_view name);
StatusOr<int64_t> OptionalInt(const ir::Op& op, std::string_view name, int64_t fallback);
StatusOr<bool> OptionalBool(const ir::Op& op, std::string_view name, bool fallback);

// The op anywhere in the module whose results include `v` (values are numbered module-wide), or
// nullptr. Linear in the module size: for lowering-time pattern matching only, e.g. to see that a
// value a region captures is a constant.
const ir::Op* FindDefiningOp(const ir::Module& module, ir::ValueId v);

// Checks that `type` is a tensor with a static shape; `what` names it in the error ("operand #1").
Status CheckStaticTensor(const ir::Op& op, const ir::Type& type, std::string_view what);

// Checks that every axis is in [0, rank) and that no axis repeats.
Status CheckAxes(const ir::Op& op, std::span<const int64_t> axes, int64_t rank,
                 std::string_view what);

// "[1, 2, 3]" for error messages.
std::string FormatInts(std::span<const int64_t> values);

// Shared with the data-movement kernels; one definition lives in strided.h.
using strided::RowMajorStrides;
int64_t Product(std::span<const int64_t> dims);

// Advances a row-major multi-index over `dims` (last axis fastest). Returns false after the last
// one.
inline bool NextIndex(std::span<int64_t> index, std::span<const int64_t> dims) {
  for (size_t i = index.size(); i-- > 0;) {
    if (++index[i] < dims[i]) return true;
    index[i] = 0;
  }
  return false;
}

// Element storage of a given byte size, for kernels that move elements without interpreting them.
template <size_t kSize>
struct ElementBytes {
  uint8_t bytes[kSize];
};

// Calls fn.template operator()<E>() with a trivially copyable E of `size` bytes (1, 2, 4, 8, 16).
template <typename Fn>
Status DispatchElementSize(std::string_view op, size_t size, Fn&& fn) {
  switch (size) {
    case 1:
      return fn.template operator()<uint8_t>();
    case 2:
      return fn.template operator()<uint16_t>();
    case 4:
      return fn.template operator()<uint32_t>();
    case 8:
      return fn.template operator()<uint64_t>();
    case 16:
      return fn.template operator()<ElementBytes<16>>();
    default:
      return Unimplemented(std::string(op) + ": element size " + std::to_string(size) +
                           " is not supported");
  }
}

}  // namespace kiln::kernels
