// stablehlo.reduce_window (stablehlo.select_and_scatter: kernels/select_and_scatter.cc).
//
// Windows come from kernels/window.h: per axis an arithmetic progression of input indices, so the
// cost is what the windows contain and nothing is tabulated per window (except the block offsets of
// small pools, TypedBlockKernel). Single-operand windows with a known
// body (add, multiply, maximum, ...) run typed loops in parallel over the outputs, each output
// folded in window order. Windows that are prefixes or suffixes along one axis (cumulative
// reductions) run in linear time (kernels/reduce_window_scan.h). Other bodies run element by
// element through ScalarRegionRunner.
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels/parallel_status.h"
#include "kernels/reduce_window_scan.h"
#include "kernels/scalar_body.h"
#include "kernels/strided.h"
#include "kernels/window.h"
#include "lower/op_registry.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

// Windows whose trailing axes are trivial (window 1, stride 1, no padding or dilation: pooling
// over NHWC's spatial axes leaves C, and often more, untouched): the outputs along those axes are
// `block` contiguous elements reading `block` contiguous inputs at each window position, so each
// window position adds a whole block, a loop the compiler vectorizes, instead of walking one
// window per output. Each output still folds its window elements in window order: the same
// operations in the same order, the same bits. Null when the block is too short to pay.
std::optional<Kernel> TypedBlockKernel(const std::string& name,
                                       const std::vector<ir::Type>& all_types,
                                       const std::shared_ptr<const WindowPlan>& plan, ReducerKind k,
                                       ir::DType dtype) {
  std::optional<WindowBlocks> blocks = SplitWindowBlocks(*plan);
  if (!blocks) return std::nullopt;
  const std::shared_ptr<const WindowPlan> outer = blocks->outer;
  const int64_t block = blocks->block, outer_count = blocks->outer_count;
  auto listed = ListWindows(*outer, outer_count);
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, all_types));
    return DispatchReducer(name, k, dtype, [&]<ReducerKind K, typename T>() -> Status {
      const T* x = in[0].data_as<const T>();
      const T init = *in[1].data_as<const T>();
      T* o = out[0].data_as<T>();
      if (!listed->empty()) {
        const int64_t* offsets = listed->data();
        const int64_t* starts = offsets + (listed->size() - static_cast<size_t>(outer_count) - 1);
        runtime::ParallelFor(outer_count, std::max<int64_t>(1, 4096 / block),
                             [&](int64_t begin, int64_t end) {
                               for (int64_t p = begin; p < end; ++p) {
                                 T* acc = o + p * block;
                                 for (int64_t j = 0; j < block; ++j) acc[j] = init;
                                 for (int64_t w = starts[p]; w < starts[p + 1]; ++w) {
                                   const T* src = x + offsets[w];
                                   for (int64_t j = 0; j < block; ++j)
                                     acc[j] = ReducerFn<K, T>::Apply(acc[j], src[j]);
                                 }
                               }
                             });
        return Status::Ok();
      }
      return ParallelForStatus(outer_count, std::max<int64_t>(1, 4096 / block),
                               [&](int64_t begin, int64_t end) {
                                 // The outputs are the accumulators; ForEachWindow visits outputs
                                 // in order from `begin`.
                                 T* acc = o + begin * block;
                                 return ForEachWindow(
                                     *outer, begin, end,
                                     [&] {
                                       for (int64_t j = 0; j < block; ++j) acc[j] = init;
                                     },
                                     [&](int64_t off) {
                                       const T* src = x + off;
                                       for (int64_t j = 0; j < block; ++j) {
                                         acc[j] = ReducerFn<K, T>::Apply(acc[j], src[j]);
                                       }
                                       return Status::Ok();
                                     },
                                     [&](int64_t) {
                                       acc += block;
                                       return Status::Ok();
                                     });
                               });
    });
  });
}

StatusOr<Kernel> LowerReduceWindow(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  KILN_ASSIGN_OR_RETURN(ReduceOperands operands, ReadReduceOperands(ctx));
  const size_t n = operands.dtypes.size();
  const std::vector<ir::Type> all_types = std::move(operands.types);
  const std::vector<ir::DType> dtypes = std::move(operands.dtypes);
  const std::vector<int64_t>& dims = all_types[0].dims;
  KILN_ASSIGN_OR_RETURN(WindowPlan plan_value, PlanWindow(op, dims));
  auto plan = std::make_shared<const WindowPlan>(std::move(plan_value));
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& rt = ctx.result_type(i);
    if (!rt.is_tensor() || rt.dtype != dtypes[i] || rt.dims != plan->out_dims) {
      return InvalidArgument("result #" + std::to_string(i) + " must be " +
                             ir::Type::Tensor(dtypes[i], plan->out_dims).ToString() + ", got " +
                             rt.ToString());
    }
  }
  std::string name = op.name;

  std::optional<ReducerKind> kind = MatchBinaryReducer(ctx.module(), op.regions[0], dtypes[0]);
  if (n == 1 && kind && *kind != ReducerKind::kReplace && ReducerSupportsDType(*kind, dtypes[0])) {
    ir::DType dtype = dtypes[0];
    ReducerKind k = *kind;
    ScanWindow scan;
    if (MatchScanWindow(*plan, &scan))
      return TypedScanKernel(name, all_types, plan, scan, k, dtype);
    if (std::optional<Kernel> blocks = TypedBlockKernel(name, all_types, plan, k, dtype)) {
      return std::move(*blocks);
    }
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      KILN_RETURN_IF_ERROR(CheckArrays(in, all_types));
      const View& result = out[0];
      return DispatchReducer(name, k, dtype, [&]<ReducerKind K, typename T>() -> Status {
        const T* x = in[0].data_as<const T>();
        const T init = *in[1].data_as<const T>();
        T* o = result.data_as<T>();
        return ParallelForStatus(result.num_elements(), 256, [&](int64_t begin, int64_t end) {
          T acc = init;
          return ForEachWindow(
              *plan, begin, end, [&] { acc = init; },
              [&](int64_t off) {
                acc = ReducerFn<K, T>::Apply(acc, x[off]);
                return Status::Ok();
              },
              [&](int64_t out_index) {
                o[out_index] = acc;
                return Status::Ok();
              });
        });
      });
    });
  }

  ScanWindow scan;
  if (n == 1 && MatchScanWindow(*plan, &scan)) {
    const ir::DType dtype = dtypes[0];
    const bool half = ir::InSet(dtype, ir::kHalfFloats);
    if (half && kind && (*kind == ReducerKind::kAdd || *kind == ReducerKind::kMultiply)) {
      return HalfScanKernel(name, all_types, plan, scan, *kind, dtype);
    }
    const int width = ir::DTypeByteSize(dtype);
    if (strided::IsSupportedWidth(width)) {
      KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ScalarRegion> body,
                            ScalarRegion::Compile(ctx, 0, {dtype, dtype}, {dtype}));
      return RegionScanKernel(all_types, plan, scan, body, width);
    }
  }

  std::vector<ir::DType> arg_dtypes = dtypes;
  arg_dtypes.insert(arg_dtypes.end(), dtypes.begin(), dtypes.end());
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ScalarRegion> body,
                        ScalarRegion::Compile(ctx, 0, arg_dtypes, dtypes));
  return Kernel([=](ExecContext& ec, std::span<const View> in,
                    std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, all_types));
    KILN_ASSIGN_OR_RETURN(ScalarRegionRunner runner,
                          ScalarRegionRunner::Create(*body, ec, in.subspan(2 * n)));
    std::span<const View> results = out;
    std::vector<size_t> elem(n);
    std::vector<std::vector<uint8_t>> acc(n);
    std::vector<const void*> args(2 * n);
    std::vector<void*> dsts(n);
    for (size_t i = 0; i < n; ++i) {
      elem[i] = static_cast<size_t>(ir::DTypeByteSize(dtypes[i]));
      acc[i].resize(elem[i]);
      args[i] = acc[i].data();
      dsts[i] = acc[i].data();
    }
    KILN_RETURN_IF_ERROR(ForEachWindow(
        *plan, 0, Product(plan->out_dims),
        [&] {
          for (size_t i = 0; i < n; ++i) std::memcpy(acc[i].data(), in[n + i].data(), elem[i]);
        },
        [&](int64_t off) {
          for (size_t i = 0; i < n; ++i) {
            args[n + i] =
                static_cast<const uint8_t*>(in[i].data()) + static_cast<size_t>(off) * elem[i];
          }
          return runner.Run(args, dsts);
        },
        [&](int64_t out_index) {
          for (size_t i = 0; i < n; ++i) {
            std::memcpy(
                static_cast<uint8_t*>(results[i].data()) + static_cast<size_t>(out_index) * elem[i],
                acc[i].data(), elem[i]);
          }
          return Status::Ok();
        }));
    return Status::Ok();
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterWindowOps(OpRegistry& registry) {
  registry.Add({"stablehlo.reduce_window", "reduction", &kernels::LowerReduceWindow});
  RegisterSelectAndScatter(registry);  // kernels/select_and_scatter.cc
}

}  // namespace kiln::kernels
