// stablehlo.gather with full StableHLO semantics, including batching dims: start indices are
// clamped so the whole slice is in bounds (spec). Gather copies bytes, so it supports every
// element type. The geometry it shares with scatter: kernels/index_geometry.h.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/index_geometry.h"
#include "kernels/lowering.h"
#include "kernels/scatter_one.h"
#include "runtime/parallel.h"

namespace kiln::kernels::indexing {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

namespace {

struct GatherPlan {
  IndexGeometry g;
  WindowMap map;
  std::vector<int64_t> out_dims;
  ir::Type operand_type, indices_type;
};

}  // namespace

StatusOr<Kernel> LowerGather(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return InvalidArgument("expects operand, indices and one result");
  const ir::Type& operand = ctx.operand_type(0);
  const ir::Type& indices = ctx.operand_type(1);
  const ir::Type& result = ctx.result_type(0);
  KILN_RETURN_IF_ERROR(CheckStaticTensor(operand, "operand"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(indices, "start_indices"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(result, "result"));
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
  KILN_RETURN_IF_ERROR(BuildIndexGeometry(operand, indices, index_vector_dim, start_map,
                                          operand_batching, index_batching, g));
  int64_t orank = operand.rank();
  if (static_cast<int64_t>(slice_sizes.size()) != orank) {
    return InvalidArgument("slice_sizes " + FormatInts(slice_sizes) +
                           " must have one entry per operand axis");
  }
  for (int64_t d = 0; d < orank; ++d) {
    int64_t s = slice_sizes[static_cast<size_t>(d)];
    if (s < 0 || s > operand.dims[static_cast<size_t>(d)]) {
      return InvalidArgument("slice_sizes " + FormatInts(slice_sizes) + " do not fit in " +
                             operand.ToString());
    }
  }
  std::vector<int64_t> dropped = collapsed;
  dropped.insert(dropped.end(), operand_batching.begin(), operand_batching.end());
  KILN_RETURN_IF_ERROR(CheckAxes(dropped, orank, "collapsed_slice_dims + operand_batching_dims"));
  if (offset_dims.size() + dropped.size() != static_cast<size_t>(orank)) {
    return InvalidArgument(
        "offset_dims, collapsed_slice_dims and operand_batching_dims must cover the operand rank");
  }
  // Each dropped axis addresses one element; a zero-sized slice there would read past the operand.
  for (int64_t d : dropped) {
    if (slice_sizes[static_cast<size_t>(d)] != 1) {
      return InvalidArgument("slice size of collapsed/batching axis " + std::to_string(d) +
                             " must be 1");
    }
  }
  g.window_extent = slice_sizes;
  g.clamp = true;
  KILN_ASSIGN_OR_RETURN(g.wrap_negative, OptionalBool(op, "kiln.wrap_negative_indices", false));
  if (g.wrap_negative && g.vector_size != 1)
    return InvalidArgument("kiln.wrap_negative_indices needs one start index component");

  // Result shape: batch axes from the indices, offset axes from the non-dropped slice sizes.
  int64_t out_rank = static_cast<int64_t>(g.batch_sizes.size() + offset_dims.size());
  KILN_RETURN_IF_ERROR(CheckAxes(offset_dims, out_rank, "offset_dims"));
  if (!std::is_sorted(offset_dims.begin(), offset_dims.end())) {
    return InvalidArgument("offset_dims " + FormatInts(offset_dims) + " must be sorted");
  }
  const std::vector<int64_t> window_operand_axes = WindowOperandAxes(dropped, orank);
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
  KILN_RETURN_IF_ERROR(CheckShape(result, operand.dtype, out_dims, "result"));
  plan->out_dims = out_dims;
  plan->map = MakeWindowMap(out_dims, offset_dims, window_operand_axes, g);
  plan->operand_type = operand;
  plan->indices_type = indices;
  size_t elem = static_cast<size_t>(ir::DTypeByteSize(operand.dtype));
  KILN_RETURN_IF_ERROR(DispatchElementSize(elem, []<typename E>() { return Status::Ok(); }));

  std::string name = op.name;
  // One start index and a window that is one contiguous run (x[i] of a row): a clamped copy,
  // inline in loops.
  if (std::optional<Kernel> one = GatherOneRun(operand, indices, result, g)) {
    return std::move(*one);
  }
  if (Product(slice_sizes) == 1 && ContiguousIndexVectors(g) && g.vector_size == 1) {
    // One element per index (take_along_axis, x[i] of a vector): the result is in batch order,
    // each element read straight from its clamped index, with no table of bases in between.
    return MakeElementGather(name, g, operand, indices);
  }
  std::shared_ptr<const GatherPlan> p = std::move(plan);
  return Kernel([name, p, elem](ExecContext&, std::span<const View> in,
                                std::span<const View> out) -> Status {
    if (in.size() < 2 || in[0].dtype != p->operand_type.dtype ||
        !runtime::SameDims(in[0].dims, p->operand_type.dims) ||
        in[1].dtype != p->indices_type.dtype ||
        !runtime::SameDims(in[1].dims, p->indices_type.dims)) {
      return Internal("inputs do not match the lowered types");
    }
    const View& result = out[0];
    if (result.num_elements() > 0) {
      KILN_ASSIGN_OR_RETURN(Bases bases, ComputeBases(name, p->g, in[1]));
      KILN_RETURN_IF_ERROR(DispatchElementSize(elem, [&]<typename E>() -> Status {
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

}  // namespace kiln::kernels::indexing
