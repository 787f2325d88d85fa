// One row of a scatter with a reducer (kernels/scatter.cc): updates x + j (j < len) go to
// element bases[b0 + j * bstep] + o0 + j * ostep of the result, or nowhere when the base is -1.
//
// Serially, consecutive updates of one element combine in a register and store once: the same
// operations in the same order as one at a time. A long row whose destinations never decrease
// (sorted segment ids) is split over the threads: the row is cut into parts (a cut never falls
// inside a run of one destination), and each part combines its updates into a list of (element,
// value) runs, reading the result but not storing, while its destinations do not decrease. When
// every part's did and each part's first element comes after the previous part's last, the
// parts touched disjoint elements, each element saw exactly the serial sequence of operations,
// and the runs are stored: the serial result bit for bit. Otherwise (unsorted indices, or one
// element's run split across a cut by dropped updates) the row runs serially from the start.
// The check costs no pass of its own over the indices.
//
// Integer reducers into a small result (ScatterRowPrivate) skip all of this: they are exact and
// order-independent, so the row is cut anywhere, each part accumulates into a private copy and the
// copies are combined: bit-identical to the serial order, sorted or not. Floating-point reducers
// always keep the serial order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/scalar_body.h"
#include "runtime/parallel.h"

namespace kiln::kernels::indexing {

// `base_of(b)`: the operand offset of batch position b's window, or -1 (a table of bases, or
// the index read in place).
template <typename BaseOf>
struct ScatterRow {
  int64_t x, b0, bstep, o0, ostep, len;
  BaseOf base_of;

  int64_t Dest(int64_t j) const {
    const int64_t base = base_of(b0 + j * bstep);
    return base < 0 ? -1 : base + o0 + j * ostep;
  }
};

// Updates [begin, end) of `row`, in order, combining runs of one destination in a register.
template <ReducerKind K, typename T, typename BaseOf>
void ScatterRowSerial(T* dst, const T* upd, const ScatterRow<BaseOf>& row, int64_t begin,
                      int64_t end) {
  int64_t current = -1;
  T acc{};
  for (int64_t j = begin; j < end; ++j) {
    const int64_t o = row.Dest(j);
    if (o < 0) continue;
    if (o != current) {
      if (current >= 0) dst[current] = acc;
      current = o;
      acc = dst[o];
    }
    acc = ReducerFn<K, T>::Apply(acc, upd[row.x + j]);
  }
  if (current >= 0) dst[current] = acc;
}

// Like ScatterRowSerial on [begin, end), but the combined values go to `runs` instead of dst;
// false (runs incomplete) as soon as a destination is lower than the one before.
template <ReducerKind K, typename T, typename BaseOf>
bool OrderedRuns(const T* dst, const T* upd, const ScatterRow<BaseOf>& row, int64_t begin,
                 int64_t end, std::vector<std::pair<int64_t, T>>& runs) {
  int64_t current = -1;
  T acc{};
  for (int64_t j = begin; j < end; ++j) {
    const int64_t o = row.Dest(j);
    if (o < 0) continue;
    if (o != current) {
      if (o < current) return false;
      if (current >= 0) runs.emplace_back(current, acc);
      current = o;
      acc = dst[o];
    }
    acc = ReducerFn<K, T>::Apply(acc, upd[row.x + j]);
  }
  if (current >= 0) runs.emplace_back(current, acc);
  return true;
}

// Rows at least this long are tried in parallel (per part: at least half of it).
constexpr int64_t kScatterSplitLength = 1 << 16;

// Integer (and pred) reducers are exact and order-independent (wrapping add and multiply, max,
// min, and, or, xor), so updates into a small result may combine in any order. Results up to this
// many elements take ScatterRowPrivate.
constexpr int64_t kScatterPrivateMax = 1 << 16;

// Updates [begin, end) of `row` applied to `d` one at a time; one-element updates (bstep 1,
// ostep 0: bincount, `x.at[i].add(1)`) in a loop with no per-update index arithmetic.
template <ReducerKind K, typename T, typename BaseOf>
void ScatterRowDirect(T* d, const T* upd, const ScatterRow<BaseOf>& row, int64_t begin,
                      int64_t end) {
  if (row.bstep == 1 && row.ostep == 0) {
    T* const out = d + row.o0;
    const T* const u = upd + row.x;
    for (int64_t j = begin; j < end; ++j) {
      const int64_t base = row.base_of(row.b0 + j);
      if (base >= 0) out[base] = ReducerFn<K, T>::Apply(out[base], u[j]);
    }
    return;
  }
  for (int64_t j = begin; j < end; ++j) {
    const int64_t o = row.Dest(j);
    if (o >= 0) d[o] = ReducerFn<K, T>::Apply(d[o], upd[row.x + j]);
  }
}

// An integer reducer into a result of `dst_size` elements, the row cut into `parts` parts: part 0
// applies its updates to dst, each other part to a private copy filled with the reducer's
// identity; then every element combines the copies into dst (split over the threads). Exact, so
// equal to the serial result whatever the order.
template <ReducerKind K, typename T, typename BaseOf>
void ScatterRowPrivate(T* dst, int64_t dst_size, const T* upd, const ScatterRow<BaseOf>& row,
                       int64_t parts) {
  static_assert(std::is_integral_v<T>);
  if (parts < 2) {
    ScatterRowDirect<K, T>(dst, upd, row, 0, row.len);
    return;
  }
  std::vector<std::vector<T>> copies(static_cast<size_t>(parts));
  runtime::ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      T* d = dst;
      if (t > 0) {
        auto& copy = copies[static_cast<size_t>(t)];
        copy.assign(static_cast<size_t>(dst_size), ReducerFn<K, T>::Identity());
        d = copy.data();
      }
      ScatterRowDirect<K, T>(d, upd, row, row.len * t / parts, row.len * (t + 1) / parts);
    }
  });
  runtime::ParallelFor(dst_size, 4096, [&](int64_t b, int64_t e) {
    for (int64_t t = 1; t < parts; ++t) {
      const T* c = copies[static_cast<size_t>(t)].data();
      for (int64_t i = b; i < e; ++i) dst[i] = ReducerFn<K, T>::Apply(dst[i], c[i]);
    }
  });
}

// `dst_size`: the result's element count (every destination is below it).
template <ReducerKind K, typename T, typename BaseOf>
void ScatterRowReduce(T* dst, int64_t dst_size, const T* upd, const ScatterRow<BaseOf>& row) {
  const int64_t parts =
      std::min<int64_t>(runtime::NumWorkerThreads(), row.len / (kScatterSplitLength / 2));
  if constexpr (std::is_integral_v<T>) {
    if (dst_size <= kScatterPrivateMax) {
      // Private copies only where their fill and combine cost less than the updates saved.
      const bool split = parts >= 2 && dst_size * parts <= row.len;
      ScatterRowPrivate<K, T>(dst, dst_size, upd, row, split ? parts : 1);
      return;
    }
  }
  if (parts < 2) {
    ScatterRowSerial<K, T>(dst, upd, row, 0, row.len);
    return;
  }
  // Cuts: moved forward past a run of one destination.
  std::vector<int64_t> cut(static_cast<size_t>(parts) + 1, row.len);
  cut[0] = 0;
  for (int64_t t = 1; t < parts; ++t) {
    int64_t j = std::max(row.len * t / parts, cut[static_cast<size_t>(t) - 1]);
    while (j > 0 && j < row.len && row.Dest(j) == row.Dest(j - 1)) ++j;
    cut[static_cast<size_t>(t)] = j;
  }
  // Each part combines its updates into runs (element, value) without storing, as long as its
  // destinations never go down; the result is stored only if every part did and the parts' ranges
  // follow each other.
  std::vector<std::vector<std::pair<int64_t, T>>> runs(static_cast<size_t>(parts));
  std::vector<char> ordered(static_cast<size_t>(parts), 0);
  runtime::ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      ordered[static_cast<size_t>(t)] =
          OrderedRuns<K, T>(dst, upd, row, cut[static_cast<size_t>(t)],
                            cut[static_cast<size_t>(t) + 1], runs[static_cast<size_t>(t)]);
    }
  });
  int64_t last = -1;
  for (int64_t t = 0; t < parts; ++t) {
    const auto& r = runs[static_cast<size_t>(t)];
    if (!ordered[static_cast<size_t>(t)] || (!r.empty() && r.front().first <= last)) {
      ScatterRowSerial<K, T>(dst, upd, row, 0, row.len);
      return;
    }
    if (!r.empty()) last = r.back().first;
  }
  for (const auto& r : runs)
    for (const auto& [o, v] : r) dst[o] = v;
}

}  // namespace kiln::kernels::indexing
