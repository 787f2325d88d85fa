#include "runtime/large_blocks.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>

namespace kiln::runtime {

namespace {

constexpr size_t kPage = size_t{4} << 10;
constexpr size_t kHugePage = size_t{2} << 20;

struct Cached {
  void* block;
  size_t size;
};

// Oldest first.
struct Cache {
  std::mutex mu;
  Cached blocks[kMaxCachedBlocks];
  size_t count = 0;
  size_t bytes = 0;
};

Cache& TheCache() {
  static Cache* cache = new Cache;  // never destroyed: frees may come from other threads at exit
  return *cache;
}

size_t RoundUp(size_t n, size_t to) { return n > SIZE_MAX - (to - 1) ? 0 : (n + to - 1) / to * to; }

void* MapFresh(size_t size) {
  if (size < kHugePage) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  // Over-map by one huge page and trim both ends so the block starts on a huge-page boundary.
  if (size > SIZE_MAX - kHugePage) return nullptr;
  const size_t mapped = size + kHugePage;
  void* p = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePage - 1) & ~uintptr_t{kHugePage - 1};
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t end = start + mapped, block_end = aligned + size;
  if (end > block_end) munmap(reinterpret_cast<void*>(block_end), end - block_end);
  void* block = reinterpret_cast<void*>(aligned);
  madvise(block, size, MADV_HUGEPAGE);  // advice only: without THP the block keeps 4 KiB pages
  return block;
}

}  // namespace

size_t LargeBlockSize(size_t bytes) {
  return RoundUp(bytes, bytes >= kHugePage ? kHugePage : kPage);
}

void* AllocateLargeBlock(size_t bytes) {
  const size_t size = LargeBlockSize(bytes);
  if (size == 0) return nullptr;
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    for (size_t i = cache.count; i-- > 0;) {  // newest first: likeliest still in cache
      if (cache.blocks[i].size != size) continue;
      void* block = cache.blocks[i].block;
      for (size_t j = i + 1; j < cache.count; ++j) cache.blocks[j - 1] = cache.blocks[j];
      --cache.count;
      cache.bytes -= size;
      return block;
    }
  }
  return MapFresh(size);
}

void FreeLargeBlock(void* block, size_t bytes) {
  if (block == nullptr) return;
  const size_t size = LargeBlockSize(bytes);
  if (size > kMaxCachedBytes) {
    munmap(block, size);
    return;
  }
  Cached evicted[kMaxCachedBlocks];
  size_t num_evicted = 0;
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    size_t drop = 0;  // the oldest blocks that must go to make room
    while (drop < cache.count &&
           (cache.count - drop + 1 > kMaxCachedBlocks || cache.bytes + size > kMaxCachedBytes)) {
      cache.bytes -= cache.blocks[drop].size;
      evicted[num_evicted++] = cache.blocks[drop++];
    }
    for (size_t j = drop; j < cache.count; ++j) cache.blocks[j - drop] = cache.blocks[j];
    cache.count -= drop;
    cache.blocks[cache.count++] = Cached{block, size};
    cache.bytes += size;
  }
  for (size_t i = 0; i < num_evicted; ++i) munmap(evicted[i].block, evicted[i].size);
}

void ReleaseCachedLargeBlocks() {
  Cached released[kMaxCachedBlocks];
  size_t n = 0;
  Cache& cache = TheCache();
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    for (size_t i = 0; i < cache.count; ++i) released[n++] = cache.blocks[i];
    cache.count = 0;
    cache.bytes = 0;
  }
  for (size_t i = 0; i < n; ++i) munmap(released[i].block, released[i].size);
}

}  // namespace kiln::runtime
