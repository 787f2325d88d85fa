// Tree-ordered scans: the inclusive prefix reduction of a line, y[k] = init . x[0] . ... . x[k],
// in a fixed association order whose rounding error grows with log(n) instead of n. reduce_window
// runs its cumulative sums (and cumulative reductions with bodies it does not recognise, such as
// cumlogsumexp's) this way (kernels/reduce_window_scan.cc); suffix scans are the same on the line
// read backwards. Products run as a running fold (RunningLine, below, says why).
//
// The order. The line is cut into blocks of kScanBlock = 16 positions, from its start:
//   local[k] = x[b0] . x[b0 + 1] . ... . x[k]          (b0 the start of k's block; in order)
//   T[b]     = local[last position of block b]           (the totals of the full blocks only)
//   Y        = the same scan, recursively, of T with init  (Y[b] = init . T[0] . ... . T[b])
//   y[k]     = Y[b]                 if k is the last position of the full block b,
//              off . local[k]       otherwise, off = Y[b - 1] (init for the first block).
// A line of at most 15 positions is y[k] = init . local[k]. Every output is thus one local fold of
// at most 15 operations at each of the L = ceil(log16(n)) levels plus one combining operation per
// level, so for a sum the error is at most about (16 L) u sum|x| (u = the unit roundoff), against
// n u sum|x| for a running sum: 80 u instead of 2^20 u for 2^20 elements. This is the radix-16
// scan XLA:CPU rewrites cumulative reductions into, with the same bound; for 2^20 standard-normal
// f32 values the measured max error against float64 is 4.8e-4 (XLA:CPU 4.8e-4; running: 1.4e-2).
// The order depends only on the line length, never on threads: a scan split at boundaries of a
// level-K block (ScanSegments) computes each output with the same operations, bit for bit.
//
// The scan walks the line once (TreeScan::Run): it keeps, per level, the fold of the current
// block (acc) and the offset of that block (off), and when a block completes it feeds its total
// to the level above. Each position costs two operations (its fold, and off . fold).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace kiln::kernels {

inline constexpr int64_t kScanBlock = 16;

// The number of levels a line of n positions uses: the smallest L >= 1 with 16^L > n (a level
// that never completes a block is the top one).
inline int ScanLevels(int64_t n) {
  int levels = 1;
  for (int64_t span = kScanBlock; span <= n; span *= kScanBlock) ++levels;
  return levels;
}

// The operation: `Op` has types Storage (the array's elements) and Value (what is combined),
// `Value operator()(Value, Value) const`, `Value Load(Storage) const`,
// `Storage Store(Value) const` and `static constexpr bool kVectorizable` (operator() also takes
// GCC vectors of Value, lane by lane). `S` is the type of the line's elements: Op::Storage, or
// Op::Value for scans of values (the segment totals).
template <typename Op, typename S>
struct ScanIo {
  using V = typename Op::Value;
  static V Load(const Op& op, const S& s) {
    if constexpr (std::is_same_v<S, V>) {
      return s;
    } else {
      return op.Load(s);
    }
  }
  static S Store(const Op& op, const V& v) {
    if constexpr (std::is_same_v<S, V>) {
      return v;
    } else {
      return op.Store(v);
    }
  }
};

// 16-byte GCC vectors of float and double (SSE2, in every x86-64).
template <typename T>
struct ScanVector;
template <>
struct ScanVector<float> {
  typedef float type __attribute__((vector_size(16)));
};
template <>
struct ScanVector<double> {
  typedef double type __attribute__((vector_size(16)));
};

// One line of `width` columns (a position's values are contiguous; positions are `stride` elements
// apart, negative for a suffix scan read backwards).
template <typename Op>
class TreeScan {
 public:
  using V = typename Op::Value;

  // `levels` levels; completing a block of the top one (levels - 1) takes the offset given by
  // SetTop (a segment's known result) instead of climbing further.
  TreeScan(const Op& op, int64_t width, int levels)
      : op_(op),
        w_(width),
        levels_(levels),
        acc_(static_cast<size_t>(levels * width)),
        off_(static_cast<size_t>(levels * width)),
        pos_(static_cast<size_t>(levels), 0) {}

  // The offset of the first block at every level: init, or the result just before a segment.
  void SetOffset(const V* row) {
    for (int l = 0; l < levels_; ++l) std::copy(row, row + w_, Off(l));
  }
  void SetTop(const V* row) { top_ = row; }
  // The fold of the current block of level l (after a segment: its total at levels - 1).
  const V* Acc(int l) const { return acc_.data() + l * w_; }

  // Scans positions [0, n) of x, continuing from the state (a segment starts at a block
  // boundary), and writes y[k] when kOut.
  template <bool kOut, typename S>
  void Run(const S* x, int64_t xs, S* y, int64_t ys, int64_t n) {
    using Io = ScanIo<Op, S>;
    for (int64_t b0 = 0; b0 < n; b0 += kScanBlock) {
      const int64_t m = std::min(kScanBlock, n - b0);
      const bool full = m == kScanBlock;
      const int64_t open = full ? m - 1 : m;  // positions that take off . local
      const S* xb = x + b0 * xs;
      S* yb = y + b0 * ys;
      if (w_ == 1) {
        const V off = off_[0];
        V a = Io::Load(op_, xb[0]);
        if constexpr (kOut) yb[0] = Io::Store(op_, op_(off, a));
        for (int64_t t = 1; t < open; ++t) {
          a = op_(a, Io::Load(op_, xb[t * xs]));
          if constexpr (kOut) yb[t * ys] = Io::Store(op_, op_(off, a));
        }
        if (full) {
          acc_[0] = op_(a, Io::Load(op_, xb[open * xs]));
          Complete();
          if constexpr (kOut) yb[open * ys] = Io::Store(op_, off_[0]);
        }
        continue;
      }
      V* acc = Acc0();
      const V* off = Off(0);
      Row<kOut, true>(xb, off, acc, yb);
      for (int64_t t = 1; t < open; ++t) Row<kOut, false>(xb + t * xs, off, acc, yb + t * ys);
      if (full) {
        Row<false, false>(xb + open * xs, off, acc, yb);
        Complete();
        if constexpr (kOut) {
          S* row = yb + open * ys;
          for (int64_t j = 0; j < w_; ++j) row[j] = Io::Store(op_, off[j]);
        }
      }
    }
  }

 private:
  V* Acc0() { return acc_.data(); }
  V* AccRow(int l) { return acc_.data() + l * w_; }
  V* Off(int l) { return off_.data() + l * w_; }

  // One position of every column: acc = x (kFirst) or acc . x, and y = off . acc when kOut. Float
  // rows run in 16-byte vectors (the same operation per lane, so the same bits).
  template <bool kOut, bool kFirst, typename S>
  void Row(const S* __restrict x, const V* __restrict off, V* __restrict acc, S* __restrict y) {
    using Io = ScanIo<Op, S>;
    int64_t j = 0;
    if constexpr (std::is_floating_point_v<V> && std::is_same_v<S, V> && Op::kVectorizable) {
      using Vec = typename ScanVector<V>::type;
      constexpr int64_t kLanes = 16 / sizeof(V);
      for (; j + kLanes <= w_; j += kLanes) {
        Vec xv, av;
        std::memcpy(&xv, x + j, sizeof(Vec));
        if constexpr (kFirst) {
          av = xv;
        } else {
          std::memcpy(&av, acc + j, sizeof(Vec));
          av = op_(av, xv);
        }
        std::memcpy(acc + j, &av, sizeof(Vec));
        if constexpr (kOut) {
          Vec ov;
          std::memcpy(&ov, off + j, sizeof(Vec));
          const Vec yv = op_(ov, av);
          std::memcpy(y + j, &yv, sizeof(Vec));
        }
      }
    }
    for (; j < w_; ++j) {
      const V a = kFirst ? Io::Load(op_, x[j]) : op_(acc[j], Io::Load(op_, x[j]));
      acc[j] = a;
      if constexpr (kOut) y[j] = Io::Store(op_, op_(off[j], a));
    }
  }

  // A level-0 block has completed (its total in acc row 0): feed totals up until a level's block
  // stays open, then hand the new offsets down.
  void Complete() {
    int m = 1;
    for (;; ++m) {
      if (m == levels_) {
        std::copy(top_, top_ + w_, Off(m - 1));
        break;
      }
      V* acc = AccRow(m);
      const V* total = AccRow(m - 1);
      if (pos_[static_cast<size_t>(m)] == 0) {
        std::copy(total, total + w_, acc);
      } else {
        for (int64_t j = 0; j < w_; ++j) acc[j] = op_(acc[j], total[j]);
      }
      if (++pos_[static_cast<size_t>(m)] < kScanBlock) {
        V* off = Off(m - 1);
        const V* up = Off(m);
        for (int64_t j = 0; j < w_; ++j) off[j] = op_(up[j], acc[j]);
        break;
      }
      pos_[static_cast<size_t>(m)] = 0;
    }
    for (int l = m - 2; l >= 0; --l) std::copy(Off(l + 1), Off(l + 1) + w_, Off(l));
  }

  const Op& op_;
  int64_t w_;
  int levels_;
  std::vector<V> acc_, off_;  // [levels][width]
  std::vector<int64_t> pos_;  // per level >= 1: blocks of the level below folded into acc
  const V* top_ = nullptr;
};

// The whole line [0, n) from offset `init` (a row of `width` values).
template <typename Op, typename S>
void ScanLine(const Op& op, int64_t width, const typename Op::Value* init, const S* x, int64_t xs,
              S* y, int64_t ys, int64_t n) {
  TreeScan<Op> scan(op, width, ScanLevels(n));
  scan.SetOffset(init);
  scan.template Run<true>(x, xs, y, ys, n);
}

// The running fold y[k] = (...((init . x[0]) . x[1]) ...) . x[k], for operations a tree does not
// make more accurate: in a product every multiplication reaches the result in any order, so the
// bound is (n - 1) u either way, and a tree's block products stay near 1 where rounding is biased
// (a factor above 1 times one below rounds down at a tie): on 2^20 factors 1 + 1e-4 z the tree's
// max error is 7.3e-3 (XLA:CPU's too), the running product's 2.9e-4.
template <typename Op, typename S>
void RunningLine(const Op& op, int64_t width, const typename Op::Value* init, const S* x,
                 int64_t xs, S* y, int64_t ys, int64_t n) {
  using Io = ScanIo<Op, S>;
  using V = typename Op::Value;
  if (width == 1) {
    V a = init[0];
    for (int64_t k = 0; k < n; ++k) {
      a = op(a, Io::Load(op, x[k * xs]));
      y[k * ys] = Io::Store(op, a);
    }
    return;
  }
  std::vector<V> acc(init, init + width);
  for (int64_t k = 0; k < n; ++k) {
    const S* xk = x + k * xs;
    S* yk = y + k * ys;
    for (int64_t j = 0; j < width; ++j) {
      acc[static_cast<size_t>(j)] = op(acc[static_cast<size_t>(j)], Io::Load(op, xk[j]));
      yk[j] = Io::Store(op, acc[static_cast<size_t>(j)]);
    }
  }
}

// The same results as ScanLine, computed in segments of 16^k positions (k >= 1) that run
// independently except for a short scan of their totals: `for_each(count, fn)` calls fn(i) for i
// in [0, count) in any order or in parallel. `make_op()` gives each call its own operation.
template <typename MakeOp, typename ForEach, typename V, typename S>
void ScanSegments(MakeOp&& make_op, ForEach&& for_each, int k, int64_t width, const V* init,
                  const S* x, int64_t xs, S* y, int64_t ys, int64_t n) {
  int64_t seg = 1;
  for (int i = 0; i < k; ++i) seg *= kScanBlock;
  const int64_t full = n / seg, count = (n + seg - 1) / seg;
  // Each full segment's total: its top-level block's fold.
  std::vector<V> totals(static_cast<size_t>(full * width)), ends(totals.size());
  for_each(full, [&](int64_t s) {
    const auto op = make_op();
    TreeScan<std::decay_t<decltype(op)>> scan(op, width, k);
    scan.SetOffset(init);
    scan.SetTop(init);  // any value: the outputs are not written
    scan.template Run<false>(x + s * seg * xs, xs, y, ys, seg);
    std::copy(scan.Acc(k - 1), scan.Acc(k - 1) + width, totals.data() + s * width);
  });
  // The scan of the totals is level k of the whole line's tree: ends[s] is its result at the
  // last position of segment s.
  {
    const auto op = make_op();
    ScanLine(op, width, init, totals.data(), width, ends.data(), width, full);
  }
  for_each(count, [&](int64_t s) {
    const auto op = make_op();
    TreeScan<std::decay_t<decltype(op)>> scan(op, width, k);
    scan.SetOffset(s == 0 ? init : ends.data() + (s - 1) * width);
    if (s < full) scan.SetTop(ends.data() + s * width);
    scan.template Run<true>(x + s * seg * xs, xs, y + s * seg * ys, ys, std::min(seg, n - s * seg));
  });
}

}  // namespace kiln::kernels
