// XLA FFI registries and the XLA_FFI_Api table (runtime/ffi.h).
#include "runtime/ffi.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

// The opaque types of the C API, as Kiln defines them.
struct XLA_FFI_Error {
  XLA_FFI_Error_Code code;
  std::string message;
};

struct XLA_FFI_Future {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  XLA_FFI_Error* error = nullptr;
};

namespace kiln::runtime {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, FfiHandler, std::less<>> handlers;
  std::map<std::string, int64_t, std::less<>> type_ids;
  std::map<int64_t, void (*)(void*)> deleters;
  int64_t next_type_id = 1;
};

Registry& Reg() {
  static Registry* r = new Registry();  // never destroyed: handlers may run at exit
  return *r;
}

Status AlreadyExists(std::string m) { return {StatusCode::kAlreadyExists, std::move(m)}; }

XLA_FFI_Error* NewError(XLA_FFI_Error_Code code, std::string message) {
  return new XLA_FFI_Error{code, std::move(message)};
}

FfiCallContext* Ctx(XLA_FFI_ExecutionContext* ctx) {
  return reinterpret_cast<FfiCallContext*>(ctx);
}

// Every API function checks its argument struct before reading it: the caller's struct_size
// must cover the fields up to `last` (XLA's own size for the struct).
#define KILN_FFI_CHECK_ARGS(args, Type, last, name)                                              \
  if ((args) == nullptr) {                                                                       \
    return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT, name ": NULL args");                    \
  }                                                                                              \
  if ((args)->struct_size < KILN_FFI_STRUCT_SIZE(Type, last)) {                                  \
    return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT,                                         \
                    name ": struct_size " + std::to_string((args)->struct_size) +                \
                        " is smaller than " + std::to_string(KILN_FFI_STRUCT_SIZE(Type, last))); \
  }

XLA_FFI_Error* ErrorCreate(XLA_FFI_Error_Create_Args* args) {
  if (args == nullptr) return NewError(XLA_FFI_Error_Code_INTERNAL, "XLA_FFI_Error_Create: NULL");
  return NewError(args->errc, args->message != nullptr ? args->message : "");
}

void ErrorGetMessage(XLA_FFI_Error_GetMessage_Args* args) {
  if (args == nullptr) return;
  args->message = args->error != nullptr ? args->error->message.c_str() : "";
}

void ErrorDestroy(XLA_FFI_Error_Destroy_Args* args) {
  if (args != nullptr) delete args->error;
}

XLA_FFI_Error* HandlerRegister(XLA_FFI_Handler_Register_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_Handler_Register_Args, traits, "XLA_FFI_Handler_Register");
  const std::string_view name(args->name.ptr, args->name.ptr != nullptr ? args->name.len : 0);
  const std::string_view platform(args->platform.ptr,
                                  args->platform.ptr != nullptr ? args->platform.len : 0);
  if (!IsKilnFfiPlatform(platform)) return nullptr;  // a handler for another backend: not Kiln's
  FfiHandler h;
  h.execute = args->bundle.execute;
  h.instantiate = args->bundle.instantiate;
  h.traits = args->traits;
  if (args->bundle.prepare != nullptr || args->bundle.initialize != nullptr) {
    return NewError(XLA_FFI_Error_Code_UNIMPLEMENTED,
                    "Kiln runs the instantiate and execute stages of FFI handlers; " +
                        std::string(name) + " has a prepare or initialize stage");
  }
  Status s = RegisterFfiHandler(name, h);
  return s.ok() ? nullptr : NewError(static_cast<XLA_FFI_Error_Code>(s.code()), s.message());
}

XLA_FFI_Error* StreamGet(XLA_FFI_Stream_Get_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_Stream_Get_Args, stream, "XLA_FFI_Stream_Get");
  return NewError(XLA_FFI_Error_Code_UNIMPLEMENTED,
                  "XLA_FFI_Stream_Get: Kiln runs on the host and has no device stream");
}

XLA_FFI_Error* TypeRegister(XLA_FFI_Type_Register_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_Type_Register_Args, type_id, "XLA_FFI_Type_Register");
  if (args->type_id == nullptr) {
    return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT, "XLA_FFI_Type_Register: NULL type_id");
  }
  void (*deleter)(void*) = nullptr;
  if (args->struct_size >= KILN_FFI_STRUCT_SIZE(XLA_FFI_Type_Register_Args, type_info) &&
      args->type_info != nullptr) {
    deleter = args->type_info->deleter;
  }
  const std::string_view name(args->name.ptr, args->name.ptr != nullptr ? args->name.len : 0);
  Status s = RegisterFfiType(name, &args->type_id->type_id, deleter);
  return s.ok() ? nullptr : NewError(static_cast<XLA_FFI_Error_Code>(s.code()), s.message());
}

XLA_FFI_Error* ExecutionContextGet(XLA_FFI_ExecutionContext_Get_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_ExecutionContext_Get_Args, data,
                      "XLA_FFI_ExecutionContext_Get");
  if (args->ctx == nullptr || args->type_id == nullptr) {
    return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    "XLA_FFI_ExecutionContext_Get: NULL context or type id");
  }
  const FfiCallContext* c = Ctx(args->ctx);
  void* data = c->user_data != nullptr ? c->user_data->Find(args->type_id->type_id) : nullptr;
  if (data == nullptr) {
    return NewError(XLA_FFI_Error_Code_NOT_FOUND,
                    "XLA_FFI_ExecutionContext_Get: the execution context has no user data of type "
                    "id " +
                        std::to_string(args->type_id->type_id));
  }
  args->data = data;
  return nullptr;
}

XLA_FFI_Error* StateSet(XLA_FFI_State_Set_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_State_Set_Args, state, "XLA_FFI_State_Set");
  if (args->ctx == nullptr || args->type_id == nullptr || Ctx(args->ctx)->state == nullptr ||
      !Ctx(args->ctx)->may_set_state) {
    return NewError(XLA_FFI_Error_Code_FAILED_PRECONDITION,
                    "XLA_FFI_State_Set: state is set only in the instantiate stage");
  }
  auto& state = *Ctx(args->ctx)->state;
  if (!state.empty()) {
    return NewError(XLA_FFI_Error_Code_ALREADY_EXISTS, "XLA_FFI_State_Set: state is already set");
  }
  state.emplace_back(args->type_id->type_id, args->state);
  return nullptr;
}

XLA_FFI_Error* StateGet(XLA_FFI_State_Get_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_State_Get_Args, state, "XLA_FFI_State_Get");
  if (args->ctx == nullptr || args->type_id == nullptr || Ctx(args->ctx)->state == nullptr ||
      Ctx(args->ctx)->state->empty()) {
    return NewError(XLA_FFI_Error_Code_NOT_FOUND, "XLA_FFI_State_Get: no state was set");
  }
  const auto& entry = Ctx(args->ctx)->state->front();
  if (entry.first != args->type_id->type_id) {
    return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    "XLA_FFI_State_Get: the state has type id " + std::to_string(entry.first) +
                        ", not " + std::to_string(args->type_id->type_id));
  }
  args->state = entry.second;
  return nullptr;
}

XLA_FFI_Error* MemoryAllocate(XLA_FFI_DeviceMemory_Allocate_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_DeviceMemory_Allocate_Args, data,
                      "XLA_FFI_DeviceMemory_Allocate");
  size_t alignment = std::max<size_t>(args->alignment, alignof(std::max_align_t));
  if ((alignment & (alignment - 1)) != 0) {
    return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT,
                    "XLA_FFI_DeviceMemory_Allocate: alignment " + std::to_string(args->alignment) +
                        " is not a power of two");
  }
  const size_t size = (std::max<size_t>(args->size, 1) + alignment - 1) / alignment * alignment;
  args->data = std::aligned_alloc(alignment, size);
  if (args->data == nullptr) {
    return NewError(XLA_FFI_Error_Code_RESOURCE_EXHAUSTED,
                    "XLA_FFI_DeviceMemory_Allocate: out of memory for " +
                        std::to_string(args->size) + " bytes");
  }
  return nullptr;
}

XLA_FFI_Error* MemoryFree(XLA_FFI_DeviceMemory_Free_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_DeviceMemory_Free_Args, data, "XLA_FFI_DeviceMemory_Free");
  std::free(args->data);
  return nullptr;
}

// Tasks run on the calling thread, which the API allows (a pool of one thread).
XLA_FFI_Error* ThreadPoolSchedule(XLA_FFI_ThreadPool_Schedule_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_ThreadPool_Schedule_Args, data, "XLA_FFI_ThreadPool_Schedule");
  if (args->task != nullptr) args->task(args->data);
  return nullptr;
}

XLA_FFI_Error* ThreadPoolNumThreads(XLA_FFI_ThreadPool_NumThreads_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_ThreadPool_NumThreads_Args, num_threads,
                      "XLA_FFI_ThreadPool_NumThreads");
  if (args->num_threads != nullptr) *args->num_threads = 1;
  return nullptr;
}

XLA_FFI_Error* FutureCreate(XLA_FFI_Future_Create_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_Future_Create_Args, extension_start, "XLA_FFI_Future_Create");
  args->future = new XLA_FFI_Future();
  return nullptr;
}

XLA_FFI_Error* FutureSetAvailable(XLA_FFI_Future_SetAvailable_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_Future_SetAvailable_Args, future,
                      "XLA_FFI_Future_SetAvailable");
  if (args->future == nullptr) return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT, "NULL future");
  std::lock_guard<std::mutex> lock(args->future->mu);
  args->future->done = true;
  args->future->cv.notify_all();
  return nullptr;
}

XLA_FFI_Error* FutureSetError(XLA_FFI_Future_SetError_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_Future_SetError_Args, error, "XLA_FFI_Future_SetError");
  if (args->future == nullptr) return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT, "NULL future");
  std::lock_guard<std::mutex> lock(args->future->mu);
  args->future->error = args->error;
  args->future->done = true;
  args->future->cv.notify_all();
  return nullptr;
}

XLA_FFI_Error* RunIdGet(XLA_FFI_RunId_Get_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_RunId_Get_Args, run_id, "XLA_FFI_RunId_Get");
  if (args->ctx == nullptr) return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT, "NULL context");
  args->run_id = Ctx(args->ctx)->run_id;
  return nullptr;
}

XLA_FFI_Error* DeviceOrdinalGet(XLA_FFI_DeviceOrdinal_Get_Args* args) {
  KILN_FFI_CHECK_ARGS(args, XLA_FFI_DeviceOrdinal_Get_Args, device_ordinal,
                      "XLA_FFI_DeviceOrdinal_Get");
  if (args->ctx == nullptr) return NewError(XLA_FFI_Error_Code_INVALID_ARGUMENT, "NULL context");
  args->device_ordinal = Ctx(args->ctx)->device_ordinal;
  return nullptr;
}

#undef KILN_FFI_CHECK_ARGS

XLA_FFI_Api MakeApi() {
  XLA_FFI_Api api;
  std::memset(&api, 0, sizeof(api));
  api.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get);
  api.api_version.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Api_Version, minor_version);
  api.api_version.major_version = XLA_FFI_API_MAJOR;
  api.api_version.minor_version = XLA_FFI_API_MINOR;
  api.XLA_FFI_Error_Create = &ErrorCreate;
  api.XLA_FFI_Error_GetMessage = &ErrorGetMessage;
  api.XLA_FFI_Error_Destroy = &ErrorDestroy;
  api.XLA_FFI_Handler_Register = &HandlerRegister;
  api.XLA_FFI_Stream_Get = &StreamGet;
  api.XLA_FFI_Type_Register = &TypeRegister;
  api.XLA_FFI_ExecutionContext_Get = &ExecutionContextGet;
  api.XLA_FFI_State_Set = &StateSet;
  api.XLA_FFI_State_Get = &StateGet;
  api.XLA_FFI_DeviceMemory_Allocate = &MemoryAllocate;
  api.XLA_FFI_DeviceMemory_Free = &MemoryFree;
  api.XLA_FFI_ThreadPool_Schedule = &ThreadPoolSchedule;
  api.XLA_FFI_ThreadPool_NumThreads = &ThreadPoolNumThreads;
  api.XLA_FFI_Future_Create = &FutureCreate;
  api.XLA_FFI_Future_SetAvailable = &FutureSetAvailable;
  api.XLA_FFI_Future_SetError = &FutureSetError;
  api.XLA_FFI_RunId_Get = &RunIdGet;
  api.XLA_FFI_DeviceOrdinal_Get = &DeviceOrdinalGet;
  return api;
}

// Asks `handler` for its metadata (the FFI API version it was built against).
Status ProbeMetadata(std::string_view name, XLA_FFI_Handler* handler) {
  XLA_FFI_Metadata metadata;
  std::memset(&metadata, 0, sizeof(metadata));
  metadata.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Metadata, traits);
  metadata.api_version.major_version = -1;
  XLA_FFI_Metadata_Extension ext;
  std::memset(&ext, 0, sizeof(ext));
  ext.extension_base.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Metadata_Extension, metadata);
  ext.extension_base.type = XLA_FFI_Extension_Metadata;
  ext.metadata = &metadata;
  XLA_FFI_CallFrame frame;
  std::memset(&frame, 0, sizeof(frame));
  frame.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_CallFrame, attrs);
  frame.extension_start = &ext.extension_base;
  frame.api = FfiApi();
  frame.stage = XLA_FFI_ExecutionStage_INSTANTIATE;  // a handler that ignores the probe skips it
  frame.args.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Args, args);
  frame.rets.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Rets, rets);
  frame.attrs.struct_size = KILN_FFI_STRUCT_SIZE(XLA_FFI_Attrs, attrs);
  KILN_RETURN_IF_ERROR(TakeFfiError(handler(&frame), name));
  const int major = metadata.api_version.major_version;
  if (major != -1 && major != XLA_FFI_API_MAJOR) {
    return FailedPrecondition(
        "FFI handler " + std::string(name) + " was built for XLA FFI API " + std::to_string(major) +
        "." + std::to_string(metadata.api_version.minor_version) + "; Kiln serves " +
        std::to_string(XLA_FFI_API_MAJOR) + "." + std::to_string(XLA_FFI_API_MINOR));
  }
  return Status::Ok();
}

}  // namespace

bool IsKilnFfiPlatform(std::string_view platform) {
  std::string p(platform);
  for (char& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return p == "kiln" || p == "host" || p == "cpu";
}

Status RegisterFfiHandler(std::string_view name, const FfiHandler& handler) {
  if (name.empty()) return InvalidArgument("an FFI handler needs a target name");
  if (handler.execute == nullptr) {
    return InvalidArgument("FFI handler " + std::string(name) + " has no execute stage");
  }
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.handlers.find(name);
    if (it != r.handlers.end()) {
      if (it->second.execute == handler.execute && it->second.instantiate == handler.instantiate) {
        return Status::Ok();
      }
      return AlreadyExists("another FFI handler is already registered as " + std::string(name));
    }
  }
  KILN_RETURN_IF_ERROR(ProbeMetadata(name, handler.execute));
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  r.handlers.emplace(std::string(name), handler);
  return Status::Ok();
}

const FfiHandler* FindFfiHandler(std::string_view name) {
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.handlers.find(name);
  return it == r.handlers.end() ? nullptr : &it->second;  // map nodes never move or go away
}

Status RegisterFfiType(std::string_view name, int64_t* type_id, void (*deleter)(void*)) {
  if (name.empty()) return InvalidArgument("an FFI type needs a name");
  if (type_id == nullptr)
    return InvalidArgument("FFI type " + std::string(name) + ": NULL type id");
  Registry& r = Reg();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.type_ids.find(name);
  if (it == r.type_ids.end()) {
    if (*type_id != 0) {
      for (const auto& [other, id] : r.type_ids) {
        if (id == *type_id) {
          return AlreadyExists("FFI type id " + std::to_string(id) + " already belongs to " +
                               other + ", not " + std::string(name));
        }
      }
      r.next_type_id = std::max(r.next_type_id, *type_id + 1);
    } else {
      *type_id = r.next_type_id++;
    }
    it = r.type_ids.emplace(std::string(name), *type_id).first;
  } else if (*type_id == 0) {
    *type_id = it->second;
  } else if (*type_id != it->second) {
    return InvalidArgument("FFI type " + std::string(name) + " has id " +
                           std::to_string(it->second) + ", not " + std::to_string(*type_id));
  }
  if (deleter != nullptr) r.deleters[*type_id] = deleter;
  return Status::Ok();
}

void DeleteFfiState(int64_t type_id, void* state) {
  void (*deleter)(void*) = nullptr;
  {
    Registry& r = Reg();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.deleters.find(type_id);
    if (it != r.deleters.end()) deleter = it->second;
  }
  if (deleter != nullptr && state != nullptr) deleter(state);
}

Status FfiUserData::Add(int64_t type_id, void* data) {
  for (const auto& e : entries_) {
    if (e.first == type_id) {
      return AlreadyExists("the execute context already has user data of type id " +
                           std::to_string(type_id));
    }
  }
  entries_.emplace_back(type_id, data);
  return Status::Ok();
}

void* FfiUserData::Find(int64_t type_id) const {
  for (const auto& e : entries_) {
    if (e.first == type_id) return e.second;
  }
  return nullptr;
}

const XLA_FFI_Api* FfiApi() {
  static const XLA_FFI_Api api = MakeApi();
  return &api;
}

Status TakeFfiError(XLA_FFI_Error* error, std::string_view target) {
  if (error == nullptr) return Status::Ok();
  const StatusCode code = error->code == XLA_FFI_Error_Code_OK
                              ? StatusCode::kInternal
                              : static_cast<StatusCode>(std::clamp<int>(error->code, 1, 16));
  Status s(code, "FFI handler " + std::string(target) + " failed: " + error->message);
  delete error;
  return s;
}

Status AwaitFfiFuture(XLA_FFI_Future* future, std::string_view target) {
  if (future == nullptr) return Status::Ok();
  XLA_FFI_Error* error = nullptr;
  {
    std::unique_lock<std::mutex> lock(future->mu);
    future->cv.wait(lock, [&] { return future->done; });
    error = future->error;
  }
  delete future;
  return TakeFfiError(error, target);
}

}  // namespace kiln::runtime
