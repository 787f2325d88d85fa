// The index geometry stablehlo.gather (kernels/gather.cc) and stablehlo.scatter
// (kernels/scatter.cc) share; kernels/indexing.cc registers both.
//
// Both ops pair an array X (gather's result, scatter's updates) with windows of the operand:
// every axis of X is either a "batch" axis (it picks a start index vector from the indices) or a
// "window" axis (it walks one operand axis). A WindowMap records, per axis of X, how it moves the
// batch number and the operand offset; both kernels then walk X row by row, resolving each batch
// number to an operand base offset computed once per kernel call.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "ir/type.h"
#include "kernels/strided.h"
#include "lower/kernel.h"
#include "lower/op_registry.h"
#include "runtime/view.h"
#include "support/default_init_allocator.h"
#include "support/status.h"

namespace kiln::kernels::indexing {

inline bool Contains(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v) {
    if (e == x) return true;
  }
  return false;
}

// The axes 0 .. rank-1 not in `dropped`, in order: the operand axes a window walks.
inline std::vector<int64_t> WindowOperandAxes(const std::vector<int64_t>& dropped, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d) {
    if (!Contains(dropped, d)) axes.push_back(d);
  }
  return axes;
}

// Where each start index vector comes from, and how it maps onto the operand.
struct IndexGeometry {
  std::vector<int64_t> operand_dims, operand_strides;
  ir::DType index_dtype = ir::DType::kInvalid;
  std::vector<int64_t> index_dims;
  // The batch space: the index array's axes except index_vector_dim, in order.
  std::vector<int64_t> batch_sizes, batch_index_strides;
  int64_t vector_size = 1, vector_stride = 0;  // along index_vector_dim (size 1 when implicit)
  std::vector<int64_t> start_map;              // start index component -> operand axis
  // Operand batching axes: (position in the batch space, operand stride).
  std::vector<std::pair<size_t, int64_t>> batching;
  // Extent of the operand region each start index addresses, per operand axis.
  std::vector<int64_t> window_extent;
  bool clamp = true;  // gather clamps; scatter drops out-of-bounds windows
  // A negative start index first gets its operand axis's size added (one start index component;
  // a gather marked kiln.wrap_negative_indices, compiler/gather_indices.h).
  bool wrap_negative = false;
};

// Per axis of X: how a step along it moves the batch number and the operand offset. Trailing axes
// that move both in lockstep are merged so rows are as long as possible.
struct WindowMap {
  std::vector<int64_t> dims, batch_mul, operand_mul;
};

// Builds the map for X with axes `x_dims`, where `window_axes` (sorted by position in X) walk the
// operand axes `window_operand_axes`, and the remaining axes of X form the batch space in order.
WindowMap MakeWindowMap(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& window_axes,
                        const std::vector<int64_t>& window_operand_axes, const IndexGeometry& g);

// Written whole before it is read: not zeroed first (support/default_init_allocator.h).
using Bases = UninitVector<int64_t>;

// Operand base offset of every batch position: start indices (clamped, or -1 when the window
// does not fit and clamping is off) plus the batching coordinates.
StatusOr<Bases> ComputeBases(std::string_view op, const IndexGeometry& g,
                             const runtime::View& indices);

// Calls row(x_offset, batch0, batch_step, operand0, operand_step, length) for every row of X.
template <typename Row>
void ForEachRow(const WindowMap& m, int64_t begin_row, int64_t end_row, Row&& row) {
  size_t outer = m.dims.empty() ? 0 : m.dims.size() - 1;
  int64_t len = m.dims.empty() ? 1 : m.dims.back();
  int64_t bstep = m.dims.empty() ? 0 : m.batch_mul.back();
  int64_t ostep = m.dims.empty() ? 0 : m.operand_mul.back();
  for (int64_t r = begin_row; r < end_row; ++r) {
    int64_t rem = r, b0 = 0, o0 = 0;
    for (size_t d = outer; d-- > 0;) {
      int64_t i = rem % m.dims[d];
      rem /= m.dims[d];
      b0 += i * m.batch_mul[d];
      o0 += i * m.operand_mul[d];
    }
    row(r * len, b0, bstep, o0, ostep, len);
  }
}

int64_t RowCount(const WindowMap& m);

// An index of any integer type as int64 (unsigned values beyond int64 saturate; they are out of
// range for every operand anyway).
template <typename T>
int64_t IndexValue(T v) {
  if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) {
    return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())
               ? std::numeric_limits<int64_t>::max()
               : static_cast<int64_t>(v);
  } else {
    return static_cast<int64_t>(v);
  }
}

// Whether batch position b's start index vector is indices[b * V .. b * V + V) (V = vector_size):
// index_vector_dim is the last axis (or implicit), as JAX emits every indexing gather and scatter.
// ComputeBases then finds each vector without walking a multi-index.
bool ContiguousIndexVectors(const IndexGeometry& g);

// Splits the batch positions [begin, end) of a geometry with ContiguousIndexVectors into runs
// along the last batch axis: calls run(b, n, base, step) for positions b .. b + n - 1, whose
// operand batching offsets are base + j * step (j < n), in order.
template <typename Run>
void ForEachIndexRun(const IndexGeometry& g, int64_t begin, int64_t end, Run&& run) {
  // The batching offset of the other dimensions is constant along the last batch axis.
  const size_t nb = g.batch_sizes.size();
  if (g.batching.empty() || nb == 0) {
    if (end > begin) run(begin, end - begin, int64_t{0}, int64_t{0});
    return;
  }
  const int64_t row = g.batch_sizes[nb - 1];
  int64_t last_stride = 0;
  for (const auto& [batch_pos, batch_stride] : g.batching) {
    if (batch_pos == nb - 1) last_stride += batch_stride;
  }
  // The batch multi-index (on the stack for up to 8 batch dimensions: an index map calls this
  // once per tile).
  int64_t small[8];
  std::vector<int64_t> large;
  if (nb > 8) large.resize(nb);
  const std::span<int64_t> pos(nb > 8 ? large.data() : small, nb);
  for (size_t i = nb, rest = static_cast<size_t>(begin); i-- > 0;) {
    const auto size = static_cast<size_t>(g.batch_sizes[i]);
    pos[i] = static_cast<int64_t>(rest % size);
    rest /= size;
  }
  for (int64_t b = begin; b < end;) {
    const int64_t j0 = pos[nb - 1];
    int64_t row_base = j0 * last_stride;
    for (const auto& [batch_pos, batch_stride] : g.batching) {
      if (batch_pos != nb - 1) row_base += pos[batch_pos] * batch_stride;
    }
    const int64_t n = std::min(end - b, row - j0);
    run(b, n, row_base, last_stride);
    b += n;
    pos[nb - 1] = row - 1;  // the next row
    strided::NextIndex(pos, g.batch_sizes);
  }
}

// For a geometry with ContiguousIndexVectors and one index per vector (x[i], take, embeddings,
// segment sums, take_along_axis): calls fn(b, base) for the batch positions b in [begin, end),
// in order, with the operand offset of b's window (its start clamped when g.clamp, else -1 when
// the window does not fit). `p` is the index array.
template <typename T, typename Fn>
void VisitScalarIndexBases(const IndexGeometry& g, const T* p, int64_t begin, int64_t end,
                           Fn&& fn) {
  const size_t axis = static_cast<size_t>(g.start_map[0]);
  const int64_t limit = g.operand_dims[axis] - g.window_extent[axis];  // >= 0, checked
  const int64_t stride = g.operand_strides[axis];
  ForEachIndexRun(g, begin, end, [&](int64_t b, int64_t n, int64_t row_base, int64_t step) {
    if (g.clamp) {
      const int64_t wrap = g.wrap_negative ? g.operand_dims[axis] : 0;
      for (int64_t j = 0; j < n; ++j) {
        int64_t start = IndexValue(p[b + j]);
        if (start < 0) start += wrap;
        fn(b + j, row_base + j * step + std::clamp<int64_t>(start, 0, limit) * stride);
      }
    } else {  // a window that does not fit: scatter skips it
      for (int64_t j = 0; j < n; ++j) {
        const int64_t start = IndexValue(p[b + j]);
        fn(b + j, start < 0 || start > limit ? -1 : row_base + j * step + start * stride);
      }
    }
  });
}

// Validates the index array and the start-index/batching attributes common to both ops.
Status BuildIndexGeometry(const ir::Type& operand, const ir::Type& indices,
                          int64_t index_vector_dim, const std::vector<int64_t>& start_map,
                          const std::vector<int64_t>& operand_batching,
                          const std::vector<int64_t>& index_batching, IndexGeometry& g);

// Checks a full-shape match with an explanation.
Status CheckShape(const ir::Type& t, ir::DType dtype, const std::vector<int64_t>& dims,
                  std::string_view what);

// A gather whose every window is one element and whose index vectors are single contiguous
// indices (take_along_axis, x[i] of a vector): out[b] = operand[base(b)], read straight from each
// clamped index (kernels/gather_element.cc). `g` is the gather's geometry (clamping).
lower::Kernel MakeElementGather(const std::string& name, const IndexGeometry& g,
                                const ir::Type& operand, const ir::Type& indices);

StatusOr<lower::Kernel> LowerGather(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerScatter(lower::LowerContext& ctx);

}  // namespace kiln::kernels::indexing
