// The PJRT_Buffer_* copies: to another device or memory (an alias) and to host memory.
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "pjrt/host_copy.h"

namespace kiln::pjrt {

// ---- copies ----

namespace {

// A new buffer on `dst` sharing `src`'s array: Kiln arrays are immutable host memory, readable from
// every device, so a device-to-device copy is an alias.
// `memory` (one of `dst`'s, checked by the caller) or NULL for `dst`'s default memory; a copy
// between memory kinds of one device is an alias too (on a CPU every kind is host memory).
Status CopyToDeviceImpl(PJRT_Buffer* src, PJRT_Device* dst, PJRT_Buffer** out, const char* function,
                        KilnMemory* memory = nullptr) {
  KILN_CHECK_NOT_NULL(src, function);
  KILN_CHECK_NOT_NULL(dst, function);
  if (!src->device->client->Owns(dst)) {
    return InvalidArgument(Prefix(function) +
                           "the destination does not belong to the buffer's client");
  }
  KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef array, src->Get(function));
  *out = NewBuffer(dst, std::move(array), memory, src->minor_to_major);
  return Status::Ok();
}

}  // namespace

PJRT_Error* Buffer_CopyToDevice(PJRT_Buffer_CopyToDevice_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_CopyToDevice";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_CopyToDevice_Args, dst_buffer, kFn);
    return CopyToDeviceImpl(args->buffer, args->dst_device, &args->dst_buffer, kFn);
  });
}

PJRT_Error* Buffer_CopyToMemory(PJRT_Buffer_CopyToMemory_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_CopyToMemory";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_CopyToMemory_Args, dst_buffer, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    KILN_CHECK_NOT_NULL(args->dst_memory, kFn);
    if (!args->buffer->device->client->Owns(args->dst_memory)) {
      return InvalidArgument(Prefix(kFn) +
                             "the destination memory does not belong to the buffer's client");
    }
    KilnMemory* memory = AsKiln(args->dst_memory);
    return CopyToDeviceImpl(args->buffer, memory->devices.front(), &args->dst_buffer, kFn, memory);
  });
}

PJRT_Error* Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_ToHostBuffer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_ToHostBuffer_Args, event, kFn);
    KILN_CHECK_NOT_NULL(args->src, kFn);
    PJRT_Buffer* src = args->src;
    const std::vector<int64_t>& dims = src->dims;
    const int64_t elem = ir::DTypeByteSize(src->dtype);
    const size_t rank = dims.size();

    // Destination strides from the host layout. Its struct_size fields are not read: jaxlib 0.10.2
    // leaves them uninitialised.
    std::vector<int64_t> dst_strides;
    const PJRT_Buffer_MemoryLayout* layout = args->host_layout;
    if (layout == nullptr) {
      dst_strides = DenseByteStrides(dims, elem);
    } else if (RawEnum(layout->type) == PJRT_Buffer_MemoryLayout_Type_Tiled) {
      const PJRT_Buffer_MemoryLayout_Tiled& t = layout->tiled;
      if (t.num_tiles != 0) {
        return Unimplemented(Prefix(kFn) + "tiled host layouts are not supported by Kiln");
      }
      if (rank > 0 && t.minor_to_major == nullptr) {
        return InvalidArgument(Prefix(kFn) + "host_layout minor_to_major is NULL");
      }
      std::span<const int64_t> m2m(t.minor_to_major,
                                   t.minor_to_major == nullptr ? 0 : t.minor_to_major_size);
      KILN_ASSIGN_OR_RETURN(dst_strides, PermutedByteStrides(dims, m2m, elem), kFn);
    } else if (RawEnum(layout->type) == PJRT_Buffer_MemoryLayout_Type_Strides) {
      const PJRT_Buffer_MemoryLayout_Strides& s = layout->strides;
      if (s.num_byte_strides != rank || (rank > 0 && s.byte_strides == nullptr)) {
        return InvalidArgument(Prefix(kFn) + "host_layout has " +
                               std::to_string(s.num_byte_strides) +
                               " byte strides for an array of rank " + std::to_string(rank));
      }
      dst_strides.assign(s.byte_strides, s.byte_strides + rank);
    } else {
      return InvalidArgument(Prefix(kFn) + "unknown host_layout type " +
                             std::to_string(RawEnum(layout->type)));
    }
    KILN_ASSIGN_OR_RETURN(const ByteExtent extent, StridedExtent(dims, dst_strides, elem), kFn);
    if (extent.lo < 0) {
      return InvalidArgument(Prefix(kFn) +
                             "host_layout byte strides reach before the start of dst");
    }
    const size_t required = static_cast<size_t>(extent.hi);

    if (args->dst == nullptr) {  // size query: no copy, so no event (as in XLA's implementation)
      args->dst_size = required;
      args->event = nullptr;
      return Status::Ok();
    }
    if (args->dst_size < required) {
      return InvalidArgument(Prefix(kFn) + "dst_size is " + std::to_string(args->dst_size) +
                             " bytes but the array needs " + std::to_string(required));
    }
    KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef array, src->Get(kFn));
    // The array is in the buffer's layout (row-major unless the buffer was made in another).
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> src_strides,
                          PermutedByteStrides(dims, src->minor_to_major, elem), kFn);

    // Copy once the array is ready (possibly right now, possibly on the device's worker thread when
    // the producing execution finishes), then signal the returned event.
    runtime::EventRef done = runtime::Event::Create();
    void* dst = args->dst;
    std::vector<int64_t> dims_copy = dims;
    args->event = NewEvent(done);
    runtime::EventRef ready = array->ready();
    ready->OnReady([array, done, dst, dims_copy = std::move(dims_copy),
                    src_strides = std::move(src_strides), dst_strides = std::move(dst_strides),
                    elem](const Status& status) {
      if (!status.ok()) {
        done->Set(status);
        return;
      }
      try {
        StatusOr<runtime::Array> value = array->Await();
        if (!value.ok()) {
          done->Set(value.status());
          return;
        }
        const runtime::Array& a = *value;
        CopyStrided(a.data(), src_strides, dst, dst_strides, dims_copy, static_cast<size_t>(elem));
        done->Set(Status::Ok());
      } catch (const std::exception& e) {
        done->Set(Internal(std::string("PJRT_Buffer_ToHostBuffer: ") + e.what()));
      }
    });
    return Status::Ok();
  });
}

PJRT_Error* Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args* args) {
  constexpr char kFn[] = "PJRT_Buffer_CopyRawToHost";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_CopyRawToHost_Args, event, kFn);
    KILN_CHECK_NOT_NULL(args->buffer, kFn);
    const int64_t elem = ir::DTypeByteSize(args->buffer->dtype);
    KILN_ASSIGN_OR_RETURN(int64_t count, CheckedElementCount(args->buffer->dims, elem));
    const int64_t total = count * elem;
    if (args->offset < 0 || args->transfer_size < 0 || args->offset > total ||
        args->transfer_size > total - args->offset) {
      return InvalidArgument(Prefix(kFn) + "the range [" + std::to_string(args->offset) + ", " +
                             std::to_string(args->offset) + " + " +
                             std::to_string(args->transfer_size) + ") is outside the buffer's " +
                             std::to_string(total) + " bytes");
    }
    if (args->transfer_size > 0) KILN_CHECK_NOT_NULL(args->dst, kFn);
    KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef array, args->buffer->Get(kFn));
    runtime::EventRef done = runtime::Event::Create();
    args->event = NewEvent(done);
    void* dst = args->dst;
    const int64_t offset = args->offset, size = args->transfer_size;
    runtime::EventRef ready = array->ready();
    ready->OnReady([array, done, dst, offset, size](const Status& status) {
      if (!status.ok()) {
        done->Set(status);
        return;
      }
      StatusOr<runtime::Array> value = array->Await();
      if (!value.ok()) {
        done->Set(value.status());
        return;
      }
      if (size > 0)
        std::memcpy(dst, static_cast<const char*>(value->data()) + offset,
                    static_cast<size_t>(size));
      done->Set(Status::Ok());
    });
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
