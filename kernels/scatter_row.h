// One row of a scatter with a reducer (kernels/scatter.cc): updates x + j (j < len) go to
// element bases[b0 + j * bstep] + o0 + j * ostep of the result, or nowhere when the base is -1.
//
// Serially, consecutive updates of one element combine in a register and store once: the same
// operations in the same order as one at a time. A long row whose destinations are grouped (each
// element's updates in one stretch of the row, as sorted segment ids give) is split over the
// threads: the row is cut into parts (a cut never falls inside a run of one destination), each
// part's destination range is measured, and when the ranges are disjoint and in order every part
// runs the serial loop on its own elements. Each element then sees exactly the serial sequence
// of operations, so the result is the serial one bit for bit. Otherwise (unsorted indices, or
// a destination split by skipped updates) the row runs serially.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/scalar_body.h"
#include "runtime/parallel.h"

namespace kiln::kernels::indexing {

struct ScatterRow {
  int64_t x, b0, bstep, o0, ostep, len;

  int64_t Dest(const int64_t* bases, int64_t j) const {
    int64_t base = bases[b0 + j * bstep];
    return base < 0 ? -1 : base + o0 + j * ostep;
  }
};

// Updates [begin, end) of `row`, in order, combining runs of one destination in a register.
template <ReducerKind K, typename T>
void ScatterRowSerial(T* dst, const T* upd, const int64_t* bases, const ScatterRow& row,
                      int64_t begin, int64_t end) {
  int64_t current = -1;
  T acc{};
  for (int64_t j = begin; j < end; ++j) {
    const int64_t o = row.Dest(bases, j);
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

// Rows at least this long are tried in parallel (per part: at least half of it).
constexpr int64_t kScatterSplitLength = 1 << 16;

template <ReducerKind K, typename T>
void ScatterRowReduce(T* dst, const T* upd, const int64_t* bases, const ScatterRow& row) {
  const int64_t parts =
      std::min<int64_t>(runtime::NumWorkerThreads(), row.len / (kScatterSplitLength / 2));
  if (parts < 2) {
    ScatterRowSerial<K, T>(dst, upd, bases, row, 0, row.len);
    return;
  }
  // Cuts: moved forward past a run of one destination.
  std::vector<int64_t> cut(static_cast<size_t>(parts) + 1, row.len);
  cut[0] = 0;
  for (int64_t t = 1; t < parts; ++t) {
    int64_t j = std::max(row.len * t / parts, cut[static_cast<size_t>(t) - 1]);
    while (j > 0 && j < row.len && row.Dest(bases, j) == row.Dest(bases, j - 1)) ++j;
    cut[static_cast<size_t>(t)] = j;
  }
  std::vector<int64_t> lo(static_cast<size_t>(parts)), hi(static_cast<size_t>(parts));
  runtime::ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      int64_t mn = std::numeric_limits<int64_t>::max(), mx = -1;
      for (int64_t j = cut[static_cast<size_t>(t)]; j < cut[static_cast<size_t>(t) + 1]; ++j) {
        const int64_t o = row.Dest(bases, j);
        if (o < 0) continue;
        mn = std::min(mn, o);
        mx = std::max(mx, o);
      }
      lo[static_cast<size_t>(t)] = mn;
      hi[static_cast<size_t>(t)] = mx;
    }
  });
  int64_t last = -1;
  for (int64_t t = 0; t < parts; ++t) {
    if (hi[static_cast<size_t>(t)] < 0) continue;  // no update lands
    if (lo[static_cast<size_t>(t)] <= last) {
      ScatterRowSerial<K, T>(dst, upd, bases, row, 0, row.len);
      return;
    }
    last = hi[static_cast<size_t>(t)];
  }
  runtime::ParallelFor(parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t)
      ScatterRowSerial<K, T>(dst, upd, bases, row, cut[static_cast<size_t>(t)],
                             cut[static_cast<size_t>(t) + 1]);
  });
}

}  // namespace kiln::kernels::indexing
