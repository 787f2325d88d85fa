// stablehlo.reduce_window and stablehlo.select_and_scatter.
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
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
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
constexpr int64_t kMinBlock = 4;

// Small pools (pooling layers: a few thousand window positions of a few elements) list every
// window's block offsets at plan time, in window order, so the kernels run one tight loop per
// output instead of walking the window; larger ones (an empty list) walk with ForEachWindow.
// Layout: the offsets, then outer_count + 1 starts into them.
std::shared_ptr<const std::vector<int64_t>> ListWindows(const WindowPlan& outer,
                                                        int64_t outer_count) {
  int64_t window_elements = 1;
  for (const WindowAxis& a : outer.axes) window_elements *= a.window;
  constexpr int64_t kMaxListed = int64_t{1} << 17;  // 1 MiB of offsets
  auto listed = std::make_shared<std::vector<int64_t>>();
  if (outer_count > 0 && window_elements <= kMaxListed / outer_count) {
    std::vector<int64_t> offsets, starts;
    starts.reserve(static_cast<size_t>(outer_count) + 1);
    Status s = ForEachWindow(
        outer, 0, outer_count, [&] { starts.push_back(static_cast<int64_t>(offsets.size())); },
        [&](int64_t off) {
          offsets.push_back(off);
          return Status::Ok();
        },
        [&](int64_t) { return Status::Ok(); });
    if (s.ok()) {
      starts.push_back(static_cast<int64_t>(offsets.size()));
      offsets.insert(offsets.end(), starts.begin(), starts.end());
      *listed = std::move(offsets);
    }
  }
  return listed;
}

std::optional<Kernel> TypedBlockKernel(const std::string& name,
                                       const std::vector<ir::Type>& all_types,
                                       const std::shared_ptr<const WindowPlan>& plan, ReducerKind k,
                                       ir::DType dtype) {
  size_t keep = plan->axes.size();
  int64_t block = 1;
  while (keep > 0 && plan->axes[keep - 1].trivial()) block *= plan->out_dims[--keep];
  if (block < kMinBlock || keep == plan->axes.size()) return std::nullopt;
  auto outer = std::make_shared<WindowPlan>();
  outer->out_dims.assign(plan->out_dims.begin(),
                         plan->out_dims.begin() + static_cast<int64_t>(keep));
  outer->axes.assign(plan->axes.begin(), plan->axes.begin() + static_cast<int64_t>(keep));
  int64_t outer_count = 1;
  for (int64_t d : outer->out_dims) outer_count *= d;
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
      Status status = Status::Ok();
      std::mutex status_mu;
      runtime::ParallelFor(outer_count, std::max<int64_t>(1, 4096 / block),
                           [&](int64_t begin, int64_t end) {
                             // The outputs are the accumulators; ForEachWindow visits outputs in
                             // order from `begin`.
                             T* acc = o + begin * block;
                             Status s = ForEachWindow(
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
                             if (!s.ok()) {
                               std::lock_guard<std::mutex> lock(status_mu);
                               status = std::move(s);
                             }
                           });
      return status;
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
        Status status = Status::Ok();
        std::mutex status_mu;
        runtime::ParallelFor(result.num_elements(), 256, [&](int64_t begin, int64_t end) {
          T acc = init;
          Status s = ForEachWindow(
              *plan, begin, end, [&] { acc = init; },
              [&](int64_t off) {
                acc = ReducerFn<K, T>::Apply(acc, x[off]);
                return Status::Ok();
              },
              [&](int64_t out_index) {
                o[out_index] = acc;
                return Status::Ok();
              });
          if (!s.ok()) {
            std::lock_guard<std::mutex> lock(status_mu);
            status = std::move(s);
          }
        });
        return status;
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

// ---------------------------------------------------------------------------------------------
// stablehlo.select_and_scatter (the gradient of max/min pooling)
//
// For each window of the operand (as reduce_window with unit dilations), `select` picks one
// element by a left fold (keep the current pick while select(current, next) is true); the
// matching source value is then combined into the result at that element with `scatter`, in
// row-major source order. Windows lying entirely in padding select nothing.

// Calls f.template operator()<D>() with `dir` as a compile-time direction, so comparisons in
// inner loops inline instead of switching per element.
template <typename F>
Status DispatchCompare(CompareDirection dir, F&& f) {
  switch (dir) {
    case CompareDirection::kEq:
      return f.template operator()<CompareDirection::kEq>();
    case CompareDirection::kNe:
      return f.template operator()<CompareDirection::kNe>();
    case CompareDirection::kGe:
      return f.template operator()<CompareDirection::kGe>();
    case CompareDirection::kGt:
      return f.template operator()<CompareDirection::kGt>();
    case CompareDirection::kLe:
      return f.template operator()<CompareDirection::kLe>();
    case CompareDirection::kLt:
      return f.template operator()<CompareDirection::kLt>();
  }
  return Internal("unknown comparison direction");
}

// As TypedBlockKernel: trailing trivial axes (the channels of NHWC max pooling) form blocks of
// `block` contiguous outputs, each with its own pick, so a window position compares and the end
// of a window scatters a whole block, and the window walk is paid once per block instead of once
// per output. Windows are visited in the same order and each output's pick and scatter are the
// same, so the bits are the same. When the outer windows cannot overlap (stride >= window on
// every axis), no two windows scatter into the same element, and the windows split over threads.
std::optional<Kernel> SelectScatterBlockKernel(const std::string& name,
                                               const std::vector<ir::Type>& types,
                                               const std::shared_ptr<const WindowPlan>& plan,
                                               CompareDirection dir, ReducerKind k,
                                               ir::DType dtype) {
  size_t keep = plan->axes.size();
  int64_t block = 1;
  while (keep > 0 && plan->axes[keep - 1].trivial()) block *= plan->out_dims[--keep];
  if (block < kMinBlock || keep == plan->axes.size()) return std::nullopt;
  auto outer = std::make_shared<WindowPlan>();
  outer->out_dims.assign(plan->out_dims.begin(),
                         plan->out_dims.begin() + static_cast<int64_t>(keep));
  outer->axes.assign(plan->axes.begin(), plan->axes.begin() + static_cast<int64_t>(keep));
  int64_t outer_count = 1;
  bool disjoint = true;
  for (size_t d = 0; d < keep; ++d) {
    outer_count *= outer->out_dims[d];
    const WindowAxis& a = outer->axes[d];
    disjoint &= a.window_dilation == 1 && a.base_dilation == 1 && a.stride >= a.window;
  }
  const int64_t grain = disjoint ? std::max<int64_t>(1, 2048 / block) : outer_count;
  auto listed = ListWindows(*outer, outer_count);
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(in, types));
    return DispatchReducer(name, k, dtype, [&]<ReducerKind K, typename T>() -> Status {
      return DispatchCompare(dir, [&]<CompareDirection D>() -> Status {
        const T* x = in[0].data_as<const T>();
        const T* source = in[1].data_as<const T>();
        T* r = out[0].data_as<T>();
        std::fill(r, r + out[0].num_elements(), *in[2].data_as<const T>());
        Status status = Status::Ok();
        std::mutex status_mu;
        runtime::ParallelFor(outer_count, grain, [&](int64_t begin, int64_t end) {
          std::vector<int64_t> pick_buf(static_cast<size_t>(block));
          std::vector<T> best_buf(static_cast<size_t>(block));
          int64_t* pick = pick_buf.data();
          T* best = best_buf.data();
          auto fold = [&](int64_t off) {
            const T* v = x + off;
            for (int64_t j = 0; j < block; ++j) {
              const bool keep = CompareValues(D, best[j], v[j]);
              pick[j] = keep ? pick[j] : off + j;
              best[j] = keep ? best[j] : v[j];
            }
          };
          auto scatter = [&](int64_t w) {
            const T* src = source + w * block;
            for (int64_t j = 0; j < block; ++j) {
              r[pick[j]] = ReducerFn<K, T>::Apply(r[pick[j]], src[j]);
            }
          };
          auto start = [&](int64_t off) {
            for (int64_t j = 0; j < block; ++j) {
              pick[j] = off + j;
              best[j] = x[off + j];
            }
          };
          if (!listed->empty()) {
            // Branch-free: which window position each output picked (the picks of random data
            // are unpredictable), the offset looked up once when scattering.
            const int64_t* offsets = listed->data();
            const int64_t* starts =
                offsets + (listed->size() - static_cast<size_t>(outer_count) - 1);
            const int64_t nb = block;
            std::vector<int32_t> which_buf(static_cast<size_t>(nb));
            int32_t* which = which_buf.data();
            for (int64_t p = begin; p < end; ++p) {
              const int64_t s0 = starts[p], s1 = starts[p + 1];
              if (s0 == s1) continue;  // the window lies entirely in padding
              const T* v0 = x + offsets[s0];
              for (int64_t j = 0; j < nb; ++j) {
                best[j] = v0[j];
                which[j] = 0;
              }
              for (int64_t w = s0 + 1; w < s1; ++w) {
                const T* v = x + offsets[w];
                const auto k = static_cast<int32_t>(w - s0);
                for (int64_t j = 0; j < nb; ++j) {
                  const bool keep = CompareValues(D, best[j], v[j]);
                  const int32_t take = -static_cast<int32_t>(!keep);  // all ones: take v[j]
                  which[j] ^= (which[j] ^ k) & take;
                  best[j] = keep ? best[j] : v[j];
                }
              }
              const T* src = source + p * nb;
              for (int64_t j = 0; j < nb; ++j) {
                const int64_t t = offsets[s0 + which[j]] + j;
                r[t] = ReducerFn<K, T>::Apply(r[t], src[j]);
              }
            }
            return;
          }
          bool first = true;
          Status s = ForEachWindow(
              *outer, begin, end, [&] { first = true; },
              [&](int64_t off) {
                if (first) {
                  start(off);
                  first = false;
                } else {
                  fold(off);
                }
                return Status::Ok();
              },
              [&](int64_t w) {
                if (!first) scatter(w);  // else the window lies entirely in padding
                return Status::Ok();
              });
          if (!s.ok()) {
            std::lock_guard<std::mutex> lock(status_mu);
            status = std::move(s);
          }
        });
        return status;
      });
    });
  });
}

StatusOr<Kernel> LowerSelectAndScatter(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 3 || op.results.size() != 1)
    return InvalidArgument("expects operand, source, init_value");
  if (op.regions.size() != 2) return InvalidArgument("expects select and scatter regions");
  std::vector<ir::Type> types;
  for (size_t i = 0; i < 3; ++i) {
    KILN_RETURN_IF_ERROR(CheckStaticTensor(ctx.operand_type(i), "operand #" + std::to_string(i)));
    types.push_back(ctx.operand_type(i));
  }
  ir::DType dtype = types[0].dtype;
  if (types[2].rank() != 0 || types[2].dtype != dtype || types[1].dtype != dtype) {
    return InvalidArgument("source and init_value must have the operand's element type");
  }
  if (ctx.result_type(0) != types[0])
    return InvalidArgument("result must be " + types[0].ToString());
  for (const char* name : {"base_dilations", "window_dilations"}) {
    if (FindAttr(op, name) != nullptr)
      return InvalidArgument(std::string("unexpected attribute ") + name);
  }
  KILN_ASSIGN_OR_RETURN(WindowPlan plan_value, PlanWindow(op, types[0].dims));
  auto plan = std::make_shared<const WindowPlan>(std::move(plan_value));
  if (types[1].dims != plan->out_dims) {
    return InvalidArgument("source must have the window count shape " + FormatInts(plan->out_dims) +
                           ", got " + types[1].ToString());
  }
  std::string name = op.name;
  std::vector<int64_t> dims = types[0].dims;

  std::optional<CompareDirection> select = MatchArgCompare(ctx.module(), op.regions[0], dtype);
  std::optional<ReducerKind> scatter = MatchBinaryReducer(ctx.module(), op.regions[1], dtype);
  if (select && scatter && ReducerSupportsDType(*scatter, dtype) && dtype != ir::DType::kPred) {
    CompareDirection dir = *select;
    ReducerKind k = *scatter;
    if (std::optional<Kernel> blocked = SelectScatterBlockKernel(name, types, plan, dir, k, dtype))
      return std::move(*blocked);
    return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
      KILN_RETURN_IF_ERROR(CheckArrays(in, types));
      const View& result = out[0];
      KILN_RETURN_IF_ERROR(
          DispatchReducer(name, k, dtype, [&]<ReducerKind K, typename T>() -> Status {
            const T* x = in[0].data_as<const T>();
            const T* source = in[1].data_as<const T>();
            T* r = result.data_as<T>();
            std::fill(r, r + result.num_elements(), *in[2].data_as<const T>());
            int64_t pick = -1;
            return ForEachWindow(
                *plan, 0, Product(plan->out_dims), [&] { pick = -1; },
                [&](int64_t off) {
                  if (pick < 0 || !CompareValues(dir, x[pick], x[off])) pick = off;
                  return Status::Ok();
                },
                [&](int64_t w) {
                  if (pick >= 0) r[pick] = ReducerFn<K, T>::Apply(r[pick], source[w]);
                  return Status::Ok();
                });
          }));
      return Status::Ok();
    });
  }

  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ScalarRegion> select_region,
                        ScalarRegion::Compile(ctx, 0, {dtype, dtype}, {ir::DType::kPred}));
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const ScalarRegion> scatter_region,
                        ScalarRegion::Compile(ctx, 1, {dtype, dtype}, {dtype}));
  return Kernel(
      [=](ExecContext& ec, std::span<const View> in, std::span<const View> out) -> Status {
        KILN_RETURN_IF_ERROR(CheckArrays(in, types));
        KILN_ASSIGN_OR_RETURN(ScalarRegionRunner select_runner,
                              ScalarRegionRunner::Create(*select_region, ec, in.subspan(3)));
        KILN_ASSIGN_OR_RETURN(ScalarRegionRunner scatter_runner,
                              ScalarRegionRunner::Create(*scatter_region, ec, in.subspan(3)));
        const View& result = out[0];
        size_t elem = static_cast<size_t>(ir::DTypeByteSize(dtype));
        auto* r = static_cast<uint8_t*>(result.data());
        const auto* x = static_cast<const uint8_t*>(in[0].data());
        const auto* source = static_cast<const uint8_t*>(in[1].data());
        for (int64_t i = 0; i < result.num_elements(); ++i)
          std::memcpy(r + i * elem, in[2].data(), elem);
        int64_t pick = -1;
        uint8_t keep = 0;
        void* keep_dst[1] = {&keep};
        KILN_RETURN_IF_ERROR(ForEachWindow(
            *plan, 0, Product(plan->out_dims), [&] { pick = -1; },
            [&](int64_t off) -> Status {
              if (pick < 0) {
                pick = off;
                return Status::Ok();
              }
              const void* args[2] = {x + pick * elem, x + off * elem};
              KILN_RETURN_IF_ERROR(select_runner.Run(args, keep_dst));
              if (!keep) pick = off;
              return Status::Ok();
            },
            [&](int64_t w) -> Status {
              if (pick < 0) return Status::Ok();
              void* target = r + pick * elem;
              const void* args[2] = {target, source + w * elem};
              void* dst[1] = {target};
              return scatter_runner.Run(args, dst);
            }));
        return Status::Ok();
      });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterWindowOps(OpRegistry& registry) {
  registry.Add({"stablehlo.reduce_window", "reduction", &kernels::LowerReduceWindow});
  registry.Add({"stablehlo.select_and_scatter", "reduction", &kernels::LowerSelectAndScatter});
}

}  // namespace kiln::kernels
