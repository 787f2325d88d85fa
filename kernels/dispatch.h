// Dtype dispatch for kernels: the one dispatcher of ir/dtype_dispatch.h, calling a template with
// the C++ element type of a runtime DType. Kernels state which dtypes they accept by the named set
// they dispatch over (ir::kReals, ir::kBlasTypes, ...), and a dtype outside it becomes an
// UNIMPLEMENTED status naming the op and dtype.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "ir/dtype.h"
#include "ir/dtype_dispatch.h"
#include "support/status.h"

namespace kiln::kernels {

// The element storage types (ir/dtype_dispatch.h); conversions of the 16-bit floats live in
// kernels/float16.h.
using ir::bf16_t;
using ir::f16_t;
using ir::PredByte;

// T, but uint8_t for pred: for kernels that read a pred as its byte (0 or 1), like a u8.
template <typename T>
using PredAsByte = std::conditional_t<std::is_same_v<T, PredByte>, uint8_t, T>;

inline Status UnsupportedDType(std::string_view op, ir::DType t) {
  return Unimplemented(std::string(op) + " does not support element type " +
                       std::string(ir::DTypeName(t)));
}

// Calls fn.template operator()<T>() with the storage type T of `t` when `t` is in `set`, else
// returns UnsupportedDType(op, t). fn returns a Status or StatusOr (the type it returns for the
// set's first member).
template <ir::DTypeSet set, typename Fn>
auto Dispatch(std::string_view op, ir::DType t, Fn&& fn) {
  return ir::VisitDType<set>(
      t, [&](auto tag) { return fn.template operator()<ir::TagType<decltype(tag)>>(); },
      [&] { return UnsupportedDType(op, t); });
}

}  // namespace kiln::kernels
