// PJRT_Event: a handle sharing ownership of a runtime::Event. Destroying the handle (even from
// inside one of its own OnReady callbacks) never cancels or frees callbacks already registered.
#pragma once

#include <utility>

#include "abi/pjrt_c_api.h"
#include "runtime/event.h"

struct PJRT_Event {
  explicit PJRT_Event(kiln::runtime::EventRef e) : event(std::move(e)) {}
  kiln::runtime::EventRef event;
};

namespace kiln::pjrt {

inline PJRT_Event* NewEvent(runtime::EventRef event) { return new PJRT_Event(std::move(event)); }

}  // namespace kiln::pjrt
