// Buffer creation (PJRT_Client_BufferFromHostBuffer / CreateUninitializedBuffer /
// CreateErrorBuffer) and the PJRT_Buffer_* metadata and lifetime entry points (copies:
// pjrt/buffer_transfer.cc).
#include "pjrt/buffer.h"

#include <cstring>
#include <string>
#include <utility>

#include "pjrt/args_check.h"
#include "pjrt/client.h"
#include "pjrt/entry_points.h"
#include "pjrt/error.h"
#include "pjrt/event.h"
#include "pjrt/host_copy.h"

namespace kiln::pjrt {
namespace {

// The dtype table's numbers (ir/dtype_table.h) are PJRT_Buffer_Type's, checked here name by name.
// Three enumerators are spelled in capitals by PJRT.
constexpr int PJRT_Buffer_Type_Invalid = PJRT_Buffer_Type_INVALID;
constexpr int PJRT_Buffer_Type_Pred = PJRT_Buffer_Type_PRED;
constexpr int PJRT_Buffer_Type_Token = PJRT_Buffer_Type_TOKEN;
#define KILN_DTYPE_PJRT(name, pjrt, mlir, bytes, bits, kind, ctype, exp, man) \
  static_assert(pjrt == PJRT_Buffer_Type_##name && static_cast<int>(ir::DType::k##name) == pjrt);
KILN_DTYPES(KILN_DTYPE_PJRT)
#undef KILN_DTYPE_PJRT

}  // namespace

StatusOr<ir::DType> BufferDType(int pjrt_type, const char* function) {
  std::optional<ir::DType> t = ir::DTypeFromPjrt(pjrt_type);
  if (!t.has_value() || *t == ir::DType::kToken) {
    return InvalidArgument(Prefix(function) + "unsupported element type " +
                           std::to_string(pjrt_type));
  }
  return *t;
}

StatusOr<PJRT_Device*> ResolvePlacement(PJRT_Client* client, PJRT_Device* device,
                                        PJRT_Memory* memory, const char* function) {
  if (memory != nullptr) {
    if (!client->Owns(memory)) {
      return InvalidArgument(Prefix(function) + "the memory does not belong to this client");
    }
    return AsKiln(memory)->devices.front();
  }
  if (device != nullptr) {
    if (!client->Owns(device)) {
      return InvalidArgument(Prefix(function) + "the device does not belong to this client");
    }
    return device;
  }
  return InvalidArgument(Prefix(function) + "either a device or a memory must be given");
}

// (host/device layout struct_size fields are not read: jaxlib leaves them uninitialised.)
Status CheckDefaultLayout(const PJRT_Buffer_MemoryLayout* layout, std::span<const int64_t> dims,
                          int64_t elem_size, const char* function) {
  if (layout == nullptr) return Status::Ok();
  const size_t rank = dims.size();
  const int type = RawEnum(layout->type);
  if (type == PJRT_Buffer_MemoryLayout_Type_Tiled) {
    const PJRT_Buffer_MemoryLayout_Tiled& t = layout->tiled;
    bool ok = t.num_tiles == 0 && t.minor_to_major_size == rank &&
              (rank == 0 || t.minor_to_major != nullptr);
    for (size_t i = 0; ok && i < rank; ++i)
      ok = t.minor_to_major[i] == static_cast<int64_t>(rank - 1 - i);
    if (ok) return Status::Ok();
  } else if (type == PJRT_Buffer_MemoryLayout_Type_Strides) {
    const PJRT_Buffer_MemoryLayout_Strides& s = layout->strides;
    std::vector<int64_t> dense = DenseByteStrides(dims, elem_size);
    bool ok = s.num_byte_strides == rank && (rank == 0 || s.byte_strides != nullptr);
    for (size_t i = 0; ok && i < rank; ++i) ok = dims[i] <= 1 || s.byte_strides[i] == dense[i];
    if (ok) return Status::Ok();
  } else {
    return InvalidArgument(Prefix(function) + "unknown memory layout type " + std::to_string(type));
  }
  return Unimplemented(
      Prefix(function) +
      "Kiln only supports the default dense row-major (descending minor_to_major) device "
      "layout");
}

StatusOr<std::vector<int64_t>> DenseDeviceLayout(const PJRT_Buffer_MemoryLayout* layout,
                                                 std::span<const int64_t> dims, int64_t elem_size,
                                                 const char* function) {
  const size_t rank = dims.size();
  if (layout != nullptr && RawEnum(layout->type) == PJRT_Buffer_MemoryLayout_Type_Tiled &&
      layout->tiled.num_tiles == 0 && layout->tiled.minor_to_major_size == rank &&
      (rank == 0 || layout->tiled.minor_to_major != nullptr)) {
    std::vector<int64_t> m2m(layout->tiled.minor_to_major, layout->tiled.minor_to_major + rank);
    // Validates the permutation (its strides are not needed here).
    KILN_RETURN_IF_ERROR(PermutedByteStrides(dims, m2m, elem_size).status(), function);
    return m2m;
  }
  KILN_RETURN_IF_ERROR(CheckDefaultLayout(layout, dims, elem_size, function));
  std::vector<int64_t> m2m(rank);
  for (size_t i = 0; i < rank; ++i) m2m[i] = static_cast<int64_t>(rank - 1 - i);
  return m2m;
}

StatusOr<std::vector<int64_t>> ReadDims(const int64_t* dims, size_t num_dims, ir::DType dtype,
                                        const char* function) {
  if (num_dims > 0 && dims == nullptr) {
    return InvalidArgument(Prefix(function) + "dims is NULL but num_dims is " +
                           std::to_string(num_dims));
  }
  std::vector<int64_t> out(dims, dims + num_dims);
  KILN_RETURN_IF_ERROR(CheckedElementCount(out, ir::DTypeByteSize(dtype)).status(), function);
  return out;
}

// ---- creation ----

PJRT_Error* Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args* args) {
  constexpr char kFn[] = "PJRT_Client_BufferFromHostBuffer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_BufferFromHostBuffer_Args, buffer, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->type), kFn));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          ReadDims(args->dims, args->num_dims, dtype, kFn));
    const int64_t elem = ir::DTypeByteSize(dtype);
    const int semantics = RawEnum(args->host_buffer_semantics);
    if (semantics < PJRT_HostBufferSemantics_kImmutableOnlyDuringCall ||
        semantics > PJRT_HostBufferSemantics_kMutableZeroCopy) {
      return InvalidArgument(Prefix(kFn) + "unknown host_buffer_semantics " +
                             std::to_string(semantics));
    }
    KILN_ASSIGN_OR_RETURN(PJRT_Device * device,
                          ResolvePlacement(args->client, args->device, args->memory, kFn));
    // The device layout: any dense order (the array is stored in it), row-major by default.
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> layout,
                          DenseDeviceLayout(args->device_layout, dims, elem, kFn));

    std::vector<int64_t> src_strides;
    if (args->byte_strides != nullptr && args->num_byte_strides > 0) {
      if (args->num_byte_strides != dims.size()) {
        return InvalidArgument(Prefix(kFn) + "num_byte_strides is " +
                               std::to_string(args->num_byte_strides) + " but num_dims is " +
                               std::to_string(dims.size()));
      }
      src_strides.assign(args->byte_strides, args->byte_strides + dims.size());
      KILN_ASSIGN_OR_RETURN(ByteExtent extent, StridedExtent(dims, src_strides, elem));
      (void)extent;  // validates that the strides do not overflow
    } else {
      src_strides = DenseByteStrides(dims, elem);
    }

    KILN_ASSIGN_OR_RETURN(runtime::Array array,
                          runtime::Array::Allocate(dtype, compiler::PhysicalDims(dims, layout)));
    if (array.byte_size() > 0) {
      if (args->data == nullptr) {
        return InvalidArgument(Prefix(kFn) + "data is NULL for a non-empty array");
      }
      // Copying now is valid under every semantics (including the zero-copy ones) and means the
      // host buffer is released as soon as this call returns.
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dst_strides,
                            PermutedByteStrides(dims, layout, elem), kFn);
      CopyStrided(args->data, src_strides, array.data(), dst_strides, dims,
                  static_cast<size_t>(elem));
    }
    auto async = runtime::AsyncArray::MakeReady(std::move(array));
    if (HasBytes(args,
                 KILN_FIELD_END(PJRT_Client_BufferFromHostBuffer_Args, done_with_host_buffer))) {
      args->done_with_host_buffer = NewEvent(runtime::Event::MakeReady());
    }
    args->buffer = NewBuffer(device, std::move(async), PlacementMemory(device, args->memory),
                             std::move(layout));
    return Status::Ok();
  });
}

PJRT_Error* Client_CreateUninitializedBuffer(PJRT_Client_CreateUninitializedBuffer_Args* args) {
  constexpr char kFn[] = "PJRT_Client_CreateUninitializedBuffer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_CreateUninitializedBuffer_Args, buffer, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->shape_element_type), kFn));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          ReadDims(args->shape_dims, args->shape_num_dims, dtype, kFn));
    KILN_ASSIGN_OR_RETURN(PJRT_Device * device,
                          ResolvePlacement(args->client, args->device, args->memory, kFn));
    KILN_RETURN_IF_ERROR(
        CheckDefaultLayout(args->shape_layout, dims, ir::DTypeByteSize(dtype), kFn));
    // Zeroed: "uninitialised" contents are unspecified, and zeros keep tools like ASan/MSan quiet.
    KILN_ASSIGN_OR_RETURN(runtime::Array array,
                          runtime::Array::Allocate(dtype, dims, /*zero=*/true));
    args->buffer = NewBuffer(device, runtime::AsyncArray::MakeReady(std::move(array)),
                             PlacementMemory(device, args->memory));
    return Status::Ok();
  });
}

PJRT_Error* Client_CreateErrorBuffer(PJRT_Client_CreateErrorBuffer_Args* args) {
  constexpr char kFn[] = "PJRT_Client_CreateErrorBuffer";
  return Guard(kFn, [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Client_CreateErrorBuffer_Args, buffer, kFn);
    KILN_CHECK_NOT_NULL(args->client, kFn);
    KILN_ASSIGN_OR_RETURN(ir::DType dtype, BufferDType(RawEnum(args->shape_element_type), kFn));
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          ReadDims(args->shape_dims, args->shape_num_dims, dtype, kFn));
    KILN_ASSIGN_OR_RETURN(PJRT_Device * device,
                          ResolvePlacement(args->client, nullptr, args->memory, kFn));
    Status error =
        CallerStatus(RawEnum(args->error_code), args->error_message, args->error_message_size);
    auto async = std::make_shared<runtime::AsyncArray>(dtype, std::move(dims));
    async->SetError(std::move(error));
    args->buffer = NewBuffer(device, std::move(async), PlacementMemory(device, args->memory));
    return Status::Ok();
  });
}

// ---- metadata ----

PJRT_Error* Buffer_Destroy(PJRT_Buffer_Destroy_Args* args) {
  return Guard("PJRT_Buffer_Destroy", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_Destroy_Args, buffer, "PJRT_Buffer_Destroy");
    delete args->buffer;
    return Status::Ok();
  });
}

PJRT_Error* Buffer_ElementType(PJRT_Buffer_ElementType_Args* args) {
  return Guard("PJRT_Buffer_ElementType", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_ElementType_Args, type, "PJRT_Buffer_ElementType");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_ElementType");
    args->type = static_cast<PJRT_Buffer_Type>(args->buffer->dtype);
    return Status::Ok();
  });
}

PJRT_Error* Buffer_Dimensions(PJRT_Buffer_Dimensions_Args* args) {
  return Guard("PJRT_Buffer_Dimensions", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_Dimensions_Args, num_dims, "PJRT_Buffer_Dimensions");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_Dimensions");
    args->dims = args->buffer->dims.data();
    args->num_dims = args->buffer->dims.size();
    return Status::Ok();
  });
}

PJRT_Error* Buffer_UnpaddedDimensions(PJRT_Buffer_UnpaddedDimensions_Args* args) {
  return Guard("PJRT_Buffer_UnpaddedDimensions", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_UnpaddedDimensions_Args, num_dims,
                    "PJRT_Buffer_UnpaddedDimensions");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_UnpaddedDimensions");
    args->unpadded_dims = args->buffer->dims.data();
    args->num_dims = args->buffer->dims.size();
    return Status::Ok();
  });
}

PJRT_Error* Buffer_DynamicDimensionIndices(PJRT_Buffer_DynamicDimensionIndices_Args* args) {
  return Guard("PJRT_Buffer_DynamicDimensionIndices", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_DynamicDimensionIndices_Args, num_dynamic_dims,
                    "PJRT_Buffer_DynamicDimensionIndices");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_DynamicDimensionIndices");
    args->dynamic_dim_indices = nullptr;  // Kiln arrays are always static
    args->num_dynamic_dims = 0;
    return Status::Ok();
  });
}

PJRT_Error* Buffer_GetMemoryLayout(PJRT_Buffer_GetMemoryLayout_Args* args) {
  return Guard("PJRT_Buffer_GetMemoryLayout", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_GetMemoryLayout_Args, layout, "PJRT_Buffer_GetMemoryLayout");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_GetMemoryLayout");
    PJRT_Buffer_MemoryLayout& l = args->layout;
    std::memset(&l, 0, sizeof(l));
    l.struct_size = PJRT_Buffer_MemoryLayout_STRUCT_SIZE;
    l.type = PJRT_Buffer_MemoryLayout_Type_Tiled;
    l.tiled.struct_size = PJRT_Buffer_MemoryLayout_Tiled_STRUCT_SIZE;
    l.tiled.minor_to_major = args->buffer->minor_to_major.data();
    l.tiled.minor_to_major_size = args->buffer->minor_to_major.size();
    l.tiled.num_tiles = 0;
    return Status::Ok();
  });
}

PJRT_Error* Buffer_OnDeviceSizeInBytes(PJRT_Buffer_OnDeviceSizeInBytes_Args* args) {
  return Guard("PJRT_Buffer_OnDeviceSizeInBytes", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_OnDeviceSizeInBytes_Args, on_device_size_in_bytes,
                    "PJRT_Buffer_OnDeviceSizeInBytes");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_OnDeviceSizeInBytes");
    int64_t n = 1;
    for (int64_t d : args->buffer->dims) n *= d;
    args->on_device_size_in_bytes =
        static_cast<size_t>(n) * static_cast<size_t>(ir::DTypeByteSize(args->buffer->dtype));
    return Status::Ok();
  });
}

PJRT_Error* Buffer_Device(PJRT_Buffer_Device_Args* args) {
  return Guard("PJRT_Buffer_Device", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_Device_Args, device, "PJRT_Buffer_Device");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_Device");
    args->device = args->buffer->device;
    return Status::Ok();
  });
}

PJRT_Error* Buffer_Memory(PJRT_Buffer_Memory_Args* args) {
  return Guard("PJRT_Buffer_Memory", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_Memory_Args, memory, "PJRT_Buffer_Memory");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_Memory");
    args->memory = args->buffer->memory;
    return Status::Ok();
  });
}

PJRT_Error* Buffer_IsOnCpu(PJRT_Buffer_IsOnCpu_Args* args) {
  return Guard("PJRT_Buffer_IsOnCpu", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_IsOnCpu_Args, is_on_cpu, "PJRT_Buffer_IsOnCpu");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_IsOnCpu");
    // Kiln memory is host memory, but reporting true makes jaxlib alias it as numpy arrays through
    // the external-reference API; Kiln presents it as device memory and copies in ToHostBuffer.
    args->is_on_cpu = false;
    return Status::Ok();
  });
}

// ---- lifetime ----

PJRT_Error* Buffer_Delete(PJRT_Buffer_Delete_Args* args) {
  return Guard("PJRT_Buffer_Delete", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_Delete_Args, buffer, "PJRT_Buffer_Delete");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_Delete");
    args->buffer->Delete();
    return Status::Ok();
  });
}

PJRT_Error* Buffer_IsDeleted(PJRT_Buffer_IsDeleted_Args* args) {
  return Guard("PJRT_Buffer_IsDeleted", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_IsDeleted_Args, is_deleted, "PJRT_Buffer_IsDeleted");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_IsDeleted");
    args->is_deleted = args->buffer->IsDeleted();
    return Status::Ok();
  });
}

PJRT_Error* Buffer_ReadyEvent(PJRT_Buffer_ReadyEvent_Args* args) {
  return Guard("PJRT_Buffer_ReadyEvent", [&]() -> Status {
    KILN_CHECK_ARGS(args, PJRT_Buffer_ReadyEvent_Args, event, "PJRT_Buffer_ReadyEvent");
    KILN_CHECK_NOT_NULL(args->buffer, "PJRT_Buffer_ReadyEvent");
    KILN_ASSIGN_OR_RETURN(runtime::AsyncArrayRef array,
                          args->buffer->Get("PJRT_Buffer_ReadyEvent"));
    args->event = NewEvent(array->ready());
    return Status::Ok();
  });
}

}  // namespace kiln::pjrt
