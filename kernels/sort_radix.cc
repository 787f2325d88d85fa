// RadixSortByKey (kernels/sort_parallel.h): stable LSD radix sort of (key, index) pairs.
//
// Keys are taken relative to their minimum, so only the bytes of (max - min) are passes (an f32
// key's total-order image spans at most 33 bits: five passes, fewer for narrow ranges); a pass
// whose digit is the same for every key is skipped. Each pass splits the items into `parts` fixed
// ranges: every range counts its digits, one serial prefix over (digit, range) gives each range its
// offsets, and every range scatters its items in order. Equal digits keep range order and order
// within a range, so each pass is stable and the result is the same for every `parts`.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/sort_parallel.h"
#include "runtime/parallel.h"
#include "support/default_init_allocator.h"

namespace kiln::kernels::sorting {
namespace {

constexpr int kDigitBits = 8;
constexpr int kBuckets = 1 << kDigitBits;
using Histogram = std::array<int64_t, kBuckets>;

// `passes` stable counting passes; digit(item, pass) is the pass's digit. Result in items.
template <typename Item, typename Digit>
void RadixPasses(Item* items, int64_t n, UninitVector<Item>& scratch, int64_t parts, int passes,
                 Digit&& digit) {
  scratch.resize(static_cast<size_t>(n));
  std::vector<Histogram> counts(static_cast<size_t>(parts));
  Item* src = items;
  Item* dst = scratch.data();
  for (int pass = 0; pass < passes; ++pass) {
    ForParts(n, parts, [&](int64_t t, int64_t b, int64_t e) {
      Histogram& h = counts[static_cast<size_t>(t)];
      h.fill(0);
      for (int64_t i = b; i < e; ++i) ++h[digit(src[i], pass)];
    });
    // Offsets in (digit, part) order; a digit every item shares leaves the order as it is.
    bool trivial = false;
    int64_t offset = 0;
    for (size_t d = 0; d < kBuckets; ++d) {
      int64_t total = 0;
      for (Histogram& h : counts) {
        int64_t c = h[d];
        h[d] = offset + total;
        total += c;
      }
      if (total == n) trivial = true;
      offset += total;
    }
    if (trivial) continue;
    ForParts(n, parts, [&](int64_t t, int64_t b, int64_t e) {
      Histogram& next = counts[static_cast<size_t>(t)];
      for (int64_t i = b; i < e; ++i) dst[next[digit(src[i], pass)]++] = src[i];
    });
    std::swap(src, dst);
  }
  if (src != items) std::memcpy(items, src, static_cast<size_t>(n) * sizeof(Item));
}

int Passes(int bits) { return (bits + kDigitBits - 1) / kDigitBits; }

}  // namespace

int BitWidth(uint64_t v) {
  int bits = 0;
  while (bits < 64 && (v >> bits) != 0) ++bits;
  return bits;
}

void KeyRange(const uint64_t* keys, int64_t n, int64_t parts, uint64_t& low, uint64_t& high) {
  parts = std::clamp<int64_t>(parts, 1, std::max<int64_t>(n, 1));
  std::vector<uint64_t> lows(static_cast<size_t>(parts)), highs(static_cast<size_t>(parts));
  ForParts(n, parts, [&](int64_t t, int64_t b, int64_t e) {
    uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
    for (int64_t i = b; i < e; ++i) {
      lo = std::min(lo, keys[i]);
      hi = std::max(hi, keys[i]);
    }
    lows[static_cast<size_t>(t)] = lo;
    highs[static_cast<size_t>(t)] = hi;
  });
  low = *std::min_element(lows.begin(), lows.end());
  high = *std::max_element(highs.begin(), highs.end());
}

void RadixSortByKey(KeyedIndex* items, int64_t n, UninitVector<KeyedIndex>& scratch,
                    int64_t parts) {
  if (n <= 1) return;
  parts = std::clamp<int64_t>(parts, 1, n);
  std::vector<uint64_t> lows(static_cast<size_t>(parts)), highs(static_cast<size_t>(parts));
  ForParts(n, parts, [&](int64_t t, int64_t b, int64_t e) {
    uint64_t lo = std::numeric_limits<uint64_t>::max(), hi = 0;
    for (int64_t i = b; i < e; ++i) {
      lo = std::min(lo, items[i].key);
      hi = std::max(hi, items[i].key);
    }
    lows[static_cast<size_t>(t)] = lo;
    highs[static_cast<size_t>(t)] = hi;
  });
  const uint64_t low = *std::min_element(lows.begin(), lows.end());
  const uint64_t range = *std::max_element(highs.begin(), highs.end()) - low;
  RadixPasses(
      items, n, scratch, parts, Passes(BitWidth(range)), [low](const KeyedIndex& item, int pass) {
        return static_cast<size_t>(((item.key - low) >> (pass * kDigitBits)) & (kBuckets - 1));
      });
}

void RadixSortPacked(uint64_t* values, int64_t n, UninitVector<uint64_t>& scratch, int64_t parts,
                     int first_bit, int key_bits) {
  if (n <= 1) return;
  parts = std::clamp<int64_t>(parts, 1, n);
  RadixPasses(values, n, scratch, parts, Passes(key_bits), [first_bit](uint64_t v, int pass) {
    return static_cast<size_t>((v >> (first_bit + pass * kDigitBits)) & (kBuckets - 1));
  });
}

}  // namespace kiln::kernels::sorting
