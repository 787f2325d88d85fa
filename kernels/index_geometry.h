// The index geometry stablehlo.gather (kernels/gather.cc) and stablehlo.scatter
// (kernels/scatter.cc) share; kernels/indexing.cc registers both.
//
// Both ops pair an array X (gather's result, scatter's updates) with windows of the operand:
// every axis of X is either a "batch" axis (it picks a start index vector from the indices) or a
// "window" axis (it walks one operand axis). A WindowMap records, per axis of X, how it moves the
// batch number and the operand offset; both kernels then walk X row by row, resolving each batch
// number to an operand base offset computed once per kernel call.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/module.h"
#include "ir/type.h"
#include "lower/kernel.h"
#include "lower/op_registry.h"
#include "runtime/view.h"
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

// Operand base offset of every batch position: start indices (clamped, or -1 when the window
// does not fit and clamping is off) plus the batching coordinates.
StatusOr<std::vector<int64_t>> ComputeBases(std::string_view op, const IndexGeometry& g,
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

// Validates the index array and the start-index/batching attributes common to both ops.
Status BuildIndexGeometry(const ir::Type& operand, const ir::Type& indices,
                          int64_t index_vector_dim, const std::vector<int64_t>& start_map,
                          const std::vector<int64_t>& operand_batching,
                          const std::vector<int64_t>& index_batching, IndexGeometry& g);

// Checks a full-shape match with an explanation.
Status CheckShape(const ir::Type& t, ir::DType dtype, const std::vector<int64_t>& dims,
                  std::string_view what);

StatusOr<lower::Kernel> LowerGather(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerScatter(lower::LowerContext& ctx);

}  // namespace kiln::kernels::indexing
