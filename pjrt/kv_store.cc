#include "pjrt/kv_store.h"

#include <algorithm>
#include <limits>
#include <memory>

#include "pjrt/error.h"

namespace kiln::pjrt {
namespace {

constexpr char kKeyPrefix[] = "kiln:";

// The framework's callbacks report failures through an error the plugin makes: a Kiln error,
// which is read back and freed here.
PJRT_Error* MakeCallbackError(PJRT_Error_Code code, const char* message, size_t size) {
  return new KilnError(CallerStatus(code, message, size));
}
PJRT_CallbackError kMakeCallbackError = &MakeCallbackError;

Status TakeError(PJRT_Error* error, std::string_view what, std::string_view key) {
  if (error == nullptr) return Status::Ok();
  std::unique_ptr<KilnError> owned(static_cast<KilnError*>(error));
  return owned->status.WithContext("key-value store " + std::string(what) + " of '" +
                                   std::string(key) + "'");
}

}  // namespace

Status CallbackKeyValueStore::Put(std::string_view key, std::string_view value) {
  const std::string full = kKeyPrefix + std::string(key);
  PJRT_KeyValuePutCallback_Args args{};
  args.struct_size = PJRT_KeyValuePutCallback_Args_STRUCT_SIZE;
  args.key = full.data();
  args.key_size = full.size();
  args.value = value.data();
  args.value_size = value.size();
  args.callback_error = &kMakeCallbackError;
  args.user_arg = cb_.put_arg;
  return TakeError(cb_.put(&args), "put", full);
}

StatusOr<std::string> CallbackKeyValueStore::Get(std::string_view key,
                                                 std::chrono::milliseconds timeout) {
  const std::string full = kKeyPrefix + std::string(key);
  PJRT_KeyValueGetCallback_Args args{};
  args.struct_size = PJRT_KeyValueGetCallback_Args_STRUCT_SIZE;
  args.key = full.data();
  args.key_size = full.size();
  args.timeout_in_ms =
      static_cast<int>(std::clamp<int64_t>(timeout.count(), 0, std::numeric_limits<int>::max()));
  args.callback_error = &kMakeCallbackError;
  args.user_arg = cb_.get_arg;
  KILN_RETURN_IF_ERROR(TakeError(cb_.get(&args), "get", full));
  std::string value =
      args.value == nullptr ? std::string() : std::string(args.value, args.value_size);
  if (args.value != nullptr && args.value_deleter_callback != nullptr) {
    args.value_deleter_callback(args.value);
  }
  return value;
}

}  // namespace kiln::pjrt
