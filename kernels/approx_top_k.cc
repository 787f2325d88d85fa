// stablehlo.custom_call @ApproxTopK: lax.approx_max_k / approx_min_k.
//
// JAX lowers approx_top_k on every platform but the TPU to this custom call with
// `is_fallback = true`, which XLA:CPU computes exactly: the values and their indices sorted along
// `reduction_dim` by the comparator (values GT for max_k, LT for min_k), the first n kept, n being
// the results' size along that dimension (k, or the approximate algorithm's output size when
// `aggregate_to_topk` is false). Kiln does the same with a stable sort; NaNs go last.
// Operands: the values, their indices (an iota), and two initial values the exact computation
// does not need.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "kernels/custom_call.h"
#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "lower/op_registry.h"

namespace kiln::kernels {
namespace {

using lower::ExecContext;
using lower::Kernel;
using lower::LowerContext;
using runtime::View;

// "GT" or "LT" from the comparator the op names (the first compare in its body).
StatusOr<std::string> ComparatorDirection(const ir::Module& module, const ir::Op& op) {
  const ir::Attr* called = FindAttr(op, "called_computations");
  if (called == nullptr || called->kind != ir::Attr::Kind::kArray || called->array.size() != 1)
    return InvalidArgument("ApproxTopK needs one comparator in called_computations");
  const ir::Function* fn = module.FindFunction(called->array[0].str);
  if (fn == nullptr)
    return InvalidArgument("comparator @" + called->array[0].str + " is not defined");
  for (const ir::Block& block : fn->body.blocks) {
    for (const ir::Op& inner : block.ops) {
      if (inner.name != "stablehlo.compare") continue;
      const ir::Attr* dir = inner.attr("comparison_direction");
      if (dir != nullptr && (dir->str == "GT" || dir->str == "LT")) return dir->str;
    }
  }
  return InvalidArgument("comparator @" + fn->name + " is not a GT or LT comparison of the values");
}

StatusOr<Kernel> LowerApproxTopK(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 4 || op.results.size() != 2)
    return InvalidArgument(
        "ApproxTopK expects 4 operands (values, indices, 2 initial values) and 2 "
        "results");
  const ir::Type& values = ctx.operand_type(0);
  const ir::Type& indices = ctx.operand_type(1);
  const ir::Type& out_values = ctx.result_type(0);
  const ir::Type& out_indices = ctx.result_type(1);
  KILN_RETURN_IF_ERROR(CheckStaticTensor(values, "operand #0"));
  KILN_ASSIGN_OR_RETURN(int64_t dim, RequiredConfigInt(op, "reduction_dim"));
  KILN_ASSIGN_OR_RETURN(std::string direction, ComparatorDirection(ctx.module(), op));
  const int64_t rank = values.rank();
  if (dim < 0 || dim >= rank) return InvalidArgument("reduction_dim is out of range");
  const auto d = static_cast<size_t>(dim);
  bool shapes_ok = indices.dtype == ir::DType::kS32 && indices.dims == values.dims &&
                   out_values.dtype == values.dtype && out_indices.dtype == ir::DType::kS32 &&
                   out_values.dims == out_indices.dims && out_values.rank() == rank;
  for (size_t i = 0; shapes_ok && i < values.dims.size(); ++i) {
    shapes_ok =
        i == d ? out_values.dims[i] <= values.dims[i] : out_values.dims[i] == values.dims[i];
  }
  if (!shapes_ok) {
    return InvalidArgument("ApproxTopK types do not match: " + values.ToString() + ", " +
                           indices.ToString() + " -> " + out_values.ToString() + ", " +
                           out_indices.ToString());
  }
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < d; ++i) outer *= values.dims[i];
  for (size_t i = d + 1; i < values.dims.size(); ++i) inner *= values.dims[i];
  const int64_t len = values.dims[d], keep = out_values.dims[d];
  const bool max_k = direction == "GT";
  const std::string name = op.name + " @ApproxTopK";
  return ew::DispatchElem(values.dtype, [&]<typename T>() -> StatusOr<Kernel> {
    if constexpr (!ew::kIsFloat<T>) {
      return UnsupportedDType(name, values.dtype);
    } else {
      return Kernel(
          [=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
            KILN_RETURN_IF_ERROR(CheckOutputs(out, 2));
            const T* x = in[0].data_as<const T>();
            const int32_t* ix = in[1].data_as<const int32_t>();
            T* y = out[0].data_as<T>();
            int32_t* iy = out[1].data_as<int32_t>();
            std::vector<double> key(static_cast<size_t>(len));
            std::vector<int64_t> order(static_cast<size_t>(len));
            // NaNs last; otherwise larger first for max_k, smaller first for min_k.
            auto before = [&](int64_t a, int64_t b) {
              const double ka = key[static_cast<size_t>(a)], kb = key[static_cast<size_t>(b)];
              if (std::isnan(ka) || std::isnan(kb)) return !std::isnan(ka) && std::isnan(kb);
              return max_k ? ka > kb : ka < kb;
            };
            for (int64_t o = 0; o < outer; ++o) {
              for (int64_t i = 0; i < inner; ++i) {
                const int64_t base = o * len * inner + i;
                for (int64_t j = 0; j < len; ++j) {
                  key[static_cast<size_t>(j)] =
                      static_cast<double>(ew::Elem<T>::Load(x[base + j * inner]));
                }
                std::iota(order.begin(), order.end(), int64_t{0});
                std::stable_sort(order.begin(), order.end(), before);
                const int64_t out_base = o * keep * inner + i;
                for (int64_t j = 0; j < keep; ++j) {
                  const int64_t from = base + order[static_cast<size_t>(j)] * inner;
                  y[out_base + j * inner] = x[from];
                  iy[out_base + j * inner] = ix[from];
                }
              }
            }
            return Status::Ok();
          });
    }
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::kernels {

void RegisterApproxTopKTarget(OpRegistry& registry) {
  registry.AddCustomCall({"ApproxTopK", "sort", &kernels::LowerApproxTopK});
}

}  // namespace kiln::kernels
