// Column reductions (inner axis kept) split over blocks of rows as well as over columns.
//
// ReduceFast's column walk (kernels/reduce_fast.h, ReduceColumnsOf) folds a long column in blocks
// of kRowBlock rows: each block's partial starts from its first row and takes the others in order,
// then the partials join the output left to right. Tasks of whole column chunks alone leave a
// reduction with few columns (bf16[2048, 512] over axis 0: two chunks on two threads) waiting for
// the slower thread, or for one that has not woken yet, with nothing left to take. Here each task
// computes the partials of a few blocks of one column chunk into scratch, as many tasks as there
// are blocks, and the partials join the output afterwards in block order: the same operations in
// the same order, so the same bits, with tasks small enough to balance.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/reduce_fast.h"
#include "runtime/parallel.h"

namespace kiln::kernels::reduce {

// Bytes of block partials a split may use (per thread, kept between calls).
constexpr int64_t kBlockScratchBytes = int64_t{1} << 20;

// Columns per task of a row-block split: whole rows up to kMaxColumnChunk.
inline int64_t RowBlockChunk(const ReduceGeometry& g) {
  return std::min<int64_t>(g.inner, kMaxColumnChunk);
}

// Whether a reduction of g with elements of `bytes` bytes runs as ReduceColumnBlocks: inner axis
// kept, more than one block of rows, fewer column tasks than four per thread, partials within
// kBlockScratchBytes.
inline bool SplitsRowBlocks(const ReduceGeometry& g, int64_t bytes) {
  if (g.inner_reduced || g.outer_reduced <= kRowBlock || g.input_elements == 0) return false;
  const int64_t threads = runtime::NumWorkerThreads();
  if (threads < 2) return false;
  const int64_t chunk = RowBlockChunk(g);
  const int64_t units = g.outer_kept * ((g.inner + chunk - 1) / chunk);
  const int64_t blocks = (g.outer_reduced + kRowBlock - 1) / kRowBlock;
  return units < 4 * threads && units * blocks * chunk * bytes <= kBlockScratchBytes;
}

// The reduced offsets of rows [r, r + n) in ForEachReducedOffset's order.
inline void ReducedOffsets(const ReduceGeometry& g, int64_t r, int64_t n, int64_t* offs) {
  const size_t d = g.red_sizes.size();
  if (d == 1) {
    for (int64_t i = 0; i < n; ++i) offs[i] = (r + i) * g.red_strides[0];
    return;
  }
  std::vector<int64_t> idx(d, 0);
  int64_t off = 0;
  for (size_t i = d; i-- > 0;) {
    idx[i] = r % g.red_sizes[i];
    r /= g.red_sizes[i];
    off += idx[i] * g.red_strides[i];
  }
  for (int64_t k = 0; k < n; ++k) {
    offs[k] = off;
    for (size_t i = d; i-- > 0;) {
      off += g.red_strides[i];
      if (++idx[i] < g.red_sizes[i]) break;
      off -= g.red_strides[i] * g.red_sizes[i];
      idx[i] = 0;
    }
  }
}

// ReduceColumnsOf's result for every output, when SplitsRowBlocks(g, sizeof(T)). block(offs, rows,
// p, col, w, partial) sets partial[0, w) to the fold of the rows at the reduced offsets offs[0,
// rows) (rows <= kRowBlock), kept position p, columns [col, col + w): the first row, then the
// others in order, as ReduceColumnsOf computes a block.
template <ReducerKind K, typename T, typename Block>
void ReduceColumnBlocks(const ReduceGeometry& g, T init, T* out, Block&& block) {
  const int64_t chunk = RowBlockChunk(g);
  const int64_t chunks = (g.inner + chunk - 1) / chunk;
  const int64_t units = g.outer_kept * chunks;
  const int64_t blocks = (g.outer_reduced + kRowBlock - 1) / kRowBlock;
  thread_local std::vector<T> scratch;
  const size_t need = static_cast<size_t>(units * blocks * chunk);
  if (scratch.size() < need) scratch.resize(need);
  T* partials = scratch.data();
  runtime::ParallelFor(units * blocks, std::max<int64_t>(1, 32768 / (kRowBlock * chunk)),
                       [&](int64_t b, int64_t e) {
                         int64_t offs[kRowBlock];
                         for (int64_t t = b; t < e; ++t) {
                           const int64_t u = t / blocks, k = t % blocks;
                           const int64_t p = u / chunks, col = (u % chunks) * chunk;
                           const int64_t w = std::min(chunk, g.inner - col);
                           const int64_t r0 = k * kRowBlock;
                           const int64_t rows = std::min(kRowBlock, g.outer_reduced - r0);
                           ReducedOffsets(g, r0, rows, offs);
                           block(offs, rows, p, col, w, partials + t * chunk);
                         }
                       });
  // The join: each output column from init through the block partials in order, in pieces of
  // kColumnChunk columns.
  const int64_t pieces = (chunk + kColumnChunk - 1) / kColumnChunk;
  runtime::ParallelFor(units * pieces, std::max<int64_t>(1, 32768 / (blocks * kColumnChunk)),
                       [&](int64_t b, int64_t e) {
                         for (int64_t t = b; t < e; ++t) {
                           const int64_t u = t / pieces;
                           const int64_t p = u / chunks, col = (u % chunks) * chunk;
                           const int64_t w = std::min(chunk, g.inner - col);
                           const int64_t c0 = (t % pieces) * kColumnChunk;
                           if (c0 >= w) continue;
                           const int64_t n = std::min(kColumnChunk, w - c0);
                           T* o = out + p * g.inner + col + c0;
                           std::fill(o, o + n, init);
                           for (int64_t k = 0; k < blocks; ++k) {
                             CombineRow<K, T>(o, partials + (u * blocks + k) * chunk + c0, n);
                           }
                         }
                       });
}

// ReduceColumnBlocks over the rows of x itself.
template <ReducerKind K, typename T>
void ReduceColumnBlocksOf(const ReduceGeometry& g, const T* x, T init, T* out) {
  ReduceColumnBlocks<K, T>(
      g, init, out,
      [&](const int64_t* offs, int64_t rows, int64_t p, int64_t col, int64_t w, T* partial) {
        const T* base = x + KeptOffset(g, p) + col;
        std::copy(base + offs[0], base + offs[0] + w, partial);
        const T* pending[kReduceRows];
        int waiting = 0;
        for (int64_t r = 1; r < rows; ++r) {
          pending[waiting] = base + offs[r];
          if (++waiting == kReduceRows) {
            CombineRows<K, T>(partial, pending, waiting, w);
            waiting = 0;
          }
        }
        if (waiting > 0) CombineRows<K, T>(partial, pending, waiting, w);
      });
}

}  // namespace kiln::kernels::reduce
