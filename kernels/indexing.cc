// stablehlo.gather and stablehlo.scatter (full StableHLO semantics, including batching dims), and
// the registration of stablehlo.sort (kernels/sort.cc).
//
// Both ops pair an array X (gather's result, scatter's updates) with windows of the operand:
// every axis of X is either a "batch" axis (it picks a start index vector from the indices) or a
// "window" axis (it walks one operand axis). A WindowMap records, per axis of X, how it moves the
// batch number and the operand offset; both kernels then walk X row by row, resolving each batch
// number to an operand base offset computed once per kernel call.
//
// Gather clamps start indices so the whole slice is in bounds (spec). Scatter skips an update
// window that does not fit entirely in the operand, as XLA does (JAX's mode="drop" relies on it).
// Gather copies bytes, so it supports every element type; scatter's "replace" body does too.
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels/scalar_body.h"
#include "kernels/sort.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using compiler::ExecContext;
using compiler::Kernel;
using compiler::LowerContext;
using runtime::Array;
using runtime::View;

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// ---------------------------------------------------------------------------------------------
// Index geometry shared by gather and scatter.

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

WindowMap MergeTrailing(WindowMap m) {
  while (m.dims.size() >= 2) {
    size_t d = m.dims.size() - 1;
    if (m.batch_mul[d - 1] != m.batch_mul[d] * m.dims[d] ||
        m.operand_mul[d - 1] != m.operand_mul[d] * m.dims[d])
      break;
    m.dims[d - 1] *= m.dims[d];
    m.batch_mul[d - 1] = m.batch_mul[d];
    m.operand_mul[d - 1] = m.operand_mul[d];
    m.dims.pop_back();
    m.batch_mul.pop_back();
    m.operand_mul.pop_back();
  }
  return m;
}

// Builds the map for X with axes `x_dims`, where `window_axes` (sorted by position in X) walk the
// operand axes `window_operand_axes`, and the remaining axes of X form the batch space in order.
WindowMap MakeWindowMap(const std::vector<int64_t>& x_dims, const std::vector<int64_t>& window_axes,
                        const std::vector<int64_t>& window_operand_axes, const IndexGeometry& g) {
  WindowMap m;
  m.dims = x_dims;
  m.batch_mul.assign(x_dims.size(), 0);
  m.operand_mul.assign(x_dims.size(), 0);
  std::vector<int64_t> batch_strides = RowMajorStrides(g.batch_sizes);
  size_t next_batch = 0;
  for (size_t d = 0; d < x_dims.size(); ++d) {
    auto it = std::find(window_axes.begin(), window_axes.end(), static_cast<int64_t>(d));
    if (it != window_axes.end()) {
      int64_t operand_axis = window_operand_axes[static_cast<size_t>(it - window_axes.begin())];
      m.operand_mul[d] = g.operand_strides[static_cast<size_t>(operand_axis)];
    } else {
      m.batch_mul[d] = batch_strides[next_batch++];
    }
  }
  return MergeTrailing(std::move(m));
}

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

StatusOr<std::vector<int64_t>> ReadIndices(std::string_view op, const View& a) {
  std::vector<int64_t> out(static_cast<size_t>(a.num_elements()));
  KILN_RETURN_IF_ERROR(DispatchInt(op, a.dtype, [&]<typename T>() -> Status {
    const T* p = a.data_as<const T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = IndexValue(p[i]);
    return Status::Ok();
  }));
  return out;
}

// Whether batch position b's start index vector is indices[b * V .. b * V + V) (V = vector_size):
// index_vector_dim is the last axis (or implicit), as JAX emits every indexing gather and scatter.
// ComputeBases then reads the indices in place.
bool ContiguousIndexVectors(const IndexGeometry& g) {
  if (g.vector_size > 1 && g.vector_stride != 1) return false;
  int64_t stride = g.vector_size;
  for (size_t i = g.batch_sizes.size(); i-- > 0;) {
    if (g.batch_sizes[i] > 1 && g.batch_index_strides[i] != stride) return false;
    stride *= g.batch_sizes[i];
  }
  return true;
}

// Operand base offset of every batch position: start indices (clamped, or -1 when the window
// does not fit and clamping is off) plus the batching coordinates.
StatusOr<std::vector<int64_t>> ComputeBases(std::string_view op, const IndexGeometry& g,
                                            const View& indices) {
  if (ContiguousIndexVectors(g)) {
    const int64_t count = Product(g.batch_sizes);
    const size_t v = static_cast<size_t>(g.vector_size);
    std::vector<int64_t> bases(static_cast<size_t>(count));
    KILN_RETURN_IF_ERROR(DispatchInt(op, indices.dtype, [&]<typename T>() -> Status {
      const T* p = indices.data_as<const T>();
      int64_t* out = bases.data();
      if (v == 1 && g.clamp && g.batching.empty()) {  // x[i], take, embeddings
        const size_t axis = static_cast<size_t>(g.start_map[0]);
        const int64_t limit = g.operand_dims[axis] - g.window_extent[axis];
        const int64_t stride = g.operand_strides[axis];
        for (int64_t b = 0; b < count; ++b) {
          out[b] = std::clamp<int64_t>(IndexValue(p[b]), 0, limit) * stride;
        }
        return Status::Ok();
      }
      std::vector<int64_t> pos(g.batching.empty() ? 0 : g.batch_sizes.size(), 0);
      for (size_t b = 0; b < bases.size(); ++b) {
        int64_t base = 0;
        for (const auto& [batch_pos, stride] : g.batching) base += pos[batch_pos] * stride;
        if (!pos.empty()) NextIndex(pos, g.batch_sizes);
        for (size_t c = 0; c < v; ++c) {
          const size_t axis = static_cast<size_t>(g.start_map[c]);
          const int64_t limit = g.operand_dims[axis] - g.window_extent[axis];
          const int64_t start = IndexValue(p[b * v + c]);
          if (g.clamp) {
            base += std::clamp<int64_t>(start, 0, limit) * g.operand_strides[axis];
          } else if (start < 0 || start > limit) {
            base = -1;
            break;
          } else {
            base += start * g.operand_strides[axis];
          }
        }
        bases[b] = base;
      }
      return Status::Ok();
    }));
    return bases;
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> idx, ReadIndices(op, indices));
  int64_t count = Product(g.batch_sizes);
  std::vector<int64_t> bases(static_cast<size_t>(count));
  std::vector<int64_t> pos(g.batch_sizes.size(), 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t index_off = 0;
    for (size_t i = 0; i < pos.size(); ++i) index_off += pos[i] * g.batch_index_strides[i];
    int64_t base = 0;
    bool fits = true;
    for (size_t c = 0; c < g.start_map.size(); ++c) {
      size_t axis = static_cast<size_t>(g.start_map[c]);
      int64_t start =
          idx[static_cast<size_t>(index_off + static_cast<int64_t>(c) * g.vector_stride)];
      int64_t limit = g.operand_dims[axis] - g.window_extent[axis];  // >= 0, checked at lowering
      if (g.clamp) {
        start = std::clamp<int64_t>(start, 0, limit);
      } else if (start < 0 || start > limit) {
        fits = false;
        break;
      }
      base += start * g.operand_strides[axis];
    }
    for (const auto& [batch_pos, stride] : g.batching) base += pos[batch_pos] * stride;
    bases[static_cast<size_t>(b)] = fits ? base : -1;
    NextIndex(pos, g.batch_sizes);
  }
  return bases;
}

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

int64_t RowCount(const WindowMap& m) {
  if (m.dims.empty()) return 1;
  if (m.dims.back() == 0) return 0;
  return Product(m.dims) / m.dims.back();
}

// Validates the index array and the start-index/batching attributes common to both ops.
Status BuildIndexGeometry(const ir::Op& op, const ir::Type& operand, const ir::Type& indices,
                          int64_t index_vector_dim, const std::vector<int64_t>& start_map,
                          const std::vector<int64_t>& operand_batching,
                          const std::vector<int64_t>& index_batching, IndexGeometry& g) {
  if (!ir::IsInteger(indices.dtype))
    return OpError(op, "indices must have an integer type, got " + indices.ToString());
  int64_t irank = indices.rank(), orank = operand.rank();
  if (index_vector_dim < 0 || index_vector_dim > irank) {
    return OpError(op, "index_vector_dim " + std::to_string(index_vector_dim) +
                           " is out of range for " + indices.ToString());
  }
  g.operand_dims = operand.dims;
  g.operand_strides = RowMajorStrides(operand.dims);
  g.index_dtype = indices.dtype;
  g.index_dims = indices.dims;
  std::vector<int64_t> istrides = RowMajorStrides(indices.dims);
  for (int64_t d = 0; d < irank; ++d) {
    if (d == index_vector_dim) continue;
    g.batch_sizes.push_back(indices.dims[static_cast<size_t>(d)]);
    g.batch_index_strides.push_back(istrides[static_cast<size_t>(d)]);
  }
  if (index_vector_dim < irank) {
    g.vector_size = indices.dims[static_cast<size_t>(index_vector_dim)];
    g.vector_stride = istrides[static_cast<size_t>(index_vector_dim)];
  }
  if (static_cast<int64_t>(start_map.size()) != g.vector_size) {
    return OpError(op, "the index map " + FormatInts(start_map) +
                           " must have one entry per index vector component (" +
                           std::to_string(g.vector_size) + ")");
  }
  std::vector<int64_t> mapped = start_map;
  mapped.insert(mapped.end(), operand_batching.begin(), operand_batching.end());
  KILN_RETURN_IF_ERROR(CheckAxes(op, mapped, orank, "index map + operand batching dims"));
  g.start_map = start_map;
  if (operand_batching.size() != index_batching.size()) {
    return OpError(op, "operand and indices batching dims differ in number");
  }
  KILN_RETURN_IF_ERROR(CheckAxes(op, index_batching, irank, "indices batching dims"));
  for (size_t i = 0; i < index_batching.size(); ++i) {
    int64_t id = index_batching[i], od = operand_batching[i];
    if (id == index_vector_dim)
      return OpError(op, "index_vector_dim cannot be an indices batching dim");
    if (indices.dims[static_cast<size_t>(id)] != operand.dims[static_cast<size_t>(od)]) {
      return OpError(op, "batching dim sizes differ between operand " + operand.ToString() +
                             " and indices " + indices.ToString());
    }
    size_t pos = static_cast<size_t>(id < index_vector_dim ? id : id - 1);
    g.batching.push_back({pos, g.operand_strides[static_cast<size_t>(od)]});
  }
  return Status::Ok();
}

// Checks a full-shape match with an explanation.
Status CheckShape(const ir::Op& op, const ir::Type& t, ir::DType dtype,
                  const std::vector<int64_t>& dims, std::string_view what) {
  if (!t.is_tensor() || t.dtype != dtype || t.dims != dims) {
    return OpError(op, std::string(what) + " must be " + ir::Type::Tensor(dtype, dims).ToString() +
                           ", got " + t.ToString());
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// stablehlo.gather

struct GatherPlan {
  IndexGeometry g;
  WindowMap map;
  std::vector<int64_t> out_dims;
  ir::Type operand_type, indices_type;
};

StatusOr<Kernel> LowerGather(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return OpError(op, "expects operand, indices and one result");
  const ir::Type& operand = ctx.operand_type(0);
  const ir::Type& indices = ctx.operand_type(1);
  const ir::Type& result = ctx.result_type(0);
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, operand, "operand"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, indices, "start_indices"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, result, "result"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> offset_dims, OptionalInts(op, "offset_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> collapsed, OptionalInts(op, "collapsed_slice_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> operand_batching,
                        OptionalInts(op, "operand_batching_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> index_batching,
                        OptionalInts(op, "start_indices_batching_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> start_map, OptionalInts(op, "start_index_map"));
  KILN_ASSIGN_OR_RETURN(int64_t index_vector_dim, RequiredInt(op, "index_vector_dim"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> slice_sizes, RequiredInts(op, "slice_sizes"));

  auto plan = std::make_shared<GatherPlan>();
  IndexGeometry& g = plan->g;
  KILN_RETURN_IF_ERROR(BuildIndexGeometry(op, operand, indices, index_vector_dim, start_map,
                                          operand_batching, index_batching, g));
  int64_t orank = operand.rank();
  if (static_cast<int64_t>(slice_sizes.size()) != orank) {
    return OpError(
        op, "slice_sizes " + FormatInts(slice_sizes) + " must have one entry per operand axis");
  }
  for (int64_t d = 0; d < orank; ++d) {
    int64_t s = slice_sizes[static_cast<size_t>(d)];
    if (s < 0 || s > operand.dims[static_cast<size_t>(d)]) {
      return OpError(
          op, "slice_sizes " + FormatInts(slice_sizes) + " do not fit in " + operand.ToString());
    }
  }
  std::vector<int64_t> dropped = collapsed;
  dropped.insert(dropped.end(), operand_batching.begin(), operand_batching.end());
  KILN_RETURN_IF_ERROR(
      CheckAxes(op, dropped, orank, "collapsed_slice_dims + operand_batching_dims"));
  if (offset_dims.size() + dropped.size() != static_cast<size_t>(orank)) {
    return OpError(
        op,
        "offset_dims, collapsed_slice_dims and operand_batching_dims must cover the operand rank");
  }
  // Each dropped axis addresses one element; a zero-sized slice there would read past the operand.
  for (int64_t d : dropped) {
    if (slice_sizes[static_cast<size_t>(d)] != 1) {
      return OpError(op,
                     "slice size of collapsed/batching axis " + std::to_string(d) + " must be 1");
    }
  }
  g.window_extent = slice_sizes;
  g.clamp = true;

  // Result shape: batch axes from the indices, offset axes from the non-dropped slice sizes.
  int64_t out_rank = static_cast<int64_t>(g.batch_sizes.size() + offset_dims.size());
  KILN_RETURN_IF_ERROR(CheckAxes(op, offset_dims, out_rank, "offset_dims"));
  if (!std::is_sorted(offset_dims.begin(), offset_dims.end())) {
    return OpError(op, "offset_dims " + FormatInts(offset_dims) + " must be sorted");
  }
  std::vector<int64_t> window_operand_axes;
  for (int64_t d = 0; d < orank; ++d) {
    if (!Contains(dropped, d)) window_operand_axes.push_back(d);
  }
  std::vector<int64_t> out_dims(static_cast<size_t>(out_rank));
  size_t next_batch = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    auto it = std::find(offset_dims.begin(), offset_dims.end(), d);
    if (it != offset_dims.end()) {
      out_dims[static_cast<size_t>(d)] = slice_sizes[static_cast<size_t>(
          window_operand_axes[static_cast<size_t>(it - offset_dims.begin())])];
    } else {
      out_dims[static_cast<size_t>(d)] = g.batch_sizes[next_batch++];
    }
  }
  KILN_RETURN_IF_ERROR(CheckShape(op, result, operand.dtype, out_dims, "result"));
  plan->out_dims = out_dims;
  plan->map = MakeWindowMap(out_dims, offset_dims, window_operand_axes, g);
  plan->operand_type = operand;
  plan->indices_type = indices;
  size_t elem = static_cast<size_t>(ir::DTypeByteSize(operand.dtype));
  KILN_RETURN_IF_ERROR(
      DispatchElementSize(op.name, elem, []<typename E>() { return Status::Ok(); }));

  std::string name = op.name;
  std::shared_ptr<const GatherPlan> p = std::move(plan);
  return Kernel([name, p, elem](ExecContext&, std::span<const View> in,
                                std::span<const View> out) -> Status {
    if (in.size() < 2 || in[0].dtype != p->operand_type.dtype ||
        !runtime::SameDims(in[0].dims, p->operand_type.dims) ||
        in[1].dtype != p->indices_type.dtype ||
        !runtime::SameDims(in[1].dims, p->indices_type.dims)) {
      return Internal(name + ": inputs do not match the lowered types");
    }
    const View& result = out[0];
    if (result.num_elements() > 0) {
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bases, ComputeBases(name, p->g, in[1]));
      KILN_RETURN_IF_ERROR(DispatchElementSize(name, elem, [&]<typename E>() -> Status {
        const E* src = in[0].data_as<const E>();
        E* dst = result.data_as<E>();
        int64_t rows = RowCount(p->map);
        int64_t row_len = p->map.dims.empty() ? 1 : p->map.dims.back();
        runtime::ParallelFor(
            rows, std::max<int64_t>(1, 8192 / std::max<int64_t>(row_len, 1)),
            [&](int64_t b, int64_t e) {
              ForEachRow(p->map, b, e,
                         [&](int64_t x, int64_t b0, int64_t bstep, int64_t o0, int64_t ostep,
                             int64_t len) {
                           if (bstep == 0 && ostep == 1) {
                             std::memcpy(dst + x, src + bases[static_cast<size_t>(b0)] + o0,
                                         static_cast<size_t>(len) * sizeof(E));
                             return;
                           }
                           if (bstep == 1 && ostep == 0) {  // one element per position
                             const int64_t* base = bases.data() + b0;
                             const E* from = src + o0;
                             E* to = dst + x;
                             for (int64_t j = 0; j < len; ++j) to[j] = from[base[j]];
                             return;
                           }
                           for (int64_t j = 0; j < len; ++j) {
                             dst[x + j] =
                                 src[bases[static_cast<size_t>(b0 + j * bstep)] + o0 + j * ostep];
                           }
                         });
            });
        return Status::Ok();
      }));
    }
    return Status::Ok();
  });
}

// ---------------------------------------------------------------------------------------------
// stablehlo.scatter

struct ScatterPlan {
  size_t n = 0;  // number of inputs (= updates = results)
  IndexGeometry g;
  WindowMap map;  // over the updates
  std::vector<ir::Type> input_types;
  ir::Type indices_type;
  std::vector<int64_t> update_dims;
};

// Applies `fn(operand_offset, update_offset)` for every update element whose window fits, in
// row-major update order (so duplicate indices combine deterministically).
template <typename Fn>
void ForEachScatter(const ScatterPlan& p, const std::vector<int64_t>& bases, Fn&& fn) {
  ForEachRow(p.map, 0, RowCount(p.map),
             [&](int64_t x, int64_t b0, int64_t bstep, int64_t o0, int64_t ostep, int64_t len) {
               for (int64_t j = 0; j < len; ++j) {
                 int64_t base = bases[static_cast<size_t>(b0 + j * bstep)];
                 if (base >= 0) fn(base + o0 + j * ostep, x + j);
               }
             });
}

StatusOr<Kernel> LowerScatter(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  size_t n = op.results.size();
  if (n == 0 || op.operands.size() != 2 * n + 1)
    return OpError(op, "expects N inputs, indices and N updates");
  if (op.regions.size() != 1) return OpError(op, "expects one update_computation region");
  auto plan = std::make_shared<ScatterPlan>();
  plan->n = n;
  for (size_t i = 0; i < 2 * n + 1; ++i) {
    KILN_RETURN_IF_ERROR(
        CheckStaticTensor(op, ctx.operand_type(i), "operand #" + std::to_string(i)));
  }
  const ir::Type& input0 = ctx.operand_type(0);
  const ir::Type& indices = ctx.operand_type(n);
  const ir::Type& updates0 = ctx.operand_type(n + 1);
  std::vector<ir::DType> dtypes;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& in = ctx.operand_type(i);
    const ir::Type& up = ctx.operand_type(n + 1 + i);
    if (in.dims != input0.dims) return OpError(op, "inputs must all have the same shape");
    if (up.dims != updates0.dims) return OpError(op, "updates must all have the same shape");
    if (up.dtype != in.dtype)
      return OpError(op, "update #" + std::to_string(i) + " must have its input's element type");
    KILN_RETURN_IF_ERROR(
        CheckShape(op, ctx.result_type(i), in.dtype, in.dims, "result #" + std::to_string(i)));
    dtypes.push_back(in.dtype);
    plan->input_types.push_back(in);
  }
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> window_dims, OptionalInts(op, "update_window_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> inserted, OptionalInts(op, "inserted_window_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> input_batching,
                        OptionalInts(op, "input_batching_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> index_batching,
                        OptionalInts(op, "scatter_indices_batching_dims"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> start_map,
                        OptionalInts(op, "scatter_dims_to_operand_dims"));
  KILN_ASSIGN_OR_RETURN(int64_t index_vector_dim, RequiredInt(op, "index_vector_dim"));

  IndexGeometry& g = plan->g;
  KILN_RETURN_IF_ERROR(BuildIndexGeometry(op, input0, indices, index_vector_dim, start_map,
                                          input_batching, index_batching, g));
  int64_t orank = input0.rank();
  std::vector<int64_t> dropped = inserted;
  dropped.insert(dropped.end(), input_batching.begin(), input_batching.end());
  KILN_RETURN_IF_ERROR(CheckAxes(op, dropped, orank, "inserted_window_dims + input_batching_dims"));
  if (window_dims.size() + dropped.size() != static_cast<size_t>(orank)) {
    return OpError(op,
                   "update_window_dims, inserted_window_dims and input_batching_dims must cover "
                   "the input rank");
  }
  int64_t urank = static_cast<int64_t>(g.batch_sizes.size() + window_dims.size());
  if (updates0.rank() != urank) {
    return OpError(op,
                   "updates " + updates0.ToString() + " must have rank " + std::to_string(urank));
  }
  KILN_RETURN_IF_ERROR(CheckAxes(op, window_dims, urank, "update_window_dims"));
  if (!std::is_sorted(window_dims.begin(), window_dims.end())) {
    return OpError(op, "update_window_dims " + FormatInts(window_dims) + " must be sorted");
  }
  std::vector<int64_t> window_operand_axes;
  for (int64_t d = 0; d < orank; ++d) {
    if (!Contains(dropped, d)) window_operand_axes.push_back(d);
  }
  // Window extent per operand axis: the update window size, or 1 for inserted/batching axes.
  g.window_extent.assign(static_cast<size_t>(orank), 1);
  size_t next_batch = 0;
  for (int64_t d = 0; d < urank; ++d) {
    int64_t size = updates0.dims[static_cast<size_t>(d)];
    auto it = std::find(window_dims.begin(), window_dims.end(), d);
    if (it != window_dims.end()) {
      size_t axis =
          static_cast<size_t>(window_operand_axes[static_cast<size_t>(it - window_dims.begin())]);
      if (size > input0.dims[axis]) {
        return OpError(op, "update window " + updates0.ToString() + " is larger than the input " +
                               input0.ToString());
      }
      g.window_extent[axis] = size;
    } else if (size != g.batch_sizes[next_batch++]) {
      return OpError(op, "updates " + updates0.ToString() + " do not match the scatter indices " +
                             indices.ToString());
    }
  }
  g.clamp = false;
  plan->map = MakeWindowMap(updates0.dims, window_dims, window_operand_axes, g);
  plan->indices_type = indices;
  plan->update_dims = updates0.dims;
  std::string name = op.name;

  // Copies the inputs into fresh results (updates then modify them in place).
  auto start = [](const ScatterPlan& p, std::string_view nm, std::span<const View> in,
                  std::span<const View> results) -> StatusOr<std::vector<int64_t>> {
    if (in.size() < 2 * p.n + 1) return Internal(std::string(nm) + ": too few inputs");
    for (size_t i = 0; i < p.n; ++i) {
      if (in[i].dtype != p.input_types[i].dtype ||
          !runtime::SameDims(in[i].dims, p.input_types[i].dims) ||
          in[p.n + 1 + i].dtype != p.input_types[i].dtype ||
          !runtime::SameDims(in[p.n + 1 + i].dims, p.update_dims)) {
        return Internal(std::string(nm) + ": inputs do not match the lowered types");
      }
    }
    if (in[p.n].dtype != p.indices_type.dtype ||
        !runtime::SameDims(in[p.n].dims, p.indices_type.dims)) {
      return Internal(std::string(nm) + ": indices do not match the lowered type");
    }
    if (results.size() != p.n) return Internal(std::string(nm) + ": wrong number of outputs");
    for (size_t i = 0; i < p.n; ++i) {
      if (in[i].byte_size() > 0) std::memcpy(results[i].data(), in[i].data(), in[i].byte_size());
    }
    return ComputeBases(nm, p.g, in[p.n]);
  };
  std::shared_ptr<const ScatterPlan> p = std::move(plan);

  std::optional<ReducerKind> kind = MatchBinaryReducer(ctx.module(), op.regions[0], dtypes[0]);
  if (n == 1 && kind == ReducerKind::kReplace) {
    size_t elem = static_cast<size_t>(ir::DTypeByteSize(dtypes[0]));
    KILN_RETURN_IF_ERROR(
        DispatchElementSize(op.name, elem, []<typename E>() { return Status::Ok(); }));
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      std::span<const View> results = out;
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bases, start(*p, name, in, results));
      KILN_RETURN_IF_ERROR(DispatchElementSize(name, elem, [&]<typename E>() -> Status {
        E* dst = results[0].data_as<E>();
        const E* upd = in[2].data_as<const E>();
        ForEachScatter(*p, bases, [&](int64_t o, int64_t u) { dst[o] = upd[u]; });
        return Status::Ok();
      }));
      return Status::Ok();
    });
  }
  if (n == 1 && kind && ReducerSupportsDType(*kind, dtypes[0])) {
    ReducerKind k = *kind;
    ir::DType dtype = dtypes[0];
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      std::span<const View> results = out;
      KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bases, start(*p, name, in, results));
      KILN_RETURN_IF_ERROR(
          DispatchReducer(name, k, dtype, [&]<ReducerKind K, typename T>() -> Status {
            T* dst = results[0].data_as<T>();
            const T* upd = in[2].data_as<const T>();
            ForEachScatter(*p, bases, [&](int64_t o, int64_t u) {
              dst[o] = ReducerFn<K, T>::Apply(dst[o], upd[u]);
            });
            return Status::Ok();
          }));
      return Status::Ok();
    });
  }

  // General path: update_computation(current values..., update values...) per element.
  std::vector<ir::DType> arg_dtypes = dtypes;
  arg_dtypes.insert(arg_dtypes.end(), dtypes.begin(), dtypes.end());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ScalarRegion> body,
                        ScalarRegion::Compile(ctx, 0, arg_dtypes, dtypes));
  return Kernel([=](ExecContext& ec, std::span<const View> in,
                    std::span<const View> out) -> Status {
    std::span<const View> results = out;
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> bases, start(*p, name, in, results));
    KILN_ASSIGN_OR_RETURN(ScalarRegionRunner runner,
                          ScalarRegionRunner::Create(*body, ec, in.subspan(2 * n + 1)));
    std::vector<size_t> elem(n);
    for (size_t i = 0; i < n; ++i) elem[i] = static_cast<size_t>(ir::DTypeByteSize(dtypes[i]));
    std::vector<const void*> args(2 * n);
    std::vector<void*> dsts(n);
    Status status;
    ForEachScatter(*p, bases, [&](int64_t o, int64_t u) {
      if (!status.ok()) return;
      for (size_t i = 0; i < n; ++i) {
        auto* target = static_cast<uint8_t*>(results[i].data()) + static_cast<size_t>(o) * elem[i];
        args[i] = target;
        dsts[i] = target;
        args[n + i] =
            static_cast<const uint8_t*>(in[n + 1 + i].data()) + static_cast<size_t>(u) * elem[i];
      }
      status = runner.Run(args, dsts);
    });
    KILN_RETURN_IF_ERROR(status);
    return Status::Ok();
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::compiler {

void RegisterIndexingOps(OpRegistry& registry) {
  registry.Add({"stablehlo.gather", "indexing", &kernels::LowerGather});
  registry.Add({"stablehlo.scatter", "indexing", &kernels::LowerScatter});
  registry.Add({"stablehlo.sort", "indexing", &kernels::LowerSort});
}

}  // namespace kiln::compiler
