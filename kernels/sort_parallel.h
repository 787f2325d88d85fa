// The sorts behind stablehlo.sort (kernels/sort.cc), split over the thread pool.
//
//  * StableSortIndices: Kiln's bottom-up stable merge sort of an index permutation under any
//    predicate (a comparator region, or IEEE `<` with NaNs, which is no strict weak order). Split
//    into `parts`, it sorts aligned chunks of kInsertionRun * 2^j elements on the pool, then runs
//    the remaining levels (the merges of one level in parallel). Every merge is the one the serial
//    sort performs, on the same runs, so the permutation is the serial one bit for bit whatever the
//    predicate answers, for every `parts`.
//  * RadixSortByKey / RadixSortPacked: a stable LSD radix sort of (key, index) pairs by unsigned
//  key
//    (as pairs, or packed in one uint64 when key range and index fit), for comparators
//    that are a strict total order of precomputed keys (kernels/sort_comparator.h). A stable sort
//    under a strict weak order has exactly one result, so this equals the merge sort's permutation.
//    Each pass counts digits per fixed chunk, then scatters each chunk from its own offsets:
//    deterministic for any `parts`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "runtime/parallel.h"
#include "support/default_init_allocator.h"

namespace kiln::kernels::sorting {

constexpr int64_t kInsertionRun = 16;

// Calls fn(part, begin, end) for each of `parts` fixed ranges of [0, n) (part t: [n t / parts,
// n (t + 1) / parts)), over the pool; each part runs on one thread.
template <typename Fn>
void ForParts(int64_t n, int64_t parts, Fn&& fn) {
  auto one = [&](int64_t t) { fn(t, n * t / parts, n * (t + 1) / parts); };
  if (parts <= 1) {
    one(0);
    return;
  }
  runtime::ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) one(t);
  });
}

// Merges the runs of one level (`width` long) of src[begin, end) into dst; a lone run is copied.
template <typename Less>
void MergeLevel(const int64_t* src, int64_t* dst, int64_t begin, int64_t end, int64_t width,
                Less& less) {
  for (int64_t lo = begin; lo < end; lo += 2 * width) {
    int64_t mid = std::min(end, lo + width), hi = std::min(end, lo + 2 * width);
    int64_t i = lo, j = mid, k = lo;
    // Take from the right run only when strictly less: equal elements keep their order.
    while (i < mid && j < hi) dst[k++] = less(src[j], src[i]) ? src[j++] : src[i++];
    while (i < mid) dst[k++] = src[i++];
    while (j < hi) dst[k++] = src[j++];
  }
}

// Insertion sort of each kInsertionRun-long run of perm[begin, end).
template <typename Less>
void InsertionRuns(int64_t* perm, int64_t begin, int64_t end, Less& less) {
  for (int64_t run = begin; run < end; run += kInsertionRun) {
    int64_t stop = std::min(end, run + kInsertionRun);
    for (int64_t i = run + 1; i < stop; ++i) {
      int64_t x = perm[i];
      int64_t j = i;
      for (; j > run && less(x, perm[j - 1]); --j) perm[j] = perm[j - 1];
      perm[j] = x;
    }
  }
}

// Sorts perm (n indices) stably by `less`. `less` holds one predicate per part (each used by one
// thread at a time; less[0] also runs the levels above the chunks); parts = less.size() >= 1.
template <typename Less, typename Scratch>
void StableSortIndices(int64_t* perm, int64_t n, Scratch& scratch, std::vector<Less>& less) {
  scratch.resize(static_cast<size_t>(n));
  int64_t parts = static_cast<int64_t>(less.size());
  // Chunk: the smallest kInsertionRun * 2^j holding n / parts elements.
  int64_t chunk = kInsertionRun;
  while (chunk * parts < n) chunk *= 2;
  int64_t chunks = (n + chunk - 1) / chunk;  // <= parts: chunk c uses less[c]
  if (chunks <= 1) chunk = std::max<int64_t>(n, 1);
  // Levels inside a chunk: widths kInsertionRun .. < min(chunk, n), the same count in every chunk.
  int64_t chunk_levels = 0;
  for (int64_t w = kInsertionRun; w < std::min(chunk, n); w *= 2) ++chunk_levels;
  int64_t* bufs[2] = {perm, scratch.data()};
  auto sort_chunk = [&](int64_t c, Less& l) {
    int64_t begin = c * chunk, end = std::min(n, begin + chunk);
    InsertionRuns(perm, begin, end, l);
    int64_t w = kInsertionRun;
    for (int64_t level = 0; level < chunk_levels; ++level, w *= 2)
      MergeLevel(bufs[level % 2], bufs[(level + 1) % 2], begin, end, w, l);
  };
  if (chunks <= 1) {
    sort_chunk(0, less[0]);
  } else {
    runtime::ParallelFor(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) sort_chunk(c, less[static_cast<size_t>(c)]);
    });
  }
  int64_t level = chunk_levels;
  for (int64_t w = chunk; w < n; w *= 2, ++level) {
    const int64_t* src = bufs[level % 2];
    int64_t* dst = bufs[(level + 1) % 2];
    int64_t merges = (n + 2 * w - 1) / (2 * w);
    if (merges == 1) {
      MergeLevel(src, dst, 0, n, w, less[0]);
      continue;
    }
    // Merge m uses less[m]: merges < chunks <= parts, and each index is claimed by one thread.
    runtime::ParallelFor(merges, 1, [&](int64_t b, int64_t e) {
      for (int64_t m = b; m < e; ++m)
        MergeLevel(src, dst, m * 2 * w, std::min(n, (m + 1) * 2 * w), w,
                   less[static_cast<size_t>(m)]);
    });
  }
  if (level % 2 == 1) std::memcpy(perm, scratch.data(), static_cast<size_t>(n) * sizeof(int64_t));
}

struct KeyedIndex {
  uint64_t key;
  int64_t index;
};

// Sorts items[0, n) stably by key; scratch is resized to n. parts >= 1 fixed chunks per pass.
void RadixSortByKey(KeyedIndex* items, int64_t n, UninitVector<KeyedIndex>& scratch, int64_t parts);

// The smallest and largest of keys[0, n) (n >= 1), read in `parts`.
void KeyRange(const uint64_t* keys, int64_t n, int64_t parts, uint64_t& low, uint64_t& high);

// Bits needed for v (0 for 0).
int BitWidth(uint64_t v);

// Sorts values[0, n) stably by their bits [first_bit, first_bit + key_bits); the bits below
// first_bit are left to the initial order (an element's index: then the values end up sorted by
// (key, index), which is the stable order by key). Half the memory traffic of KeyedIndex items.
void RadixSortPacked(uint64_t* values, int64_t n, UninitVector<uint64_t>& scratch, int64_t parts,
                     int first_bit, int key_bits);

}  // namespace kiln::kernels::sorting
