// The plan of a dot (kernels/dot.h): operand and result checks, the [B, M, K] x [B, K, N] shape,
// the accumulation type, and whether each operand is read in place or packed.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "ir/dtype_dispatch.h"
#include "kernels/dot.h"
#include "kernels/gemm.h"
#include "kernels/lowering.h"

namespace kiln::kernels::dot {
namespace {

// ---------------------------------------------------------------------------------------------
// Plan.

// contiguous with each other (in the listed order); `stride` is then the stride of the whole.
struct AxisGroup {
  bool ok = true;
  int64_t size = 1;
  int64_t stride = 0;  // 0 when size <= 1 (any stride works)
};

AxisGroup GroupAxes(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    const std::vector<int64_t>& axes) {
  AxisGroup g;
  int64_t prev = -1;
  for (int64_t a : axes) {
    g.size *= dims[static_cast<size_t>(a)];
    if (dims[static_cast<size_t>(a)] == 1) continue;
    if (prev >= 0 && strides[static_cast<size_t>(prev)] !=
                         strides[static_cast<size_t>(a)] * dims[static_cast<size_t>(a)]) {
      g.ok = false;
    }
    prev = a;
  }
  if (prev >= 0 && g.size > 1) g.stride = strides[static_cast<size_t>(prev)];
  return g;
}

// Fills `plan` for an operand whose logical matrix is [rows, cols] per batch.
void PlanOperand(const std::vector<int64_t>& dims, const std::vector<int64_t>& batch_axes,
                 const std::vector<int64_t>& row_axes, const std::vector<int64_t>& col_axes,
                 bool can_alias, OperandPlan& plan) {
  std::vector<int64_t> strides = RowMajorStrides(dims);
  for (const std::vector<int64_t>* group : {&batch_axes, &row_axes, &col_axes}) {
    for (int64_t a : *group) {
      plan.pack_sizes.push_back(dims[static_cast<size_t>(a)]);
      plan.pack_strides.push_back(strides[static_cast<size_t>(a)]);
    }
  }
  if (!can_alias) return;
  AxisGroup b = GroupAxes(dims, strides, batch_axes);
  AxisGroup r = GroupAxes(dims, strides, row_axes);
  AxisGroup c = GroupAxes(dims, strides, col_axes);
  if (!b.ok || !r.ok || !c.ok) return;
  constexpr int64_t kMaxLd = std::numeric_limits<int>::max();
  // Row-major [rows, cols]: element (i, j) at i*ld + j.
  if ((c.size <= 1 || c.stride == 1) && (r.size <= 1 || r.stride >= c.size)) {
    plan.ld = r.size <= 1 ? std::max<int64_t>(c.size, 1) : r.stride;
    plan.trans = false;
  } else if ((r.size <= 1 || r.stride == 1) && (c.size <= 1 || c.stride >= r.size)) {
    // Stored transposed, [cols, rows]: element (i, j) at j*ld + i.
    plan.ld = c.size <= 1 ? std::max<int64_t>(r.size, 1) : c.stride;
    plan.trans = true;
  } else {
    return;
  }
  if (plan.ld > kMaxLd) return;
  plan.batch_stride = b.stride;
  plan.direct = true;
}

bool IsReadable(ir::DType t) {
  return ir::InSet(t, ir::kStored) || ir::IsInteger(t);  // sub-byte integers too
}

}  // namespace

StatusOr<std::shared_ptr<const DotPlan>> PlanDot(const ir::Type& lhs, const ir::Type& rhs,
                                                 const ir::Type& result,
                                                 const std::vector<int64_t>& lhs_batch,
                                                 const std::vector<int64_t>& rhs_batch,
                                                 const std::vector<int64_t>& lhs_contract,
                                                 const std::vector<int64_t>& rhs_contract) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(lhs, "lhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(rhs, "rhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(result, "result"));
  if (lhs_batch.size() != rhs_batch.size())
    return InvalidArgument("lhs and rhs have different numbers of batching dims");
  if (lhs_contract.size() != rhs_contract.size()) {
    return InvalidArgument("lhs and rhs have different numbers of contracting dims");
  }
  std::vector<int64_t> lhs_used = lhs_batch, rhs_used = rhs_batch;
  lhs_used.insert(lhs_used.end(), lhs_contract.begin(), lhs_contract.end());
  rhs_used.insert(rhs_used.end(), rhs_contract.begin(), rhs_contract.end());
  KILN_RETURN_IF_ERROR(CheckAxes(lhs_used, lhs.rank(), "lhs batching+contracting dims"));
  KILN_RETURN_IF_ERROR(CheckAxes(rhs_used, rhs.rank(), "rhs batching+contracting dims"));
  auto plan = std::make_shared<DotPlan>();
  plan->lhs_dtype = lhs.dtype;
  plan->rhs_dtype = rhs.dtype;
  plan->out_dtype = result.dtype;
  for (size_t i = 0; i < lhs_batch.size(); ++i) {
    int64_t size = lhs.dims[static_cast<size_t>(lhs_batch[i])];
    if (size != rhs.dims[static_cast<size_t>(rhs_batch[i])]) {
      return InvalidArgument("batching dim sizes differ: lhs " + lhs.ToString() + ", rhs " +
                             rhs.ToString());
    }
    plan->out_dims.push_back(size);
    plan->batch *= size;
  }
  for (size_t i = 0; i < lhs_contract.size(); ++i) {
    int64_t size = lhs.dims[static_cast<size_t>(lhs_contract[i])];
    if (size != rhs.dims[static_cast<size_t>(rhs_contract[i])]) {
      return InvalidArgument("contracting dim sizes differ: lhs " + lhs.ToString() + ", rhs " +
                             rhs.ToString());
    }
    plan->k *= size;
  }
  auto free_axes = [](int64_t rank, const std::vector<int64_t>& used) {
    std::vector<int64_t> free;
    for (int64_t d = 0; d < rank; ++d) {
      if (std::find(used.begin(), used.end(), d) == used.end()) free.push_back(d);
    }
    return free;
  };
  std::vector<int64_t> lhs_free = free_axes(lhs.rank(), lhs_used);
  std::vector<int64_t> rhs_free = free_axes(rhs.rank(), rhs_used);
  for (int64_t d : lhs_free) {
    plan->out_dims.push_back(lhs.dims[static_cast<size_t>(d)]);
    plan->m *= lhs.dims[static_cast<size_t>(d)];
  }
  for (int64_t d : rhs_free) {
    plan->out_dims.push_back(rhs.dims[static_cast<size_t>(d)]);
    plan->n *= rhs.dims[static_cast<size_t>(d)];
  }
  if (result.dims != plan->out_dims) {
    return InvalidArgument("result must have shape " + FormatInts(plan->out_dims) + ", got " +
                           result.ToString());
  }
  if (!IsReadable(lhs.dtype) || !IsReadable(rhs.dtype)) {
    return Unimplemented("operand types " + lhs.ToString() + " x " + rhs.ToString() +
                         " are not supported");
  }
  std::optional<ir::DType> acc = ProductAccumulationType(result.dtype);
  if (!acc) return Unimplemented("result type " + result.ToString() + " is not supported");
  plan->acc_dtype = *acc;
  bool float_operand = !(lhs.dtype == ir::DType::kPred || ir::IsInteger(lhs.dtype)) ||
                       !(rhs.dtype == ir::DType::kPred || ir::IsInteger(rhs.dtype));
  if ((ir::IsComplex(lhs.dtype) || ir::IsComplex(rhs.dtype)) && !ir::IsComplex(*acc)) {
    return Unimplemented("complex operands need a complex result, got " + result.ToString());
  }
  if (ir::IsInteger(*acc) && float_operand) {
    return Unimplemented("float operands with an integer result are not supported");
  }
  if (IsGemmType(*acc)) {
    constexpr int64_t kMaxDim = std::numeric_limits<int>::max();
    if (plan->m > kMaxDim || plan->n > kMaxDim || plan->k > kMaxDim) {
      return Unimplemented("matrix dimensions exceed the BLAS integer range");
    }
  }
  // Operands already in the accumulation type may be read in place by BLAS.
  bool alias_lhs = IsGemmType(*acc) && lhs.dtype == *acc;
  bool alias_rhs = IsGemmType(*acc) && rhs.dtype == *acc;
  // 16-bit floats into f32 products: widened as stored, then read like f32 operands.
  auto half = [&](ir::DType t) {
    return *acc == ir::DType::kF32 && (t == ir::DType::kBF16 || t == ir::DType::kF16);
  };
  PlanOperand(lhs.dims, lhs_batch, lhs_free, lhs_contract, alias_lhs || half(lhs.dtype), plan->lhs);
  PlanOperand(rhs.dims, rhs_batch, rhs_contract, rhs_free, alias_rhs || half(rhs.dtype), plan->rhs);
  plan->lhs.widen = plan->lhs.direct && half(lhs.dtype);
  plan->rhs.widen = plan->rhs.direct && half(rhs.dtype);
  return std::shared_ptr<const DotPlan>(std::move(plan));
}

}  // namespace kiln::kernels::dot
