// N-d index helpers and one strided copy engine shared by the data-movement kernels.
//
// Every data-movement op (broadcast, transpose, slice, reverse, pad, concatenate, dynamic slices)
// reduces to "copy a dims-shaped box from src to dst, stepping each dimension by these strides":
//   broadcast: source stride 0 along broadcast dimensions
//   transpose: source strides permuted
//   slice/reverse: scaled or negative source strides plus a start offset
//   pad/concatenate/dynamic_update_slice: destination strides/offset select a sub-box of the output
// So the copy engine is written (and optimised) once. It moves elements by byte width, never by
// dtype, which makes every element type (including complex and 16-bit floats) work.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "runtime/parallel.h"

// Everything lives in kiln::kernels::strided so these inline helpers can never collide with
// similarly named helpers of other kernel families.
namespace kiln::kernels::strided {

// Row-major strides (in elements) of a dense array with `dims`.
inline std::vector<int64_t> RowMajorStrides(std::span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size());
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    strides[i] = s;
    s *= dims[i];
  }
  return strides;
}

inline int64_t NumElements(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Advances a row-major multi-index over `dims` (last axis fastest); returns false after the last
// index.
inline bool NextIndex(std::span<int64_t> index, std::span<const int64_t> dims) {
  for (size_t i = index.size(); i-- > 0;) {
    if (++index[i] < dims[i]) return true;
    index[i] = 0;
  }
  return false;
}

// Converts a linear row-major position into a multi-index.
inline void UnravelIndex(int64_t linear, std::span<const int64_t> dims, std::span<int64_t> index) {
  for (size_t i = dims.size(); i-- > 0;) {
    index[i] = dims[i] == 0 ? 0 : linear % dims[i];
    linear = dims[i] == 0 ? 0 : linear / dims[i];
  }
}

// Element storage by byte width. 16-byte elements (complex<f64>) are moved as a pair of words.
template <int kBytes>
struct Word;
template <>
struct Word<1> {
  using type = uint8_t;
};
template <>
struct Word<2> {
  using type = uint16_t;
};
template <>
struct Word<4> {
  using type = uint32_t;
};
template <>
struct Word<8> {
  using type = uint64_t;
};
struct alignas(8) Word16 {
  uint64_t lo, hi;
};
template <>
struct Word<16> {
  using type = Word16;
};

// Calls fn.template operator()<W>() with the storage word of `bytes`; returns false for widths
// with no word (callers validate widths at lowering time, so this is a safety net).
template <typename Fn>
bool DispatchByWidth(int bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      fn.template operator()<Word<1>::type>();
      return true;
    case 2:
      fn.template operator()<Word<2>::type>();
      return true;
    case 4:
      fn.template operator()<Word<4>::type>();
      return true;
    case 8:
      fn.template operator()<Word<8>::type>();
      return true;
    case 16:
      fn.template operator()<Word<16>::type>();
      return true;
    default:
      return false;
  }
}

inline bool IsSupportedWidth(int bytes) {
  return bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8 || bytes == 16;
}

// A box copy: dst[dst_offset + sum(i_d * dst_strides_d)] = src[src_offset + sum(i_d *
// src_strides_d)] for every multi-index i in dims. Strides and offsets are in elements and may be
// negative or zero (zero source stride = broadcast; a zero destination stride would be a bug and is
// not supported).
struct StridedBox {
  std::vector<int64_t> dims;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
  int64_t src_offset = 0;
  int64_t dst_offset = 0;

  // Drops unit dimensions and merges neighbours that are contiguous with each other in both
  // source and destination, so e.g. a slice of whole rows becomes one long row and a transpose of
  // [2,3,4] by (0,2,1) keeps only the axes that really move. Cheap; call once at lowering.
  void Simplify();
  int64_t num_elements() const { return NumElements(dims); }
  // True when every element the box addresses lies in [0, src_elements) / [0, dst_elements).
  bool InBounds(int64_t src_elements, int64_t dst_elements) const;
};

inline bool StridedBox::InBounds(int64_t src_elements, int64_t dst_elements) const {
  if (num_elements() == 0) return true;
  int64_t s_lo = src_offset, s_hi = src_offset, d_lo = dst_offset, d_hi = dst_offset;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t span_s = (dims[i] - 1) * src_strides[i], span_d = (dims[i] - 1) * dst_strides[i];
    (span_s < 0 ? s_lo : s_hi) += span_s;
    (span_d < 0 ? d_lo : d_hi) += span_d;
  }
  return s_lo >= 0 && s_hi < src_elements && d_lo >= 0 && d_hi < dst_elements;
}

inline void StridedBox::Simplify() {
  std::vector<int64_t> d, ss, ds;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    if (!d.empty() && ss.back() == src_strides[i] * dims[i] &&
        ds.back() == dst_strides[i] * dims[i]) {
      // The previous axis steps exactly over one full run of this axis on both sides.
      d.back() *= dims[i];
      ss.back() = src_strides[i];
      ds.back() = dst_strides[i];
      continue;
    }
    d.push_back(dims[i]);
    ss.push_back(src_strides[i]);
    ds.push_back(dst_strides[i]);
  }
  // An empty box stays empty: keep a zero dim so num_elements() remains 0.
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
    d.assign(1, 0);
    ss.assign(1, 0);
    ds.assign(1, 1);
  }
  dims = std::move(d);
  src_strides = std::move(ss);
  dst_strides = std::move(ds);
}

namespace detail {

// dst[0, n) = v. In blocks of 64 bytes: a loop of fixed length is stored with vector moves at
// -O2, where the plain loop stored one element per cycle (a row broadcast's tiles in a fused
// softmax spent 23% of its time here).
template <typename W>
inline void FillRow(W* dst, W v, int64_t n) {
  constexpr int64_t kBlock = sizeof(W) >= 64 ? 1 : 64 / static_cast<int64_t>(sizeof(W));
  int64_t i = 0;
  for (; i + kBlock <= n; i += kBlock) {
    for (int64_t j = 0; j < kBlock; ++j) dst[i + j] = v;
  }
  for (; i < n; ++i) dst[i] = v;
}

// Copies `bytes` bytes from src to dst (not overlapping). Up to 256 bytes as fixed-size moves of
// 32, 16, 8, 4, 2 and 1 bytes inline: a memcpy call per short row (a slice of f32[N, 16] rows)
// cost about as much as the copy.
inline void CopyBytes(void* dst, const void* src, size_t bytes) {
  if (bytes > 256) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
  for (; bytes >= 32; bytes -= 32, d += 32, s += 32) std::memcpy(d, s, 32);
  // Each piece a constant size, so each memcpy is one move (a loop over the sizes need not be
  // unrolled at -O2, and would then call memcpy).
  if (bytes & 16) {
    std::memcpy(d, s, 16);
    d += 16;
    s += 16;
  }
  if (bytes & 8) {
    std::memcpy(d, s, 8);
    d += 8;
    s += 8;
  }
  if (bytes & 4) {
    std::memcpy(d, s, 4);
    d += 4;
    s += 4;
  }
  if (bytes & 2) {
    std::memcpy(d, s, 2);
    d += 2;
    s += 2;
  }
  if (bytes & 1) *d = *s;
}

// Copies one innermost row: n elements with the given strides.
template <typename W>
inline void CopyRow(const W* src, int64_t ss, W* dst, int64_t ds, int64_t n) {
  if (ss == 1 && ds == 1) {
    CopyBytes(dst, src, static_cast<size_t>(n) * sizeof(W));
  } else if (ss == 0 && ds == 1) {
    FillRow(dst, *src, n);
  } else if (ds == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i * ss];
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * ds] = src[i * ss];
  }
}

// Moves a box row's outer index `idx` (rank - 1 entries) and its source and destination offsets
// to the next row in row-major order, incrementally (no divisions per row).
inline void NextRow(const StridedBox& box, int64_t* idx, int64_t& so, int64_t& d_o) {
  for (size_t i = box.dims.size() - 1; i-- > 0;) {
    so += box.src_strides[i];
    d_o += box.dst_strides[i];
    if (++idx[i] < box.dims[i]) return;
    so -= box.src_strides[i] * box.dims[i];
    d_o -= box.dst_strides[i] * box.dims[i];
    idx[i] = 0;
  }
}

// Rows [row_begin, row_end) of a box whose rank is >= 1 (rows = all axes but the last).
template <typename W>
void CopyRows(const StridedBox& box, const W* src, W* dst, int64_t row_begin, int64_t row_end) {
  const size_t r = box.dims.size();
  const int64_t n = box.dims[r - 1];
  const int64_t ss = box.src_strides[r - 1], ds = box.dst_strides[r - 1];
  std::span<const int64_t> outer(box.dims.data(), r - 1);
  std::vector<int64_t> idx(r - 1, 0);
  UnravelIndex(row_begin, outer, idx);
  int64_t so = box.src_offset, d_o = box.dst_offset;
  for (size_t i = 0; i + 1 < r; ++i) {
    so += idx[i] * box.src_strides[i];
    d_o += idx[i] * box.dst_strides[i];
  }
  for (int64_t row = row_begin; row < row_end; ++row) {
    CopyRow(src + so, ss, dst + d_o, ds, n);
    NextRow(box, idx.data(), so, d_o);
  }
}

// Transpose-like boxes: the destination is contiguous along the last axis (ds == 1) but the source
// is contiguous along another axis `k`. Walking rows would then read the source with a large stride
// and touch a new cache line per element; instead copy square tiles so both sides stay in cache.
// Tile edge for transposes: one 64-byte cache line of elements per tile row (at least 8, at most
// 32). Small tiles also keep the strided side of the tile from overflowing one L1 set when the
// row pitch is a power of two (e.g. 1024 x 1024 f32: every row starts in the same set).
template <typename W>
constexpr int64_t TransposeTile() {
  return std::clamp<int64_t>(64 / static_cast<int64_t>(sizeof(W)), 8, 32);
}

template <typename W>
void CopyTiled(const StridedBox& box, size_t k, const W* src, W* dst, int64_t tile_begin,
               int64_t tile_end) {
  constexpr int64_t kTile = TransposeTile<W>();
  const size_t r = box.dims.size();
  const int64_t nk = box.dims[k], nl = box.dims[r - 1];
  const int64_t tiles_k = (nk + kTile - 1) / kTile, tiles_l = (nl + kTile - 1) / kTile;
  const int64_t sk = box.src_strides[k], dk = box.dst_strides[k];
  const int64_t sl = box.src_strides[r - 1];
  // The other axes (neither k nor last) are iterated as an outer multi-index.
  std::vector<int64_t> odims, ostr_s, ostr_d;
  for (size_t i = 0; i + 1 < r; ++i) {
    if (i == k) continue;
    odims.push_back(box.dims[i]);
    ostr_s.push_back(box.src_strides[i]);
    ostr_d.push_back(box.dst_strides[i]);
  }
  std::vector<int64_t> oidx(odims.size());
  const int64_t tiles_per_outer = tiles_k * tiles_l;
  for (int64_t t = tile_begin; t < tile_end; ++t) {
    int64_t outer = t / tiles_per_outer, rem = t % tiles_per_outer;
    int64_t tk = rem / tiles_l, tl = rem % tiles_l;
    UnravelIndex(outer, odims, oidx);
    int64_t so = box.src_offset, d_o = box.dst_offset;
    for (size_t i = 0; i < odims.size(); ++i) {
      so += oidx[i] * ostr_s[i];
      d_o += oidx[i] * ostr_d[i];
    }
    const int64_t k0 = tk * kTile, k1 = std::min(nk, k0 + kTile);
    const int64_t l0 = tl * kTile, l1 = std::min(nl, l0 + kTile);
    for (int64_t a = k0; a < k1; ++a) {
      const W* s = src + so + a * sk;
      W* d = dst + d_o + a * dk;
      for (int64_t b = l0; b < l1; ++b) d[b] = s[b * sl];
    }
  }
}

}  // namespace detail

// Performs the copy described by `box` on elements of type W (a Word<N>::type), in parallel for
// large boxes. `src`/`dst` point at element 0 of the respective arrays; the caller guarantees that
// every addressed element is in bounds (validated when the box is built).
template <typename W>
void CopyBox(const StridedBox& box, const W* src, W* dst) {
  using namespace detail;
  const int64_t total = box.num_elements();
  if (total == 0) return;
  if (box.dims.empty()) {  // a single element (scalar or all-unit box)
    dst[box.dst_offset] = src[box.src_offset];
    return;
  }
  const size_t r = box.dims.size();
  // Aim for chunks of roughly 64 KiB of output per task.
  const int64_t min_elems = std::max<int64_t>(1, (64 << 10) / static_cast<int64_t>(sizeof(W)));

  // A last axis read with stride 0 (a broadcast along it) is a fill per row, not a transpose.
  if (r >= 2 && box.dst_strides[r - 1] == 1 && box.src_strides[r - 1] != 1 &&
      box.src_strides[r - 1] != 0 && box.dims[r - 1] >= 8) {
    for (size_t k = 0; k + 1 < r; ++k) {
      if (box.src_strides[k] == 1 && box.dims[k] >= 8) {
        constexpr int64_t kTile = TransposeTile<W>();
        const int64_t tiles = (box.dims[k] + kTile - 1) / kTile *
                              ((box.dims[r - 1] + kTile - 1) / kTile) *
                              (total / (box.dims[k] * box.dims[r - 1]));
        const int64_t min_tiles = std::max<int64_t>(1, min_elems / (kTile * kTile));
        runtime::ParallelFor(tiles, min_tiles,
                             [&](int64_t b, int64_t e) { CopyTiled(box, k, src, dst, b, e); });
        return;
      }
    }
  }
  if (r == 1) {  // one long row (fills, contiguous copies): split the row itself
    const int64_t ss = box.src_strides[0], ds = box.dst_strides[0];
    if (total <= min_elems) {  // one task: no task bookkeeping (a loop's small update)
      CopyRow(src + box.src_offset, ss, dst + box.dst_offset, ds, total);
      return;
    }
    runtime::ParallelFor(total, min_elems, [&](int64_t b, int64_t e) {
      CopyRow(src + box.src_offset + b * ss, ss, dst + box.dst_offset + b * ds, ds, e - b);
    });
    return;
  }
  const int64_t rows = total / box.dims[r - 1];
  const int64_t min_rows = std::max<int64_t>(1, min_elems / std::max<int64_t>(1, box.dims[r - 1]));
  runtime::ParallelFor(rows, min_rows,
                       [&](int64_t b, int64_t e) { CopyRows(box, src, dst, b, e); });
}

// Highest rank GatherFlat takes (after StridedBox::Simplify).
constexpr size_t kMaxGatherRank = 16;

// Elements [b, b + len) of the row-major destination of `box` (dst_strides row-major, dst_offset
// 0, rank <= kMaxGatherRank), written to dst[0 .. len): one tile of a broadcast, for a fused loop
// that consumes the broadcast tile by tile instead of materialising it.
template <typename W>
void GatherFlat(const StridedBox& box, const W* src, W* dst, int64_t b, int64_t len);
template <typename W>
void GatherFlatRows(const StridedBox& box, const W* src, W* dst, int64_t b, int64_t len);

namespace detail {

// Bytes GatherFlat's short-row paths move per vector-sized copy (a fixed-size memcpy: one move).
constexpr int64_t kGatherChunkBytes = 32;
// Longest period (elements) GatherFlat's periodic path keeps on the stack.
constexpr int64_t kMaxGatherPeriod = 256;

// The length of the period of the row-major destination of `box` when its leading axes have
// source stride 0 (a column broadcast: [1, 17] -> [8192, 17] repeats 17 elements), rounded up to
// whole periods of at least kGatherChunkBytes; 0 when there is no such period or it is long.
template <typename W>
int64_t GatherPeriod(const StridedBox& box) {
  const size_t r = box.dims.size();
  size_t k = 0;
  while (k < r && box.src_strides[k] == 0) ++k;
  if (k == 0 || k == r) return 0;  // no leading broadcast axis, or every axis one value (a fill)
  int64_t p = 1;
  for (size_t i = k; i < r; ++i) p *= box.dims[i];
  const int64_t min = kGatherChunkBytes / static_cast<int64_t>(sizeof(W));
  const int64_t q = p * ((min + p - 1) / p);
  return q <= kMaxGatherPeriod ? q : 0;
}

// dst[x] = pattern[x % q] for x in [0, len), a chunk at a time; pattern holds q + one chunk of
// elements (its first q repeated). The chunks read the pattern, not dst: a load of elements just
// stored would wait for those stores (store-to-load forwarding fails across two of them).
template <typename W>
void FillPeriodic(W* dst, const W* pattern, int64_t q, int64_t len) {
  constexpr int64_t kChunk = kGatherChunkBytes / static_cast<int64_t>(sizeof(W));
  int64_t x = 0, at = 0;
  for (; x + kChunk <= len; x += kChunk) {
    std::memcpy(dst + x, pattern + at, kGatherChunkBytes);
    at += kChunk;
    if (at >= q) at -= q;
  }
  for (; x < len; ++x, ++at) dst[x] = pattern[at];
}

// Rows of a rank-2 box whose last axis (of n <= 64 elements) broadcasts one source element per
// row (source strides {s0, 0}): each row is a splat of its value, written with chunk-sized stores
// that may run past the row into the next one (rewritten next) but never past dst[len).
template <typename W>
void GatherRowSplats(const StridedBox& box, const W* src, W* dst, int64_t b, int64_t len) {
  constexpr int64_t kChunk = kGatherChunkBytes / static_cast<int64_t>(sizeof(W));
  const int64_t n = box.dims[1], s0 = box.src_strides[0];
  int64_t row = b / n, col = b % n;
  int64_t x = 0;
  while (x < len) {
    const W v = src[box.src_offset + row * s0];
    const int64_t run = std::min(n - col, len - x);
    W pattern[kChunk];
    for (W& w : pattern) w = v;
    int64_t i = 0;
    for (; i < run && x + i + kChunk <= len; i += kChunk) {
      std::memcpy(dst + x + i, pattern, kGatherChunkBytes);
    }
    for (; i < run; ++i) dst[x + i] = v;
    x += run;
    col = 0;
    ++row;
  }
}

// A rank-3 box that repeats each short source row dims[1] times (source strides {s0, 0, s2}: x[:,
// None, :] broadcast to [N, K, D], a pairwise difference's left operand): per outer index, the
// block of dims[1] * dims[2] elements is periodic with period dims[2], so it is copied out in
// chunks from a pattern made once per block (starting at the tile's phase inside the block).
template <typename W>
void GatherRepeatedRows(const StridedBox& box, const W* src, W* dst, int64_t b, int64_t len) {
  constexpr int64_t kChunk = kGatherChunkBytes / static_cast<int64_t>(sizeof(W));
  const int64_t p = box.dims[2], block = box.dims[1] * p;
  const int64_t q = p * ((kChunk + p - 1) / p);  // whole periods of at least one chunk
  int64_t outer = b / block, at = b % block;
  int64_t x = 0;
  while (x < len) {
    const W* row = src + box.src_offset + outer * box.src_strides[0];
    const int64_t phase = at % p;
    W pattern[kMaxGatherPeriod + kChunk];
    for (int64_t t = 0, k = phase; t < q + kChunk; ++t) {
      pattern[t] = row[k * box.src_strides[2]];
      if (++k == p) k = 0;
    }
    const int64_t run = std::min(block - at, len - x);
    FillPeriodic(dst + x, pattern, q, run);
    x += run;
    at = 0;
    ++outer;
  }
}

}  // namespace detail

// Elements [b, b + len) of the row-major destination of `box` (see below). Short rows take three
// faster paths with the same result: a destination that repeats a short period (a column
// broadcast) is written once per period and then copied from that pattern; a rank-2 row
// broadcast of short rows is stored as splats; short rows each repeated along a middle axis are
// copied out from a pattern per row (`GatherFlatTilesEqualTheWholeBroadcast`).
template <typename W>
void GatherFlat(const StridedBox& box, const W* src, W* dst, int64_t b, int64_t len) {
  const size_t r = box.dims.size();
  if (len <= 0) return;
  if (r == 0) {
    detail::CopyRow(src + box.src_offset, 0, dst, 1, len);
    return;
  }
  if constexpr (sizeof(W) <= 8) {
    if (r >= 2 && box.dims[r - 1] <= 64) {
      if (const int64_t q = detail::GatherPeriod<W>(box); q > 0 && len > q) {
        constexpr int64_t kChunk = detail::kGatherChunkBytes / static_cast<int64_t>(sizeof(W));
        W pattern[detail::kMaxGatherPeriod + kChunk];
        GatherFlatRows(box, src, pattern, b, q);
        for (int64_t i = q; i < q + kChunk; ++i) pattern[i] = pattern[i - q];
        detail::FillPeriodic(dst, pattern, q, len);
        return;
      }
      if (r == 2 && box.src_strides[1] == 0 && box.src_strides[0] != 0) {
        detail::GatherRowSplats(box, src, dst, b, len);
        return;
      }
      // (Its pattern of whole periods, under dims[2] + one chunk <= 96 elements, fits.)
      if (r == 3 && box.src_strides[1] == 0 && box.src_strides[0] != 0 && box.dims[1] >= 4) {
        detail::GatherRepeatedRows(box, src, dst, b, len);
        return;
      }
    }
  }
  GatherFlatRows(box, src, dst, b, len);
}

// GatherFlat's general walk: row by row of the box's last axis.
template <typename W>
void GatherFlatRows(const StridedBox& box, const W* src, W* dst, int64_t b, int64_t len) {
  const size_t r = box.dims.size();
  if (len <= 0) return;
  if (r == 0) {
    detail::CopyRow(src + box.src_offset, 0, dst, 1, len);
    return;
  }
  int64_t idx[kMaxGatherRank];
  UnravelIndex(b, box.dims, std::span<int64_t>(idx, r));
  const int64_t inner = box.dims[r - 1];
  while (true) {
    int64_t off = box.src_offset;
    for (size_t i = 0; i < r; ++i) off += idx[i] * box.src_strides[i];
    const int64_t run = std::min(inner - idx[r - 1], len);
    detail::CopyRow(src + off, box.src_strides[r - 1], dst, 1, run);
    dst += run;
    len -= run;
    if (len == 0) return;
    idx[r - 1] = 0;
    for (size_t i = r - 1; i-- > 0;) {
      if (++idx[i] < box.dims[i]) break;
      idx[i] = 0;
    }
  }
}

// Byte-width dispatching form; returns false for unsupported element widths.
inline bool CopyBoxBytes(int elem_bytes, const StridedBox& box, const void* src, void* dst) {
  return DispatchByWidth(elem_bytes, [&]<typename W>() {
    CopyBox<W>(box, static_cast<const W*>(src), static_cast<W*>(dst));
  });
}

// Fills n elements of width `elem_bytes` with the element at `value` (in parallel when large).
inline bool FillBytes(int elem_bytes, void* dst, int64_t n, const void* value) {
  return DispatchByWidth(elem_bytes, [&]<typename W>() {
    W v;
    std::memcpy(&v, value, sizeof(W));
    W* d = static_cast<W*>(dst);
    runtime::ParallelFor(n, 1 << 16,
                         [&](int64_t b, int64_t e) { detail::FillRow(d + b, v, e - b); });
  });
}

// Parallel memcpy for large buffers.
inline void ParallelMemcpy(void* dst, const void* src, size_t bytes) {
  constexpr int64_t kChunk = 1 << 20;
  const int64_t blocks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
  runtime::ParallelFor(blocks, 1, [&](int64_t b, int64_t e) {
    size_t begin = static_cast<size_t>(b) * kChunk;
    size_t end = std::min(bytes, static_cast<size_t>(e) * kChunk);
    if (end > begin)
      std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin,
                  end - begin);
  });
}

}  // namespace kiln::kernels::strided
