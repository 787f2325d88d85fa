// The PJRT FFI extension (abi/pjrt_ffi_extension.h) and PJRT_ExecuteContext: clients register XLA
// FFI handlers and user types (runtime/ffi.h) and attach user data to an execution.
#pragma once

#include <memory>

#include "abi/pjrt_ffi_extension.h"
#include "runtime/ffi.h"

struct PJRT_ExecuteContext {
  std::shared_ptr<kiln::runtime::FfiUserData> user_data =
      std::make_shared<kiln::runtime::FfiUserData>();
};

namespace kiln::pjrt {

PJRT_FFI_Extension MakeFfiExtension(PJRT_Extension_Base* next);

}  // namespace kiln::pjrt
