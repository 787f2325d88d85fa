// PJRT_Buffer access from outside the runtime: raw data pointers (x.unsafe_buffer_pointer(),
// DLPack export), the external reference counts that keep the memory alive while a consumer
// (numpy, torch, another framework) holds it, views of memory someone else owns
// (PJRT_Client_CreateViewOfDeviceBuffer, DLPack import), and the registry of live buffers behind
// Kiln's extension (abi/kiln_extension.h, version 2). Kiln arrays are immutable once produced and
// live in host memory, so a pointer to a ready array is valid for as long as a reference is held.
#include <cinttypes>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <utility>

#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/host_copy.h"
#include "runtime/array.h"

namespace kiln::pjrt {
namespace {

// Views must be aligned like the memory XLA:CPU accepts for views (16 bytes): every element type
// Kiln reads is then naturally aligned.
constexpr uintptr_t kViewAlignment = 16;

// A list threaded through the buffers themselves (PJRT_Buffer::registry_prev / _next): every
// Execute makes and later destroys its output buffers, and a hash set's node was an allocation
// and a free per buffer.
struct BufferRegistry {
  std::mutex mu;
  PJRT_Buffer* head = nullptr;
};

// Never destroyed: buffers may outlive static destruction at process exit.
BufferRegistry& Registry() {
  static BufferRegistry* registry = new BufferRegistry;
  return *registry;
}

// The address of `buffer`'s data, once it is computed (a pointer to pending memory would be a
// lie). An error of the computation that produces it is returned as is.
StatusOr<void*> ReadyDataPointer(PJRT_Buffer* buffer, const char* function) {
  KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef ref, buffer->Get(function));
  KILN_ASSIGN_OR_RETURN(runtime::Array array, ref->Await());
  return array.valid() ? array.data() : nullptr;
}

}  // namespace

void RegisterBuffer(PJRT_Buffer* buffer) {
  BufferRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  buffer->registry_prev = nullptr;
  buffer->registry_next = r.head;
  if (r.head != nullptr) r.head->registry_prev = buffer;
  r.head = buffer;
}

void UnregisterBuffer(PJRT_Buffer* buffer) {
  BufferRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (buffer->registry_prev != nullptr) {
    buffer->registry_prev->registry_next = buffer->registry_next;
  } else if (r.head == buffer) {
    r.head = buffer->registry_next;
  }
  if (buffer->registry_next != nullptr)
    buffer->registry_next->registry_prev = buffer->registry_prev;
  buffer->registry_prev = buffer->registry_next = nullptr;
}

// Kiln_Extension::retain_host_memory: the reference is a heap-allocated AsyncArrayRef. It counts
// as a user of the array like any other (a donation that reused memory in place would have to see
// the array shared and copy).
void* RetainHostMemory(const void* data, size_t bytes) {
  if (data == nullptr) return nullptr;
  BufferRegistry& r = Registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (PJRT_Buffer* buffer = r.head; buffer != nullptr; buffer = buffer->registry_next) {
    runtime::AsyncArrayRef ref = buffer->ReadyArray();
    if (ref == nullptr) continue;
    StatusOr<runtime::Array> array = ref->Await();  // ready: does not block
    if (!array.ok() || !array->valid() || array->data() != data) continue;
    if (array->byte_size() < bytes) continue;
    return new runtime::AsyncArrayRef(std::move(ref));
  }
  return nullptr;
}

void ReleaseHostMemory(void* reference) { delete static_cast<runtime::AsyncArrayRef*>(reference); }

PJRT_Error* Client_CreateViewOfDeviceBuffer(PJRT_Client_CreateViewOfDeviceBuffer_Args* args) {
  constexpr char kFn[] = "PJRT_Client_CreateViewOfDeviceBuffer";
  return Guard(kFn, [&]() -> Status {
    // `memory` came last (0.5x); older callers name the device only.
    KILN_CHECK_ARGS(args, PJRT_Client_CreateViewOfDeviceBuffer_Args, buffer, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->element_type), kFn));
    if (ir::IsSubByte(dtype)) {
      return InvalidArgument(Prefix(kFn) + "views of sub-byte element types are not supported");
    }
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          ReadDims(args->dims, args->num_dims, dtype, kFn));
    PJRT_Memory* memory =
        HasBytes(args, KILN_FIELD_END(PJRT_Client_CreateViewOfDeviceBuffer_Args, memory))
            ? args->memory
            : nullptr;
    KILN_ASSIGN_OR_RETURN(PJRT_Device * device,
                          ResolvePlacement(args->client, args->device, memory, kFn));
    // A view aliases the caller's memory as it is: only Kiln's own dense row-major layout.
    Status layout = CheckDefaultLayout(args->layout, dims, ir::DTypeByteSize(dtype), kFn);
    if (!layout.ok()) return InvalidArgument(layout.message());
    KILN_ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(dims, 1));
    const size_t bytes = static_cast<size_t>(ir::DTypeByteSize(dtype)) * static_cast<size_t>(count);
    if (bytes == 0) {
      // Nothing to alias: an empty array of Kiln's own, and the caller's memory is not needed.
      KILN_ASSIGN_OR_RETURN(runtime::Array empty, runtime::Array::Allocate(dtype, std::move(dims)));
      args->buffer = new PJRT_Buffer(device, runtime::AsyncArray::MakeReady(std::move(empty)),
                                     PlacementMemory(device, memory));
      if (args->on_delete_callback != nullptr) {
        args->on_delete_callback(args->device_buffer_ptr, args->on_delete_callback_arg);
      }
      return Status::Ok();
    }
    const uintptr_t address = reinterpret_cast<uintptr_t>(args->device_buffer_ptr);
    if (address == 0) {
      return InvalidArgument(Prefix(kFn) + "device_buffer_ptr is NULL for a non-empty array");
    }
    if (address % kViewAlignment != 0) {
      char text[64];
      std::snprintf(text, sizeof(text), "0x%" PRIxPTR, address);
      return InvalidArgument(Prefix(kFn) + "the data at " + text + " is not aligned to " +
                             std::to_string(kViewAlignment) + " bytes");
    }
    // The memory is released (on_delete_callback) when the last user lets go: the buffer, a
    // computation still reading it, or a result that aliases it. Never on failure: the caller
    // still owns it then.
    auto callback = args->on_delete_callback;
    void* callback_arg = args->on_delete_callback_arg;
    void* data = args->device_buffer_ptr;
    std::function<void()> release;
    if (callback != nullptr)
      release = [callback, data, callback_arg] { callback(data, callback_arg); };
    runtime::Array array;
    array.dtype = dtype;
    array.dims = std::move(dims);
    array.storage = runtime::Storage::Borrow(data, bytes, std::move(release));
    args->buffer = new PJRT_Buffer(device, runtime::AsyncArray::MakeReady(std::move(array)),
                                   PlacementMemory(device, memory));
    return Status::Ok();
  });
}

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
