// stablehlo.custom_call to a target registered as an XLA FFI handler (runtime/ffi.h): what
// jax.ffi.ffi_call emits (api_version = 4, attributes in `mhlo.backend_config`). The call's
// attributes become the handler's XLA FFI attributes once, at compile time (ffi_call_attrs.cc);
// each run builds a call frame over the operand and result buffers and calls the handler.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "abi/xla_ffi_api.h"
#include "ir/attr.h"
#include "lower/op_registry.h"
#include "runtime/ffi.h"
#include "support/status.h"

namespace kiln::kernels {

// An XLA_FFI_Attrs dictionary and everything its pointers point into. Not copyable or movable:
// the frame's pointers reach into it.
class FfiAttrs {
 public:
  FfiAttrs() = default;
  ~FfiAttrs();  // Value is complete only in ffi_call_attrs.cc
  FfiAttrs(const FfiAttrs&) = delete;
  FfiAttrs& operator=(const FfiAttrs&) = delete;

  // Converts a dictionary attribute (entries sorted by name, as handlers expect). `where` names
  // the call in errors; an attribute of a kind XLA FFI has no form for is UNIMPLEMENTED.
  static StatusOr<std::unique_ptr<FfiAttrs>> FromDict(
      const std::vector<std::pair<std::string, ir::Attr>>& entries, const std::string& where);

  XLA_FFI_Attrs& attrs() { return attrs_; }

 private:
  struct Value;
  Status Add(const std::string& name, const ir::Attr& a, const std::string& where);

  std::vector<std::string> names_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<XLA_FFI_ByteSpan> name_spans_;
  std::vector<XLA_FFI_ByteSpan*> name_ptrs_;
  std::vector<XLA_FFI_AttrType> types_;
  std::vector<void*> ptrs_;
  XLA_FFI_Attrs attrs_{};
};

// The XLA FFI element type of a Kiln dtype (INVALID for none).
XLA_FFI_DataType FfiDataType(ir::DType dtype);

// The lowering of a call to registered handler `handler`.
StatusOr<lower::Kernel> LowerFfiCall(lower::LowerContext& ctx, const std::string& target,
                                     const runtime::FfiHandler& handler);

}  // namespace kiln::kernels
