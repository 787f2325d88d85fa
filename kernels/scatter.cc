// stablehlo.scatter with full StableHLO semantics, including batching dims and any
// update_computation region: an update window that does not fit entirely in the operand is
// skipped, as XLA does (JAX's mode="drop" relies on it); the "replace" body moves bytes of every
// element type. The geometry it shares with gather: kernels/index_geometry.h.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/index_geometry.h"
#include "kernels/lowering.h"
#include "kernels/scalar_body.h"
#include "kernels/scatter_one.h"
#include "kernels/scatter_row.h"
#include "kernels/strided.h"
#include "runtime/parallel.h"

namespace kiln::kernels::indexing {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::Array;
using runtime::View;

namespace {

struct ScatterPlan {
  size_t n = 0;  // number of inputs (= updates = results)
  IndexGeometry g;
  WindowMap map;  // over the updates
  std::vector<ir::Type> input_types;
  ir::Type indices_type;
  std::vector<int64_t> update_dims;
  int64_t dst_size = 0;  // elements of each input
};

// Applies `fn(operand_offset, update_offset)` for every update element whose window fits, in
// row-major update order (so duplicate indices combine deterministically).
template <typename Fn>
void ForEachScatter(const ScatterPlan& p, const Bases& bases, Fn&& fn) {
  ForEachRow(p.map, 0, RowCount(p.map),
             [&](int64_t x, int64_t b0, int64_t bstep, int64_t o0, int64_t ostep, int64_t len) {
               for (int64_t j = 0; j < len; ++j) {
                 int64_t base = bases[static_cast<size_t>(b0 + j * bstep)];
                 if (base >= 0) fn(base + o0 + j * ostep, x + j);
               }
             });
}

// Scatter with a reducer, row by row: `base_of(b)` is batch position b's operand offset or -1.
template <ReducerKind K, typename T, typename BaseOf>
void ScatterReduceRows(const ScatterPlan& p, T* dst, const T* upd, BaseOf base_of) {
  ForEachRow(p.map, 0, RowCount(p.map),
             [&](int64_t x, int64_t b0, int64_t bstep, int64_t o0, int64_t ostep, int64_t len) {
               if (bstep == 0 && ostep == 1) {
                 // A window row (an embedding row's gradient): one base, distinct elements each
                 // updated once, in a loop the compiler vectorises.
                 const int64_t base = base_of(b0);
                 if (base < 0) return;
                 T* d = dst + base + o0;
                 const T* u = upd + x;
                 for (int64_t j = 0; j < len; ++j) d[j] = ReducerFn<K, T>::Apply(d[j], u[j]);
                 return;
               }
               // Consecutive updates of one element (sorted segment ids) combine in a register,
               // then store once; long rows of ordered destinations split over the threads
               // (kernels/scatter_row.h): the same operations in the same order either way.
               ScatterRowReduce<K, T>(dst, p.dst_size, upd,
                                      ScatterRow<BaseOf>{x, b0, bstep, o0, ostep, len, base_of});
             });
}

}  // namespace

StatusOr<Kernel> LowerScatter(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  size_t n = op.results.size();
  if (n == 0 || op.operands.size() != 2 * n + 1)
    return InvalidArgument("expects N inputs, indices and N updates");
  if (op.regions.size() != 1) return InvalidArgument("expects one update_computation region");
  auto plan = std::make_shared<ScatterPlan>();
  plan->n = n;
  for (size_t i = 0; i < 2 * n + 1; ++i) {
    KILN_RETURN_IF_ERROR(CheckStaticTensor(ctx.operand_type(i), "operand #" + std::to_string(i)));
  }
  const ir::Type& input0 = ctx.operand_type(0);
  const ir::Type& indices = ctx.operand_type(n);
  const ir::Type& updates0 = ctx.operand_type(n + 1);
  std::vector<ir::DType> dtypes;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& in = ctx.operand_type(i);
    const ir::Type& up = ctx.operand_type(n + 1 + i);
    if (in.dims != input0.dims) return InvalidArgument("inputs must all have the same shape");
    if (up.dims != updates0.dims) return InvalidArgument("updates must all have the same shape");
    if (up.dtype != in.dtype)
      return InvalidArgument("update #" + std::to_string(i) +
                             " must have its input's element type");
    KILN_RETURN_IF_ERROR(
        CheckShape(ctx.result_type(i), in.dtype, in.dims, "result #" + std::to_string(i)));
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
  KILN_RETURN_IF_ERROR(BuildIndexGeometry(input0, indices, index_vector_dim, start_map,
                                          input_batching, index_batching, g));
  int64_t orank = input0.rank();
  std::vector<int64_t> dropped = inserted;
  dropped.insert(dropped.end(), input_batching.begin(), input_batching.end());
  KILN_RETURN_IF_ERROR(CheckAxes(dropped, orank, "inserted_window_dims + input_batching_dims"));
  if (window_dims.size() + dropped.size() != static_cast<size_t>(orank)) {
    return InvalidArgument(
        "update_window_dims, inserted_window_dims and input_batching_dims must cover "
        "the input rank");
  }
  int64_t urank = static_cast<int64_t>(g.batch_sizes.size() + window_dims.size());
  if (updates0.rank() != urank) {
    return InvalidArgument("updates " + updates0.ToString() + " must have rank " +
                           std::to_string(urank));
  }
  KILN_RETURN_IF_ERROR(CheckAxes(window_dims, urank, "update_window_dims"));
  if (!std::is_sorted(window_dims.begin(), window_dims.end())) {
    return InvalidArgument("update_window_dims " + FormatInts(window_dims) + " must be sorted");
  }
  const std::vector<int64_t> window_operand_axes = WindowOperandAxes(dropped, orank);
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
        return InvalidArgument("update window " + updates0.ToString() +
                               " is larger than the input " + input0.ToString());
      }
      g.window_extent[axis] = size;
    } else if (size != g.batch_sizes[next_batch++]) {
      return InvalidArgument("updates " + updates0.ToString() +
                             " do not match the scatter indices " + indices.ToString());
    }
  }
  g.clamp = false;
  plan->map = MakeWindowMap(updates0.dims, window_dims, window_operand_axes, g);
  plan->indices_type = indices;
  plan->update_dims = updates0.dims;
  plan->dst_size = input0.num_elements();
  std::string name = op.name;

  // Copies the inputs into fresh results (updates then modify them in place); returns the table
  // of bases unless `table` is false (then empty).
  auto start = [](const ScatterPlan& p, std::string_view nm, std::span<const View> in,
                  std::span<const View> results, bool table = true) -> StatusOr<Bases> {
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
      if (in[i].byte_size() > 0) {
        strided::ParallelMemcpy(results[i].data(), in[i].data(), in[i].byte_size());
      }
    }
    if (!table) return Bases();
    return ComputeBases(nm, p.g, in[p.n]);
  };
  std::shared_ptr<const ScatterPlan> p = std::move(plan);

  std::optional<ReducerKind> kind = MatchBinaryReducer(ctx.module(), op.regions[0], dtypes[0]);
  if (n == 1 && kind == ReducerKind::kReplace) {
    // One window in one contiguous run (x.at[i].set(row)): in place, inline in loops.
    if (std::optional<Kernel> one = ScatterOneRun(name, input0, indices, updates0, p->g)) {
      return std::move(*one);
    }
    size_t elem = static_cast<size_t>(ir::DTypeByteSize(dtypes[0]));
    KILN_RETURN_IF_ERROR(DispatchElementSize(elem, []<typename E>() { return Status::Ok(); }));
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      std::span<const View> results = out;
      KILN_ASSIGN_OR_RETURN(Bases bases, start(*p, name, in, results));
      KILN_RETURN_IF_ERROR(DispatchElementSize(elem, [&]<typename E>() -> Status {
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
    // One index per update window, read in place (segment sums, `x.at[i].add(u)`): no table.
    const bool in_place =
        ContiguousIndexVectors(p->g) && p->g.vector_size == 1 && p->g.batching.empty();
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      std::span<const View> results = out;
      KILN_ASSIGN_OR_RETURN(Bases bases, start(*p, name, in, results, !in_place));
      return DispatchReducer(name, k, dtype, [&]<ReducerKind K, typename T>() -> Status {
        T* dst = results[0].data_as<T>();
        const T* upd = in[2].data_as<const T>();
        if (!in_place) {
          ScatterReduceRows<K, T>(*p, dst, upd, [&bases](int64_t b) { return bases[b]; });
          return Status::Ok();
        }
        const size_t axis = static_cast<size_t>(p->g.start_map[0]);
        const int64_t limit = p->g.operand_dims[axis] - p->g.window_extent[axis];  // >= 0
        const int64_t stride = p->g.operand_strides[axis];
        return Dispatch<ir::kIntegers>(name, in[1].dtype, [&]<typename I>() -> Status {
          const I* idx = in[1].data_as<const I>();
          ScatterReduceRows<K, T>(*p, dst, upd, [=](int64_t b) -> int64_t {
            const int64_t start = IndexValue(idx[b]);
            return start < 0 || start > limit ? -1 : start * stride;  // a window that does not fit
          });
          return Status::Ok();
        });
      });
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
    KILN_ASSIGN_OR_RETURN(Bases bases, start(*p, name, in, results));
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

}  // namespace kiln::kernels::indexing
