// An allocator whose value-initialisation leaves trivial elements uninitialised, for buffers every
// element of which is written before it is read: `std::vector<T, DefaultInitAllocator<T>>(n)`
// and `resize(n)` then skip zeroing the memory first (8 MB per call for a table of 2^20 int64).
#pragma once

#include <memory>
#include <utility>
#include <vector>

namespace kiln {

template <typename T>
struct DefaultInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// A vector whose resize does not zero new trivial elements.
template <typename T>
using UninitVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace kiln
