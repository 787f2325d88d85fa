// Factorizations: lapack_<x>potrf_ffi (Cholesky), getrf (LU), geqrf (QR), geqp3 (QR with column
// pivoting), orgqr / ungqr (Q from reflectors) and ormqr / unmqr (applying Q), x = s, d, c, z.
// Operands, results and attributes as jaxlib's CPU kernels define them (see kernels/lapack.h):
//   potrf (a; uplo)                -> (a_out, info)  the `uplo` triangle factored, the other kept
//   getrf (a)                      -> (a_out, ipiv, info)  ipiv: min(m, n) 1-based row swaps
//   geqrf (a)                      -> (a_out, tau)  R above, reflectors below the diagonal
//   geqp3 (a, jpvt)                -> (a_out, jpvt_out, tau)  jpvt 1-based; a column whose
//                                     entry is nonzero on entry leads (LAPACK's rule)
//   orgqr (a[m, n], tau[k])        -> q[m, n]  m >= n >= k
//   ormqr (a, tau[k], c; left, transpose) -> c_out  op(Q) c or c op(Q), op = ^T / ^H if transpose
// Real matrices of order up to 8 are LU-factored by SmallGetrf and Cholesky-factored by SmallPotrf
// (kernels/lapack_small.h) instead of one LAPACK call each.
#include <algorithm>
#include <memory>
#include <type_traits>

#include "kernels/lapack.h"
#include "kernels/lapack_small.h"

namespace kiln::kernels::lapack {
namespace {

using lower::Kernel;
using lower::LowerContext;
using runtime::View;

constexpr ir::DType kI32 = ir::DType::kS32;
static_assert(sizeof(int) == sizeof(int32_t), "LAPACK's LP64 INTEGER is JAX's int32");

double ComplexFactor(const Call& call) { return ir::IsComplex(call.dtype) ? 4.0 : 1.0; }

// ---- potrf ----

struct PotrfPlan {
  Call call;
  char uplo = 'L';
  int n = 0;
  size_t a = 0;  // slot offsets
};

StatusOr<Kernel> LowerPotrf(LowerContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, 2));
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 0));
  const auto m = std::get<0>(shape);
  const auto n = std::get<1>(shape);
  if (m != n) return CallError("needs square matrices");
  auto plan = std::make_shared<PotrfPlan>();
  KILN_ASSIGN_OR_RETURN(plan->uplo, CharAttr(ctx, "uplo", "LU"));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, kI32, {}));
  plan->n = n;
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{n} * n);
  PlanScratch(call, ComplexFactor(call) * n * n * n / 3.0, slot);
  plan->call = std::move(call);
  return MakeKernel(std::shared_ptr<const PotrfPlan>(plan),
                    []<typename T>(const PotrfPlan& p, std::byte* scratch, std::span<const View> in,
                                   std::span<const View> out) {
                      const int n = p.n, ld = std::max(1, n);
                      const int64_t size = int64_t{n} * n;
                      const T* a = in[0].data_as<const T>();
                      T* a_out = out[0].data_as<T>();
                      int* info = out[1].data_as<int>();
                      ForEachTask(
                          p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
                            if constexpr (std::is_floating_point_v<T>) {
                              if (n <= kSmallOrder) {
                                if (a != a_out) {
                                  std::copy(a + begin * size, a + end * size, a_out + begin * size);
                                }
                                for (int64_t b = begin; b < end; ++b) {
                                  SmallPotrf(p.uplo, n, a_out + b * size, &info[b]);
                                }
                                return;
                              }
                            }
                            T* w = InSlot<T>(slot, p.a);
                            for (int64_t b = begin; b < end; ++b) {
                              ToColumnMajor(a + b * size, n, n, w, ld);
                              potrf(p.uplo, n, w, ld, &info[b]);
                              FromColumnMajor(w, ld, n, n, a_out + b * size);
                            }
                          });
                    });
}

// ---- getrf ----

struct GetrfPlan {
  Call call;
  int m = 0, n = 0;
  size_t a = 0;
};

StatusOr<Kernel> LowerGetrf(LowerContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, 3));
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 0));
  const auto m = std::get<0>(shape);
  const auto n = std::get<1>(shape);
  const int k = std::min(m, n);
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, kI32, {k}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 2, kI32, {}));
  auto plan = std::make_shared<GetrfPlan>();
  plan->m = m;
  plan->n = n;
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{m} * n);
  PlanScratch(call, ComplexFactor(call) * m * n * k, slot);
  plan->call = std::move(call);
  return MakeKernel(std::shared_ptr<const GetrfPlan>(plan),
                    []<typename T>(const GetrfPlan& p, std::byte* scratch, std::span<const View> in,
                                   std::span<const View> out) {
                      const int m = p.m, n = p.n, k = std::min(m, n), ld = std::max(1, m);
                      const int64_t size = int64_t{m} * n;
                      const T* a = in[0].data_as<const T>();
                      T* a_out = out[0].data_as<T>();
                      int* ipiv = out[1].data_as<int>();
                      int* info = out[2].data_as<int>();
                      ForEachTask(
                          p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
                            if constexpr (std::is_floating_point_v<T>) {
                              if (m <= kSmallOrder && n <= kSmallOrder) {
                                if (a != a_out) {
                                  std::copy(a + begin * size, a + end * size, a_out + begin * size);
                                }
                                for (int64_t b = begin; b < end; ++b) {
                                  SmallGetrf(m, n, a_out + b * size, ipiv + b * k, &info[b]);
                                }
                                return;
                              }
                            }
                            T* w = InSlot<T>(slot, p.a);
                            for (int64_t b = begin; b < end; ++b) {
                              ToColumnMajor(a + b * size, m, n, w, ld);
                              getrf(m, n, w, ld, ipiv + b * k, &info[b]);
                              FromColumnMajor(w, ld, m, n, a_out + b * size);
                            }
                          });
                    });
}

// ---- geqrf and geqp3 ----

struct QrPlan {
  Call call;
  bool pivoting = false;  // geqp3
  int m = 0, n = 0, lwork = 1;
  size_t a = 0, work = 0, rwork = 0;
};

StatusOr<Kernel> LowerQr(LowerContext& ctx, bool pivoting) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, pivoting ? 2 : 1, pivoting ? 3 : 2));
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 0));
  const auto m = std::get<0>(shape);
  const auto n = std::get<1>(shape);
  const int k = std::min(m, n), ld = std::max(1, m);
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {m, n}));
  if (pivoting) {
    KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 1, kI32, {n}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, kI32, {n}));
  }
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, pivoting ? 2 : 1, call.dtype, {k}));
  auto plan = std::make_shared<QrPlan>();
  plan->pivoting = pivoting;
  plan->m = m;
  plan->n = n;
  KILN_ASSIGN_OR_RETURN(
      plan->lwork,
      Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
        T query{}, a1{}, tau1{};
        Real<T> rwork1{};
        int jpvt1 = 0, info = 0;
        if (pivoting) {
          geqp3(m, n, &a1, ld, &jpvt1, &tau1, &query, -1, &rwork1, &info);
        } else {
          geqrf(m, n, &a1, ld, &tau1, &query, -1, &info);
        }
        return WorkSize(query);
      }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{m} * n);
  plan->work = slot.Elements(call, plan->lwork);
  plan->rwork = slot.Reals(call, 2 * int64_t{n});
  PlanScratch(call, ComplexFactor(call) * 2.0 * m * n * k, slot);
  plan->call = std::move(call);
  return MakeKernel(
      std::shared_ptr<const QrPlan>(plan),
      []<typename T>(const QrPlan& p, std::byte* scratch, std::span<const View> in,
                     std::span<const View> out) {
        const int m = p.m, n = p.n, k = std::min(m, n), ld = std::max(1, m);
        const int64_t size = int64_t{m} * n;
        const T* a = in[0].data_as<const T>();
        T* a_out = out[0].data_as<T>();
        T* tau = out[p.pivoting ? 2 : 1].data_as<T>();
        const int* jpvt_in = p.pivoting ? in[1].data_as<const int>() : nullptr;
        int* jpvt = p.pivoting ? out[1].data_as<int>() : nullptr;
        ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
          T* w = InSlot<T>(slot, p.a);
          T* work = InSlot<T>(slot, p.work);
          Real<T>* rwork = InSlot<Real<T>>(slot, p.rwork);
          for (int64_t b = begin; b < end; ++b) {
            ToColumnMajor(a + b * size, m, n, w, ld);
            int info = 0;
            if (p.pivoting) {
              std::copy(jpvt_in + b * n, jpvt_in + (b + 1) * n, jpvt + b * n);
              geqp3(m, n, w, ld, jpvt + b * n, tau + b * k, work, p.lwork, rwork, &info);
            } else {
              geqrf(m, n, w, ld, tau + b * k, work, p.lwork, &info);
            }
            FromColumnMajor(w, ld, m, n, a_out + b * size);
          }
        });
      });
}

StatusOr<Kernel> LowerGeqrf(LowerContext& ctx) { return LowerQr(ctx, false); }
StatusOr<Kernel> LowerGeqp3(LowerContext& ctx) { return LowerQr(ctx, true); }

// ---- orgqr / ungqr ----

struct OrgqrPlan {
  Call call;
  int m = 0, n = 0, k = 0, lwork = 1;
  size_t a = 0, work = 0;
};

StatusOr<Kernel> LowerOrgqr(LowerContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 2, 1));
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 0));
  const auto m = std::get<0>(shape);
  const auto n = std::get<1>(shape);
  const std::vector<int64_t>& tau_dims = call.in[1].dims;
  const int k = tau_dims.empty() ? -1 : static_cast<int>(std::min<int64_t>(tau_dims.back(), n + 1));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 1, call.dtype, {k}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {m, n}));
  if (!(m >= n && n >= k && k >= 0)) {
    return CallError("needs m >= n >= k reflectors; got a " + std::to_string(m) + " x " +
                     std::to_string(n) + " matrix and " + std::to_string(k) + " reflectors");
  }
  auto plan = std::make_shared<OrgqrPlan>();
  plan->m = m;
  plan->n = n;
  plan->k = k;
  const int ld = std::max(1, m);
  KILN_ASSIGN_OR_RETURN(plan->lwork, Dispatch<ir::kBlasTypes>(
                                         call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
                                           T query{}, a1{}, tau1{};
                                           int info = 0;
                                           orgqr(m, n, k, &a1, ld, &tau1, &query, -1, &info);
                                           return WorkSize(query);
                                         }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{m} * n);
  plan->work = slot.Elements(call, plan->lwork);
  PlanScratch(call, ComplexFactor(call) * 4.0 * m * n * k, slot);
  plan->call = std::move(call);
  return MakeKernel(std::shared_ptr<const OrgqrPlan>(plan),
                    []<typename T>(const OrgqrPlan& p, std::byte* scratch, std::span<const View> in,
                                   std::span<const View> out) {
                      const int m = p.m, n = p.n, k = p.k, ld = std::max(1, m);
                      const int64_t size = int64_t{m} * n;
                      const T* a = in[0].data_as<const T>();
                      const T* tau = in[1].data_as<const T>();
                      T* q = out[0].data_as<T>();
                      ForEachTask(p.call, scratch,
                                  [&](std::byte* slot, int64_t begin, int64_t end) {
                                    T* w = InSlot<T>(slot, p.a);
                                    T* work = InSlot<T>(slot, p.work);
                                    for (int64_t b = begin; b < end; ++b) {
                                      ToColumnMajor(a + b * size, m, n, w, ld);
                                      int info = 0;
                                      orgqr(m, n, k, w, ld, tau + b * k, work, p.lwork, &info);
                                      FromColumnMajor(w, ld, m, n, q + b * size);
                                    }
                                  });
                    });
}

// ---- ormqr / unmqr ----

struct OrmqrPlan {
  Call call;
  char side = 'L', trans = 'N';
  int am = 0, ak = 0, k = 0, m = 0, n = 0, lwork = 1;
  size_t a = 0, c = 0, work = 0;
};

StatusOr<Kernel> LowerOrmqr(LowerContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 3, 1));
  KILN_ASSIGN_OR_RETURN(auto a_shape, MatrixShape(call, 0));
  KILN_ASSIGN_OR_RETURN(auto c_shape, MatrixShape(call, 2));
  const auto am = std::get<0>(a_shape);
  const auto ak = std::get<1>(a_shape);
  const auto m = std::get<0>(c_shape);
  const auto n = std::get<1>(c_shape);
  const std::vector<int64_t>& tau_dims = call.in[1].dims;
  const int k =
      tau_dims.empty() ? -1 : static_cast<int>(std::min<int64_t>(tau_dims.back(), ak + 1));
  KILN_ASSIGN_OR_RETURN(int64_t left, RequiredConfigInt(ctx.op(), "left"));
  KILN_ASSIGN_OR_RETURN(int64_t transpose, RequiredConfigInt(ctx.op(), "transpose"));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {am, ak}));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 1, call.dtype, {k}));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 2, call.dtype, {m, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {m, n}));
  const int nq = left != 0 ? m : n;  // the order of Q
  if (am != nq || k < 0 || k > ak || k > nq) {
    return CallError("reflectors a " + call.in[0].ToString() + " with " + std::to_string(k) +
                     " taus do not fit c " + call.in[2].ToString());
  }
  auto plan = std::make_shared<OrmqrPlan>();
  plan->side = left != 0 ? 'L' : 'R';
  plan->trans = transpose == 0 ? 'N' : (ir::IsComplex(call.dtype) ? 'C' : 'T');
  plan->am = am;
  plan->ak = ak;
  plan->k = k;
  plan->m = m;
  plan->n = n;
  const int lda = std::max(1, am), ldc = std::max(1, m);
  KILN_ASSIGN_OR_RETURN(
      plan->lwork,
      Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
        T query{}, a1{}, tau1{}, c1{};
        int info = 0;
        ormqr(plan->side, plan->trans, m, n, k, &a1, lda, &tau1, &c1, ldc, &query, -1, &info);
        return WorkSize(query);
      }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{am} * ak);
  plan->c = slot.Elements(call, int64_t{m} * n);
  plan->work = slot.Elements(call, plan->lwork);
  PlanScratch(call, ComplexFactor(call) * 4.0 * k * m * n, slot);
  plan->call = std::move(call);
  return MakeKernel(std::shared_ptr<const OrmqrPlan>(plan),
                    []<typename T>(const OrmqrPlan& p, std::byte* scratch, std::span<const View> in,
                                   std::span<const View> out) {
                      const int lda = std::max(1, p.am), ldc = std::max(1, p.m);
                      const int64_t a_size = int64_t{p.am} * p.ak, c_size = int64_t{p.m} * p.n;
                      const T* a = in[0].data_as<const T>();
                      const T* tau = in[1].data_as<const T>();
                      const T* c = in[2].data_as<const T>();
                      T* c_out = out[0].data_as<T>();
                      ForEachTask(p.call, scratch,
                                  [&](std::byte* slot, int64_t begin, int64_t end) {
                                    T* wa = InSlot<T>(slot, p.a);
                                    T* wc = InSlot<T>(slot, p.c);
                                    T* work = InSlot<T>(slot, p.work);
                                    for (int64_t b = begin; b < end; ++b) {
                                      ToColumnMajor(a + b * a_size, p.am, p.ak, wa, lda);
                                      ToColumnMajor(c + b * c_size, p.m, p.n, wc, ldc);
                                      int info = 0;
                                      ormqr(p.side, p.trans, p.m, p.n, p.k, wa, lda, tau + b * p.k,
                                            wc, ldc, work, p.lwork, &info);
                                      FromColumnMajor(wc, ldc, p.m, p.n, c_out + b * c_size);
                                    }
                                  });
                    });
}

}  // namespace

void RegisterLapackFactorTargets(lower::OpRegistry& registry) {
  KILN_LAPACK_TARGETS(registry, "potrf", "potrf", &LowerPotrf);
  KILN_LAPACK_TARGETS(registry, "getrf", "getrf", &LowerGetrf);
  KILN_LAPACK_TARGETS(registry, "geqrf", "geqrf", &LowerGeqrf);
  KILN_LAPACK_TARGETS(registry, "geqp3", "geqp3", &LowerGeqp3);
  KILN_LAPACK_TARGETS(registry, "orgqr", "ungqr", &LowerOrgqr);
  KILN_LAPACK_TARGETS(registry, "ormqr", "unmqr", &LowerOrmqr);
}

}  // namespace kiln::kernels::lapack
