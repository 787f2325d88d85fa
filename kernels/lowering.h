// The lowering rules' helpers, in one header: uniform validation of operand/result types and
// attributes, the run-time input checks every kernel does before touching memory (error messages
// always start with the op name, so a compile error points at the offending op), attribute lookup
// that tolerates StableHLO's nested forms, axis and static-shape checks, and row-major index
// arithmetic. Lowering rules validate everything up front so kernels can index without further
// checks. Out-of-line parts: lowering.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ir/dtype.h"
#include "ir/dtype_dispatch.h"
#include "ir/module.h"
#include "ir/type.h"
#include "kernels/strided.h"
#include "lower/op_registry.h"
#include "runtime/array.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::kernels {

// Checks at run time that the arrays handed to a kernel have the types it was lowered for (the
// first types.size() of them), so a mismatch becomes an error instead of an out-of-bounds access.
Status CheckArrays(std::span<const runtime::View> arrays, std::span<const ir::Type> types);

// Looks an attribute up by name on the op; failing that, inside any dictionary attribute of the op
// (StableHLO's textual form nests gather/scatter/dot dimension numbers in one struct attribute).
// Returns nullptr when absent or when it is VHLO's `none` placeholder.
const ir::Attr* FindAttr(const ir::Op& op, std::string_view name);

// Attributes. Missing or malformed required ones are INVALID_ARGUMENT naming the op.
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

// Checks that `type` is a tensor with a static shape whose element count the runtime can store;
// `what` names it in the error ("operand #1"). A dynamic dimension is UNIMPLEMENTED (Kiln compiles
// static shapes only), anything else malformed INVALID_ARGUMENT.
Status CheckStaticTensor(const ir::Type& type, std::string_view what);

// Checks that every axis is in [0, rank) and that no axis repeats.
Status CheckAxes(std::span<const int64_t> axes, int64_t rank, std::string_view what);

// "[1, 2, 3]" for error messages.
std::string FormatInts(std::span<const int64_t> values);

// Shared with the data-movement kernels; one definition of each lives in strided.h.
using strided::NextIndex;
using strided::RowMajorStrides;
int64_t Product(std::span<const int64_t> dims);

// Calls fn.template operator()<E>() with a trivially copyable E of `size` bytes (1, 2, 4, 8, 16),
// for kernels that move elements without interpreting them (strided::DispatchByWidth's words).
template <typename Fn>
Status DispatchElementSize(size_t size, Fn&& fn) {
  Status status = Unimplemented("element size " + std::to_string(size) + " is not supported");
  strided::DispatchByWidth(size <= 16 ? static_cast<int>(size) : 0,
                           [&]<typename E>() { status = fn.template operator()<E>(); });
  return status;
}

// ---- checks through the LowerContext ----

inline std::string TypeString(const ir::Type& t) {
  if (!t.is_tensor()) return t.kind == ir::Type::Kind::kToken ? "token" : "non-tensor";
  return std::string(ir::DTypeName(t.dtype)) + FormatInts(t.dims);
}

// Checks operand and result counts (min..max operands; results exactly).
inline Status ExpectArity(const lower::LowerContext& ctx, size_t min_operands, size_t max_operands,
                          size_t results) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() < min_operands || op.operands.size() > max_operands) {
    std::string want = min_operands == max_operands
                           ? std::to_string(min_operands)
                           : std::to_string(min_operands) + ".." + std::to_string(max_operands);
    return InvalidArgument("expected " + want + " operands, got " +
                           std::to_string(op.operands.size()));
  }
  if (op.results.size() != results) {
    return InvalidArgument("expected " + std::to_string(results) + " results, got " +
                           std::to_string(op.results.size()));
  }
  for (ir::ValueId v : op.operands) {
    if (!ctx.module().valid_value(v)) return InvalidArgument("operand refers to an unknown value");
  }
  for (ir::ValueId v : op.results) {
    if (!ctx.module().valid_value(v)) return InvalidArgument("result refers to an unknown value");
  }
  return Status::Ok();
}

inline std::string OperandName(size_t i) { return "operand #" + std::to_string(i); }
inline std::string ResultName(size_t i) { return "result #" + std::to_string(i); }

// Validated static tensor types of operand i / result i.
inline StatusOr<const ir::Type*> OperandTensor(const lower::LowerContext& ctx, size_t i) {
  const ir::Type& t = ctx.operand_type(i);
  KILN_RETURN_IF_ERROR(CheckStaticTensor(t, OperandName(i)));
  return &t;
}
inline StatusOr<const ir::Type*> ResultTensor(const lower::LowerContext& ctx, size_t i) {
  const ir::Type& t = ctx.result_type(i);
  KILN_RETURN_IF_ERROR(CheckStaticTensor(t, ResultName(i)));
  return &t;
}

inline Status ExpectSameShape(const ir::Type& a, std::string_view a_name, const ir::Type& b,
                              std::string_view b_name) {
  if (a.dims != b.dims) {
    return InvalidArgument(std::string(a_name) + " shape " + FormatInts(a.dims) + " differs from " +
                           std::string(b_name) + " shape " + FormatInts(b.dims));
  }
  return Status::Ok();
}

inline Status ExpectSameDType(const ir::Type& a, std::string_view a_name, const ir::Type& b,
                              std::string_view b_name) {
  if (a.dtype != b.dtype) {
    return InvalidArgument(std::string(a_name) + " element type " +
                           std::string(ir::DTypeName(a.dtype)) + " differs from " +
                           std::string(b_name) + " element type " +
                           std::string(ir::DTypeName(b.dtype)));
  }
  return Status::Ok();
}

// Enum attribute spelling ("LT", "FLOAT"); nullopt when absent or None.
inline std::optional<std::string> EnumAttr(const lower::LowerContext& ctx, std::string_view name) {
  const ir::Attr* a = ctx.op().attr(name);
  if (a == nullptr || a->is_none()) return std::nullopt;
  if (a->kind == ir::Attr::Kind::kEnum || a->kind == ir::Attr::Kind::kString) return a->str;
  return std::nullopt;
}

// ---- run-time checks (cheap; they keep a lying IR from turning into out-of-bounds accesses) ----

// Input i must exist, have memory, and hold `elements` elements of `elem_bytes` bytes each.
inline Status CheckInput(std::span<const runtime::View> in, size_t i, int64_t elements,
                         int elem_bytes) {
  if (i >= in.size()) return Internal("missing input #" + std::to_string(i));
  const runtime::View& a = in[i];
  if (a.ptr == nullptr && a.elements != 0)
    return Internal("input #" + std::to_string(i) + " has no memory");
  if (a.num_elements() != elements || ir::DTypeByteSize(a.dtype) != elem_bytes) {
    return Internal("input #" + std::to_string(i) + " is " + std::string(ir::DTypeName(a.dtype)) +
                    FormatInts(a.dims) + ", expected " + std::to_string(elements) +
                    " elements of " + std::to_string(elem_bytes) + " bytes");
  }
  return Status::Ok();
}

inline Status CheckOutputs(std::span<const runtime::View> out, size_t n) {
  if (out.size() != n) {
    return Internal("expected " + std::to_string(n) + " output slots, got " +
                    std::to_string(out.size()));
  }
  for (const runtime::View& v : out) {
    if (v.ptr == nullptr && v.elements != 0) return Internal("output has no memory");
  }
  return Status::Ok();
}

// Reads a scalar integer array of any integer dtype (dynamic_slice start indices, ...).
inline StatusOr<int64_t> ReadScalarInt(const runtime::View& a) {
  if (a.ptr == nullptr || a.num_elements() != 1) {
    return Internal("index operand is not a scalar");
  }
  return ir::VisitDType<ir::kIntegers>(
      a.dtype,
      [&](auto tag) -> StatusOr<int64_t> {
        using T = ir::TagType<decltype(tag)>;
        const T v = *static_cast<const T*>(a.data());
        if constexpr (std::is_same_v<T, uint64_t>) {
          // Saturate: any index this large is clamped to the upper bound anyway.
          return v > static_cast<uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(v);
        } else {
          return static_cast<int64_t>(v);
        }
      },
      [&]() -> StatusOr<int64_t> {
        return Internal("index operand has non-integer type " +
                        std::string(ir::DTypeName(a.dtype)));
      });
}

}  // namespace kiln::kernels
