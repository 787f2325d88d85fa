// The per-tile pieces of stablehlo.convolution's execution (kernels/convolution.cc): packing the
// weights, gathering a tile's input windows into rows (tap by tap, or whole window rows as runs),
// the products without BLAS (wrapping integers; skipping padding when a weight is not finite) and
// scattering a tile's products to the output's layout. All follow the plan (kernels/conv_plan.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/conv_plan.h"
#include "kernels/elementwise_ops.h"

namespace kiln::kernels::conv {

// The output index along each spatial dim of the p0-th output position, in row-major order over
// every position or over the positions of phase `ph` (inline storage for up to 8 dims, the heap
// beyond).
class SpatialIndex {
 public:
  SpatialIndex(const ConvPlan& p, int64_t p0, const ConvPhase* ph = nullptr)
      : rank_(p.rank), count_(ph != nullptr ? ph->count.data() : p.out_size.data()), ph_(ph) {
    if (rank_ > kInline) heap_.assign(rank_, 0);
    j_ = rank_ > kInline ? heap_.data() : inline_;
    for (size_t d = rank_; d-- > 0;) {
      j_[d] = p0 % count_[d];
      p0 /= count_[d];
    }
  }
  int64_t operator[](size_t d) const {
    return ph_ == nullptr ? j_[d] : ph_->first[d] + ph_->step[d] * j_[d];
  }
  void Next() {
    for (size_t d = rank_; d-- > 0;) {
      if (++j_[d] < count_[d]) return;
      j_[d] = 0;
    }
  }

 private:
  static constexpr size_t kInline = 8;
  size_t rank_;
  const int64_t* count_;
  const ConvPhase* ph_;
  int64_t inline_[kInline] = {};
  std::vector<int64_t> heap_;
  int64_t* j_ = nullptr;
};

// packed[g][i * cg + c][o] = rhs[o = g * og + o, c, window position w_i (reversed as asked)] for
// the window positions w_0, w_1, ... of phase `ph` (every one when it is null).
template <typename T, typename S>
void PackWeights(const ConvPlan& p, const ConvPhase* ph, const S* rhs, T* packed) {
  const int64_t windows = ph != nullptr ? static_cast<int64_t>(ph->windows.size()) : p.window;
  const int64_t kk = windows * p.cg;
  for (int64_t g = 0; g < p.groups; ++g) {
    for (int64_t i = 0; i < windows; ++i) {
      const int64_t w = ph != nullptr ? ph->windows[static_cast<size_t>(i)] : i;
      for (int64_t c = 0; c < p.cg; ++c) {
        T* row = packed + (g * kk + i * p.cg + c) * p.og;
        const S* src = rhs + p.rhs_offset[static_cast<size_t>(w)] + c * p.rhs_in_stride +
                       g * p.og * p.rhs_out_stride;
        for (int64_t o = 0; o < p.og; ++o)
          row[o] = ew::ConvertElement<T>(src[o * p.rhs_out_stride]);
      }
    }
  }
}

// dst[0, n) = src[0, n), converted to T. Runs are short (a window row: a few taps' features), so
// same-type copies move fixed 32-byte blocks (the last one overlapping) instead of calling memcpy.
template <typename T, typename S>
inline void CopyRun(T* dst, const S* src, int64_t n) {
  if constexpr (std::is_same_v<T, S>) {
    auto* d = reinterpret_cast<std::byte*>(dst);
    const auto* s = reinterpret_cast<const std::byte*>(src);
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    if (bytes >= 32) {
      size_t i = 0;
      for (; i + 32 <= bytes; i += 32) std::memcpy(d + i, s + i, 32);
      if (i < bytes) std::memcpy(d + bytes - 32, s + bytes - 32, 32);
    } else if (bytes >= 16) {
      std::memcpy(d, s, 16);
      std::memcpy(d + bytes - 16, s + bytes - 16, 16);
    } else if (bytes >= 8) {
      std::memcpy(d, s, 8);
      std::memcpy(d + bytes - 8, s + bytes - 8, 8);
    } else {
      for (size_t i = 0; i < bytes; ++i) d[i] = s[i];
    }
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = ew::ConvertElement<T>(src[i]);
  }
}

// Gather for plans with row_runs (no phase): per output position and window prefix (the kernel
// indices of every spatial dim but the last), the k_size[last] taps along the last dim are one run
// of the input when the first and the last read it (positions are consecutive, so the ones between
// do too); runs that reach into padding are copied tap by tap.
template <typename T, typename S>
void GatherRuns(const ConvPlan& p, const S* lhs, int64_t p0, int64_t rows, T* col) {
  const size_t rank = p.rank, last = rank - 1;
  const int64_t kl = p.k_size[last], cg = p.cg, run = kl * cg, prefixes = p.window / kl;
  SpatialIndex out_index(p, p0);
  for (int64_t r = 0; r < rows; ++r, out_index.Next()) {
    T* dst = col + r * p.kk;
    const int64_t* taps = p.src_offset[last].data() + out_index[last] * kl;
    const bool whole = taps[0] >= 0 && taps[kl - 1] >= 0;
    for (int64_t q = 0; q < prefixes; ++q, dst += run) {
      const int64_t* win = p.win_k.data() + q * kl * static_cast<int64_t>(rank);
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < last; ++d) {
        const int64_t o = p.src_offset[d][static_cast<size_t>(out_index[d] * p.k_size[d] + win[d])];
        if (o < 0) {
          inside = false;
          break;
        }
        off += o;
      }
      if (!inside) {
        std::fill(dst, dst + run, T(0));
      } else if (whole) {
        CopyRun(dst, lhs + off + taps[0], run);
      } else {
        for (int64_t k = 0; k < kl; ++k) {
          if (taps[k] < 0) {
            std::fill(dst + k * cg, dst + (k + 1) * cg, T(0));
          } else {
            CopyRun(dst + k * cg, lhs + off + taps[k], cg);
          }
        }
      }
    }
  }
}

// col[r][i * cg + c] for output positions [p0, p0 + rows) (of phase `ph`, when not null): the input
// element window position w_i of output position p0 + r reads, feature c (relative to `lhs`,
// already offset to batch and group); w_i as in PackWeights.
template <typename T, typename S>
void Gather(const ConvPlan& p, const ConvPhase* ph, const void* input, int64_t p0, int64_t rows,
            T* col) {
  const S* lhs = static_cast<const S*>(input);
  if (ph == nullptr && p.row_runs) return GatherRuns(p, lhs, p0, rows, col);
  const size_t rank = p.rank;
  SpatialIndex out_index(p, p0, ph);
  const int64_t fs = p.lhs_feature_stride;
  const int64_t windows = ph != nullptr ? static_cast<int64_t>(ph->windows.size()) : p.window;
  const int64_t kk = windows * p.cg;
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = col + r * kk;
    for (int64_t i = 0; i < windows; ++i, dst += p.cg) {
      const int64_t w = ph != nullptr ? ph->windows[static_cast<size_t>(i)] : i;
      const int64_t* win = p.win_k.data() + w * static_cast<int64_t>(rank);
      int64_t off = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t o = SourceOffset(p, d, out_index[d], win[d]);
        if (o < 0) {
          inside = false;
          break;
        }
        off += o;
      }
      if (!inside) {
        std::fill(dst, dst + p.cg, T(0));
      } else if constexpr (std::is_same_v<T, S>) {
        if (fs == 1) {
          CopyRun(dst, lhs + off, p.cg);
        } else {
          for (int64_t c = 0; c < p.cg; ++c) dst[c] = lhs[off + c * fs];
        }
      } else {
        for (int64_t c = 0; c < p.cg; ++c) dst[c] = ew::ConvertElement<T>(lhs[off + c * fs]);
      }
    }
    out_index.Next();
  }
}

// c[m, n] = a[m, k] x b[k, n] with wrapping integer arithmetic.
template <typename T>
void IntGemm(int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, T* c,
             int64_t ldc) {
  for (int64_t i = 0; i < m; ++i) {
    T* crow = c + i * ldc;
    std::fill(crow, crow + n, T(0));
    for (int64_t j = 0; j < k; ++j) {
      const T av = a[i * lda + j];
      if (av == T(0)) continue;
      const T* brow = b + j * n;
      for (int64_t o = 0; o < n; ++o) crow[o] = ew::WrapAdd(crow[o], ew::WrapMul(av, brow[o]));
    }
  }
}

// Writes tile[r][o] to the output at position p0 + r (of phase `ph`, when not null), feature
// f0 + o, converting to O.
template <typename O, typename T>
void Scatter(const ConvPlan& p, const ConvPhase* ph, const T* tile, int64_t p0, int64_t rows,
             int64_t f0, void* output) {
  O* out = static_cast<O*>(output);
  SpatialIndex index(p, p0, ph);
  for (int64_t r = 0; r < rows; ++r, index.Next()) {
    int64_t off = f0 * p.out_feature_stride;
    for (size_t d = 0; d < p.rank; ++d) off += index[d] * p.out_sp_stride[d];
    O* dst = out + off;
    const T* src = tile + r * p.og;
    if constexpr (std::is_same_v<O, T>) {
      if (p.out_feature_stride == 1) {
        CopyRun(dst, src, p.og);
        continue;
      }
    }
    for (int64_t o = 0; o < p.og; ++o)
      dst[o * p.out_feature_stride] = ew::ConvertElement<O>(src[o]);
  }
}

// The products of a gathered tile (rows output positions from p0, every window position) with the
// weights b of its group, skipping at each row the window positions that read padding or dilation
// holes instead of multiplying their zeros: how XLA:CPU reads a convolution. It differs from the
// GEMM only when a weight is infinite or NaN (0 x inf is NaN), the one case it runs for.
template <typename T>
void DirectProducts(const ConvPlan& p, int64_t p0, int64_t rows, const T* col, const T* b,
                    T* tile) {
  SpatialIndex index(p, p0);
  for (int64_t r = 0; r < rows; ++r, index.Next()) {
    T* acc = tile + r * p.og;
    std::fill(acc, acc + p.og, T(0));
    for (int64_t w = 0; w < p.window; ++w) {
      const int64_t* win = p.win_k.data() + w * static_cast<int64_t>(p.rank);
      bool inside = true;
      for (size_t d = 0; d < p.rank && inside; ++d) {
        inside = SourceOffset(p, d, index[d], win[d]) >= 0;
      }
      if (!inside) continue;
      for (int64_t c = 0; c < p.cg; ++c) {
        const T v = col[r * p.kk + w * p.cg + c];
        const T* row = b + (w * p.cg + c) * p.og;
        for (int64_t o = 0; o < p.og; ++o) acc[o] += v * row[o];
      }
    }
  }
}

}  // namespace kiln::kernels::conv
