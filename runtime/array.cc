#include "runtime/array.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "runtime/large_blocks.h"

namespace kiln::runtime {

namespace {

// Large arrays come from runtime/large_blocks.h, except under AddressSanitizer, whose heap puts
// guard zones around every block (mapped pages have none).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kLargeBlocks = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kLargeBlocks = false;
#else
constexpr bool kLargeBlocks = true;
#endif
#else
constexpr bool kLargeBlocks = true;
#endif

std::atomic<int64_t> g_in_use{0}, g_peak{0}, g_allocs{0}, g_largest{0};

void RaiseTo(std::atomic<int64_t>& target, int64_t value) {
  int64_t seen = target.load(std::memory_order_relaxed);
  while (value > seen && !target.compare_exchange_weak(seen, value, std::memory_order_relaxed)) {
  }
}

void CountAllocation(int64_t bytes) {
  const int64_t now = g_in_use.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  g_allocs.fetch_add(1, std::memory_order_relaxed);
  RaiseTo(g_peak, now);
  RaiseTo(g_largest, bytes);
}

}  // namespace

MemoryCounters GetMemoryCounters() {
  MemoryCounters c;
  c.bytes_in_use = g_in_use.load(std::memory_order_relaxed);
  c.peak_bytes_in_use = g_peak.load(std::memory_order_relaxed);
  c.num_allocs = g_allocs.load(std::memory_order_relaxed);
  c.largest_alloc_size = g_largest.load(std::memory_order_relaxed);
  return c;
}

void ClearMemoryCounters() {
  g_allocs.store(0, std::memory_order_relaxed);
  g_largest.store(0, std::memory_order_relaxed);
  g_peak.store(g_in_use.load(std::memory_order_relaxed), std::memory_order_relaxed);
  // An allocation counted between the load and the store would leave the peak below what is in
  // use: raise it again.
  RaiseTo(g_peak, g_in_use.load(std::memory_order_relaxed));
}

StatusOr<std::shared_ptr<Storage>> Storage::Allocate(size_t bytes, bool zero) {
  // aligned_alloc needs a size that is a multiple of the alignment, and a non-zero size gives every
  // array a distinct address even when it is empty.
  size_t rounded = (bytes + kStorageAlignment - 1) / kStorageAlignment * kStorageAlignment;
  if (rounded == 0) rounded = kStorageAlignment;
  if (rounded < bytes) return ResourceExhausted("allocation size overflow");
  const bool large = kLargeBlocks && rounded >= kLargeBlockMin;
  if (large) rounded = LargeBlockSize(rounded);
  void* p = large ? AllocateLargeBlock(rounded) : std::aligned_alloc(kStorageAlignment, rounded);
  if (p == nullptr) {
    return ResourceExhausted("failed to allocate " + std::to_string(bytes) + " bytes");
  }
  if (zero) std::memset(p, 0, rounded);
  CountAllocation(static_cast<int64_t>(rounded));
  auto* storage = new Storage(p, rounded, nullptr, /*owned=*/true);
  storage->large_ = large;
  return std::shared_ptr<Storage>(storage);
}

std::shared_ptr<Storage> Storage::Borrow(void* data, size_t bytes, std::function<void()> release) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, std::move(release), /*owned=*/false));
}

Storage::~Storage() {
  if (owned_) {
    if (large_) {
      FreeLargeBlock(data_, size_);
    } else {
      std::free(data_);
    }
    g_in_use.fetch_sub(static_cast<int64_t>(size_), std::memory_order_relaxed);
  }
  if (release_) release_();
}

int64_t Array::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

size_t Array::byte_size() const {
  return static_cast<size_t>(num_elements()) * static_cast<size_t>(ir::DTypeByteSize(dtype));
}

StatusOr<Array> Array::Allocate(ir::DType dtype, std::vector<int64_t> dims, bool zero) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      return InvalidArgument("cannot allocate an array with a dynamic or negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return ResourceExhausted("array element count overflows int64");
    }
    n *= d;
  }
  size_t elem = static_cast<size_t>(ir::DTypeByteSize(dtype));
  if (elem != 0 && static_cast<size_t>(n) > std::numeric_limits<size_t>::max() / elem) {
    return ResourceExhausted("array byte size overflows");
  }
  Array a;
  a.dtype = dtype;
  a.dims = std::move(dims);
  KILN_ASSIGN_OR_RETURN(a.storage, Storage::Allocate(static_cast<size_t>(n) * elem, zero));
  return a;
}

}  // namespace kiln::runtime
