// PJRT_Error: a kiln::Status handed across the C boundary. Since 0.107 the header defines
// PJRT_Error as a struct whose single member is a vtable pointer; Kiln derives from it and leaves
// the vtable NULL (jaxlib only goes through the PJRT_Error_* API functions).
#pragma once

#include <exception>
#include <string>
#include <utility>

#include "abi/pjrt_c_api.h"
#include "support/status.h"

namespace kiln::pjrt {

struct KilnError : PJRT_Error {
  explicit KilnError(Status s) : status(std::move(s)) { vtable = nullptr; }
  Status status;
};

// NULL for an OK status, else a new error the caller owns (freed by PJRT_Error_Destroy).
PJRT_Error* ToPjrtError(Status status);

// A status a caller describes (an error code and message it passes in): codes outside the
// known range become UNKNOWN; a NULL message is empty.
inline Status CallerStatus(int code, const char* message, size_t size) {
  if (code <= 0 || code > static_cast<int>(StatusCode::kUnauthenticated)) {
    code = static_cast<int>(StatusCode::kUnknown);
  }
  return Status(static_cast<StatusCode>(code),
                message == nullptr ? std::string() : std::string(message, size));
}

// "PJRT_Foo: ", the lead of a message that names the entry point.
inline std::string Prefix(const char* function) { return std::string(function) + ": "; }

// Runs an entry point body, turning a non-OK status or any escaping C++ exception into a
// PJRT_Error. Every PJRT_* function with a PJRT_Error* result goes through this.
template <typename Fn>
PJRT_Error* Guard(const char* function, Fn&& body) noexcept {
  try {
    return ToPjrtError(body());
  } catch (const std::exception& e) {
    try {
      return ToPjrtError(Internal(std::string(function) + ": internal error: " + e.what()));
    } catch (...) {
      return nullptr;  // out of memory while reporting; nothing better is possible
    }
  } catch (...) {
    try {
      return ToPjrtError(Internal(std::string(function) + ": internal error (unknown exception)"));
    } catch (...) {
      return nullptr;
    }
  }
}

// For functions that cannot report errors (destroyers, callbacks): swallow everything.
template <typename Fn>
void GuardVoid(Fn&& body) noexcept {
  try {
    body();
  } catch (...) {
  }
}

}  // namespace kiln::pjrt
