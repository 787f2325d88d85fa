// Large blocks: the memory of arrays of 1 MiB and more (results, transfers). They come straight
// from the kernel (mmap; from 2 MiB on aligned to 2 MiB and backed by transparent huge pages when
// the system allows it), so small allocations never split them, and a freed one waits in a small
// cache for the next request of the same size: a program run in a loop gets its result's memory
// back instead of faulting fresh pages in (16 MiB of fresh 4 KiB pages cost 14 ms on the 2-core VM,
// rewriting a reused block 1.4 ms), and instead of glibc's heap keeping freed results resident
// while a small allocation that landed in the freed chunk forces the next result onto new memory.
//
// The cache holds at most kMaxCachedBlocks blocks and kMaxCachedBytes bytes; a block that does not
// fit goes back to the kernel at once, and the oldest cached blocks make room for newer ones.
// Thread-safe (one mutex, taken once per allocation and free of a large array, never per step).
#pragma once

#include <cstddef>

namespace kiln::runtime {

inline constexpr size_t kLargeBlockMin = size_t{1} << 20;
inline constexpr size_t kMaxCachedBlocks = 8;
inline constexpr size_t kMaxCachedBytes = size_t{128} << 20;

// The size a large block of at least `bytes` occupies (whole pages; whole 2 MiB huge pages from
// 2 MiB on), or 0 when that overflows.
size_t LargeBlockSize(size_t bytes);

// A block of LargeBlockSize(bytes) bytes, aligned to at least 4 KiB, contents unspecified (fresh
// pages read as zero, cached ones hold what they held); nullptr when the system refuses.
void* AllocateLargeBlock(size_t bytes);

// Returns a block from AllocateLargeBlock(bytes) (the same `bytes`).
void FreeLargeBlock(void* block, size_t bytes);

// Gives every cached block back to the system (tests, and callers that want memory back now).
void ReleaseCachedLargeBlocks();

}  // namespace kiln::runtime
