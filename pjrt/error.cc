// PJRT_Error_* entry points.
#include "pjrt/error.h"

#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"

namespace kiln::pjrt {

PJRT_Error* ToPjrtError(Status status) {
  if (status.ok()) return nullptr;
  return new KilnError(std::move(status));
}

namespace {
const KilnError* AsKiln(const PJRT_Error* e) { return static_cast<const KilnError*>(e); }
}  // namespace

void Error_Destroy(PJRT_Error_Destroy_Args* args) {
  // jaxlib destroys NULL errors (e.g. the result of PJRT_Event_Error on a successful event).
  if (args == nullptr || args->struct_size < KILN_FIELD_END(PJRT_Error_Destroy_Args, error)) return;
  delete static_cast<KilnError*>(args->error);
}

void Error_Message(PJRT_Error_Message_Args* args) {
  if (args == nullptr ||
      args->struct_size < KILN_FIELD_END(PJRT_Error_Message_Args, message_size)) {
    return;
  }
  if (args->error == nullptr) {
    args->message = "";
    args->message_size = 0;
    return;
  }
  const std::string& m = AsKiln(args->error)->status.message();
  args->message = m.c_str();
  args->message_size = m.size();
}

PJRT_Error* Error_GetCode(PJRT_Error_GetCode_Args* args) {
  return Guard("PJRT_Error_GetCode", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Error_GetCode_Args, code, "PJRT_Error_GetCode");
    KILN_CHECK_NOT_NULL(args->error, "PJRT_Error_GetCode");
    args->code = static_cast<PJRT_Error_Code>(AsKiln(args->error)->status.code());
    return Status::Ok();
  });
}

PJRT_Error* Error_ForEachPayload(PJRT_Error_ForEachPayload_Args* args) {
  // Kiln errors carry no payloads. The framework calls this for every error it converts (when
  // PJRT_Api.struct_size covers the slot), so it must succeed without visiting anything.
  (void)args;
  return nullptr;
}

}  // namespace kiln::pjrt
