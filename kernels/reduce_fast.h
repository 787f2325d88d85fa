// stablehlo.reduce's fast path (kernels/reduction.cc): the typed loops for known reducers over the
// [kept-outer..., reduced-outer..., inner] view of the input.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "kernels/lowering.h"
#include "kernels/reduce_rows8.h"
#include "kernels/reduce_simd.h"
#include "kernels/scalar_body.h"
#include "runtime/parallel.h"

namespace kiln::kernels::reduce {

// ---------------------------------------------------------------------------------------------
// Contiguous row reduction: blocked pairwise tree with kLanes independent lanes per leaf (enough
// for the vector loops to hide the latency of each add or max).

constexpr int64_t kLanes = kReduceLanes;            // independent accumulators per row
constexpr int64_t kLeaf = 2048;                     // elements per leaf of the pairwise tree
constexpr int64_t kParallelRow = int64_t{1} << 18;  // rows this long are split across threads

// Whether the AVX2 loops (kernels/reduce_simd.h) serve reducer K on T on this CPU.
template <ReducerKind K, typename T>
bool UseSimd() {
  if constexpr ((std::is_same_v<T, float> || std::is_same_v<T, double>)&&ReduceSimdKind(K)) {
    static const bool available = ReduceSimdAvailable();
    return available;
  }
  return false;
}

// Whether avx2::ReduceInts serves reducer K on T on this CPU.
template <ReducerKind K, typename T>
bool UseSimdInts() {
  if constexpr ((std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>)&&ReduceSimdIntKind(K)) {
    static const bool available = ReduceSimdAvailable();
    return available;
  }
  return false;
}

// acc[j] = Apply(acc[j], row[j]) for j in [0, n).
template <ReducerKind K, typename T>
void CombineRow(T* acc, const T* row, int64_t n) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (UseSimd<K, T>()) return avx2::CombineRow(K, acc, row, n);
  }
  for (int64_t j = 0; j < n; ++j) acc[j] = ReducerFn<K, T>::Apply(acc[j], row[j]);
}

// CombineRow with rows[0], ..., rows[m - 1] in turn.
template <ReducerKind K, typename T>
void CombineRows(T* acc, const T* const* rows, int m, int64_t n) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (m == kReduceRows && UseSimd<K, T>()) return avx2::CombineRows4(K, acc, rows, n);
  }
  for (int r = 0; r < m; ++r) CombineRow<K, T>(acc, rows[r], n);
}

// The rest of a leaf whose first i elements are folded into acc: whole blocks, the tail into
// lane 0, then the lanes as a tree.
template <ReducerKind K, typename T>
T FinishLeaf(const T* x, int64_t i, int64_t n, T acc[kLanes]) {
  using F = ReducerFn<K, T>;
  if (i == 0 && n < kLanes) {
    // A short row (a loop body's few elements): nothing reached the lanes, which all still hold
    // the identity, and the whole row goes into lane 0. The tree below would then combine lane 0
    // with the identity once per level (and the identity with itself, which is the identity):
    // the same bits without the other 31 lanes.
    for (; i < n; ++i) acc[0] = F::Apply(acc[0], x[i]);
    for (int64_t w = kLanes / 2; w > 0; w /= 2) acc[0] = F::Apply(acc[0], F::Identity());
    return acc[0];
  }
  for (; i + kLanes <= n; i += kLanes) {
    for (int64_t j = 0; j < kLanes; ++j) acc[j] = F::Apply(acc[j], x[i + j]);
  }
  for (; i < n; ++i) acc[0] = F::Apply(acc[0], x[i]);
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (UseSimd<K, T>()) return avx2::FoldLanes(K, acc);
  }
  for (int64_t w = kLanes / 2; w > 0; w /= 2) {
    for (int64_t j = 0; j < w; ++j) acc[j] = F::Apply(acc[j], acc[j + w]);
  }
  return acc[0];
}

template <ReducerKind K, typename T>
T ReduceLeaf(const T* x, int64_t n) {
  if constexpr (std::is_same_v<T, int32_t> || std::is_same_v<T, uint32_t>) {
    // Any order gives these bits: the lanes' order is not kept.
    if (UseSimdInts<K, T>()) return avx2::ReduceInts(K, x, n, ReducerFn<K, T>::Identity());
  }
  T acc[kLanes];
  for (T& a : acc) a = ReducerFn<K, T>::Identity();
  int64_t i = 0;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (UseSimd<K, T>()) i = avx2::ReduceLanes(K, x, n, acc);
  }
  return FinishLeaf<K, T>(x, i, n, acc);
}

// ReduceLeaf of kReduceRows rows at once (f32 with the AVX2 loops only): the same bits.
template <ReducerKind K>
void ReduceLeaves(const float* const rows[kReduceRows], int64_t n, float out[kReduceRows]) {
  float acc[kReduceRows][kLanes];
  for (auto& lanes : acc) {
    for (float& a : lanes) a = ReducerFn<K, float>::Identity();
  }
  const int64_t i = avx2::ReduceLanes4(K, rows, n, acc);
  for (int r = 0; r < kReduceRows; ++r) out[r] = FinishLeaf<K, float>(rows[r], i, n, acc[r]);
}

// Splits at a leaf boundary near the middle; 0 < result < n whenever n > kLeaf.
inline int64_t PairwiseSplit(int64_t n) { return ((n / kLeaf + 1) / 2) * kLeaf; }

template <ReducerKind K, typename T>
T ReducePairwise(const T* x, int64_t n) {
  if (n <= kLeaf) return ReduceLeaf<K, T>(x, n);
  int64_t half = PairwiseSplit(n);
  return ReducerFn<K, T>::Apply(ReducePairwise<K, T>(x, half),
                                ReducePairwise<K, T>(x + half, n - half));
}

// Same tree as ReducePairwise, with the subtrees at depth `kDepth` evaluated in parallel.
template <ReducerKind K, typename T>
T ReducePairwiseParallel(const T* x, int64_t n) {
  constexpr int kDepth = 5;
  struct Range {
    int64_t begin, n;
  };
  std::vector<Range> leaves;
  auto split = [&](auto& self, int64_t begin, int64_t len, int depth) -> void {
    if (depth == kDepth || len <= kLeaf) {
      leaves.push_back({begin, len});
      return;
    }
    int64_t half = PairwiseSplit(len);
    self(self, begin, half, depth + 1);
    self(self, begin + half, len - half, depth + 1);
  };
  split(split, 0, n, 0);
  std::vector<T> partial(leaves.size());
  runtime::ParallelFor(static_cast<int64_t>(leaves.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      partial[i] = ReducePairwise<K, T>(x + leaves[i].begin, leaves[i].n);
  });
  size_t next = 0;
  auto combine = [&](auto& self, int64_t len, int depth) -> T {
    if (depth == kDepth || len <= kLeaf) return partial[next++];
    int64_t half = PairwiseSplit(len);
    T left = self(self, half, depth + 1);
    T right = self(self, len - half, depth + 1);
    return ReducerFn<K, T>::Apply(left, right);
  };
  return combine(combine, n, 0);
}

// ---------------------------------------------------------------------------------------------
// Reduce geometry.

struct ReduceGeometry {
  std::vector<int64_t> kept_sizes, kept_strides;  // outer kept groups, input element strides
  std::vector<int64_t> red_sizes, red_strides;    // outer reduced groups
  int64_t inner = 1;                              // innermost group, contiguous in the input
  bool inner_reduced = false;
  int64_t outer_kept = 1;  // one output row per kept-outer index
  int64_t outer_reduced = 1;
  int64_t input_elements = 0;
};

// Defined in kernels/reduce_fast.cc.
ReduceGeometry AnalyzeReduce(const std::vector<int64_t>& dims, const std::vector<bool>& reduced);
int64_t KeptOffset(const ReduceGeometry& g, int64_t p);

// KeptOffset without a division when one kept axis remains (rows of a matrix, p < its size).
inline int64_t KeptOffsetOf(const ReduceGeometry& g, int64_t p) {
  return g.kept_sizes.size() == 1 ? p * g.kept_strides[0] : KeptOffset(g, p);
}

bool ReducesContiguousRows(const ReduceGeometry& g);

// Visits the input offset of every reduced-outer index, in row-major order.
template <typename Fn>
void ForEachReducedOffset(const ReduceGeometry& g, Fn&& fn) {
  std::vector<int64_t> idx(g.red_sizes.size(), 0);
  int64_t off = 0;
  for (;;) {
    fn(off);
    size_t i = idx.size();
    for (; i-- > 0;) {
      off += g.red_strides[i];
      if (++idx[i] < g.red_sizes[i]) break;
      off -= g.red_strides[i] * g.red_sizes[i];
      idx[i] = 0;
    }
    if (i == static_cast<size_t>(-1)) return;
  }
}

// Output columns per task when the inner axis is kept: at least, and at most (a stack block).
constexpr int64_t kColumnChunk = 256;
constexpr int64_t kMaxColumnChunk = 2048;
constexpr int64_t kRowBlock = 64;  // rows summed into a partial before joining the output

// Output columns o[0, w), kept-axis position fixed; row_at(off, k) is the w elements of the row
// at reduced offset `off` (k < kReduceRows: rows pending at once, each needs its own memory when
// row_at converts); `partial` holds w elements.
template <ReducerKind K, typename T, typename RowAt>
void ReduceColumnsOf(const ReduceGeometry& g, RowAt&& row_at, T init, T* o, int64_t w, T* partial) {
  for (int64_t j = 0; j < w; ++j) o[j] = init;
  // Rows combine into the output in order, four at a time. Long columns sum blocks of kRowBlock
  // rows separately (starting from the block's first row), then join them to the output, to
  // limit float error growth.
  const bool blocks = g.outer_reduced > kRowBlock;
  T* target = blocks ? partial : o;
  const T* pending[kReduceRows];
  int waiting = 0;
  int64_t rows_in_block = 0;
  auto flush = [&] {
    CombineRows<K, T>(target, pending, waiting, w);
    waiting = 0;
  };
  ForEachReducedOffset(g, [&](int64_t off) {
    if (blocks && rows_in_block == 0) {
      const T* row = row_at(off, 0);
      std::copy(row, row + w, partial);
    } else {
      pending[waiting] = row_at(off, waiting);
      if (++waiting == kReduceRows) flush();
    }
    if (blocks && ++rows_in_block == kRowBlock) {
      flush();
      CombineRow<K, T>(o, partial, w);
      rows_in_block = 0;
    }
  });
  flush();
  if (rows_in_block > 0) CombineRow<K, T>(o, partial, w);
}

// Output rows up to this many bytes fold with their accumulators in registers
// (avx2::ReduceColumnStrips); longer ones stream whole rows (a strip walk down a long row's
// columns would jump a row's length per load).
constexpr int64_t kStripRowBytes = 1024;

// Whether ReduceColumns folds output rows of w elements with avx2::ReduceColumnStrips.
template <ReducerKind K, typename T>
bool UsesColumnStrips(int64_t w) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    return UseSimd<K, T>() && w * static_cast<int64_t>(sizeof(T)) <= kStripRowBytes;
  }
  return false;
}

// ReduceColumnsOf the rows at base + each reduced offset; `offsets` lists those offsets in order
// when UsesColumnStrips<K, T>(w) (computed once per reduction by the caller), else null.
template <ReducerKind K, typename T>
void ReduceColumns(const ReduceGeometry& g, const T* base, T init, T* o, int64_t w, T* partial,
                   const int64_t* offsets) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (offsets != nullptr) {
      return avx2::ReduceColumnStrips(K, base, offsets, g.outer_reduced, kRowBlock, w, init, o);
    }
  }
  ReduceColumnsOf<K, T>(
      g, [base](int64_t off, int) { return base + off; }, init, o, w, partial);
}

// Outputs whose fold chains ReduceShortRows runs side by side.
constexpr int kShortChains = 8;

// Outputs [b, e) of a reduction whose inner axis is reduced, when its rows are shorter than kLanes
// (a sum over the first and last axes of a small odd 3-D array, or over a short last axis): one
// output at a time is a chain of dependent scalar operations, so kShortChains outputs advance side
// by side and their chains overlap. Each output's operations and their order are those of
// ReduceRows and of ReduceFast's loop over reduced offsets (init, then each reduced offset's row
// by ReducePairwise, which on such a row is FinishLeaf's short path: a left fold into the
// identity, then the identity once per level of the lanes' tree; ReduceLeaf for 32-bit integers,
// whose result any order gives): the same bits.
// With AVX2 (f32, f64; add, multiply, maximum, minimum), kShortRowsAtOnce outputs at a time,
// each reduced offset's rows by avx2::ReduceShortRowsSimd: the same leaves, the same bits.
template <ReducerKind K, typename T>
void ReduceShortRows(const ReduceGeometry& g, const T* x, T init, T* out, int64_t b, int64_t e) {
  using F = ReducerFn<K, T>;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (UseSimd<K, T>()) {
      constexpr int kAtOnce = avx2::kShortRowsAtOnce;
      if (g.inner == 2 && ReducesContiguousRows(g)) {  // rows of two back to back: the same bits
        b += avx2::ReducePairRows(K, x + 2 * b, e - b, F::Identity(), init, out + b);
      }
      for (int64_t p0 = b; p0 < e; p0 += kAtOnce) {
        const int m = static_cast<int>(std::min<int64_t>(kAtOnce, e - p0));
        const T* base[kAtOnce];
        const T* rows[kAtOnce];
        T acc[kAtOnce], leaf[kAtOnce];
        for (int q = 0; q < m; ++q) {
          base[q] = x + KeptOffsetOf(g, p0 + q);
          acc[q] = init;
        }
        auto fold = [&](int64_t off) {
          for (int q = 0; q < m; ++q) rows[q] = base[q] + off;
          avx2::ReduceShortRowsSimd(K, rows, m, g.inner, F::Identity(), leaf);
          for (int q = 0; q < m; ++q) acc[q] = F::Apply(acc[q], leaf[q]);
        };
        if (g.outer_reduced == 1) {
          fold(0);  // ForEachReducedOffset's one offset, without its index vector
        } else {
          ForEachReducedOffset(g, fold);
        }
        for (int q = 0; q < m; ++q) out[p0 + q] = acc[q];
      }
      return;
    }
  }
  for (int64_t p0 = b; p0 < e; p0 += kShortChains) {
    const int64_t m = std::min<int64_t>(kShortChains, e - p0);
    const T* base[kShortChains];
    T acc[kShortChains];
    for (int q = 0; q < kShortChains; ++q) {
      base[q] = x + KeptOffsetOf(g, p0 + std::min<int64_t>(q, m - 1));  // spare lanes repeat
      acc[q] = init;
    }
    ForEachReducedOffset(g, [&](int64_t off) {
      T leaf[kShortChains];
      for (T& l : leaf) l = F::Identity();
      for (int64_t i = 0; i < g.inner; ++i) {
#pragma GCC unroll 8
        for (int q = 0; q < kShortChains; ++q) leaf[q] = F::Apply(leaf[q], base[q][off + i]);
      }
      for (int64_t w = kLanes / 2; w > 0; w /= 2) {
        for (T& l : leaf) l = F::Apply(l, F::Identity());
      }
#pragma GCC unroll 8
      for (int q = 0; q < kShortChains; ++q) acc[q] = F::Apply(acc[q], leaf[q]);
    });
    for (int64_t q = 0; q < m; ++q) out[p0 + q] = acc[q];
  }
}

// Whether ReduceFast reduces g by ReduceSegmentRows: the last axis reduced with outer reduced axes
// too (a sum over axes (0, 2)), rows from kLanes to kLeaf elements, f32 or f64.
template <typename T>
bool UsesSegmentRows(const ReduceGeometry& g) {
  return (std::is_same_v<T, float> || std::is_same_v<T, double>)&&g.inner_reduced &&
         g.outer_reduced > 1 && g.inner >= kLanes && g.inner <= kLeaf && g.input_elements > 0;
}

// avx2::AccumulateRows (reduce_simd.h) on any CPU: the same operations in the same order for
// each output.
template <ReducerKind K, typename T>
void AccumulateRows(const T* const* bases, int m, const int64_t* offsets, int64_t rows, int64_t n,
                    T (*lanes)[kLanes]) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (UseSimd<K, T>()) return avx2::AccumulateRows(K, bases, m, offsets, rows, n, lanes);
  }
  for (int q = 0; q < m; ++q) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* x = bases[q] + offsets[r];
      for (int64_t i = 0; i < n; ++i) {
        lanes[q][i % kLanes] = ReducerFn<K, T>::Apply(lanes[q][i % kLanes], x[i]);
      }
    }
  }
}

// The lanes' tree of FinishLeaf: lanes[j] = Apply(lanes[j], lanes[j + w]), w = kLanes / 2, ..., 1.
template <ReducerKind K, typename T>
T FoldTree(T lanes[kLanes]) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (UseSimd<K, T>()) return avx2::FoldLanes(K, lanes);
  }
  for (int64_t w = kLanes / 2; w > 0; w /= 2) {
    for (int64_t j = 0; j < w; ++j) lanes[j] = ReducerFn<K, T>::Apply(lanes[j], lanes[j + w]);
  }
  return lanes[0];
}

// Rows of output p per leaf of ReduceSegmentRows: whole rows, about kLeaf elements.
inline int64_t SegmentRowsPerLeaf(const ReduceGeometry& g) {
  return std::max<int64_t>(1, kLeaf / g.inner);
}

// Outputs [b, e) of a reduction that UsesSegmentRows; offsets lists the reduced offsets in
// row-major order (ForEachReducedOffset). Each output's reduced rows, in order, are cut into leaves
// of SegmentRowsPerLeaf whole rows; a leaf's rows all fold into one set of kLanes lanes (element i
// of a row into lane i % kLanes, AccumulateRows), the lanes fold by FinishLeaf's tree, and the
// leaves join the initial value left to right: out = init op leaf0 op leaf1 .... One row per
// output and row (37 x 301 rows of 65 elements for a sum over axes (0, 2) of f32[37, 301, 65]) paid
// a lane set and a fold each; here a leaf pays them once.
// Outputs whose lanes ReduceSegmentRows holds at once (8 KiB of f32 lanes).
constexpr int kSegmentOutputs = 64;

template <ReducerKind K, typename T>
void ReduceSegmentRows(const ReduceGeometry& g, const T* x, const std::vector<int64_t>& offsets,
                       T init, T* out, int64_t b, int64_t e) {
  using F = ReducerFn<K, T>;
  const int64_t per_leaf = SegmentRowsPerLeaf(g);
  const int64_t rows = static_cast<int64_t>(offsets.size());
  for (int64_t p0 = b; p0 < e; p0 += kSegmentOutputs) {
    const int m = static_cast<int>(std::min<int64_t>(kSegmentOutputs, e - p0));
    const T* bases[kSegmentOutputs];
    T acc[kSegmentOutputs];
    for (int q = 0; q < m; ++q) {
      bases[q] = x + KeptOffset(g, p0 + q);
      acc[q] = init;
    }
    for (int64_t r = 0; r < rows; r += per_leaf) {
      T lanes[kSegmentOutputs][kLanes];
      for (int q = 0; q < m; ++q) {
        for (T& l : lanes[q]) l = F::Identity();
      }
      AccumulateRows<K, T>(bases, m, offsets.data() + r, std::min(per_leaf, rows - r), g.inner,
                           lanes);
      for (int q = 0; q < m; ++q) acc[q] = F::Apply(acc[q], FoldTree<K, T>(lanes[q]));
    }
    for (int q = 0; q < m; ++q) out[p0 + q] = acc[q];
  }
}

// Rows [b, e) of a reduction whose reduced elements form rows (g.inner_reduced, one reduced-outer
// index): out[p] = init op fold(row p), the fold ReducePairwise's, whose first leaf is the whole
// row when it is at most kLeaf long (then kReduceRows rows share a pass over their leaves; the
// same bits as one at a time).
template <ReducerKind K, typename T>
void ReduceRows(const ReduceGeometry& g, const T* x, T init, T* out, int64_t b, int64_t e) {
  using F = ReducerFn<K, T>;
  if (g.inner < kLanes) return ReduceShortRows<K, T>(g, x, init, out, b, e);  // the same bits
  if constexpr (std::is_same_v<T, float>) {
    if (g.inner <= kLeaf && UseSimd<K, T>()) {
      int64_t p = b;
      if (g.inner <= kShortRowMax) {  // up to eight short rows at once: the same bits
        for (; p < e; p += 8) {
          const int m = static_cast<int>(std::min<int64_t>(8, e - p));
          const T* rows[8];
          T v[8];
          for (int r = 0; r < m; ++r) rows[r] = x + KeptOffsetOf(g, p + r);
          avx2::ReduceRows8(K, rows, m, g.inner, F::Identity(), v);
          for (int r = 0; r < m; ++r) out[p + r] = F::Apply(init, v[r]);
        }
        return;
      }
      for (; p + kReduceRows <= e; p += kReduceRows) {
        const T* rows[kReduceRows];
        T v[kReduceRows];
        for (int r = 0; r < kReduceRows; ++r) rows[r] = x + KeptOffsetOf(g, p + r);
        ReduceLeaves<K>(rows, g.inner, v);
        for (int r = 0; r < kReduceRows; ++r) out[p + r] = F::Apply(init, v[r]);
      }
      for (; p < e; ++p) out[p] = F::Apply(init, ReduceLeaf<K, T>(x + KeptOffsetOf(g, p), g.inner));
      return;
    }
  }
  for (int64_t p = b; p < e; ++p)
    out[p] = F::Apply(init, ReducePairwise<K, T>(x + KeptOffsetOf(g, p), g.inner));
}

// Output columns per task when the inner axis is kept (see ReduceFast).
inline int64_t ColumnChunkOf(const ReduceGeometry& g) {
  const int64_t threads = runtime::NumWorkerThreads();
  const int64_t split = (g.inner + threads - 1) / threads;
  return std::clamp<int64_t>((split + 15) / 16 * 16, kColumnChunk, kMaxColumnChunk);
}

template <ReducerKind K, typename T>
void ReduceFast(const ReduceGeometry& g, const T* x, T init, T* out) {
  using F = ReducerFn<K, T>;
  if (g.input_elements == 0) {
    int64_t n = g.outer_kept * (g.inner_reduced ? 1 : g.inner);
    std::fill(out, out + n, init);  // a zero-sized kept axis gives n == 0 too
    return;
  }
  if (g.inner_reduced) {
    if (g.outer_kept == 1 && g.outer_reduced == 1 && g.inner >= kParallelRow) {
      out[0] = F::Apply(init, ReducePairwiseParallel<K, T>(x, g.inner));
      return;
    }
    int64_t work = g.outer_reduced * g.inner;
    if (g.outer_reduced == 1) {
      runtime::ParallelFor(g.outer_kept,
                           std::max<int64_t>(kReduceRows, 32768 / std::max<int64_t>(work, 1)),
                           [&](int64_t b, int64_t e) { ReduceRows<K, T>(g, x, init, out, b, e); });
      return;
    }
    if (UsesSegmentRows<T>(g)) {
      std::vector<int64_t> offsets;
      offsets.reserve(static_cast<size_t>(g.outer_reduced));
      ForEachReducedOffset(g, [&](int64_t off) { offsets.push_back(off); });
      runtime::ParallelFor(
          g.outer_kept, std::max<int64_t>(1, 32768 / work),
          [&](int64_t b, int64_t e) { ReduceSegmentRows<K, T>(g, x, offsets, init, out, b, e); });
      return;
    }
    if (g.inner < kLanes) {
      runtime::ParallelFor(
          g.outer_kept, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)),
          [&](int64_t b, int64_t e) { ReduceShortRows<K, T>(g, x, init, out, b, e); });
      return;
    }
    runtime::ParallelFor(g.outer_kept, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)),
                         [&](int64_t b, int64_t e) {
                           for (int64_t p = b; p < e; ++p) {
                             const T* base = x + KeptOffset(g, p);
                             T acc = init;
                             ForEachReducedOffset(g, [&](int64_t off) {
                               acc = F::Apply(acc, ReducePairwise<K, T>(base + off, g.inner));
                             });
                             out[p] = acc;
                           }
                         });
    return;
  }
  if (g.outer_reduced == 1) {
    // Every reduced axis has size 1 (JAX's `all` over the index vector of a gather's bounds
    // check): out = init op x, element by element, as the row combination below computes it.
    runtime::ParallelFor(g.input_elements, int64_t{1} << 15, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = F::Apply(init, x[i]);
    });
    return;
  }
  // Inner axis kept: combine whole rows; tasks own disjoint column chunks of the output, as wide
  // as an even split over the threads allows (up to kMaxColumnChunk): each row is then read in
  // long runs (with 256-column chunks, 1 KiB per row 8 KiB apart, a f32[2048,2048] column sum
  // streamed at a third of XLA:CPU's rate). Each column's order of operations does not depend on
  // the chunking.
  const int64_t chunk = ColumnChunkOf(g);
  int64_t chunks = (g.inner + chunk - 1) / chunk;
  int64_t units = g.outer_kept * chunks;
  int64_t work = g.outer_reduced * std::min(g.inner, chunk);
  // Short output rows fold in registers down the reduced offsets, listed once here for every task.
  std::vector<int64_t> strip_offsets;
  if (UsesColumnStrips<K, T>(std::min(g.inner, chunk))) {
    strip_offsets.reserve(static_cast<size_t>(g.outer_reduced));
    ForEachReducedOffset(g, [&](int64_t off) { strip_offsets.push_back(off); });
  }
  const int64_t* offsets = strip_offsets.empty() ? nullptr : strip_offsets.data();
  runtime::ParallelFor(units, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)),
                       [&](int64_t b, int64_t e) {
                         T partial[kMaxColumnChunk];
                         for (int64_t u = b; u < e; ++u) {
                           int64_t p = u / chunks, col = (u % chunks) * chunk;
                           int64_t w = std::min(chunk, g.inner - col);
                           T* o = out + p * g.inner + col;
                           const T* base = x + KeptOffset(g, p) + col;
                           ReduceColumns<K, T>(g, base, init, o, w, partial, offsets);
                         }
                       });
}

// A reduction of f32 values a convert made from bf16 or f16 codes, over a geometry whose inner axis
// is kept and with several reduced rows (a column sum: jnp.mean(x, axis=0) of bf16), or one that
// UsesSegmentRows (a sum over axes (0, 2)), reading the codes and widening each row as it is read:
// the same bits as ReduceFast over the converted array, without it (kernels/reduce_widen.cc). Null
// for other reducers, types and geometries.
std::shared_ptr<const lower::Kernel> WideningColumnReduce(ReducerKind kind, ir::DType narrow,
                                                          const ReduceGeometry& g,
                                                          const std::vector<ir::Type>& types);

}  // namespace kiln::kernels::reduce
