// PJRT_Buffer: a (possibly not yet computed) immutable array placed on a device memory. Copies
// between Kiln devices alias the same AsyncArray, since every device reads host memory and arrays
// never change once produced.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "compiler/entry_layouts.h"
#include "ir/dtype.h"
#include "pjrt/device.h"
#include "runtime/async_array.h"
#include "support/status.h"

namespace kiln::pjrt {
// Every live PJRT_Buffer is in a process-wide registry (pjrt/buffer_external.cc), so that Kiln's
// extension can find a buffer by the address of its data (DLPack export from Python, which only
// knows x.unsafe_buffer_pointer()).
void RegisterBuffer(PJRT_Buffer* buffer);
void UnregisterBuffer(PJRT_Buffer* buffer);
// Kiln_Extension::retain_host_memory / release_host_memory (abi/kiln_extension.h).
void* RetainHostMemory(const void* data, size_t bytes);
void ReleaseHostMemory(void* reference);
}  // namespace kiln::pjrt

struct PJRT_Buffer {
  // Placed in `m`, one of `d`'s memories, or in `d`'s default memory when `m` is NULL. `a` holds
  // the array in the order `layout` (minor_to_major; empty: row-major): its dims are the physical
  // ones, from major to minor (compiler/entry_layouts.h).
  PJRT_Buffer(PJRT_Device* d, kiln::runtime::AsyncArrayRef a, kiln::pjrt::KilnMemory* m = nullptr,
              std::vector<int64_t> layout = {})
      : device(d),
        memory(m != nullptr ? m : d->memory),
        dtype(a->dtype()),
        dims(layout.empty() ? a->dims() : kiln::compiler::LogicalDims(a->dims(), layout)),
        minor_to_major(layout.empty() ? DescendingMinorToMajor(a->dims().size())
                                      : std::move(layout)),
        physical_dims(a->dims()),
        array_(std::move(a)) {
    kiln::pjrt::RegisterBuffer(this);
  }
  ~PJRT_Buffer() { kiln::pjrt::UnregisterBuffer(this); }
  PJRT_Buffer(const PJRT_Buffer&) = delete;
  PJRT_Buffer& operator=(const PJRT_Buffer&) = delete;

  PJRT_Device* const device;
  kiln::pjrt::KilnMemory* const memory;
  const kiln::ir::DType dtype;
  const std::vector<int64_t> dims;            // kept after deletion: metadata stays queryable
  const std::vector<int64_t> minor_to_major;  // dense; {rank-1, ..., 0} unless asked otherwise
  const std::vector<int64_t> physical_dims;   // the array's dims: `dims` from major to minor
  // Neighbours in the registry of live buffers (pjrt/buffer_external.cc), under its lock.
  PJRT_Buffer* registry_prev = nullptr;
  PJRT_Buffer* registry_next = nullptr;

  // The array, or FAILED_PRECONDITION naming `function` once the buffer has been deleted.
  kiln::StatusOr<kiln::runtime::AsyncArrayRef> Get(const char* function) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (array_ == nullptr) {
      return kiln::FailedPrecondition(std::string(function) +
                                      ": the buffer has been deleted or donated");
    }
    return array_;
  }
  // Drops this buffer's reference; pending work that already holds the array keeps it alive.
  void Delete() {
    kiln::runtime::AsyncArrayRef dropped;
    std::lock_guard<std::mutex> lock(mu_);
    dropped.swap(array_);
  }
  bool IsDeleted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return array_ == nullptr;
  }
  // The array if the buffer is not deleted and its value is computed, else nullptr. Never blocks.
  kiln::runtime::AsyncArrayRef ReadyArray() const {
    std::lock_guard<std::mutex> lock(mu_);
    if (array_ == nullptr || !array_->ready()->IsReady()) return nullptr;
    return array_;
  }
  // External references (DLPack, unsafe_buffer_pointer users): while any is held, the array's
  // memory stays alive even if the buffer is deleted.
  kiln::Status AddExternalReference(const char* function) {
    std::lock_guard<std::mutex> lock(mu_);
    if (array_ == nullptr) {
      return kiln::FailedPrecondition(std::string(function) +
                                      ": the buffer has been deleted or donated");
    }
    if (external_refs_++ == 0) external_array_ = array_;
    return kiln::Status::Ok();
  }
  kiln::Status DropExternalReference(const char* function) {
    kiln::runtime::AsyncArrayRef dropped;
    std::lock_guard<std::mutex> lock(mu_);
    if (external_refs_ == 0) {
      return kiln::FailedPrecondition(std::string(function) +
                                      ": the buffer has no external reference to drop");
    }
    if (--external_refs_ == 0) dropped.swap(external_array_);
    return kiln::Status::Ok();
  }

 private:
  static std::vector<int64_t> DescendingMinorToMajor(size_t rank) {
    std::vector<int64_t> m(rank);
    for (size_t i = 0; i < rank; ++i) m[i] = static_cast<int64_t>(rank - 1 - i);
    return m;
  }

  mutable std::mutex mu_;
  kiln::runtime::AsyncArrayRef array_;
  int64_t external_refs_ = 0;
  kiln::runtime::AsyncArrayRef external_array_;  // held while external_refs_ > 0
};

namespace kiln::pjrt {
// Helpers shared by the buffer-creating entry points (pjrt/buffer.cc, pjrt/buffer_external.cc).
StatusOr<ir::DType> BufferDType(int pjrt_type, const char* function);
// Placement of a new buffer: `memory` wins when given, else `device`. Both must belong to `client`.
StatusOr<PJRT_Device*> ResolvePlacement(PJRT_Client* client, PJRT_Device* device,
                                        PJRT_Memory* memory, const char* function);
// Kiln stores arrays dense and row-major; a requested device layout must be exactly that.
Status CheckDefaultLayout(const PJRT_Buffer_MemoryLayout* layout, std::span<const int64_t> dims,
                          int64_t elem_size, const char* function);
// The dense order a device layout asks for (row-major when NULL); other layouts are refused.
StatusOr<std::vector<int64_t>> DenseDeviceLayout(const PJRT_Buffer_MemoryLayout* layout,
                                                 std::span<const int64_t> dims, int64_t elem_size,
                                                 const char* function);
// Reads `dims`/`num_dims` and validates them (non-negative, byte size fits int64).
StatusOr<std::vector<int64_t>> ReadDims(const int64_t* dims, size_t num_dims, ir::DType dtype,
                                        const char* function);
// A new buffer on `device` holding `array` (pjrt/buffer.cc, pjrt/buffer_transfer.cc).
inline PJRT_Buffer* NewBuffer(PJRT_Device* device, runtime::AsyncArrayRef array,
                              KilnMemory* memory = nullptr, std::vector<int64_t> layout = {}) {
  return new PJRT_Buffer(device, std::move(array), memory, std::move(layout));
}
// The memory a new buffer goes to: `memory` when given (ResolvePlacement checked it), else the
// device's default memory.
inline KilnMemory* PlacementMemory(PJRT_Device* device, PJRT_Memory* memory) {
  return memory != nullptr ? AsKiln(memory) : device->memory;
}
}  // namespace kiln::pjrt
