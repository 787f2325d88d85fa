// PJRT_Buffer: a (possibly not yet computed) immutable array placed on a device memory. Copies
// between Kiln devices alias the same AsyncArray, since every device reads host memory and arrays
// never change once produced.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "abi/pjrt_c_api.h"
#include "ir/dtype.h"
#include "pjrt/device.h"
#include "runtime/async_array.h"
#include "support/status.h"

struct PJRT_Buffer {
  PJRT_Buffer(PJRT_Device* d, kiln::runtime::AsyncArrayRef a)
      : device(d),
        memory(d->memory),
        dtype(a->dtype()),
        dims(a->dims()),
        minor_to_major(DescendingMinorToMajor(dims.size())),
        array_(std::move(a)) {}

  PJRT_Device* const device;
  kiln::pjrt::KilnMemory* const memory;
  const kiln::ir::DType dtype;
  const std::vector<int64_t> dims;            // kept after deletion: metadata stays queryable
  const std::vector<int64_t> minor_to_major;  // {rank-1, ..., 0}: dense row-major

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
