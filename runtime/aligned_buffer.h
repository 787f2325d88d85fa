// AlignedBuffer: an owned, 64-byte-aligned, uninitialised block that can grow; the working memory
// of a program run (frames and scratch). Growing discards the contents.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <new>

#include "support/status.h"

namespace kiln::runtime {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  AlignedBuffer(AlignedBuffer&& o) noexcept : data_(o.data_), size_(o.size_) {
    o.data_ = nullptr;
    o.size_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    if (this != &o) {
      std::free(data_);
      data_ = o.data_;
      size_ = o.size_;
      o.data_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  ~AlignedBuffer() { std::free(data_); }

  // Makes the block at least `bytes` long (at least 64).
  Status Reserve(size_t bytes) {
    if (bytes <= size_ && data_ != nullptr) return Status::Ok();
    const size_t rounded = ((bytes < 64 ? 64 : bytes) + 63) & ~size_t{63};
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) {
      return ResourceExhausted("cannot allocate " + std::to_string(rounded) +
                               " bytes of working memory");
    }
    std::free(data_);
    data_ = static_cast<std::byte*>(p);
    size_ = rounded;
    return Status::Ok();
  }
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kiln::runtime
