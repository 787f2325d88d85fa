// PJRT_Event_* entry points.
#include "pjrt/event.h"

#include "pjrt/args_check.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

namespace kiln::pjrt {

PJRT_Error* Event_Destroy(PJRT_Event_Destroy_Args* args) {
  return Guard("PJRT_Event_Destroy", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Event_Destroy_Args, event, "PJRT_Event_Destroy");
    delete args->event;
    return Status::Ok();
  });
}

PJRT_Error* Event_IsReady(PJRT_Event_IsReady_Args* args) {
  return Guard("PJRT_Event_IsReady", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Event_IsReady_Args, is_ready, "PJRT_Event_IsReady");
    KILN_CHECK_NOT_NULL(args->event, "PJRT_Event_IsReady");
    args->is_ready = args->event->event->IsReady();
    return Status::Ok();
  });
}

PJRT_Error* Event_Error(PJRT_Event_Error_Args* args) {
  return Guard("PJRT_Event_Error", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Event_Error_Args, event, "PJRT_Event_Error");
    KILN_CHECK_NOT_NULL(args->event, "PJRT_Event_Error");
    const runtime::EventRef& e = args->event->event;
    if (!e->IsReady()) {
      return FailedPrecondition("PJRT_Event_Error: the event is not ready yet");
    }
    return e->status();
  });
}

PJRT_Error* Event_Await(PJRT_Event_Await_Args* args) {
  return Guard("PJRT_Event_Await", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Event_Await_Args, event, "PJRT_Event_Await");
    KILN_CHECK_NOT_NULL(args->event, "PJRT_Event_Await");
    runtime::EventRef e = args->event->event;
    return e->Await();
  });
}

PJRT_Error* Event_OnReady(PJRT_Event_OnReady_Args* args) {
  return Guard("PJRT_Event_OnReady", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Event_OnReady_Args, user_arg, "PJRT_Event_OnReady");
    KILN_CHECK_NOT_NULL(args->event, "PJRT_Event_OnReady");
    KILN_CHECK_NOT_NULL(args->callback, "PJRT_Event_OnReady");
    // Keep the event alive across registration: the callback may run inline and destroy the handle.
    runtime::EventRef keep = args->event->event;
    PJRT_Event_OnReadyCallback callback = args->callback;
    void* user_arg = args->user_arg;
    keep->OnReady([callback, user_arg](const Status& status) {
      // The callback owns the error it receives.
      PJRT_Error* error = nullptr;
      GuardVoid([&] { error = ToPjrtError(status); });
      callback(error, user_arg);
    });
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
