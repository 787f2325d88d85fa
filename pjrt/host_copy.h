// Strided host copies between caller memory and Kiln's dense row-major arrays. PJRT hands over host
// data with arbitrary byte strides (numpy views, transposes) and may ask for results in a permuted
// or strided layout; everything funnels through CopyStrided.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "support/status.h"

namespace kiln::pjrt {

// Byte strides of a dense row-major array.
std::vector<int64_t> DenseByteStrides(std::span<const int64_t> dims, int64_t elem_size);

// Byte strides of a dense array whose physical order is given by `minor_to_major` (XLA layouts:
// minor_to_major[0] is the fastest-varying dimension). Fails unless it is a permutation of the
// dims.
StatusOr<std::vector<int64_t>> PermutedByteStrides(std::span<const int64_t> dims,
                                                   std::span<const int64_t> minor_to_major,
                                                   int64_t elem_size);

// The element count of `dims`, failing on negative dimensions or int64 overflow of the byte size.
StatusOr<int64_t> CheckedElementCount(std::span<const int64_t> dims, int64_t elem_size);

// The byte range [lo, hi) touched by a strided view of `dims` (lo <= 0 for negative strides).
// Empty views touch nothing: lo == hi == 0. Fails on overflow.
struct ByteExtent {
  int64_t lo = 0;
  int64_t hi = 0;
};
StatusOr<ByteExtent> StridedExtent(std::span<const int64_t> dims,
                                   std::span<const int64_t> byte_strides, int64_t elem_size);

// Copies every element of a `dims`-shaped view from `src` (with `src_strides`) to `dst` (with
// `dst_strides`). Strides are in bytes and may be negative or zero; pointers address element 0.
void CopyStrided(const void* src, std::span<const int64_t> src_strides, void* dst,
                 std::span<const int64_t> dst_strides, std::span<const int64_t> dims,
                 size_t elem_size);

}  // namespace kiln::pjrt
