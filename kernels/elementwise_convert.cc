// Conversions: stablehlo.convert (between every pair of element types, narrow floats through
// f32) and stablehlo.bitcast_convert (reinterpreting bits, repacking sub-byte elements).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/elementwise_map.h"
#include "kernels/narrow_float.h"
#include "runtime/parallel.h"

namespace kiln::kernels::elementwise {

// ---- convert ----

// To or from a narrow float type's stored codes (kernels/narrow_float.h). Programs compute those
// types in f32 (compiler/narrow_float.h), so one side is f32 or the source of a conversion.
StatusOr<Kernel> LowerNarrowConvert(const std::string& name, const ir::Type& in,
                                    const ir::Type& out) {
  if (in.dtype == out.dtype) return Kernel::Alias(0);
  const NarrowFormat* from = NarrowFormatOf(in.dtype);
  const NarrowFormat* to = NarrowFormatOf(out.dtype);
  if (from != nullptr && to != nullptr) {
    return Unimplemented("converting " + std::string(ir::DTypeName(in.dtype)) + " to " +
                         std::string(ir::DTypeName(out.dtype)) +
                         " directly (Kiln goes through f32)");
  }
  const RangeFn range =
      from != nullptr ? NarrowDecodeRange(out.dtype) : NarrowEncodeRange(in.dtype);
  if (range == nullptr) return UnsupportedDType(name, from != nullptr ? out.dtype : in.dtype);
  const NarrowFormat* format = from != nullptr ? from : to;
  return MakeMapKernel({.name = name,
                        .out_type = out,
                        .in_elements = {out.num_elements()},
                        .in_widths = {ir::DTypeByteSize(in.dtype)},
                        .input_order = {},
                        .chunk = kCheapChunk,
                        .range = range,
                        // Formats are static: the state does not own them.
                        .state = std::shared_ptr<const void>(std::shared_ptr<const void>(), format),
                        .saturate = false,
                        .sign_extend_bits = 0});
}

StatusOr<Kernel> LowerConvert(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  KILN_RETURN_IF_ERROR(ExpectSameShape(*in, "operand", *out, "result"));
  if (NarrowFormatOf(in->dtype) != nullptr || NarrowFormatOf(out->dtype) != nullptr) {
    return LowerNarrowConvert(name, *in, *out);
  }
  const int64_t n = out->num_elements();
  // Sub-byte integers convert in their byte types; a result out of a sub-byte type's range wraps
  // (from an integer) or saturates (from floating point), as XLA's conversions do.
  const bool saturate = ir::IsFloat(in->dtype) || ir::IsComplex(in->dtype);
  const int in_bits = SubByteBits(in->dtype), out_bits = SubByteBits(out->dtype);
  return DispatchElem(ByteDType(in->dtype), [&]<typename From>() -> StatusOr<Kernel> {
    if constexpr (std::is_void_v<From>) {
      return UnsupportedDType(name, in->dtype);
    } else {
      const int w = static_cast<int>(sizeof(From));
      // Same stored bytes (an unsigned sub-byte integer widened to a wider unsigned type of one
      // byte): the result is the operand.
      if (in->dtype == out->dtype ||
          (ByteDType(in->dtype) == ir::DType::kU8 && ByteDType(out->dtype) == ir::DType::kU8 &&
           in_bits != 0 && (out_bits == 0 || out_bits >= in_bits))) {
        (void)n;
        (void)w;
        return Kernel::Alias(0);
      }
      return DispatchElem(ByteDType(out->dtype), [&]<typename To>() -> StatusOr<Kernel> {
        if constexpr (std::is_void_v<To>) {
          return UnsupportedDType(name, out->dtype);
        } else if constexpr (std::is_same_v<To, From>) {
          // Between a byte type and a sub-byte type of its signedness, or two such sub-byte types.
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {w},
                                .input_order = {},
                                .chunk = kCheapChunk,
                                .range = &CopyRange<To>,
                                .state = nullptr,
                                .saturate = saturate,
                                .sign_extend_bits = SignExtendBits(in->dtype, name),
                                .code = {lower::MapOp::kCopy, in->dtype, out->dtype}});
        } else {
          return MakeMapKernel({.name = name,
                                .out_type = *out,
                                .in_elements = {n},
                                .in_widths = {w},
                                .input_order = {},
                                .chunk = kCheapChunk,
                                .range = &ConvertRange<To, From>,
                                .state = nullptr,
                                .saturate = saturate,
                                .sign_extend_bits = SignExtendBits(in->dtype, name),
                                .code = {lower::MapOp::kConvert, in->dtype, out->dtype}});
        }
      });
    }
  });
}

// ---- bitcast_convert ----

// Packs runs of narrow elements into wider ones or splits wide ones into runs of narrow ones,
// element 0 in the lowest bits (as XLA:CPU does), when either side is a sub-byte type.
Kernel MakeBitcastRepack(int in_bits, int out_bits, int64_t in_elements, int in_bytes,
                         int out_bytes) {
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckOutputs(out, 1));
    const auto* x = static_cast<const uint8_t*>(in[0].data());
    auto* y = static_cast<uint8_t*>(out[0].data());
    auto load = [&](int64_t i) {
      uint64_t v = 0;
      std::memcpy(&v, x + i * in_bytes, static_cast<size_t>(in_bytes));  // little-endian
      return in_bits < 64 ? v & ((uint64_t{1} << in_bits) - 1) : v;
    };
    auto store = [&](int64_t i, uint64_t v) {
      if (out_bits < 64) v &= (uint64_t{1} << out_bits) - 1;
      std::memcpy(y + i * out_bytes, &v, static_cast<size_t>(out_bytes));
    };
    if (in_bits > out_bits) {
      const int k = in_bits / out_bits;
      for (int64_t i = 0; i < in_elements; ++i) {
        const uint64_t v = load(i);
        for (int j = 0; j < k; ++j) store(i * k + j, v >> (j * out_bits));
      }
    } else {
      const int k = out_bits / in_bits;
      for (int64_t i = 0; i < in_elements / k; ++i) {
        uint64_t v = 0;
        for (int j = 0; j < k; ++j) v |= load(i * k + j) << (j * in_bits);
        store(i, v);
      }
    }
    return Status::Ok();
  });
}

// Reinterprets the bits: the result aliases the operand's storage (little-endian, as the spec's
// example shows) when both are whole bytes per element; sub-byte types are repacked.
StatusOr<Kernel> LowerBitcastConvert(LowerContext& ctx) {
  const std::string& name = ctx.op().name;
  KILN_RETURN_IF_ERROR(ExpectArity(ctx, 1, 1, 1));
  KILN_ASSIGN_OR_RETURN(const ir::Type* in, OperandTensor(ctx, 0));
  KILN_ASSIGN_OR_RETURN(const ir::Type* out, ResultTensor(ctx, 0));
  const int in_w = ir::DTypeByteSize(in->dtype), out_w = ir::DTypeByteSize(out->dtype);
  if (in_w == 0 || in->dtype == ir::DType::kToken) return UnsupportedDType(name, in->dtype);
  if (out_w == 0 || out->dtype == ir::DType::kToken) return UnsupportedDType(name, out->dtype);
  if (ir::IsComplex(in->dtype) != ir::IsComplex(out->dtype)) {
    return InvalidArgument("cannot bitcast between complex and non-complex types");
  }
  const int in_bits = ir::DTypeBits(in->dtype), out_bits = ir::DTypeBits(out->dtype);
  if (in_bits == 6 || out_bits == 6)
    return UnsupportedDType(name, in_bits == 6 ? in->dtype : out->dtype);
  bool shape_ok;
  if (in_bits == out_bits) {
    shape_ok = in->dims == out->dims;
  } else if (out_bits < in_bits) {
    // Each operand element becomes a trailing run of in_bits/out_bits result elements.
    shape_ok = out->rank() == in->rank() + 1 &&
               std::equal(in->dims.begin(), in->dims.end(), out->dims.begin()) &&
               out->dims.back() * out_bits == in_bits;
  } else {
    shape_ok = in->rank() == out->rank() + 1 &&
               std::equal(out->dims.begin(), out->dims.end(), in->dims.begin()) &&
               in->dims.back() * in_bits == out_bits;
  }
  if (!shape_ok) {
    return InvalidArgument("cannot bitcast " + TypeString(*in) + " to " + TypeString(*out));
  }
  // Same bits in the same bytes (sub-byte types of one width share the stored form): the result
  // views the operand.
  if (in_bits == out_bits || (in_bits % 8 == 0 && out_bits % 8 == 0)) return Kernel::Alias(0);
  return MakeBitcastRepack(in_bits, out_bits, in->num_elements(), in_w, out_w);
}

}  // namespace kiln::kernels::elementwise
