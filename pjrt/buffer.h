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

 private:
  static std::vector<int64_t> DescendingMinorToMajor(size_t rank) {
    std::vector<int64_t> m(rank);
    for (size_t i = 0; i < rank; ++i) m[i] = static_cast<int64_t>(rank - 1 - i);
    return m;
  }

  mutable std::mutex mu_;
  kiln::runtime::AsyncArrayRef array_;
};
