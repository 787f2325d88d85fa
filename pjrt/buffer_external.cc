// PJRT_Buffer access from outside the runtime: raw data pointers (x.unsafe_buffer_pointer(),
// DLPack export) and the external reference counts that keep the memory alive while a consumer
// (numpy, torch, another framework) holds it. Kiln arrays are immutable once produced and live in
// host memory, so a pointer to a ready array is valid for as long as a reference is held.
#include <string>

#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"

namespace kiln::pjrt {
namespace {

// The address of `buffer`'s data, once it is computed (a pointer to pending memory would be a
// lie). An error of the computation that produces it is returned as is.
StatusOr<void*> ReadyDataPointer(PJRT_Buffer* buffer, const char* function) {
  KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef ref, buffer->Get(function));
  KILN_ASSIGN_OR_RETURN(runtime::Array array, ref->Await());
  return array.valid() ? array.data() : nullptr;
}

}  // namespace

PJRT_Error* Buffer_UnsafePointer(PJRT_Buffer_UnsafePointer_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_UnsafePointer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_UnsafePointer_Args, buffer_pointer, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    KILN_ASSIGN_OR_RETURN(void* p, ReadyDataPointer(args->buffer, kFn));
    args->buffer_pointer = reinterpret_cast<uintptr_t>(p);
    return Status::Ok();
  });
}

PJRT_Error* Buffer_OpaqueDeviceMemoryDataPointer(
    PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_OpaqueDeviceMemoryDataPointer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_OpaqueDeviceMemoryDataPointer_Args, device_memory_ptr, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    KILN_ASSIGN_OR_RETURN(args->device_memory_ptr, ReadyDataPointer(args->buffer, kFn));
    return Status::Ok();
  });
}

PJRT_Error* Buffer_IncreaseExternalReferenceCount(
    PJRT_Buffer_IncreaseExternalReferenceCount_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_IncreaseExternalReferenceCount";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_IncreaseExternalReferenceCount_Args, buffer, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    return args->buffer->AddExternalReference(kFn);
  });
}

PJRT_Error* Buffer_DecreaseExternalReferenceCount(
    PJRT_Buffer_DecreaseExternalReferenceCount_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_DecreaseExternalReferenceCount";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_DecreaseExternalReferenceCount_Args, buffer, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    return args->buffer->DropExternalReference(kFn);
  });
}

}  // namespace kiln::pjrt
