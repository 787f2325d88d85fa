// stablehlo.select_and_scatter (the gradient of max / min pooling); windows from kernels/window.h.
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
#include "kernels/scalar_body.h"
#include "kernels/window.h"
#include "lower/op_registry.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

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
  std::optional<WindowBlocks> blocks = SplitWindowBlocks(*plan);
  if (!blocks) return std::nullopt;
  const std::shared_ptr<const WindowPlan> outer = blocks->outer;
  const int64_t block = blocks->block, outer_count = blocks->outer_count;
  bool disjoint = true;
  for (const WindowAxis& a : outer->axes) {
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
        return ParallelForStatus(outer_count, grain, [&](int64_t begin, int64_t end) {
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
            return Status::Ok();
          }
          bool first = true;
          return ForEachWindow(
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
        });
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

void RegisterSelectAndScatter(OpRegistry& registry) {
  registry.Add({"stablehlo.select_and_scatter", "reduction", &LowerSelectAndScatter});
}

}  // namespace kiln::kernels
