// Shape and data-movement ops: constant, iota, broadcast_in_dim, broadcast, reshape, transpose,
// slice, dynamic_slice, dynamic_update_slice, concatenate, pad, reverse, get_dimension_size.
//
// Everything except constant/iota is a strided box copy (kernels/strided.h) planned at lowering
// time and dispatched on element byte width, so every dtype works. Where the result's bytes are a
// contiguous run of the operand's, the result aliases the operand's storage instead of copying
// (reshape always; broadcast_in_dim that only adds unit dims; large contiguous slices).
//
// This file holds constant, iota and get_dimension_size, and registers the family; the box copies
// are in kernels/shape_copy.cc (broadcasts, reshape, transpose, slice, reverse, concatenate) and
// kernels/shape_pad_slice.cc (pad, dynamic_slice, dynamic_update_slice), their shared kernels in
// kernels/shape_util.{h,cc}.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels/shape_util.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

namespace kiln::kernels::shape {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;

namespace {

// A constant's bytes, 64-byte aligned, shared by every run.
StatusOr<std::shared_ptr<const void>> ConstantBytes(const ir::Type& type, const void* bytes,
                                                    size_t size) {
  KILN_ASSIGN_OR_RETURN(Array array, Array::Allocate(type));
  if (size != 0) std::memcpy(array.data(), bytes, size);
  return std::shared_ptr<const void>(array.storage, array.data());
}

}  // namespace

// ---- constant ----

StatusOr<Kernel> LowerConstant(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 0, 0, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  const ir::Attr* value = ctx.op().attr("value");
  if (value == nullptr || value->kind != ir::Attr::Kind::kElements) {
    return InvalidArgument("missing dense 'value' attribute");
  }
  if (value->type.dtype != out->dtype || value->type.dims != out->dims) {
    return InvalidArgument("value has type " + TypeString(value->type) + " but the result is " +
                           TypeString(*out));
  }
  const int width = ir::DTypeByteSize(out->dtype);
  if (width == 0) return UnsupportedDType(name, out->dtype);
  const size_t bytes = static_cast<size_t>(out->num_elements()) * static_cast<size_t>(width);
  if (value->data.size() != bytes) {
    return InvalidArgument("value holds " + std::to_string(value->data.size()) +
                           " bytes, expected " + std::to_string(bytes));
  }
  // Materialised once; kernels never write their inputs, so every run reads the same bytes.
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const void> data,
                        ConstantBytes(*out, value->data.data(), bytes));
  return Kernel::Constant(std::move(data));
}

// ---- iota ----

namespace {

// y[i] = i for i < n, in y's type (a loop the compiler vectorises).
template <typename T>
__attribute__((noinline)) void CountUp(T* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = ew::ConvertElement<T>(i);
}

}  // namespace

StatusOr<Kernel> LowerIota(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 0, 0, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dim, RequiredInt(ctx.op(), "iota_dimension"));
  if (dim < 0 || dim >= out->rank()) {
    return InvalidArgument("iota_dimension " + std::to_string(dim) + " is out of range for rank " +
                           std::to_string(out->rank()));
  }
  // Row-major view as [outer, len, inner]: element value = its index along `len`.
  const auto d = static_cast<size_t>(dim);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= out->dims[i];
  for (size_t i = d + 1; i < out->dims.size(); ++i) inner *= out->dims[i];
  const int64_t len = out->dims[d];
  const ir::Type out_type = *out;
  // A sub-byte integer iota counts in its byte type and wraps, as its arithmetic does.
  return ew::DispatchElem(ew::ByteDType(out->dtype), [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<T>) {
      return UnsupportedDType(name, out_type.dtype);
    } else {
      return Kernel([name, out_type, outer, len, inner](ExecContext&, std::span<const View>,
                                                        std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
        const View& result = out[0];
        T* y = result.data_as<T>();
        const bool sub_byte = ew::SubByteBits(out_type.dtype) != 0;
        if (inner == 1 && !sub_byte) {
          // Along the last axis: each of the `outer` rows is 0, 1, ..., len - 1.
          const int64_t min_rows = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, len));
          runtime::ParallelFor(outer, min_rows, [&](int64_t b, int64_t e) {
            for (int64_t row = b; row < e; ++row) CountUp(y + row * len, len);
          });
          return Status::Ok();
        }
        const int64_t min_rows = std::max<int64_t>(1, (1 << 14) / std::max<int64_t>(1, inner));
        runtime::ParallelFor(outer * len, min_rows, [&](int64_t b, int64_t e) {
          for (int64_t row = b; row < e; ++row) {
            const T v = ew::ConvertElement<T>(static_cast<int64_t>(row % len));
            T* dst = y + row * inner;
            for (int64_t i = 0; i < inner; ++i) dst[i] = v;
            if (sub_byte) ew::NormalizeSubByte(out_type.dtype, false, dst, inner);
          }
        });
        return Status::Ok();
      });
    }
  });
}

// ---- get_dimension_size ----

StatusOr<Kernel> LowerGetDimensionSize(LowerContext& ctx) {
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(int64_t dim, RequiredInt(ctx.op(), "dimension"));
  if (dim < 0 || dim >= in->rank()) return InvalidArgument("dimension is out of range");
  if (out->dtype != ir::DType::kS32 || out->rank() != 0)
    return InvalidArgument("result must be tensor<i32>");
  const int32_t size = static_cast<int32_t>(in->dims[static_cast<size_t>(dim)]);
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const void> data, ConstantBytes(*out, &size, sizeof(size)));
  return Kernel::Constant(std::move(data));
}

}  // namespace kiln::kernels::shape

namespace kiln::kernels {

void RegisterShapeOps(OpRegistry& registry) {
  using namespace kernels::shape;  // NOLINT
  constexpr std::string_view kFamily = "shape";
  registry.Add({"stablehlo.constant", kFamily, &LowerConstant});
  registry.Add({"stablehlo.iota", kFamily, &LowerIota});
  registry.Add({"stablehlo.broadcast_in_dim", kFamily, &LowerBroadcastInDim});
  registry.Add({"stablehlo.broadcast", kFamily, &LowerBroadcast});
  registry.Add({"stablehlo.reshape", kFamily, &LowerReshape});
  registry.Add({"stablehlo.transpose", kFamily, &LowerTranspose});
  registry.Add({"stablehlo.slice", kFamily, &LowerSlice});
  registry.Add({"stablehlo.reverse", kFamily, &LowerReverse});
  registry.Add({"stablehlo.concatenate", kFamily, &LowerConcatenate});
  registry.Add({"stablehlo.pad", kFamily, &LowerPad});
  registry.Add({"stablehlo.dynamic_slice", kFamily, &LowerDynamicSlice});
  registry.Add({"stablehlo.dynamic_update_slice", kFamily, &LowerDynamicUpdateSlice});
  registry.Add({"stablehlo.get_dimension_size", kFamily, &LowerGetDimensionSize});
}

}  // namespace kiln::kernels
