// Column reductions of widened bf16/f16 codes (kernels/reduce_fast.h, WideningColumnReduce).
//
// JAX reduces bf16 and f16 arrays in f32: `convert` to f32, then `reduce`. Run as two steps, the
// convert writes the whole f32 array (twice the codes' bytes) and the reduction reads it back; a
// row reduction joins the convert's fused run (compiler/fusion.h), but a reduction over leading or
// middle axes does not. This kernel reads the codes, widens each row of a column chunk into L1 as
// it is read (exact) and combines it exactly as ReduceFast's ReduceColumns does with the converted
// row, so the result has the same bits; the compiler uses it in place of the pair when nothing
// else reads the converted array (compiler/narrow_inputs.h).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/float16.h"
#include "kernels/lowering.h"
#include "kernels/reduce_blocks.h"
#include "kernels/reduce_fast.h"
#include "runtime/parallel.h"

namespace kiln::kernels::reduce {
namespace {

using lower::ExecContext;
using lower::Kernel;
using runtime::View;

// n codes from `from` widened into `to`. In blocks of 16 (a trip count the vectoriser can prove
// at -O2) in a function of its own whose __restrict pointers rule out aliasing, as
// kernels/elementwise_map.h's loops.
template <bool kBf16>
float Wide(uint16_t code) {
  return kBf16 ? Bf16BitsToFloat(code) : HalfBitsToFloat(code);
}

template <bool kBf16>
__attribute__((noinline)) void Widen(const uint16_t* __restrict from, float* __restrict to,
                                     int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (int64_t j = 0; j < 16; ++j) to[i + j] = Wide<kBf16>(from[i + j]);
  }
  for (; i < n; ++i) to[i] = Wide<kBf16>(from[i]);
}

// ---- bf16 with AVX2: codes widened in registers -----------------------------------------------
// ReduceColumnsOf's walk (rows in turn into the output, or, when there are more than kRowBlock
// rows, into a block partial that starts from the block's first row and joins the output at the
// block's end; up to kReduceRows rows combined per pass over the columns), with each row's codes
// widened in registers as they are read (zero-extend, shift left 16: exact) instead of into a
// buffer. Each lane applies the reducer as ReducerFn does: vaddps / vmulps (one IEEE operation);
// maximum / minimum as vmaxps / vminps, which return the second operand when either is NaN, and a
// blend that keeps a NaN first operand.

template <ReducerKind K>
__attribute__((target("avx2"))) inline __m256 ApplyLanes(__m256 a, __m256 b) {
  if constexpr (K == ReducerKind::kAdd) return _mm256_add_ps(a, b);
  if constexpr (K == ReducerKind::kMultiply) return _mm256_mul_ps(a, b);
  const __m256 r = K == ReducerKind::kMaximum ? _mm256_max_ps(a, b) : _mm256_min_ps(a, b);
  return _mm256_blendv_ps(r, a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
}

__attribute__((target("avx2"))) inline __m256 WidenLanes(const uint16_t* codes) {
  const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(c), 16));
}

// acc[j] = acc[j] op row0[j] op ... op row[m-1][j] (left to right), j < w, 1 <= m <= kReduceRows.
template <ReducerKind K>
__attribute__((target("avx2"))) void CombineWidened(float* acc, const uint16_t* const* rows, int m,
                                                    int64_t w) {
  using F = ReducerFn<K, float>;
  int64_t j = 0;
  for (; j + 8 <= w; j += 8) {
    __m256 a = _mm256_loadu_ps(acc + j);
    for (int r = 0; r < m; ++r) a = ApplyLanes<K>(a, WidenLanes(rows[r] + j));
    _mm256_storeu_ps(acc + j, a);
  }
  for (; j < w; ++j) {
    float a = acc[j];
    for (int r = 0; r < m; ++r) a = F::Apply(a, Bf16BitsToFloat(rows[r][j]));
    acc[j] = a;
  }
}

// One block of rows of a bf16 column reduction (ReduceColumnBlocks' block): partial[j] = the fold
// of rows[0][j], rows[1][j], ..., rows[n - 1][j] in order, j < w. Strips of 64 columns keep their
// accumulators in registers down all the rows: each 32-byte load of 16 codes gives the even
// columns' floats by a shift left of 16 and the odd columns' by masking the low half (two ALU ops,
// no shuffle), interleaved back into column order at the end. The same operations per column as
// CombineWidened.
template <ReducerKind K>
__attribute__((target("avx2"))) void BlockBf16(const uint16_t* base, const int64_t* offs, int64_t n,
                                               int64_t w, float* partial) {
  constexpr int kGroups = 4;  // 16 columns each
  const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  int64_t j = 0;
  for (; j + 16 * kGroups <= w; j += 16 * kGroups) {
    __m256 even[kGroups], odd[kGroups];
    const uint16_t* first = base + offs[0] + j;
#pragma GCC unroll 4
    for (int q = 0; q < kGroups; ++q) {
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(first + 16 * q));
      even[q] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      odd[q] = _mm256_castsi256_ps(_mm256_and_si256(v, high));
    }
    for (int64_t r = 1; r < n; ++r) {
      const uint16_t* row = base + offs[r] + j;
#pragma GCC unroll 4
      for (int q = 0; q < kGroups; ++q) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 16 * q));
        even[q] = ApplyLanes<K>(even[q], _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
        odd[q] = ApplyLanes<K>(odd[q], _mm256_castsi256_ps(_mm256_and_si256(v, high)));
      }
    }
#pragma GCC unroll 4
    for (int q = 0; q < kGroups; ++q) {
      const __m256 a = _mm256_unpacklo_ps(even[q], odd[q]);  // e0 o0 e1 o1 | e4 o4 e5 o5
      const __m256 b = _mm256_unpackhi_ps(even[q], odd[q]);  // e2 o2 e3 o3 | e6 o6 e7 o7
      _mm256_storeu_ps(partial + j + 16 * q, _mm256_permute2f128_ps(a, b, 0x20));
      _mm256_storeu_ps(partial + j + 16 * q + 8, _mm256_permute2f128_ps(a, b, 0x31));
    }
  }
  if (j == w) return;
  const uint16_t* first = base + offs[0];
  for (int64_t c = j; c < w; ++c) partial[c] = Bf16BitsToFloat(first[c]);
  const uint16_t* pending[kReduceRows];
  int waiting = 0;
  for (int64_t r = 1; r < n; ++r) {
    pending[waiting] = base + offs[r] + j;
    if (++waiting == kReduceRows) {
      CombineWidened<K>(partial + j, pending, waiting, w - j);
      waiting = 0;
    }
  }
  if (waiting > 0) CombineWidened<K>(partial + j, pending, waiting, w - j);
}

// avx2::AccumulateRows (reduce_simd.h) over bf16 codes, each vector widened in registers: for
// each row offset r and then each output q < m, the codes bases[q] + offsets[r] into lanes[q],
// element i into lane i % kLanes; the tail block's codes (fewer than kLanes) one by one into the
// stored lanes (reading a vector of codes past the row could leave the array). The same
// operations as on the converted rows.
template <ReducerKind K>
__attribute__((target("avx2"))) void SegmentsBf16(const uint16_t* const* bases, int m,
                                                  const int64_t* offsets, int64_t rows, int64_t n,
                                                  float (*lanes)[kLanes]) {
  using F = ReducerFn<K, float>;
  constexpr int kVectors = kLanes / 8;
  const int64_t whole = n / kLanes * kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    for (int q = 0; q < m; ++q) {
      const uint16_t* x = bases[q] + offsets[r];
      __m256 acc[kVectors];
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) acc[v] = _mm256_loadu_ps(lanes[q] + 8 * v);
      for (int64_t i = 0; i < whole; i += kLanes) {
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v)
          acc[v] = ApplyLanes<K>(acc[v], WidenLanes(x + i + 8 * v));
      }
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(lanes[q] + 8 * v, acc[v]);
      for (int64_t j = 0; j < n - whole; ++j) {
        lanes[q][j] = F::Apply(lanes[q][j], Bf16BitsToFloat(x[whole + j]));
      }
    }
  }
}

// Output columns o[0, w) of the rows at base + offsets[r].
template <ReducerKind K>
void ColumnsBf16(const std::vector<int64_t>& offsets, const uint16_t* base, float init, float* o,
                 int64_t w, float* partial) {
  for (int64_t j = 0; j < w; ++j) o[j] = init;
  const bool blocks = static_cast<int64_t>(offsets.size()) > kRowBlock;
  float* target = blocks ? partial : o;
  const uint16_t* pending[kReduceRows];
  int waiting = 0;
  int64_t rows_in_block = 0;
  auto flush = [&] {
    if (waiting > 0) CombineWidened<K>(target, pending, waiting, w);
    waiting = 0;
  };
  for (int64_t off : offsets) {
    const uint16_t* row = base + off;
    if (blocks && rows_in_block == 0) {
      for (int64_t j = 0; j < w; ++j) partial[j] = Bf16BitsToFloat(row[j]);
    } else {
      pending[waiting] = row;
      if (++waiting == kReduceRows) flush();
    }
    if (blocks && ++rows_in_block == kRowBlock) {
      flush();
      CombineRow<K, float>(o, partial, w);
      rows_in_block = 0;
    }
  }
  flush();
  if (rows_in_block > 0) CombineRow<K, float>(o, partial, w);
}

template <ReducerKind K>
void RunBf16(const ReduceGeometry& g, const std::vector<int64_t>& offsets, const uint16_t* x,
             float init, float* out) {
  if (SplitsRowBlocks(g, sizeof(float))) {
    ReduceColumnBlocks<K, float>(
        g, init, out,
        [&](const int64_t* offs, int64_t rows, int64_t p, int64_t col, int64_t w, float* partial) {
          BlockBf16<K>(x + KeptOffset(g, p) + col, offs, rows, w, partial);
        });
    return;
  }
  const int64_t chunk = ColumnChunkOf(g);
  const int64_t chunks = (g.inner + chunk - 1) / chunk;
  const int64_t units = g.outer_kept * chunks;
  const int64_t work = g.outer_reduced * std::min(g.inner, chunk);
  runtime::ParallelFor(units, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)),
                       [&](int64_t b, int64_t e) {
                         float partial[kMaxColumnChunk];
                         for (int64_t u = b; u < e; ++u) {
                           const int64_t p = u / chunks, col = (u % chunks) * chunk;
                           const int64_t w = std::min(chunk, g.inner - col);
                           ColumnsBf16<K>(offsets, x + KeptOffset(g, p) + col, init,
                                          out + p * g.inner + col, w, partial);
                         }
                       });
}

template <ReducerKind K, bool kBf16>
void RunWidened(const ReduceGeometry& g, const uint16_t* x, float init, float* out) {
  const int64_t chunk = ColumnChunkOf(g);
  const int64_t chunks = (g.inner + chunk - 1) / chunk;
  const int64_t units = g.outer_kept * chunks;
  const int64_t work = g.outer_reduced * std::min(g.inner, chunk);
  runtime::ParallelFor(
      units, std::max<int64_t>(1, 32768 / std::max<int64_t>(work, 1)), [&](int64_t b, int64_t e) {
        float partial[kMaxColumnChunk];
        float rows[kReduceRows][kMaxColumnChunk];
        for (int64_t u = b; u < e; ++u) {
          const int64_t p = u / chunks, col = (u % chunks) * chunk;
          const int64_t w = std::min(chunk, g.inner - col);
          const uint16_t* base = x + KeptOffset(g, p) + col;
          auto row_at = [&](int64_t off, int k) -> const float* {
            Widen<kBf16>(base + off, rows[k], w);
            return rows[k];
          };
          ReduceColumnsOf<K, float>(g, row_at, init, out + p * g.inner + col, w, partial);
        }
      });
}

// A reduction over the last axis and outer axes (UsesSegmentRows<float>): ReduceSegmentRows with
// each row of a block of outputs widened into an L1 buffer as it is read (at most kWidenedFloats
// elements), then folded into its output's lanes as the converted row would be: the same
// operations in the same order.
constexpr int64_t kWidenedFloats = 8192;  // 32 KiB

template <ReducerKind K, bool kBf16>
void RunWidenedSegments(const ReduceGeometry& g, const uint16_t* x, float init, float* out) {
  using F = ReducerFn<K, float>;
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(g.outer_reduced));
  ForEachReducedOffset(g, [&](int64_t off) { offsets.push_back(off); });
  const int64_t per_leaf = SegmentRowsPerLeaf(g);
  const int64_t rows = static_cast<int64_t>(offsets.size());
  const bool direct = kBf16 && ReduceSimdAvailable();  // bf16 widened in registers
  const int64_t block =                                // outputs at once
      direct ? kSegmentOutputs : std::clamp<int64_t>(kWidenedFloats / g.inner, 1, kSegmentOutputs);
  auto task = [&](int64_t b, int64_t e) {
    float buffer[kWidenedFloats];
    const float* wide[kSegmentOutputs];
    const uint16_t* bases[kSegmentOutputs];
    float acc[kSegmentOutputs];
    float lanes[kSegmentOutputs][kLanes];
    const int64_t zero = 0;
    for (int64_t p0 = b; p0 < e; p0 += block) {
      const int m = static_cast<int>(std::min(block, e - p0));
      for (int q = 0; q < m; ++q) {
        bases[q] = x + KeptOffset(g, p0 + q);
        // Only the widening path has rows in the buffer: the direct one's block (kSegmentOutputs
        // outputs) may not fit there, and a pointer past it is undefined even unread (clang's
        // UBSan, -fsanitize=bounds).
        wide[q] = direct ? nullptr : buffer + q * g.inner;
        acc[q] = init;
      }
      for (int64_t r0 = 0; r0 < rows; r0 += per_leaf) {
        const int64_t leaf_rows = std::min(per_leaf, rows - r0);
        for (int q = 0; q < m; ++q) {
          for (float& l : lanes[q]) l = F::Identity();
        }
        if (direct) {
          SegmentsBf16<K>(bases, m, offsets.data() + r0, leaf_rows, g.inner, lanes);
        } else {
          for (int64_t r = r0; r < r0 + leaf_rows; ++r) {
            for (int q = 0; q < m; ++q) {
              Widen<kBf16>(bases[q] + offsets[static_cast<size_t>(r)], buffer + q * g.inner,
                           g.inner);
            }
            AccumulateRows<K, float>(wide, m, &zero, 1, g.inner, lanes);
          }
        }
        for (int q = 0; q < m; ++q) acc[q] = F::Apply(acc[q], FoldTree<K, float>(lanes[q]));
      }
      for (int q = 0; q < m; ++q) out[p0 + q] = acc[q];
    }
  };
  runtime::ParallelFor(g.outer_kept, std::max<int64_t>(1, 32768 / (g.outer_reduced * g.inner)),
                       task);
}

template <ReducerKind K>
void RunWidenedSegmentsOf(const ReduceGeometry& g, bool bf16, const uint16_t* x, float init,
                          float* out) {
  if (bf16) return RunWidenedSegments<K, true>(g, x, init, out);
  RunWidenedSegments<K, false>(g, x, init, out);
}

}  // namespace

std::shared_ptr<const Kernel> WideningColumnReduce(ReducerKind kind, ir::DType narrow,
                                                   const ReduceGeometry& g,
                                                   const std::vector<ir::Type>& types) {
  if (narrow != ir::DType::kBF16 && narrow != ir::DType::kF16) return nullptr;
  if (UsesSegmentRows<float>(g)) {
    using SegFn = void (*)(const ReduceGeometry&, bool, const uint16_t*, float, float*);
    SegFn seg = kind == ReducerKind::kAdd        ? &RunWidenedSegmentsOf<ReducerKind::kAdd>
                : kind == ReducerKind::kMultiply ? &RunWidenedSegmentsOf<ReducerKind::kMultiply>
                : kind == ReducerKind::kMaximum  ? &RunWidenedSegmentsOf<ReducerKind::kMaximum>
                : kind == ReducerKind::kMinimum  ? &RunWidenedSegmentsOf<ReducerKind::kMinimum>
                                                 : nullptr;
    if (seg == nullptr) return nullptr;
    std::vector<ir::Type> in_types = types;
    in_types[0].dtype = narrow;
    const bool bf16 = narrow == ir::DType::kBF16;
    return std::make_shared<const Kernel>(
        [g, seg, bf16, in_types](ExecContext&, std::span<const View> in,
                                 std::span<const View> out) -> Status {
          KILN_RETURN_IF_ERROR(CheckArrays(in, in_types));
          seg(g, bf16, static_cast<const uint16_t*>(in[0].data()),
              *static_cast<const float*>(in[1].data()), static_cast<float*>(out[0].data()));
          return Status::Ok();
        });
  }
  if (g.inner_reduced || g.outer_reduced < 2 || g.input_elements == 0) return nullptr;
  using Fn = void (*)(const ReduceGeometry&, const uint16_t*, float, float*);
  Fn fn = nullptr;
  const bool bf16 = narrow == ir::DType::kBF16;
  switch (kind) {
    case ReducerKind::kAdd:
      fn = bf16 ? &RunWidened<ReducerKind::kAdd, true> : &RunWidened<ReducerKind::kAdd, false>;
      break;
    case ReducerKind::kMultiply:
      fn = bf16 ? &RunWidened<ReducerKind::kMultiply, true>
                : &RunWidened<ReducerKind::kMultiply, false>;
      break;
    case ReducerKind::kMaximum:
      fn = bf16 ? &RunWidened<ReducerKind::kMaximum, true>
                : &RunWidened<ReducerKind::kMaximum, false>;
      break;
    case ReducerKind::kMinimum:
      fn = bf16 ? &RunWidened<ReducerKind::kMinimum, true>
                : &RunWidened<ReducerKind::kMinimum, false>;
      break;
    default:
      return nullptr;
  }
  // The kernel's inputs: the codes (types[0] with the narrow type) and the f32 initial value.
  std::vector<ir::Type> in_types = types;
  in_types[0].dtype = narrow;
  if (bf16 && ReduceSimdAvailable()) {
    // Codes widened in registers (AVX2).
    using StripFn = void (*)(const ReduceGeometry&, const std::vector<int64_t>&, const uint16_t*,
                             float, float*);
    StripFn strips = kind == ReducerKind::kAdd        ? &RunBf16<ReducerKind::kAdd>
                     : kind == ReducerKind::kMultiply ? &RunBf16<ReducerKind::kMultiply>
                     : kind == ReducerKind::kMaximum  ? &RunBf16<ReducerKind::kMaximum>
                                                      : &RunBf16<ReducerKind::kMinimum>;
    auto offsets = std::make_shared<std::vector<int64_t>>();
    ForEachReducedOffset(g, [&](int64_t off) { offsets->push_back(off); });
    return std::make_shared<const Kernel>(
        [g, strips, offsets, in_types](ExecContext&, std::span<const View> in,
                                       std::span<const View> out) -> Status {
          KILN_RETURN_IF_ERROR(CheckArrays(in, in_types));
          strips(g, *offsets, static_cast<const uint16_t*>(in[0].data()),
                 *static_cast<const float*>(in[1].data()), static_cast<float*>(out[0].data()));
          return Status::Ok();
        });
  }
  return std::make_shared<const Kernel>([g, fn, in_types](ExecContext&, std::span<const View> in,
                                                          std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, in_types));
    fn(g, static_cast<const uint16_t*>(in[0].data()), *static_cast<const float*>(in[1].data()),
       static_cast<float*>(out[0].data()));
    return Status::Ok();
  });
}

}  // namespace kiln::kernels::reduce
