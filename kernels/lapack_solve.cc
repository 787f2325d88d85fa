// Solves: lapack_<x>trsm_ffi (triangular, BLAS), lapack_<x>gtsv_ffi (tridiagonal, LAPACK) and
// tridiagonal_solve_perturbed_ffi (tridiagonal with tiny pivots perturbed, for inverse iteration:
// lax.linalg.tridiagonal_solve(perturb_singular=True)), x = s, d, c, z. As jaxlib's CPU kernels
// define them (see kernels/lapack.h):
//   trsm (a, b; side, uplo, trans_x, diag) -> x            op(a) x = b (side 'L') or x op(a) = b
//   gtsv (dl, d, du, b) -> (dl_out, d_out, du_out, x, info) dl[0] and du[n - 1] are not referenced;
//        the diagonals come back as LAPACK leaves them (the factorization)
//   tridiagonal_solve_perturbed (dl, d, du, b) -> x
// trsm needs no transposition: BLAS takes row-major matrices; real triangles of order up to 8 are
// solved by SmallTrsm (kernels/lapack_small.h) instead of one BLAS call each. A large solve whose
// batch gives the pool too few tasks is split over its independent side (b's columns for side 'L',
// rows for 'R'), one BLAS call per block: each of them is solved by the same operations as in one
// call (kernels_lapack_trsm_split_test). The perturbed solve works on rows, which row-major storage
// keeps contiguous.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "kernels/lapack.h"
#include "kernels/lapack_small.h"
#include "runtime/parallel.h"

namespace kiln::kernels::lapack {
namespace {

using lower::Kernel;
using lower::LowerContext;
using runtime::View;

// ---- trsm ----

struct TrsmPlan {
  Call call;
  char side = 'L', uplo = 'L', trans = 'N', diag = 'N';
  int m = 0, n = 0, order = 0;  // b is m x n; a is order x order
  int blocks = 1;               // > 1: each matrix's independent side split into this many blocks
  int block = 0;                // columns (side 'L') or rows (side 'R') per block
};

// Splits each solve over the pool when the batch is not split (one matrix, or too little work per
// matrix to share out): each block of b's independent side (at least kMinBlockFlops of work, a
// multiple of 8 wide) is one BLAS call.
void PlanTrsmBlocks(TrsmPlan& plan) {
  constexpr double kMinBlockFlops = 1e6;
  const int threads = runtime::NumWorkerThreads();
  if (threads <= 1 || plan.call.split.tasks > 1 || plan.order <= kSmallOrder) return;
  const int side = plan.side == 'L' ? plan.n : plan.m;
  const double flops_per_line = static_cast<double>(plan.order) * plan.order;
  const int64_t by_work = static_cast<int64_t>(side * flops_per_line / kMinBlockFlops);
  const int64_t blocks = std::min<int64_t>({int64_t{threads}, by_work, int64_t{side / 8}});
  if (blocks <= 1) return;
  const int block = static_cast<int>(((side + blocks - 1) / blocks + 7) / 8 * 8);
  plan.block = block;
  plan.blocks = (side + block - 1) / block;
}

// One matrix's solve, its blocks over the pool: block t of b (columns for side 'L', rows for
// 'R') copied into x, scaled by alpha, solved in place by one BLAS call.
template <typename T>
void SolveBlocks(const TrsmPlan& p, const T* a, const T* b, T alpha, T* x) {
  const bool left = p.side == 'L';
  const int side = left ? p.n : p.m;
  runtime::ParallelFor(p.blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      const int lo = static_cast<int>(t) * p.block;
      const int hi = std::min(side, lo + p.block);
      if (lo >= hi) continue;
      const int64_t rows = left ? p.m : hi - lo;
      const int64_t cols = left ? hi - lo : p.n;
      const int64_t origin = left ? lo : int64_t{lo} * p.n;
      for (int64_t i = 0; i < rows; ++i) {
        const T* from = b + origin + i * p.n;
        T* to = x + origin + i * p.n;
        std::copy(from, from + cols, to);
        if (alpha != T(1)) {
          for (int64_t j = 0; j < cols; ++j) to[j] *= alpha;
        }
      }
      trsm_row_major(p.side, p.uplo, p.trans, p.diag, static_cast<int>(rows),
                     static_cast<int>(cols), a, std::max(1, p.order), x + origin, std::max(1, p.n));
    }
  });
}

StatusOr<Kernel> LowerTrsm(LowerContext& ctx) {
  // jaxlib < 0.5.3 passes a third operand, the scalar alpha: x = alpha op(a)^-1 b.
  const bool has_alpha = ctx.op().operands.size() == 3;
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, has_alpha ? 3 : 2, 1));
  if (has_alpha && (call.in[2].dtype != call.dtype || !call.in[2].dims.empty())) {
    return CallError("alpha (operand #2) must be a scalar of the matrices' type");
  }
  auto plan = std::make_shared<TrsmPlan>();
  KILN_ASSIGN_OR_RETURN(plan->side, CharAttr(ctx, "side", "LR"));
  KILN_ASSIGN_OR_RETURN(plan->uplo, CharAttr(ctx, "uplo", "LU"));
  KILN_ASSIGN_OR_RETURN(plan->trans, CharAttr(ctx, "trans_x", "NTC"));
  KILN_ASSIGN_OR_RETURN(plan->diag, CharAttr(ctx, "diag", "NU"));
  KILN_ASSIGN_OR_RETURN(auto b_shape, MatrixShape(call, 1));
  KILN_RETURN_IF_ERROR(MatrixShape(call, 0).status());
  const auto m = std::get<0>(b_shape);
  const auto n = std::get<1>(b_shape);
  const int order = plan->side == 'L' ? m : n;
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {order, order}));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 1, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {m, n}));
  plan->m = m;
  plan->n = n;
  plan->order = order;
  const double flops = (ir::IsComplex(call.dtype) ? 4.0 : 1.0) * m * n * order;
  PlanScratch(call, flops, SlotLayout());
  plan->call = std::move(call);
  PlanTrsmBlocks(*plan);
  return MakeKernel(std::shared_ptr<const TrsmPlan>(plan),
                    []<typename T>(const TrsmPlan& p, std::byte* scratch, std::span<const View> in,
                                   std::span<const View> out) {
                      const int64_t a_size = int64_t{p.order} * p.order,
                                    b_size = int64_t{p.m} * p.n;
                      const T* a = in[0].data_as<const T>();
                      const T* b_in = in[1].data_as<const T>();
                      T* x = out[0].data_as<T>();
                      const T alpha = in.size() == 3 ? *in[2].data_as<const T>() : T(1);
                      if (b_size == 0) return;
                      if (p.blocks > 1) {
                        for (int64_t b = 0; b < p.call.batch; ++b) {
                          SolveBlocks(p, a + b * a_size, b_in + b * b_size, alpha, x + b * b_size);
                        }
                        return;
                      }
                      ForEachTask(p.call, scratch, [&](std::byte*, int64_t begin, int64_t end) {
                        std::copy(b_in + begin * b_size, b_in + end * b_size, x + begin * b_size);
                        if (alpha != T(1)) {  // BLAS scales b by alpha before solving, as here
                          for (int64_t i = begin * b_size; i < end * b_size; ++i) x[i] *= alpha;
                        }
                        if constexpr (std::is_floating_point_v<T>) {
                          if (p.order <= kSmallOrder) {
                            for (int64_t b = begin; b < end; ++b) {
                              SmallTrsm(p.side, p.uplo, p.trans, p.diag, p.m, p.n, a + b * a_size,
                                        x + b * b_size);
                            }
                            return;
                          }
                        }
                        for (int64_t b = begin; b < end; ++b) {
                          trsm_row_major(p.side, p.uplo, p.trans, p.diag, p.m, p.n, a + b * a_size,
                                         std::max(1, p.order), x + b * b_size, std::max(1, p.n));
                        }
                      });
                    });
}

// ---- gtsv and the perturbed tridiagonal solve: (dl, d, du, b) ----

struct TridiagonalPlan {
  Call call;
  bool perturbed = false;
  int n = 0, nrhs = 0;
  size_t b = 0, u = 0, row = 0;
};

// pivot may be too small for `row` / pivot (row: the right-hand sides' row it divides): perturbs it
// away from zero by `perturb` (doubling) or scales it and the row up until the division cannot
// overflow, as LAPACK's xLAGTS does. Leaves pivots of magnitude >= 1 alone.
template <typename T>
void AdjustPivot(Real<T> perturb, T& pivot, T* row, int count) {
  using R = Real<T>;
  const R one(1);
  const R tiny = std::numeric_limits<R>::min();
  const R small = one / std::numeric_limits<R>::max();
  const R safe_min = small < tiny ? tiny : small * (one + std::numeric_limits<R>::epsilon());
  const R big = one / safe_min;
  R size = std::abs(pivot);
  if (!(size < one)) return;
  perturb = std::copysign(std::max(std::abs(perturb), safe_min), std::real(pivot));
  R row_max(0);
  for (int j = 0; j < count; ++j) row_max = std::max(row_max, R(std::abs(row[j])));
  while (size < one) {
    if (size < safe_min) {
      if (size == R(0) || row_max * safe_min > size) {
        pivot += perturb;
        perturb *= R(2);
      } else {
        pivot *= big;
        for (int j = 0; j < count; ++j) row[j] *= big;
        return;
      }
    } else if (row_max > size * big) {
      pivot += perturb;
      perturb *= R(2);
    } else {
      return;
    }
    size = std::abs(pivot);
  }
}

// Solves the n x n tridiagonal system (sub-diagonal dl[1..n), diagonal d, super-diagonal
// du[0..n-1)) for the row-major n x nrhs right-hand sides `rhs`, into `x`: Gaussian elimination
// with partial (row) pivoting, the forward pass applied to the right-hand sides as it goes, then
// back substitution through U (which has up to two super-diagonals), perturbing tiny pivots
// (AdjustPivot by eps * max |U|) instead of dividing by them. u: 3n scratch, row: nrhs scratch.
template <typename T>
void SolvePerturbed(int n, int nrhs, const T* dl, const T* d, const T* du, const T* rhs, T* x, T* u,
                    T* row) {
  using R = Real<T>;
  const R eps = std::numeric_limits<R>::epsilon();
  auto x_row = [&](int i) { return x + int64_t{i} * nrhs; };
  auto rhs_row = [&](int i) { return rhs + int64_t{i} * nrhs; };
  if (n == 0 || nrhs == 0) return;
  if (n == 1) {
    T p = d[0];
    std::copy(rhs_row(0), rhs_row(0) + nrhs, row);
    AdjustPivot<T>(eps * std::abs(p), p, row, nrhs);
    for (int j = 0; j < nrhs; ++j) x[j] = row[j] / p;
    return;
  }
  // U's diagonal, first and second super-diagonal.
  T* u0 = u;
  T* u1 = u + n;
  T* u2 = u + 2 * int64_t{n};
  std::fill(u, u + 3 * int64_t{n}, T(0));
  u0[0] = d[0];
  u1[0] = du[0];
  R u_max = std::max(std::abs(u0[0]), std::abs(u1[0]));
  R scale = std::abs(u0[0]) + std::abs(u1[0]);  // of the row that holds pivot k
  std::copy(rhs_row(0), rhs_row(0) + nrhs, x_row(0));
  for (int k = 0; k + 1 < n; ++k) {
    const bool last = k + 2 == n;
    u0[k + 1] = d[k + 1];
    R next_scale = std::abs(dl[k + 1]) + std::abs(u0[k + 1]);
    if (!last) next_scale += std::abs(du[k + 1]);
    T* xk = x_row(k);
    T* xk1 = x_row(k + 1);
    const T* bk1 = rhs_row(k + 1);
    if (dl[k + 1] == T(0)) {  // nothing to eliminate in row k + 1
      scale = next_scale;
      u1[k + 1] = last ? T(0) : du[k + 1];
      std::copy(bk1, bk1 + nrhs, xk1);
    } else {
      const R piv_k = u0[k] == T(0) ? R(0) : std::abs(u0[k]) / scale;
      const R piv_k1 = std::abs(dl[k + 1]) / next_scale;
      if (piv_k1 <= piv_k) {  // eliminate with row k as the pivot row
        scale = next_scale;
        const T f = dl[k + 1] / u0[k];
        u0[k + 1] -= f * u1[k];
        u1[k + 1] = last ? T(0) : du[k + 1];
        for (int j = 0; j < nrhs; ++j) xk1[j] = bk1[j] - f * xk[j];
      } else {  // swap rows k and k + 1
        const T f = u0[k] / dl[k + 1];
        const T old_u1 = u1[k];
        u0[k] = dl[k + 1];
        u0[k + 1] = old_u1 - f * d[k + 1];
        u1[k] = d[k + 1];
        if (!last) {
          u2[k] = du[k + 1];
          u1[k + 1] = -f * du[k + 1];
        }
        for (int j = 0; j < nrhs; ++j) {
          const T pivot_row = xk[j];
          xk1[j] = pivot_row - f * bk1[j];
          xk[j] = bk1[j];
        }
        scale = std::abs(u0[k + 1]) + std::abs(u1[k + 1]);
      }
    }
    if (!last) {
      u_max = std::max({u_max, R(std::abs(u0[k])), R(std::abs(u1[k])), R(std::abs(u2[k]))});
    }
  }
  u_max = std::max(u_max, R(std::abs(u0[n - 1])));
  const R perturb = eps * u_max;
  for (int k = n - 1; k >= 0; --k) {
    T* xk = x_row(k);
    for (int j = 0; j < nrhs; ++j) {
      T v = xk[j];
      if (k + 1 < n) v -= u1[k] * x_row(k + 1)[j];
      if (k + 2 < n) v -= u2[k] * x_row(k + 2)[j];
      row[j] = v;
    }
    T p = u0[k];
    AdjustPivot<T>(perturb, p, row, nrhs);
    const T inverse = T(1) / p;
    for (int j = 0; j < nrhs; ++j) xk[j] = row[j] * inverse;
  }
}

StatusOr<Kernel> LowerTridiagonal(LowerContext& ctx, bool perturbed) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 4, perturbed ? 1 : 5, /*matrix_operand=*/3));
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 3));
  const auto n = std::get<0>(shape);
  const auto nrhs = std::get<1>(shape);
  for (size_t i = 0; i < 3; ++i) KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, i, call.dtype, {n}));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 3, call.dtype, {n, nrhs}));
  if (perturbed) {
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {n, nrhs}));
  } else {
    for (size_t i = 0; i < 3; ++i)
      KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, i, call.dtype, {n}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 3, call.dtype, {n, nrhs}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 4, ir::DType::kS32, {}));
  }
  auto plan = std::make_shared<TridiagonalPlan>();
  plan->perturbed = perturbed;
  plan->n = n;
  plan->nrhs = nrhs;
  SlotLayout slot;
  plan->b = slot.Elements(call, perturbed ? 1 : int64_t{n} * nrhs);
  plan->u = slot.Elements(call, perturbed ? 3 * int64_t{n} : 1);
  plan->row = slot.Elements(call, perturbed ? nrhs : 1);
  PlanScratch(call, (ir::IsComplex(call.dtype) ? 4.0 : 1.0) * 8.0 * n * std::max(nrhs, 1), slot);
  plan->call = std::move(call);
  return MakeKernel(
      std::shared_ptr<const TridiagonalPlan>(plan),
      []<typename T>(const TridiagonalPlan& p, std::byte* scratch, std::span<const View> in,
                     std::span<const View> out) {
        const int n = p.n, nrhs = p.nrhs, ldb = std::max(1, n);
        const int64_t b_size = int64_t{n} * nrhs;
        const T* dl = in[0].data_as<const T>();
        const T* d = in[1].data_as<const T>();
        const T* du = in[2].data_as<const T>();
        const T* b_in = in[3].data_as<const T>();
        if (p.perturbed) {
          T* x = out[0].data_as<T>();
          ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
            for (int64_t b = begin; b < end; ++b) {
              SolvePerturbed(n, nrhs, dl + b * n, d + b * n, du + b * n, b_in + b * b_size,
                             x + b * b_size, InSlot<T>(slot, p.u), InSlot<T>(slot, p.row));
            }
          });
          return;
        }
        T* dl_out = out[0].data_as<T>();
        T* d_out = out[1].data_as<T>();
        T* du_out = out[2].data_as<T>();
        T* x = out[3].data_as<T>();
        int* info = out[4].data_as<int>();
        ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
          std::copy(dl + begin * n, dl + end * n, dl_out + begin * n);
          std::copy(d + begin * n, d + end * n, d_out + begin * n);
          std::copy(du + begin * n, du + end * n, du_out + begin * n);
          T* wb = InSlot<T>(slot, p.b);
          for (int64_t b = begin; b < end; ++b) {
            info[b] = 0;
            if (n == 0) continue;
            ToColumnMajor(b_in + b * b_size, n, nrhs, wb, ldb);
            gtsv(n, nrhs, dl_out + b * n + 1, d_out + b * n, du_out + b * n, wb, ldb, &info[b]);
            FromColumnMajor(wb, ldb, n, nrhs, x + b * b_size);
          }
        });
      });
}

StatusOr<Kernel> LowerGtsv(LowerContext& ctx) { return LowerTridiagonal(ctx, false); }
StatusOr<Kernel> LowerPerturbed(LowerContext& ctx) { return LowerTridiagonal(ctx, true); }

}  // namespace

void RegisterLapackSolveTargets(lower::OpRegistry& registry) {
  KILN_LAPACK_TARGETS(registry, "trsm", "trsm", &LowerTrsm);
  KILN_LAPACK_TARGETS(registry, "gtsv", "gtsv", &LowerGtsv);
  registry.AddCustomCall({"tridiagonal_solve_perturbed_ffi", "linalg", &LowerPerturbed});
}

}  // namespace kiln::kernels::lapack
