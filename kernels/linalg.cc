// stablehlo.dot_general and stablehlo.dot; stablehlo.cholesky and stablehlo.triangular_solve.
//
// Every dot is computed as a batch of matrix products [B, M, K] x [B, K, N] -> [B, M, N]: batch
// dims, then lhs free dims, then rhs free dims, as StableHLO orders the result.
//  * f32 / f64 go to OpenBLAS gemm. When an operand's memory already is a plain or transposed
//    matrix per batch (e.g. the A^T.B of an MLP gradient, contracting dims [0]x[0]), it is passed
//    as is with the matching CblasTrans flag; otherwise it is packed once into a contiguous
//    [B, M, K] / [B, K, N] buffer.
//  * Mixed precision (preferred_element_type: bf16 x bf16 -> f32, i8 x i8 -> i32) packs operands
//    converted to the accumulation type; bf16/f16 results are accumulated in f32 and rounded once.
//  * Integers and pred use a simple i-k-j loop (wrapping arithmetic; pred: or of ands).
#include <algorithm>
#include <complex>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/blas.h"
#include "kernels/dispatch.h"
#include "kernels/families.h"
#include "kernels/float16.h"
#include "kernels/gemm.h"
#include "kernels/lowering.h"
#include "kernels/scalar_body.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using compiler::ExecContext;
using compiler::Kernel;
using compiler::LowerContext;
using runtime::Array;
using runtime::View;

// ---------------------------------------------------------------------------------------------
// Element access across storage types, with conversion to the accumulation type.

template <typename Fn>
Status DispatchStorage(std::string_view op, ir::DType t, Fn&& fn) {
  switch (t) {
    case ir::DType::kBF16:
      return fn.template operator()<bf16_t>();
    case ir::DType::kF16:
      return fn.template operator()<f16_t>();
    case ir::DType::kC64:
      return fn.template operator()<std::complex<float>>();
    case ir::DType::kC128:
      return fn.template operator()<std::complex<double>>();
    default:
      return DispatchRealOrPred(op, t, std::forward<Fn>(fn));
  }
}

template <typename T>
inline constexpr bool kIsComplexT =
    std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>;

template <typename Dst, typename Src>
inline Dst ConvertElement(Src v) {
  if constexpr (std::is_same_v<Src, bf16_t>) {
    return static_cast<Dst>(Bf16BitsToFloat(v.bits));
  } else if constexpr (std::is_same_v<Src, f16_t>) {
    return static_cast<Dst>(HalfBitsToFloat(v.bits));
  } else if constexpr (kIsComplexT<Src> && !kIsComplexT<Dst>) {
    return static_cast<Dst>(v.real());  // not planned: complex operands need a complex result
  } else if constexpr (kIsComplexT<Dst> && !kIsComplexT<Src>) {
    return Dst(static_cast<typename Dst::value_type>(v));
  } else {
    return static_cast<Dst>(v);
  }
}

// Copies `src` viewed with `sizes`/`strides` (source strides listed in destination axis order)
// into the contiguous row-major `dst`, converting each element.
template <typename Dst, typename Src, bool kToPred>
void PackAxes(const Src* src, const std::vector<int64_t>& sizes,
              const std::vector<int64_t>& strides, Dst* dst) {
  auto convert = [](Src v) -> Dst {
    if constexpr (kToPred) {
      return ConvertElement<double>(v) != 0 ? Dst(1) : Dst(0);
    } else {
      return ConvertElement<Dst>(v);
    }
  };
  if (Product(sizes) == 0) return;
  if (sizes.empty()) {
    dst[0] = convert(src[0]);
    return;
  }
  size_t outer_rank = sizes.size() - 1;
  int64_t inner = sizes.back(), inner_stride = strides.back();
  std::vector<int64_t> idx(outer_rank, 0);
  int64_t off = 0;
  for (;;) {
    const Src* s = src + off;
    for (int64_t j = 0; j < inner; ++j) *dst++ = convert(s[j * inner_stride]);
    size_t d = outer_rank;
    for (; d-- > 0;) {
      off += strides[d];
      if (++idx[d] < sizes[d]) break;
      off -= strides[d] * sizes[d];
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// ---------------------------------------------------------------------------------------------
// Plan.

// How one operand is read as a batch of matrices: either directly (BLAS-compatible strides) or
// after packing its axes, listed in [batch, rows, cols] order, into a contiguous buffer.
struct OperandPlan {
  std::vector<int64_t> pack_sizes, pack_strides;  // source axes in packed order
  bool direct = false;                            // usable in place (only when no conversion)
  bool trans = false;                             // direct: stored as [cols, rows]
  int64_t ld = 0;                                 // direct: leading dimension
  int64_t batch_stride = 0;                       // direct: elements between batches
};

struct DotPlan {
  ir::DType lhs_dtype, rhs_dtype, out_dtype, acc_dtype;
  std::vector<int64_t> out_dims;
  int64_t batch = 1, m = 1, k = 1, n = 1;
  OperandPlan lhs, rhs;
};

// A group of axes read as one flattened axis: ok when its non-unit axes are row-major
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
  return t == ir::DType::kPred || ir::IsInteger(t) || t == ir::DType::kF32 ||
         t == ir::DType::kF64 || t == ir::DType::kBF16 || t == ir::DType::kF16 || ir::IsComplex(t);
}

StatusOr<std::shared_ptr<const DotPlan>> PlanDot(const ir::Op& op, const ir::Type& lhs,
                                                 const ir::Type& rhs, const ir::Type& result,
                                                 const std::vector<int64_t>& lhs_batch,
                                                 const std::vector<int64_t>& rhs_batch,
                                                 const std::vector<int64_t>& lhs_contract,
                                                 const std::vector<int64_t>& rhs_contract) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, lhs, "lhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, rhs, "rhs"));
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, result, "result"));
  if (lhs_batch.size() != rhs_batch.size())
    return OpError(op, "lhs and rhs have different numbers of batching dims");
  if (lhs_contract.size() != rhs_contract.size()) {
    return OpError(op, "lhs and rhs have different numbers of contracting dims");
  }
  std::vector<int64_t> lhs_used = lhs_batch, rhs_used = rhs_batch;
  lhs_used.insert(lhs_used.end(), lhs_contract.begin(), lhs_contract.end());
  rhs_used.insert(rhs_used.end(), rhs_contract.begin(), rhs_contract.end());
  KILN_RETURN_IF_ERROR(CheckAxes(op, lhs_used, lhs.rank(), "lhs batching+contracting dims"));
  KILN_RETURN_IF_ERROR(CheckAxes(op, rhs_used, rhs.rank(), "rhs batching+contracting dims"));
  auto plan = std::make_shared<DotPlan>();
  plan->lhs_dtype = lhs.dtype;
  plan->rhs_dtype = rhs.dtype;
  plan->out_dtype = result.dtype;
  for (size_t i = 0; i < lhs_batch.size(); ++i) {
    int64_t size = lhs.dims[static_cast<size_t>(lhs_batch[i])];
    if (size != rhs.dims[static_cast<size_t>(rhs_batch[i])]) {
      return OpError(
          op, "batching dim sizes differ: lhs " + lhs.ToString() + ", rhs " + rhs.ToString());
    }
    plan->out_dims.push_back(size);
    plan->batch *= size;
  }
  for (size_t i = 0; i < lhs_contract.size(); ++i) {
    int64_t size = lhs.dims[static_cast<size_t>(lhs_contract[i])];
    if (size != rhs.dims[static_cast<size_t>(rhs_contract[i])]) {
      return OpError(
          op, "contracting dim sizes differ: lhs " + lhs.ToString() + ", rhs " + rhs.ToString());
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
    return OpError(
        op, "result must have shape " + FormatInts(plan->out_dims) + ", got " + result.ToString());
  }
  if (!IsReadable(lhs.dtype) || !IsReadable(rhs.dtype)) {
    return Unimplemented(op.name + ": operand types " + lhs.ToString() + " x " + rhs.ToString() +
                         " are not supported");
  }
  std::optional<ir::DType> acc = ProductAccumulationType(result.dtype);
  if (!acc)
    return Unimplemented(op.name + ": result type " + result.ToString() + " is not supported");
  plan->acc_dtype = *acc;
  bool float_operand = !(lhs.dtype == ir::DType::kPred || ir::IsInteger(lhs.dtype)) ||
                       !(rhs.dtype == ir::DType::kPred || ir::IsInteger(rhs.dtype));
  if ((ir::IsComplex(lhs.dtype) || ir::IsComplex(rhs.dtype)) && !ir::IsComplex(*acc)) {
    return Unimplemented(op.name + ": complex operands need a complex result, got " +
                         result.ToString());
  }
  if (ir::IsInteger(*acc) && float_operand) {
    return Unimplemented(op.name + ": float operands with an integer result are not supported");
  }
  if (IsGemmType(*acc)) {
    constexpr int64_t kMaxDim = std::numeric_limits<int>::max();
    if (plan->m > kMaxDim || plan->n > kMaxDim || plan->k > kMaxDim) {
      return Unimplemented(op.name + ": matrix dimensions exceed the BLAS integer range");
    }
  }
  // Operands already in the accumulation type may be read in place by BLAS.
  bool alias_lhs = IsGemmType(*acc) && lhs.dtype == *acc;
  bool alias_rhs = IsGemmType(*acc) && rhs.dtype == *acc;
  PlanOperand(lhs.dims, lhs_batch, lhs_free, lhs_contract, alias_lhs, plan->lhs);
  PlanOperand(rhs.dims, rhs_batch, rhs_contract, rhs_free, alias_rhs, plan->rhs);
  return std::shared_ptr<const DotPlan>(std::move(plan));
}

// ---------------------------------------------------------------------------------------------
// Execution.

// Packs `a` per `plan` into a new contiguous buffer of Acc.
template <typename Acc>
StatusOr<std::vector<Acc>> Pack(std::string_view op, const View& a, const OperandPlan& plan) {
  std::vector<Acc> buffer(static_cast<size_t>(Product(plan.pack_sizes)));
  KILN_RETURN_IF_ERROR(DispatchStorage(op, a.dtype, [&]<typename Src>() -> Status {
    PackAxes<Acc, Src, false>(static_cast<const Src*>(a.data()), plan.pack_sizes, plan.pack_strides,
                              buffer.data());
    return Status::Ok();
  }));
  return buffer;
}

// out[B, M, N] = lhs x rhs in float type T via BLAS.
template <typename T>
Status RunBlasDot(std::string_view op, const DotPlan& p, const View& lhs, const View& rhs, T* out) {
  std::vector<T> lhs_buf, rhs_buf;
  const T* a = nullptr;
  const T* b = nullptr;
  bool ta = false, tb = false;
  int64_t lda = std::max<int64_t>(p.k, 1), ldb = std::max<int64_t>(p.n, 1);
  int64_t a_batch = p.m * p.k, b_batch = p.k * p.n;
  if (p.lhs.direct) {
    a = lhs.data_as<const T>();
    ta = p.lhs.trans;
    lda = p.lhs.ld;
    a_batch = p.lhs.batch_stride;
  } else {
    KILN_ASSIGN_OR_RETURN(lhs_buf, Pack<T>(op, lhs, p.lhs));
    a = lhs_buf.data();
  }
  if (p.rhs.direct) {
    b = rhs.data_as<const T>();
    tb = p.rhs.trans;
    ldb = p.rhs.ld;
    b_batch = p.rhs.batch_stride;
  } else {
    KILN_ASSIGN_OR_RETURN(rhs_buf, Pack<T>(op, rhs, p.rhs));
    b = rhs_buf.data();
  }
  ParallelGemm<T>(p.batch, ta, tb, p.m, p.n, p.k, a, lda, a_batch, b, ldb, b_batch, out);
  return Status::Ok();
}

// out[B, M, N] = lhs x rhs for integer or pred T, with both operands packed.
template <typename T, bool kPred>
Status RunLoopDot(std::string_view op, const DotPlan& p, const View& lhs, const View& rhs, T* out) {
  std::vector<T> a(static_cast<size_t>(Product(p.lhs.pack_sizes)));
  std::vector<T> b(static_cast<size_t>(Product(p.rhs.pack_sizes)));
  KILN_RETURN_IF_ERROR(DispatchStorage(op, lhs.dtype, [&]<typename Src>() -> Status {
    PackAxes<T, Src, kPred>(static_cast<const Src*>(lhs.data()), p.lhs.pack_sizes,
                            p.lhs.pack_strides, a.data());
    return Status::Ok();
  }));
  KILN_RETURN_IF_ERROR(DispatchStorage(op, rhs.dtype, [&]<typename Src>() -> Status {
    PackAxes<T, Src, kPred>(static_cast<const Src*>(rhs.data()), p.rhs.pack_sizes,
                            p.rhs.pack_strides, b.data());
    return Status::Ok();
  }));
  int64_t m = p.m, n = p.n, k = p.k;
  runtime::ParallelFor(p.batch * m, std::max<int64_t>(1, 16384 / std::max<int64_t>(n * k, 1)),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t row = begin; row < end; ++row) {
                           int64_t bi = row / m;
                           const T* arow = a.data() + row * k;
                           const T* bmat = b.data() + bi * k * n;
                           T* orow = out + row * n;
                           std::fill(orow, orow + n, T(0));
                           for (int64_t kk = 0; kk < k; ++kk) {
                             T av = arow[kk];
                             const T* brow = bmat + kk * n;
                             if constexpr (kPred) {
                               if (av) {
                                 for (int64_t j = 0; j < n; ++j)
                                   orow[j] = static_cast<T>(orow[j] | brow[j]);
                               }
                             } else {
                               for (int64_t j = 0; j < n; ++j)
                                 orow[j] = WrapAdd(orow[j], WrapMul(av, brow[j]));
                             }
                           }
                         }
                       });
  return Status::Ok();
}

Status RunDot(std::string_view op, const DotPlan& p, const View& lhs, const View& rhs,
              const View& result) {
  if (result.num_elements() == 0) return Status::Ok();
  switch (p.acc_dtype) {
    case ir::DType::kF32:
    case ir::DType::kF64: {
      if (p.k == 0) {  // empty sums: BLAS may leave C untouched
        std::memset(result.data(), 0, result.byte_size());
        return Status::Ok();
      }
      if (p.out_dtype == p.acc_dtype) {
        if (p.acc_dtype == ir::DType::kF32)
          return RunBlasDot<float>(op, p, lhs, rhs, result.data_as<float>());
        return RunBlasDot<double>(op, p, lhs, rhs, result.data_as<double>());
      }
      // 16-bit float result: accumulate in f32, round once.
      std::vector<float> tmp(static_cast<size_t>(result.num_elements()));
      KILN_RETURN_IF_ERROR(RunBlasDot<float>(op, p, lhs, rhs, tmp.data()));
      auto* dst = result.data_as<uint16_t>();
      bool bf16 = p.out_dtype == ir::DType::kBF16;
      for (size_t i = 0; i < tmp.size(); ++i)
        dst[i] = bf16 ? FloatToBf16Bits(tmp[i]) : FloatToHalfBits(tmp[i]);
      return Status::Ok();
    }
    case ir::DType::kC64:
    case ir::DType::kC128:
      if (p.k == 0) {
        std::memset(result.data(), 0, result.byte_size());
        return Status::Ok();
      }
      if (p.acc_dtype == ir::DType::kC64) {
        return RunBlasDot<std::complex<float>>(op, p, lhs, rhs,
                                               result.data_as<std::complex<float>>());
      }
      return RunBlasDot<std::complex<double>>(op, p, lhs, rhs,
                                              result.data_as<std::complex<double>>());
    case ir::DType::kPred:
      return RunLoopDot<uint8_t, true>(op, p, lhs, rhs, result.data_as<uint8_t>());
    default:
      return DispatchInt(op, p.acc_dtype, [&]<typename T>() -> Status {
        return RunLoopDot<T, false>(op, p, lhs, rhs, result.data_as<T>());
      });
  }
}

Kernel MakeDotKernel(std::string name, std::shared_ptr<const DotPlan> plan,
                     std::vector<int64_t> lhs_dims, std::vector<int64_t> rhs_dims) {
  return [name, plan, lhs_dims, rhs_dims](ExecContext&, std::span<const View> in,
                                          std::span<const View> out) -> Status {
    if (in.size() < 2 || !in[0].Is(plan->lhs_dtype, lhs_dims) ||
        !in[1].Is(plan->rhs_dtype, rhs_dims)) {
      return Internal(name + ": inputs do not match the lowered types");
    }
    const View& result = out[0];
    KILN_RETURN_IF_ERROR(RunDot(name, *plan, in[0], in[1], result));
    return Status::Ok();
  };
}

StatusOr<Kernel> LowerDotGeneral(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return OpError(op, "expects two operands and one result");
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_batch,
                        OptionalInts(op, "lhs_batching_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_batch,
                        OptionalInts(op, "rhs_batching_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> lhs_contract,
                        OptionalInts(op, "lhs_contracting_dimensions"));
  KILN_ASSIGN_OR_RETURN(std::vector<int64_t> rhs_contract,
                        OptionalInts(op, "rhs_contracting_dimensions"));
  // precision_config and the dot algorithm attributes only permit cheaper arithmetic; Kiln always
  // computes at the accumulation type's full precision.
  const ir::Type& lhs = ctx.operand_type(0);
  const ir::Type& rhs = ctx.operand_type(1);
  KILN_ASSIGN_OR_RETURN(
      std::shared_ptr<const DotPlan> plan,
      PlanDot(op, lhs, rhs, ctx.result_type(0), lhs_batch, rhs_batch, lhs_contract, rhs_contract));
  return MakeDotKernel(op.name, std::move(plan), lhs.dims, rhs.dims);
}

// The legacy stablehlo.dot: vector/matrix operands contracting lhs's last axis with rhs's first.
StatusOr<Kernel> LowerDot(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return OpError(op, "expects two operands and one result");
  const ir::Type& lhs = ctx.operand_type(0);
  const ir::Type& rhs = ctx.operand_type(1);
  if (!lhs.is_tensor() || !rhs.is_tensor() || lhs.rank() < 1 || lhs.rank() > 2 || rhs.rank() < 1 ||
      rhs.rank() > 2) {
    return OpError(op, "operands must be vectors or matrices");
  }
  KILN_ASSIGN_OR_RETURN(std::shared_ptr<const DotPlan> plan,
                        PlanDot(op, lhs, rhs, ctx.result_type(0), {}, {}, {lhs.rank() - 1}, {0}));
  return MakeDotKernel(op.name, std::move(plan), lhs.dims, rhs.dims);
}

// ---------------------------------------------------------------------------------------------
// stablehlo.cholesky and stablehlo.triangular_solve (f32 / f64, batched over leading dims), via
// LAPACK potrf and BLAS trsm. Kiln's arrays are row-major, so a row-major lower factor is
// LAPACK's column-major upper one and vice versa.

extern "C" {
// LAPACK (Fortran ABI, as exported by OpenBLAS); the trailing length belongs to the `uplo` string.
void spotrf_(const char* uplo, const blasint* n, float* a, const blasint* lda, blasint* info,
             size_t uplo_len);
void dpotrf_(const char* uplo, const blasint* n, double* a, const blasint* lda, blasint* info,
             size_t uplo_len);
}

template <typename T>
blasint Potrf(char uplo, blasint n, T* a) {
  blasint info = 0;
  if constexpr (std::is_same_v<T, float>) {
    spotrf_(&uplo, &n, a, &n, &info, 1);
  } else {
    dpotrf_(&uplo, &n, a, &n, &info, 1);
  }
  return info;
}

// Batch count and matrix size of a [..., N, N]-style operand; checks that N fits BLAS integers.
struct MatrixBatch {
  int64_t batch = 1, rows = 0, cols = 0;
};

StatusOr<MatrixBatch> BatchOf(const ir::Op& op, const ir::Type& t, std::string_view what) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, t, what));
  if (t.rank() < 2)
    return OpError(op, std::string(what) + " must have rank >= 2, got " + t.ToString());
  if (t.dtype != ir::DType::kF32 && t.dtype != ir::DType::kF64) {
    return Unimplemented(op.name + ": element type " + std::string(ir::DTypeName(t.dtype)) +
                         " is not supported");
  }
  MatrixBatch m;
  m.rows = t.dims[t.dims.size() - 2];
  m.cols = t.dims.back();
  m.batch = Product(std::span<const int64_t>(t.dims).first(t.dims.size() - 2));
  if (m.rows > std::numeric_limits<int>::max() || m.cols > std::numeric_limits<int>::max()) {
    return Unimplemented(op.name + ": matrix dimensions exceed the BLAS integer range");
  }
  return m;
}

StatusOr<Kernel> LowerCholesky(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 1 || op.results.size() != 1)
    return OpError(op, "expects one operand and one result");
  const ir::Type& a = ctx.operand_type(0);
  KILN_ASSIGN_OR_RETURN(MatrixBatch m, BatchOf(op, a, "operand"));
  if (m.rows != m.cols)
    return OpError(op, "operand must be a batch of square matrices, got " + a.ToString());
  if (ctx.result_type(0) != a) return OpError(op, "result must be " + a.ToString());
  KILN_ASSIGN_OR_RETURN(bool lower, OptionalBool(op, "lower", false));
  std::string name = op.name;
  ir::Type type = a;
  return Kernel([name, type, m, lower](ExecContext&, std::span<const View> in,
                                       std::span<const View> out) -> Status {
    if (in.empty() || in[0].dtype != type.dtype || !runtime::SameDims(in[0].dims, type.dims)) {
      return Internal(name + ": input does not match the lowered type");
    }
    const View& result = out[0];
    if (result.byte_size() > 0) std::memcpy(result.data(), in[0].data(), result.byte_size());
    int64_t n = m.rows;
    KILN_RETURN_IF_ERROR(DispatchFloat(name, type.dtype, [&]<typename T>() -> Status {
      T* base = result.data_as<T>();
      for (int64_t b = 0; b < m.batch && n > 0; ++b) {
        T* a = base + b * n * n;
        // Row-major lower == column-major upper.
        blasint info = Potrf<T>(lower ? 'U' : 'L', static_cast<blasint>(n), a);
        for (int64_t i = 0; i < n; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            bool other_triangle = lower ? j > i : j < i;
            if (info != 0) {
              a[i * n + j] = std::numeric_limits<T>::quiet_NaN();  // not positive definite
            } else if (other_triangle) {
              a[i * n + j] = T(0);
            }
          }
        }
      }
      return Status::Ok();
    }));
    return Status::Ok();
  });
}

StatusOr<Kernel> LowerTriangularSolve(LowerContext& ctx) {
  const ir::Op& op = ctx.op();
  if (op.operands.size() != 2 || op.results.size() != 1)
    return OpError(op, "expects operands a, b and one result");
  const ir::Type& a = ctx.operand_type(0);
  const ir::Type& b = ctx.operand_type(1);
  KILN_ASSIGN_OR_RETURN(MatrixBatch ma, BatchOf(op, a, "a"));
  KILN_ASSIGN_OR_RETURN(MatrixBatch mb, BatchOf(op, b, "b"));
  KILN_ASSIGN_OR_RETURN(bool left, OptionalBool(op, "left_side", false));
  KILN_ASSIGN_OR_RETURN(bool lower, OptionalBool(op, "lower", false));
  KILN_ASSIGN_OR_RETURN(bool unit, OptionalBool(op, "unit_diagonal", false));
  const ir::Attr* transpose_attr = FindAttr(op, "transpose_a");
  std::string transpose = transpose_attr == nullptr ? "NO_TRANSPOSE" : transpose_attr->str;
  if (transpose != "NO_TRANSPOSE" && transpose != "TRANSPOSE" && transpose != "ADJOINT") {
    return OpError(op, "unknown transpose_a '" + transpose + "'");
  }
  bool batch_match = a.rank() == b.rank() &&
                     std::equal(a.dims.begin(), a.dims.end() - 2, b.dims.begin(), b.dims.end() - 2);
  if (a.dtype != b.dtype || !batch_match || ma.rows != ma.cols ||
      ma.rows != (left ? mb.rows : mb.cols)) {
    return OpError(op, "a " + a.ToString() + " and b " + b.ToString() + " do not match");
  }
  if (ctx.result_type(0) != b) return OpError(op, "result must be " + b.ToString());
  std::string name = op.name;
  ir::Type a_type = a, b_type = b;
  bool trans = transpose != "NO_TRANSPOSE";  // ADJOINT is TRANSPOSE for real types
  return Kernel([=](ExecContext&, std::span<const View> in, std::span<const View> out) -> Status {
    if (in.size() < 2 || in[0].dtype != a_type.dtype ||
        !runtime::SameDims(in[0].dims, a_type.dims) || in[1].dtype != b_type.dtype ||
        !runtime::SameDims(in[1].dims, b_type.dims)) {
      return Internal(name + ": inputs do not match the lowered types");
    }
    const View& result = out[0];
    if (result.byte_size() == 0) {
      return Status::Ok();
    }
    std::memcpy(result.data(), in[1].data(), result.byte_size());
    int64_t n = ma.rows, rows = mb.rows, cols = mb.cols;
    auto side = left ? CblasLeft : CblasRight;
    auto uplo = lower ? CblasLower : CblasUpper;
    auto ta = trans ? CblasTrans : CblasNoTrans;
    auto diag = unit ? CblasUnit : CblasNonUnit;
    KILN_RETURN_IF_ERROR(DispatchFloat(name, b_type.dtype, [&]<typename T>() -> Status {
      const T* as = in[0].data_as<const T>();
      T* xs = result.data_as<T>();
      for (int64_t i = 0; i < ma.batch; ++i) {
        const T* am = as + i * n * n;
        T* xm = xs + i * rows * cols;
        if constexpr (std::is_same_v<T, float>) {
          cblas_strsm(CblasRowMajor, side, uplo, ta, diag, static_cast<int>(rows),
                      static_cast<int>(cols), 1.0f, am, static_cast<int>(std::max<int64_t>(n, 1)),
                      xm, static_cast<int>(std::max<int64_t>(cols, 1)));
        } else {
          cblas_dtrsm(CblasRowMajor, side, uplo, ta, diag, static_cast<int>(rows),
                      static_cast<int>(cols), 1.0, am, static_cast<int>(std::max<int64_t>(n, 1)),
                      xm, static_cast<int>(std::max<int64_t>(cols, 1)));
        }
      }
      return Status::Ok();
    }));
    return Status::Ok();
  });
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::compiler {

void RegisterLinalgOps(OpRegistry& registry) {
  registry.Add({"stablehlo.dot_general", "linalg", &kernels::LowerDotGeneral});
  registry.Add({"stablehlo.dot", "linalg", &kernels::LowerDot});
  registry.Add({"stablehlo.cholesky", "linalg", &kernels::LowerCholesky});
  registry.Add({"stablehlo.triangular_solve", "linalg", &kernels::LowerTriangularSolve});
}

}  // namespace kiln::compiler
