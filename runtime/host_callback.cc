#include "runtime/host_callback.h"

#include <atomic>
#include <string>

namespace kiln::runtime {
namespace {

std::atomic<Kiln_HostCallbackFn> g_trampoline{nullptr};

}  // namespace

void SetHostCallback(Kiln_HostCallbackFn fn) { g_trampoline.store(fn, std::memory_order_release); }

Status InvokeHostCallback(uint64_t id, std::span<void* const> args,
                          std::span<void* const> results) {
  Kiln_HostCallbackFn fn = g_trampoline.load(std::memory_order_acquire);
  if (fn == nullptr) {
    return FailedPrecondition(
        "host callback " + std::to_string(id) +
        ": no callback trampoline is installed (Kiln's Python package installs it when it lowers a "
        "callback; was this program compiled by another process?)");
  }
  char message[4096] = {0};
  const int32_t rc =
      fn(id, static_cast<int32_t>(args.size()), args.data(), static_cast<int32_t>(results.size()),
         results.data(), message, sizeof(message));
  if (rc != 0) {
    message[sizeof(message) - 1] = '\0';
    return Internal(std::string("host callback failed: ") +
                    (message[0] != '\0' ? message : "(no message)"));
  }
  return Status::Ok();
}

}  // namespace kiln::runtime
