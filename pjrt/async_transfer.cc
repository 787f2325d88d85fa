// PJRT_Client_CreateBuffersForAsyncHostToDevice and the PJRT_AsyncHostToDeviceTransferManager_*
// entry points: buffers whose bytes arrive later, in chunks (jaxlib's socket-based cross-host
// transfers receive through this). Each buffer is an AsyncArray over a zeroed dense row-major
// Array; TransferData copies a chunk in at once (so its done event is ready when the call returns)
// and the buffer's value is set when the chunk flagged is_last_transfer and every chunk still being
// copied on other threads have landed. The manager's state is shared with those copies, so a
// buffer never completes into freed state; a manager destroyed before a buffer's last transfer
// leaves that buffer carrying an error rather than pending forever.
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "pjrt/args_check.h"
#include "pjrt/buffer.h"
#include "pjrt/client.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "runtime/async_array.h"

namespace kiln::pjrt {
namespace {

struct TransferSlot {
  runtime::Array array;          // the storage chunks are copied into
  runtime::AsyncArrayRef async;  // what RetrieveBuffer hands out
  int64_t in_flight = 0;         // chunks being copied right now
  bool last_started = false;     // the is_last_transfer chunk has been accepted
  bool finished = false;         // value or error set: no more chunks accepted
  bool retrieved = false;
};

struct TransferState {
  std::mutex mu;
  std::vector<TransferSlot> slots;
};

}  // namespace
}  // namespace kiln::pjrt

struct PJRT_AsyncHostToDeviceTransferManager {
  PJRT_Device* device = nullptr;
  kiln::pjrt::KilnMemory* memory = nullptr;  // the memory the buffers go to
  std::shared_ptr<kiln::pjrt::TransferState> state;
};

namespace kiln::pjrt {
namespace {

using Manager = PJRT_AsyncHostToDeviceTransferManager;

Status CheckIndex(const Manager* m, int index, const char* function) {
  if (index < 0 || static_cast<size_t>(index) >= m->state->slots.size()) {
    return InvalidArgument(Prefix(function) + "buffer_index " + std::to_string(index) +
                           " is out of range: the manager has " +
                           std::to_string(m->state->slots.size()) + " buffers");
  }
  return Status::Ok();
}

// Copies `size` bytes from `data` to byte `offset` of buffer `index`, completing the buffer when
// `is_last` and no other copy is in flight. The copy runs outside the lock: chunks of one buffer
// may arrive concurrently from several threads.
Status WriteChunk(Manager* m, int index, const void* data, int64_t offset, int64_t size,
                  bool is_last, const char* function) {
  KILN_RETURN_IF_ERROR(CheckIndex(m, index, function));
  std::shared_ptr<TransferState> state = m->state;
  runtime::Array array;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    TransferSlot& slot = state->slots[static_cast<size_t>(index)];
    const int64_t total = static_cast<int64_t>(slot.array.byte_size());
    if (offset < 0 || size < 0 || offset > total || size > total - offset) {
      return InvalidArgument(Prefix(function) + "a transfer of " + std::to_string(size) +
                             " bytes at offset " + std::to_string(offset) +
                             " does not fit buffer " + std::to_string(index) + " of " +
                             std::to_string(total) + " bytes");
    }
    if (size > 0 && data == nullptr) {
      return InvalidArgument(Prefix(function) + "data is NULL for a transfer of " +
                             std::to_string(size) + " bytes");
    }
    if (slot.finished || slot.last_started) {
      return FailedPrecondition(Prefix(function) + "buffer " + std::to_string(index) +
                                (slot.finished ? " is already complete (or carries an error)"
                                               : " has already received its last transfer"));
    }
    ++slot.in_flight;
    if (is_last) slot.last_started = true;
    array = slot.array;
  }
  if (size > 0) {
    std::memcpy(static_cast<char*>(array.data()) + offset, data, static_cast<size_t>(size));
  }
  runtime::AsyncArrayRef complete;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    TransferSlot& slot = state->slots[static_cast<size_t>(index)];
    if (--slot.in_flight == 0 && slot.last_started && !slot.finished) {
      slot.finished = true;
      complete = slot.async;
    }
  }
  // Outside the lock: readiness callbacks run on this thread.
  if (complete != nullptr) complete->SetValue(std::move(array));
  return Status::Ok();
}

Status CheckManager(const Manager* m, const char* function) {
  return CheckNotNull(m != nullptr, function, "transfer_manager");
}

}  // namespace

PJRT_Error* Client_CreateBuffersForAsyncHostToDevice(
    PJRT_Client_CreateBuffersForAsyncHostToDevice_Args* args) {
  constexpr char kFn[] = "PJRT_Client_CreateBuffersForAsyncHostToDevice";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_CreateBuffersForAsyncHostToDevice_Args, transfer_manager,
                    kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_CHECK_NOT_NULL(args->memory, kFn);
    KILN_ASSIGN_OR_RETURN(PJRT_Device * device,
                          ResolvePlacement(args->client, nullptr, args->memory, kFn));
    const size_t n = args->num_shape_specs;
    if (n > 0 && args->shape_specs == nullptr) {
      return InvalidArgument(Prefix(kFn) + "shape_specs is NULL but num_shape_specs is " +
                             std::to_string(n));
    }
    if (n > static_cast<size_t>(INT_MAX)) {
      return InvalidArgument(Prefix(kFn) + "too many shape specs: " + std::to_string(n));
    }
    if (args->num_device_layouts != 0 &&
        (args->num_device_layouts != n || args->device_layouts == nullptr)) {
      return InvalidArgument(
          Prefix(kFn) + "num_device_layouts is " + std::to_string(args->num_device_layouts) +
          (args->device_layouts == nullptr ? " with device_layouts NULL"
                                           : " but num_shape_specs is " + std::to_string(n)));
    }
    auto state = std::make_shared<TransferState>();
    state->slots.resize(n);
    for (size_t i = 0; i < n; ++i) {
      // (The spec's struct_size is not read: it has no optional fields.)
      const PJRT_ShapeSpec& spec = args->shape_specs[i];
      const std::string where = std::string(kFn) + " shape_specs[" + std::to_string(i) + "]";
      KILN_ASSIGN_OR_RETURN(ir::DType dtype,
                            BufferDType(RawEnum(spec.element_type), where.c_str()));
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                            ReadDims(spec.dims, spec.num_dims, dtype, where.c_str()));
      if (args->num_device_layouts != 0) {
        KILN_RETURN_IF_ERROR(CheckDefaultLayout(args->device_layouts[i], dims,
                                                ir::DTypeByteSize(dtype), where.c_str()));
      }
      // Zeroed: bytes no chunk covers read as zeros, never as stale heap contents.
      KILN_ASSIGN_OR_RETURN(runtime::Array array,
                            runtime::Array::Allocate(dtype, dims, /*zero=*/true));
      state->slots[i].async = std::make_shared<runtime::AsyncArray>(dtype, std::move(dims));
      state->slots[i].array = std::move(array);
    }
    auto* manager = new Manager;
    manager->device = device;
    manager->memory = AsKiln(args->memory);
    manager->state = std::move(state);
    args->transfer_manager = manager;
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_Destroy(
    PJRT_AsyncHostToDeviceTransferManager_Destroy_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_Destroy";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_Destroy_Args, transfer_manager,
                    kFn);
    std::unique_ptr<Manager> m(args->transfer_manager);
    if (m == nullptr) return Status::Ok();
    // Buffers still waiting for their last transfer will never get it: fail them.
    std::vector<runtime::AsyncArrayRef> abandoned;
    {
      std::lock_guard<std::mutex> lock(m->state->mu);
      for (TransferSlot& slot : m->state->slots) {
        if (slot.finished || slot.last_started) continue;  // done, or completed by its last copy
        slot.finished = true;
        abandoned.push_back(slot.async);
      }
    }
    for (const runtime::AsyncArrayRef& a : abandoned) {
      a->SetError(Status(StatusCode::kCancelled,
                         Prefix(kFn) +
                             "the transfer manager was destroyed before the buffer's last "
                             "transfer"));
    }
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_TransferData(
    PJRT_AsyncHostToDeviceTransferManager_TransferData_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_TransferData";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_TransferData_Args,
                    done_with_h2d_transfer, kFn);
    KILN_RETURN_IF_ERROR(CheckManager(args->transfer_manager, kFn));
    KILN_RETURN_IF_ERROR(WriteChunk(args->transfer_manager, args->buffer_index, args->data,
                                    args->offset, args->transfer_size, args->is_last_transfer,
                                    kFn));
    // The bytes were copied during the call: the caller's memory is free already.
    args->done_with_h2d_transfer = NewEvent(runtime::Event::MakeReady());
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_TransferLiteral(
    PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_TransferLiteral";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_TransferLiteral_Args,
                    done_with_h2d_transfer, kFn);
    Manager* m = args->transfer_manager;
    KILN_RETURN_IF_ERROR(CheckManager(m, kFn));
    KILN_RETURN_IF_ERROR(CheckIndex(m, args->buffer_index, kFn));
    KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->shape_element_type), kFn));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          ReadDims(args->shape_dims, args->shape_num_dims, dtype, kFn));
    const runtime::AsyncArrayRef& target =
        m->state->slots[static_cast<size_t>(args->buffer_index)].async;
    if (dtype != target->dtype() || dims != target->dims()) {
      return InvalidArgument(Prefix(kFn) + "the literal's shape differs from buffer " +
                             std::to_string(args->buffer_index) + "'s");
    }
    KILN_RETURN_IF_ERROR(
        CheckDefaultLayout(args->shape_layout, dims, ir::DTypeByteSize(dtype), kFn));
    const int64_t bytes = static_cast<int64_t>(
        m->state->slots[static_cast<size_t>(args->buffer_index)].array.byte_size());
    KILN_RETURN_IF_ERROR(
        WriteChunk(m, args->buffer_index, args->data, 0, bytes, /*is_last=*/true, kFn));
    args->done_with_h2d_transfer = NewEvent(runtime::Event::MakeReady());
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_RetrieveBuffer(
    PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_RetrieveBuffer_Args, buffer_out,
                    kFn);
    Manager* m = args->transfer_manager;
    KILN_RETURN_IF_ERROR(CheckManager(m, kFn));
    KILN_RETURN_IF_ERROR(CheckIndex(m, args->buffer_index, kFn));
    runtime::AsyncArrayRef async;
    {
      std::lock_guard<std::mutex> lock(m->state->mu);
      TransferSlot& slot = m->state->slots[static_cast<size_t>(args->buffer_index)];
      if (slot.retrieved) {
        return FailedPrecondition(Prefix(kFn) + "buffer " + std::to_string(args->buffer_index) +
                                  " has already been retrieved");
      }
      slot.retrieved = true;
      async = slot.async;
    }
    args->buffer_out = NewBuffer(m->device, std::move(async), m->memory);
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_Device(
    PJRT_AsyncHostToDeviceTransferManager_Device_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_Device";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_Device_Args, device_out, kFn);
    KILN_RETURN_IF_ERROR(CheckManager(args->transfer_manager, kFn));
    args->device_out = args->transfer_manager->device;
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_BufferCount(
    PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_BufferCount";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_BufferCount_Args, buffer_count,
                    kFn);
    KILN_RETURN_IF_ERROR(CheckManager(args->transfer_manager, kFn));
    args->buffer_count = args->transfer_manager->state->slots.size();
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_BufferSize(
    PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_BufferSize";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_BufferSize_Args, buffer_size, kFn);
    Manager* m = args->transfer_manager;
    KILN_RETURN_IF_ERROR(CheckManager(m, kFn));
    KILN_RETURN_IF_ERROR(CheckIndex(m, args->buffer_index, kFn));
    args->buffer_size = m->state->slots[static_cast<size_t>(args->buffer_index)].array.byte_size();
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_SetBufferError(
    PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_SetBufferError";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_SetBufferError_Args,
                    error_message_size, kFn);
    Manager* m = args->transfer_manager;
    KILN_RETURN_IF_ERROR(CheckManager(m, kFn));
    KILN_RETURN_IF_ERROR(CheckIndex(m, args->buffer_index, kFn));
    Status error =
        CallerStatus(RawEnum(args->error_code), args->error_message, args->error_message_size);
    runtime::AsyncArrayRef async;
    {
      std::lock_guard<std::mutex> lock(m->state->mu);
      TransferSlot& slot = m->state->slots[static_cast<size_t>(args->buffer_index)];
      if (slot.finished) {
        return FailedPrecondition(Prefix(kFn) + "buffer " + std::to_string(args->buffer_index) +
                                  " is already complete (or carries an error)");
      }
      slot.finished = true;  // chunks still being copied will not complete it
      async = slot.async;
    }
    async->SetError(std::move(error));
    return Status::Ok();
  });
}

PJRT_Error* AsyncHostToDeviceTransferManager_AddMetadata(
    PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args* args) {
  constexpr char kFn[] = "PJRT_AsyncHostToDeviceTransferManager_AddMetadata";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_AsyncHostToDeviceTransferManager_AddMetadata_Args, num_metadata,
                    kFn);
    KILN_RETURN_IF_ERROR(CheckManager(args->transfer_manager, kFn));
    if (args->num_metadata > 0 && args->transfer_metadata == nullptr) {
      return InvalidArgument(Prefix(kFn) + "transfer_metadata is NULL but num_metadata is " +
                             std::to_string(args->num_metadata));
    }
    // Metadata are hints for devices with DMA engines; a host-memory copy has no use for them.
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
