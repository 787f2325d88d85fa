// Singular value decomposition: lapack_<x>gesdd_ffi (divide and conquer, JAX's default) and
// lapack_<x>gesvd_ffi (QR iteration, SvdAlgorithm.QR), x = s, d, c, z. As jaxlib's CPU kernels
// define them (see kernels/lapack.h):
//   (a[m, n]; mode) -> (a_out, s[k] (real, descending), u, vt, info), k = min(m, n)
//   mode 'A': u[m, m], vt[n, n];  'S': u[m, k], vt[k, n];  'N': singular values only (u and vt keep
//   either shape and are zeros). Mode 'O' (overwrite a) is refused, as jaxlib does.
// a_out is what LAPACK leaves of a (JAX ignores it).
#include <memory>

#include "kernels/lapack.h"

namespace kiln::kernels::lapack {
namespace {

using lower::Kernel;
using lower::LowerContext;
using runtime::View;

struct SvdPlan {
  Call call;
  bool divide_and_conquer = true;  // gesdd, else gesvd
  char mode = 'A';
  int m = 0, n = 0, ucols = 0, vtrows = 0, lwork = 1;
  size_t a = 0, u = 0, vt = 0, work = 0, rwork = 0, iwork = 0;
};

// The real workspace of the complex routines (LAPACK's documented minimum, the larger of its
// formulas across LAPACK versions).
int64_t RealWorkspace(bool divide_and_conquer, char mode, int64_t m, int64_t n) {
  const int64_t k = std::min(m, n), mx = std::max(m, n);
  if (!divide_and_conquer) return 5 * k;
  if (mode == 'N') return 7 * k;
  return std::max(5 * k * k + 5 * k, k * std::max(5 * k + 7, 2 * mx + 2 * k + 1));
}

StatusOr<Kernel> LowerSvd(LowerContext& ctx, bool divide_and_conquer) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, 5));
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 0));
  const auto m = std::get<0>(shape);
  const auto n = std::get<1>(shape);
  const int k = std::min(m, n);
  auto plan = std::make_shared<SvdPlan>();
  plan->divide_and_conquer = divide_and_conquer;
  KILN_ASSIGN_OR_RETURN(plan->mode, CharAttr(ctx, "mode", "ASNO"));
  if (plan->mode == 'O') {
    return Unimplemented("mode 'O' (overwriting the operand) is not supported");
  }
  // u and vt: fixed by the mode, except that 'N' computes neither and accepts either shape.
  auto last_two = [&](size_t result) -> std::pair<int64_t, int64_t> {
    const std::vector<int64_t>& d = call.out[result].dims;
    if (d.size() < 2) return {-1, -1};
    return {d[d.size() - 2], d.back()};
  };
  int64_t ucols = plan->mode == 'A' ? m : k, vtrows = plan->mode == 'A' ? n : k;
  if (plan->mode == 'N') {
    if (last_two(2).second == m) ucols = m;
    if (last_two(3).first == n) vtrows = n;
  }
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, call.real, {k}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 2, call.dtype, {m, ucols}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 3, call.dtype, {vtrows, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 4, ir::DType::kS32, {}));
  if (int64_t{m} * ucols > INT_MAX || vtrows * int64_t{n} > INT_MAX) {
    return Unimplemented("the singular vectors exceed LAPACK's 32-bit indexing");
  }
  plan->m = m;
  plan->n = n;
  plan->ucols = static_cast<int>(ucols);
  plan->vtrows = static_cast<int>(vtrows);
  const bool vectors = plan->mode != 'N';
  const int lda = std::max(1, m), ldu = std::max(1, m), ldvt = std::max(1, plan->vtrows);
  const int64_t lrwork = RealWorkspace(divide_and_conquer, plan->mode, m, n);
  KILN_ASSIGN_OR_RETURN(
      plan->lwork,
      Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
        T query{}, a1{}, u1{}, vt1{};
        Real<T> s1{}, rwork1{};
        int iwork1 = 0, info = 0;
        if (divide_and_conquer) {
          gesdd(plan->mode, m, n, &a1, lda, &s1, &u1, ldu, &vt1, ldvt, &query, -1, &rwork1, &iwork1,
                &info);
        } else {
          gesvd(plan->mode, m, n, &a1, lda, &s1, &u1, ldu, &vt1, ldvt, &query, -1, &rwork1, &info);
        }
        return WorkSize(query);
      }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{m} * n);
  plan->u = slot.Elements(call, vectors ? int64_t{m} * ucols : 1);
  plan->vt = slot.Elements(call, vectors ? vtrows * n : 1);
  plan->work = slot.Elements(call, plan->lwork);
  plan->rwork = slot.Reals(call, ir::IsComplex(call.dtype) ? lrwork : 1);
  plan->iwork = slot.Ints(8 * int64_t{k});
  const double flops = (ir::IsComplex(call.dtype) ? 4.0 : 1.0) * 10.0 * m * n * k;
  PlanScratch(call, flops, slot);
  plan->call = std::move(call);
  return MakeKernel(std::shared_ptr<const SvdPlan>(plan), []<typename T>(
                                                              const SvdPlan& p, std::byte* scratch,
                                                              std::span<const View> in,
                                                              std::span<const View> out) {
    const int m = p.m, n = p.n, k = std::min(m, n);
    const int lda = std::max(1, m), ldu = std::max(1, m), ldvt = std::max(1, p.vtrows);
    const int64_t size = int64_t{m} * n, usize = int64_t{m} * p.ucols,
                  vtsize = int64_t{p.vtrows} * n;
    const T* a = in[0].data_as<const T>();
    T* a_out = out[0].data_as<T>();
    Real<T>* s = out[1].data_as<Real<T>>();
    T* u_out = out[2].data_as<T>();
    T* vt_out = out[3].data_as<T>();
    int* info = out[4].data_as<int>();
    ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
      T* wa = InSlot<T>(slot, p.a);
      T* u = InSlot<T>(slot, p.u);
      T* vt = InSlot<T>(slot, p.vt);
      T* work = InSlot<T>(slot, p.work);
      Real<T>* rwork = InSlot<Real<T>>(slot, p.rwork);
      for (int64_t b = begin; b < end; ++b) {
        ToColumnMajor(a + b * size, m, n, wa, lda);
        if (p.divide_and_conquer) {
          gesdd(p.mode, m, n, wa, lda, s + b * k, u, ldu, vt, ldvt, work, p.lwork, rwork,
                InSlot<int>(slot, p.iwork), &info[b]);
        } else {
          gesvd(p.mode, m, n, wa, lda, s + b * k, u, ldu, vt, ldvt, work, p.lwork, rwork, &info[b]);
        }
        FromColumnMajor(wa, lda, m, n, a_out + b * size);
        if (p.mode == 'N') {
          std::fill(u_out + b * usize, u_out + (b + 1) * usize, T(0));
          std::fill(vt_out + b * vtsize, vt_out + (b + 1) * vtsize, T(0));
        } else {
          FromColumnMajor(u, ldu, m, p.ucols, u_out + b * usize);
          FromColumnMajor(vt, ldvt, p.vtrows, n, vt_out + b * vtsize);
        }
      }
    });
  });
}

StatusOr<Kernel> LowerGesdd(LowerContext& ctx) { return LowerSvd(ctx, true); }
StatusOr<Kernel> LowerGesvd(LowerContext& ctx) { return LowerSvd(ctx, false); }

}  // namespace

void RegisterLapackSvdTargets(lower::OpRegistry& registry) {
  KILN_LAPACK_TARGETS(registry, "gesdd", "gesdd", &LowerGesdd);
  KILN_LAPACK_TARGETS(registry, "gesvd", "gesvd", &LowerGesvd);
}

}  // namespace kiln::kernels::lapack
