// XLA FFI on Kiln: the handlers and user types clients register (through the PJRT FFI extension,
// pjrt/ffi_extension.cc, or a handler library's own XLA_FFI_Handler_Register / Type_Register
// calls), the user data an execution carries (PJRT_ExecuteContext), and the XLA_FFI_Api function
// table handlers call back into. kernels/ffi_call.cc turns a stablehlo.custom_call to a registered
// target into a call of its handler.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "abi/xla_ffi_api.h"
#include "support/status.h"

namespace kiln::runtime {

// The platform names a handler may be registered under to run on Kiln (case-insensitive): Kiln's
// own, and the names XLA's CPU backend answers to, so a library registered for the CPU works too.
bool IsKilnFfiPlatform(std::string_view platform);

struct FfiHandler {
  XLA_FFI_Handler* execute = nullptr;
  XLA_FFI_Handler* instantiate = nullptr;  // optional; Kiln runs it once per compiled call site
  uint32_t traits = 0;
};

// Registers `name` (a second registration of the same handler is a no-op; another handler under
// the same name is ALREADY_EXISTS). Asks the handler for its metadata first: a handler built
// against an FFI API of another major version is refused.
Status RegisterFfiHandler(std::string_view name, const FfiHandler& handler);
// The handler registered as `name`, or nullptr.
const FfiHandler* FindFfiHandler(std::string_view name);

// Registers user type `name`: with *type_id == 0 assigns a new id (the same name always gets the
// same id); otherwise checks that the id is the name's. `deleter` may be null.
Status RegisterFfiType(std::string_view name, int64_t* type_id, void (*deleter)(void*));

// The user data of one PJRT_ExecuteContext: objects by type id, owned by the client.
class FfiUserData {
 public:
  Status Add(int64_t type_id, void* data);
  void* Find(int64_t type_id) const;

 private:
  std::vector<std::pair<int64_t, void*>> entries_;
};

// What a handler's XLA_FFI_ExecutionContext gives it during one call.
struct FfiCallContext {
  const FfiUserData* user_data = nullptr;  // null: the execution carries none
  int64_t run_id = 0;
  int32_t device_ordinal = 0;
  // Per call site: state the instantiate stage created (XLA_FFI_State_Set), by type id.
  std::vector<std::pair<int64_t, void*>>* state = nullptr;
  bool may_set_state = false;  // the instantiate stage only
};

// The function table handed to handlers in every call frame.
const XLA_FFI_Api* FfiApi();
// An XLA_FFI_ExecutionContext* is a FfiCallContext*.
inline XLA_FFI_ExecutionContext* AsFfiContext(FfiCallContext* c) {
  return reinterpret_cast<XLA_FFI_ExecutionContext*>(c);
}

// The message of a handler's error, and destroys it (null: success).
Status TakeFfiError(XLA_FFI_Error* error, std::string_view target);

// An asynchronous handler's future (the call frame's `future`, null for a synchronous one): waits
// for it, then gives its error; frees the future.
Status AwaitFfiFuture(XLA_FFI_Future* future, std::string_view target);

// Frees a state object through the deleter its type was registered with (if any).
void DeleteFfiState(int64_t type_id, void* state);

}  // namespace kiln::runtime
