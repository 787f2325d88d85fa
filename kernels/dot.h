// stablehlo.dot_general and stablehlo.dot: their plan (kernels/dot_plan.cc) and lowering rules
// (kernels/dot.cc), registered by RegisterLinalgOps in kernels/linalg.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/module.h"
#include "ir/type.h"
#include "lower/kernel.h"
#include "lower/op_registry.h"
#include "lower/small_ops.h"
#include "runtime/view.h"
#include "support/status.h"

namespace kiln::kernels::dot {

// How one operand is read as a batch of matrices: either directly (BLAS-compatible strides) or
// after packing its axes, listed in [batch, rows, cols] order, into a contiguous buffer.
struct OperandPlan {
  std::vector<int64_t> pack_sizes, pack_strides;  // source axes in packed order
  bool direct = false;       // usable in place (no conversion, or after `widen`)
  bool widen = false;        // direct once its 16-bit floats are widened to f32 in their order
  bool trans = false;        // direct: stored as [cols, rows]
  int64_t ld = 0;            // direct: leading dimension
  int64_t batch_stride = 0;  // direct: elements between batches
};

struct DotPlan {
  ir::DType lhs_dtype, rhs_dtype, out_dtype, acc_dtype;
  std::vector<int64_t> out_dims;
  int64_t batch = 1, m = 1, k = 1, n = 1;
  OperandPlan lhs, rhs;
};

// A group of axes read as one flattened axis: ok when its non-unit axes are row-major

StatusOr<std::shared_ptr<const DotPlan>> PlanDot(const ir::Type& lhs, const ir::Type& rhs,
                                                 const ir::Type& result,
                                                 const std::vector<int64_t>& lhs_batch,
                                                 const std::vector<int64_t>& rhs_batch,
                                                 const std::vector<int64_t>& lhs_contract,
                                                 const std::vector<int64_t>& rhs_contract);

// A matrix product (M and N both above 1) of at most this many multiply-adds (B * M * N * K) runs
// as a plain loop (kernels/dot.cc: TinyDot), not through BLAS.
inline constexpr int64_t kTinyDotProducts = 8 * 8 * 8;
// Dots of at most this many multiply-adds may have a lower::SmallDotCode (their direct form).
inline constexpr int64_t kMaxSmallDotProducts = 512;
// The multiply-adds of `p` as RunDot computes them (kernels/dot_small.cc), or null when it is not
// a tiny f32/f64 dot or its kernel sums in another order (BLAS, MatVec's lanes).
std::shared_ptr<const lower::SmallDotCode> PlanSmallDot(const DotPlan& p);

// Scratch bytes RunDot needs for `p` with `out_elements` results (16-bit float results: the f32
// products, then the packed operands); 0 otherwise.
size_t DotScratch(const DotPlan& p, int64_t out_elements);
// result = lhs x rhs as `p` plans it; `scratch` holds DotScratch bytes (or is null: allocated).
// `op` names the op in errors.
Status RunDot(std::string_view op, const DotPlan& p, const runtime::View& lhs,
              const runtime::View& rhs, const runtime::View& result, std::byte* scratch);
// A dot_general whose result's per-device pieces are partial sums (lower::PartialContraction),
// kernels/dot_partial.cc.
StatusOr<lower::Kernel> MakePartialDotKernel(
    std::string name, std::shared_ptr<const DotPlan> plan, const ir::Type& lhs, const ir::Type& rhs,
    const ir::Type& result, const std::vector<int64_t>& lhs_batch,
    const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
    const std::vector<int64_t>& rhs_contract, const lower::PartialContraction& partial,
    ir::ValueId value);

StatusOr<lower::Kernel> LowerDotGeneral(lower::LowerContext& ctx);
StatusOr<lower::Kernel> LowerDot(lower::LowerContext& ctx);

}  // namespace kiln::kernels::dot
