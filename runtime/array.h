// Array: a dense, row-major n-d array in host memory with shared, reference-counted storage.
// Sharing storage is how Kiln avoids needless copies: a reshape, a function argument passed through
// to a result, or a zero-copy host buffer all alias one allocation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "ir/dtype.h"
#include "ir/type.h"
#include "support/status.h"

namespace kiln::runtime {

// Kernels and BLAS like aligned rows; 64 bytes is one cache line and one AVX-512 vector.
inline constexpr size_t kStorageAlignment = 64;

// Process-wide accounting of the memory arrays own (Storage::Allocate), for
// PJRT_Device_MemoryStats. Kiln's devices all allocate from the host heap, so these are shared.
struct MemoryCounters {
  int64_t bytes_in_use = 0;
  int64_t peak_bytes_in_use = 0;
  int64_t num_allocs = 0;  // allocations made so far
  int64_t largest_alloc_size = 0;
};
MemoryCounters GetMemoryCounters();
// Starts a new measuring period (PJRT_Device_ClearMemoryStats): the peak drops to what is in use
// now, and the allocation count and largest allocation start again from zero.
void ClearMemoryCounters();

class Storage {
 public:
  // Allocates `bytes` (zero-initialised only when asked: most kernels overwrite everything).
  static StatusOr<std::shared_ptr<Storage>> Allocate(size_t bytes, bool zero = false);
  // Wraps memory owned by someone else; `release` runs when the last reference goes away.
  static std::shared_ptr<Storage> Borrow(void* data, size_t bytes, std::function<void()> release);

  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage();

  void* data() const { return data_; }
  size_t size() const { return size_; }
  // False for borrowed memory (Borrow): its owner may still read or write it.
  bool owned() const { return owned_; }

 private:
  Storage(void* data, size_t size, std::function<void()> release, bool owned)
      : data_(data), size_(size), release_(std::move(release)), owned_(owned) {}

  void* data_;
  size_t size_;
  std::function<void()> release_;
  bool owned_;
  bool large_ = false;  // from AllocateLargeBlock (runtime/large_blocks.h), not aligned_alloc
};

struct Array {
  ir::DType dtype = ir::DType::kInvalid;
  std::vector<int64_t> dims;
  std::shared_ptr<Storage> storage;
  size_t offset = 0;  // byte offset into storage (lets slices of a leading axis alias)

  static StatusOr<Array> Allocate(ir::DType dtype, std::vector<int64_t> dims, bool zero = false);
  static StatusOr<Array> Allocate(const ir::Type& type, bool zero = false) {
    return Allocate(type.dtype, type.dims, zero);
  }

  int64_t num_elements() const;
  size_t byte_size() const;
  bool valid() const { return storage != nullptr; }

  void* data() const { return static_cast<char*>(storage->data()) + offset; }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data());
  }

  // Same storage, new dims (the element count must match).
  Array Reshaped(std::vector<int64_t> new_dims) const {
    Array a = *this;
    a.dims = std::move(new_dims);
    return a;
  }
};

}  // namespace kiln::runtime
