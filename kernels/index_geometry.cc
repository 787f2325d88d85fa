// The index geometry of gather and scatter (kernels/index_geometry.h).
#include "kernels/index_geometry.h"

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/dispatch.h"
#include "kernels/lowering.h"
#include "runtime/parallel.h"

namespace kiln::kernels::indexing {
namespace {

using runtime::View;

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

}  // namespace

bool ContiguousIndexVectors(const IndexGeometry& g) {
  if (g.vector_size > 1 && g.vector_stride != 1) return false;
  int64_t stride = g.vector_size;
  for (size_t i = g.batch_sizes.size(); i-- > 0;) {
    if (g.batch_sizes[i] > 1 && g.batch_index_strides[i] != stride) return false;
    stride *= g.batch_sizes[i];
  }
  return true;
}

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
  // Axes of size 1 move nothing: without them a trailing one does not cut rows to one element
  // (the column permutation of jnp.linalg.inv's LU solve, f32[2048, 4, 4, 1], walked 32,768 rows of
  // one element instead of 8,192 of four).
  WindowMap kept;
  for (size_t d = 0; d < m.dims.size(); ++d) {
    if (m.dims[d] == 1) continue;
    kept.dims.push_back(m.dims[d]);
    kept.batch_mul.push_back(m.batch_mul[d]);
    kept.operand_mul.push_back(m.operand_mul[d]);
  }
  if (kept.dims.size() < m.dims.size() && !kept.dims.empty()) m = std::move(kept);
  return MergeTrailing(std::move(m));
}

// Index vectors per task when ComputeBases splits its work (a few microseconds each).
constexpr int64_t kBasesPerTask = 1 << 15;

StatusOr<Bases> ComputeBases(std::string_view op, const IndexGeometry& g, const View& indices) {
  const bool contiguous = ContiguousIndexVectors(g);
  const int64_t count = Product(g.batch_sizes);
  const size_t v = static_cast<size_t>(g.vector_size);
  Bases bases(static_cast<size_t>(count));  // every element written below
  KILN_RETURN_IF_ERROR(Dispatch<ir::kIntegers>(op, indices.dtype, [&]<typename T>() -> Status {
    const T* p = indices.data_as<const T>();
    int64_t* out = bases.data();
    if (contiguous && v == 1) {  // x[i], take, embeddings, segment sums, take_along_axis
      // Each base depends on its index (and batch position) only: large index arrays are split
      // over the threads.
      runtime::ParallelFor(count, kBasesPerTask, [&](int64_t begin, int64_t end) {
        VisitScalarIndexBases(g, p, begin, end, [out](int64_t b, int64_t base) { out[b] = base; });
      });
      return Status::Ok();
    }
    // The batch multi-index, walked only when batching axes or the index layout need it.
    std::vector<int64_t> pos(contiguous && g.batching.empty() ? 0 : g.batch_sizes.size(), 0);
    for (int64_t b = 0; b < count; ++b) {
      int64_t index_off = static_cast<int64_t>(v) * b;
      if (!contiguous) {
        index_off = 0;
        for (size_t i = 0; i < pos.size(); ++i) index_off += pos[i] * g.batch_index_strides[i];
      }
      int64_t base = 0;
      for (const auto& [batch_pos, stride] : g.batching) base += pos[batch_pos] * stride;
      if (!pos.empty()) NextIndex(pos, g.batch_sizes);
      for (size_t c = 0; c < v; ++c) {
        const size_t axis = static_cast<size_t>(g.start_map[c]);
        const int64_t limit = g.operand_dims[axis] - g.window_extent[axis];  // >= 0, checked
        int64_t start = IndexValue(p[index_off + static_cast<int64_t>(c) * g.vector_stride]);
        if (g.wrap_negative && start < 0) start += g.operand_dims[axis];
        if (g.clamp) {
          base += std::clamp<int64_t>(start, 0, limit) * g.operand_strides[axis];
        } else if (start < 0 || start > limit) {
          base = -1;  // the window does not fit: scatter skips it
          break;
        } else {
          base += start * g.operand_strides[axis];
        }
      }
      out[b] = base;
    }
    return Status::Ok();
  }));
  return bases;
}

int64_t RowCount(const WindowMap& m) {
  if (m.dims.empty()) return 1;
  if (m.dims.back() == 0) return 0;
  return Product(m.dims) / m.dims.back();
}

Status BuildIndexGeometry(const ir::Type& operand, const ir::Type& indices,
                          int64_t index_vector_dim, const std::vector<int64_t>& start_map,
                          const std::vector<int64_t>& operand_batching,
                          const std::vector<int64_t>& index_batching, IndexGeometry& g) {
  if (!ir::IsInteger(indices.dtype))
    return InvalidArgument("indices must have an integer type, got " + indices.ToString());
  int64_t irank = indices.rank(), orank = operand.rank();
  if (index_vector_dim < 0 || index_vector_dim > irank) {
    return InvalidArgument("index_vector_dim " + std::to_string(index_vector_dim) +
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
    return InvalidArgument("the index map " + FormatInts(start_map) +
                           " must have one entry per index vector component (" +
                           std::to_string(g.vector_size) + ")");
  }
  std::vector<int64_t> mapped = start_map;
  mapped.insert(mapped.end(), operand_batching.begin(), operand_batching.end());
  KILN_RETURN_IF_ERROR(CheckAxes(mapped, orank, "index map + operand batching dims"));
  g.start_map = start_map;
  if (operand_batching.size() != index_batching.size()) {
    return InvalidArgument("operand and indices batching dims differ in number");
  }
  KILN_RETURN_IF_ERROR(CheckAxes(index_batching, irank, "indices batching dims"));
  for (size_t i = 0; i < index_batching.size(); ++i) {
    int64_t id = index_batching[i], od = operand_batching[i];
    if (id == index_vector_dim)
      return InvalidArgument("index_vector_dim cannot be an indices batching dim");
    if (indices.dims[static_cast<size_t>(id)] != operand.dims[static_cast<size_t>(od)]) {
      return InvalidArgument("batching dim sizes differ between operand " + operand.ToString() +
                             " and indices " + indices.ToString());
    }
    size_t pos = static_cast<size_t>(id < index_vector_dim ? id : id - 1);
    g.batching.push_back({pos, g.operand_strides[static_cast<size_t>(od)]});
  }
  return Status::Ok();
}

Status CheckShape(const ir::Type& t, ir::DType dtype, const std::vector<int64_t>& dims,
                  std::string_view what) {
  if (!t.is_tensor() || t.dtype != dtype || t.dims != dims) {
    return InvalidArgument(std::string(what) + " must be " +
                           ir::Type::Tensor(dtype, dims).ToString() + ", got " + t.ToString());
  }
  return Status::Ok();
}

}  // namespace kiln::kernels::indexing
