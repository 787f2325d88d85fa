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
#pragma once

#include <algorithm>
#include <cstdint>
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

template <ReducerKind K, typename T, typename BaseOf>
void ScatterRowReduce(T* dst, const T* upd, const ScatterRow<BaseOf>& row) {
  const int64_t parts =
      std::min<int64_t>(runtime::NumWorkerThreads(), row.len / (kScatterSplitLength / 2));
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
