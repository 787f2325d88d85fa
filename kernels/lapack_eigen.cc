// Eigenproblems and the reductions behind them: lapack_<x>syevd / heevd (symmetric / Hermitian
// eigendecomposition), geev (general eigendecomposition), gees (Schur decomposition), gehrd
// (Hessenberg reduction) and sytrd / hetrd (tridiagonal reduction), x = s, d, c, z. Operands,
// results and attributes as jaxlib's CPU kernels define them (see kernels/lapack.h):
//   syevd (a; mode, uplo)   -> (v, w (real), info)                 w ascending; v's columns
//   geev  (a; compute_left, compute_right)
//         real:    -> (wr, wi, vl, vr (complex), info)   conjugate pairs unpacked from LAPACK's
//         form complex: -> (w, vl, vr, info) a non-finite input gives info = -4 without calling
//         LAPACK (LAPACK could loop on it)
//   gees  (a; mode, sort = 'N')
//         real:    -> (t, vs, wr, wi, sdim, info)
//         complex: -> (t, vs, w, sdim, info)
//   gehrd (a; low, high)    -> (a_out, tau[n - 1], info)
//   sytrd (a; uplo)         -> (a_out, d (real), e[n - 1] (real), tau[n - 1], info)
// Results a mode leaves uncomputed (eigenvectors with 'N', Schur vectors with 'N') are zeros; where
// info != 0 the vectors are NaN (JAX masks them with NaN in either case).
#include <limits>
#include <memory>
#include <tuple>

#include "kernels/lapack.h"

namespace kiln::kernels::lapack {
namespace {

using lower::Kernel;
using lower::LowerContext;
using runtime::View;

constexpr ir::DType kI32 = ir::DType::kS32;

double ComplexFactor(const Call& call) { return ir::IsComplex(call.dtype) ? 4.0 : 1.0; }

ir::DType ComplexOf(ir::DType t) {
  return t == ir::DType::kF32 ? ir::DType::kC64 : (t == ir::DType::kF64 ? ir::DType::kC128 : t);
}

template <typename T>
T NaN() {
  using R = Real<T>;
  constexpr R nan = std::numeric_limits<R>::quiet_NaN();
  if constexpr (kComplex<T>) {
    return T(nan, nan);
  } else {
    return nan;
  }
}

// Square matrices: the common reading of every call here.
StatusOr<int> SquareOrder(const Call& call) {
  KILN_ASSIGN_OR_RETURN(auto shape, MatrixShape(call, 0));
  if (shape.first != shape.second) {
    return CallError("needs square matrices, got " + call.in[0].ToString());
  }
  return shape.first;
}

// ---- syevd / heevd ----

struct SyevdPlan {
  Call call;
  char jobz = 'V', uplo = 'L';
  int n = 0, lwork = 1, lrwork = 1, liwork = 1;
  size_t a = 0, work = 0, rwork = 0, iwork = 0;
};

StatusOr<Kernel> LowerSyevd(LowerContext& ctx) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, 3));
  KILN_ASSIGN_OR_RETURN(const int n, SquareOrder(call));
  auto plan = std::make_shared<SyevdPlan>();
  KILN_ASSIGN_OR_RETURN(plan->jobz, CharAttr(ctx, "mode", "NV"));
  KILN_ASSIGN_OR_RETURN(plan->uplo, CharAttr(ctx, "uplo", "LU"));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, call.real, {n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 2, kI32, {}));
  plan->n = n;
  const int ld = std::max(1, n);
  KILN_RETURN_IF_ERROR(Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> Status {
    T work1{}, a1{};
    Real<T> rwork1{}, w1{};
    int iwork1 = 0, info = 0;
    syevd(plan->jobz, plan->uplo, n, &a1, ld, &w1, &work1, -1, &rwork1, -1, &iwork1, -1, &info);
    KILN_ASSIGN_OR_RETURN(plan->lwork, WorkSize(work1));
    KILN_ASSIGN_OR_RETURN(plan->lrwork, WorkSize(rwork1));
    plan->liwork = std::max(1, iwork1);
    return Status::Ok();
  }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{n} * n);
  plan->work = slot.Elements(call, plan->lwork);
  plan->rwork = slot.Reals(call, plan->lrwork);
  plan->iwork = slot.Ints(plan->liwork);
  PlanScratch(call, ComplexFactor(call) * 9.0 * n * n * n, slot);
  plan->call = std::move(call);
  return MakeKernel(std::shared_ptr<const SyevdPlan>(plan),
                    []<typename T>(const SyevdPlan& p, std::byte* scratch, std::span<const View> in,
                                   std::span<const View> out) {
                      const int n = p.n, ld = std::max(1, n);
                      const int64_t size = int64_t{n} * n;
                      const T* a = in[0].data_as<const T>();
                      T* v = out[0].data_as<T>();
                      Real<T>* w = out[1].data_as<Real<T>>();
                      int* info = out[2].data_as<int>();
                      ForEachTask(
                          p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
                            T* wa = InSlot<T>(slot, p.a);
                            for (int64_t b = begin; b < end; ++b) {
                              ToColumnMajor(a + b * size, n, n, wa, ld);
                              syevd(p.jobz, p.uplo, n, wa, ld, w + b * n, InSlot<T>(slot, p.work),
                                    p.lwork, InSlot<Real<T>>(slot, p.rwork), p.lrwork,
                                    InSlot<int>(slot, p.iwork), p.liwork, &info[b]);
                              FromColumnMajor(wa, ld, n, n, v + b * size);
                            }
                          });
                    });
}

// ---- geev ----

struct GeevPlan {
  Call call;
  char jobvl = 'N', jobvr = 'V';
  int n = 0, lwork = 1;
  size_t a = 0, vl = 0, vr = 0, work = 0, rwork = 0;
};

// out (row-major n x n, complex) := the eigenvectors in LAPACK's real form: column j of v is an
// eigenvector when wi[j] is 0 (or NaN); otherwise columns j and j + 1 hold the real and imaginary
// parts of the eigenvectors of the conjugate pair (wi[j], wi[j + 1]).
template <typename R>
void UnpackRealEigenvectors(int n, const R* wi, const R* v, int ld, std::complex<R>* out) {
  for (int j = 0; j < n;) {
    const bool pair = !(wi[j] == R(0) || std::isnan(wi[j])) && j + 1 < n;
    for (int i = 0; i < n; ++i) {
      const R re = v[i + int64_t{j} * ld];
      if (!pair) {
        out[int64_t{i} * n + j] = std::complex<R>(re, R(0));
      } else {
        const R im = v[i + int64_t{j + 1} * ld];
        out[int64_t{i} * n + j] = std::complex<R>(re, im);
        out[int64_t{i} * n + j + 1] = std::complex<R>(re, -im);
      }
    }
    j += pair ? 2 : 1;
  }
}

StatusOr<Kernel> LowerGeev(LowerContext& ctx) {
  const bool complex = [&] {
    const ir::Attr* t = ctx.op().attr("call_target_name");
    return t != nullptr && t->str.size() > 7 && (t->str[7] == 'c' || t->str[7] == 'z');
  }();
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, complex ? 4 : 5));
  KILN_ASSIGN_OR_RETURN(const int n, SquareOrder(call));
  auto plan = std::make_shared<GeevPlan>();
  KILN_ASSIGN_OR_RETURN(plan->jobvl, CharAttr(ctx, "compute_left", "NV"));
  KILN_ASSIGN_OR_RETURN(plan->jobvr, CharAttr(ctx, "compute_right", "NV"));
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {n, n}));
  const size_t vecs = complex ? 1 : 2;  // the index of vl among the results
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {n}));
  if (!complex) KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, call.dtype, {n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, vecs, ComplexOf(call.dtype), {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, vecs + 1, ComplexOf(call.dtype), {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, vecs + 2, kI32, {}));
  plan->n = n;
  const int ld = std::max(1, n);
  KILN_ASSIGN_OR_RETURN(plan->lwork, Dispatch<ir::kBlasTypes>(
                                         call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
                                           T query{}, a1{}, w1{}, w2{}, vl1{}, vr1{};
                                           Real<T> rwork1[2] = {};
                                           int info = 0;
                                           if constexpr (kComplex<T>) {
                                             geev(plan->jobvl, plan->jobvr, n, &a1, ld, &w1, &vl1,
                                                  ld, &vr1, ld, &query, -1, rwork1, &info);
                                           } else {
                                             geev(plan->jobvl, plan->jobvr, n, &a1, ld, &w1, &w2,
                                                  &vl1, ld, &vr1, ld, &query, -1, &info);
                                           }
                                           return WorkSize(query);
                                         }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{n} * n);
  plan->vl = slot.Elements(call, plan->jobvl == 'V' ? int64_t{n} * n : 1);
  plan->vr = slot.Elements(call, plan->jobvr == 'V' ? int64_t{n} * n : 1);
  plan->work = slot.Elements(call, plan->lwork);
  plan->rwork = slot.Reals(call, 2 * int64_t{n});
  PlanScratch(call, ComplexFactor(call) * 25.0 * n * n * n, slot);
  plan->call = std::move(call);
  return MakeKernel(
      std::shared_ptr<const GeevPlan>(plan),
      []<typename T>(const GeevPlan& p, std::byte* scratch, std::span<const View> in,
                     std::span<const View> out) {
        using C = std::complex<Real<T>>;
        const int n = p.n, ld = std::max(1, n);
        const int64_t size = int64_t{n} * n;
        const T* a = in[0].data_as<const T>();
        const size_t vecs = kComplex<T> ? 1 : 2;
        T* w = out[0].data_as<T>();  // wr for real types
        T* wi = kComplex<T> ? nullptr : out[1].data_as<T>();
        C* vl_out = out[vecs].data_as<C>();
        C* vr_out = out[vecs + 1].data_as<C>();
        int* info = out[vecs + 2].data_as<int>();
        ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
          T* wa = InSlot<T>(slot, p.a);
          T* vl = InSlot<T>(slot, p.vl);
          T* vr = InSlot<T>(slot, p.vr);
          for (int64_t b = begin; b < end; ++b) {
            C* vl_b = vl_out + b * size;
            C* vr_b = vr_out + b * size;
            if (!AllFinite(a + b * size, size)) {
              info[b] = -4;
              std::fill(w + b * n, w + (b + 1) * n, NaN<T>());
              if (wi != nullptr) std::fill(wi + b * n, wi + (b + 1) * n, NaN<T>());
              std::fill(vl_b, vl_b + size, NaN<C>());
              std::fill(vr_b, vr_b + size, NaN<C>());
              continue;
            }
            ToColumnMajor(a + b * size, n, n, wa, ld);
            if constexpr (kComplex<T>) {
              geev(p.jobvl, p.jobvr, n, wa, ld, w + b * n, vl, ld, vr, ld, InSlot<T>(slot, p.work),
                   p.lwork, InSlot<Real<T>>(slot, p.rwork), &info[b]);
            } else {
              geev(p.jobvl, p.jobvr, n, wa, ld, w + b * n, wi + b * n, vl, ld, vr, ld,
                   InSlot<T>(slot, p.work), p.lwork, &info[b]);
            }
            for (auto [job, v, v_out] :
                 {std::tuple{p.jobvl, vl, vl_b}, std::tuple{p.jobvr, vr, vr_b}}) {
              if (job != 'V') {
                std::fill(v_out, v_out + size, C(0));
              } else if (info[b] != 0) {
                std::fill(v_out, v_out + size, NaN<C>());
              } else if constexpr (kComplex<T>) {
                FromColumnMajor(v, ld, n, n, v_out);
              } else {
                UnpackRealEigenvectors(n, wi + b * n, v, ld, v_out);
              }
            }
          }
        });
      });
}

// ---- gees ----

struct GeesPlan {
  Call call;
  char jobvs = 'V';
  int n = 0, lwork = 1;
  size_t a = 0, vs = 0, work = 0, rwork = 0;
};

StatusOr<Kernel> LowerGees(LowerContext& ctx) {
  const ir::Attr* t = ctx.op().attr("call_target_name");
  const bool complex = t != nullptr && t->str.size() > 7 && (t->str[7] == 'c' || t->str[7] == 'z');
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, complex ? 5 : 6));
  KILN_ASSIGN_OR_RETURN(const int n, SquareOrder(call));
  auto plan = std::make_shared<GeesPlan>();
  KILN_ASSIGN_OR_RETURN(plan->jobvs, CharAttr(ctx, "mode", "NV"));
  KILN_ASSIGN_OR_RETURN(const char sort, CharAttr(ctx, "sort", "NS"));
  if (sort != 'N') {
    return Unimplemented("ordering the eigenvalues (sort = 'S') is not supported");
  }
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 2, call.dtype, {n}));
  const size_t ints = complex ? 3 : 4;  // the index of sdim among the results
  if (!complex) KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 3, call.dtype, {n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, ints, kI32, {}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, ints + 1, kI32, {}));
  plan->n = n;
  const int ld = std::max(1, n);
  KILN_ASSIGN_OR_RETURN(
      plan->lwork,
      Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
        T query{}, a1{}, w1{}, w2{}, vs1{};
        Real<T> rwork1{};
        int sdim = 0, info = 0;
        if constexpr (kComplex<T>) {
          gees(plan->jobvs, n, &a1, ld, &sdim, &w1, &vs1, ld, &query, -1, &rwork1, &info);
        } else {
          gees(plan->jobvs, n, &a1, ld, &sdim, &w1, &w2, &vs1, ld, &query, -1, &info);
        }
        return WorkSize(query);
      }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{n} * n);
  plan->vs = slot.Elements(call, plan->jobvs == 'V' ? int64_t{n} * n : 1);
  plan->work = slot.Elements(call, plan->lwork);
  plan->rwork = slot.Reals(call, n);
  PlanScratch(call, ComplexFactor(call) * 25.0 * n * n * n, slot);
  plan->call = std::move(call);
  return MakeKernel(
      std::shared_ptr<const GeesPlan>(plan),
      []<typename T>(const GeesPlan& p, std::byte* scratch, std::span<const View> in,
                     std::span<const View> out) {
        const int n = p.n, ld = std::max(1, n);
        const int64_t size = int64_t{n} * n;
        const T* a = in[0].data_as<const T>();
        T* t_out = out[0].data_as<T>();
        T* vs_out = out[1].data_as<T>();
        T* w = out[2].data_as<T>();  // wr for real types
        const size_t ints = kComplex<T> ? 3 : 4;
        T* wi = kComplex<T> ? nullptr : out[3].data_as<T>();
        int* sdim = out[ints].data_as<int>();
        int* info = out[ints + 1].data_as<int>();
        ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
          T* wa = InSlot<T>(slot, p.a);
          T* vs = InSlot<T>(slot, p.vs);
          for (int64_t b = begin; b < end; ++b) {
            ToColumnMajor(a + b * size, n, n, wa, ld);
            if constexpr (kComplex<T>) {
              gees(p.jobvs, n, wa, ld, &sdim[b], w + b * n, vs, ld, InSlot<T>(slot, p.work),
                   p.lwork, InSlot<Real<T>>(slot, p.rwork), &info[b]);
            } else {
              gees(p.jobvs, n, wa, ld, &sdim[b], w + b * n, wi + b * n, vs, ld,
                   InSlot<T>(slot, p.work), p.lwork, &info[b]);
            }
            FromColumnMajor(wa, ld, n, n, t_out + b * size);
            if (p.jobvs == 'V') {
              FromColumnMajor(vs, ld, n, n, vs_out + b * size);
            } else {
              std::fill(vs_out + b * size, vs_out + (b + 1) * size, T(0));
            }
          }
        });
      });
}

// ---- gehrd and sytrd / hetrd ----

struct ReducePlan {
  Call call;
  bool tridiagonal = false;  // sytrd / hetrd, else gehrd
  char uplo = 'L';
  int n = 0, ilo = 1, ihi = 0, lwork = 1;
  size_t a = 0, work = 0;
};

StatusOr<Kernel> LowerReduction(LowerContext& ctx, bool tridiagonal) {
  KILN_ASSIGN_OR_RETURN(Call call, ReadCall(ctx, 1, tridiagonal ? 5 : 3));
  KILN_ASSIGN_OR_RETURN(const int n, SquareOrder(call));
  const int n1 = std::max(n - 1, 0);
  auto plan = std::make_shared<ReducePlan>();
  plan->tridiagonal = tridiagonal;
  plan->n = n;
  KILN_RETURN_IF_ERROR(ExpectOperand(ctx, call, 0, call.dtype, {n, n}));
  KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 0, call.dtype, {n, n}));
  if (tridiagonal) {
    KILN_ASSIGN_OR_RETURN(plan->uplo, CharAttr(ctx, "uplo", "LU"));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, call.real, {n}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 2, call.real, {n1}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 3, call.dtype, {n1}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 4, kI32, {}));
  } else {
    KILN_ASSIGN_OR_RETURN(const int64_t low, RequiredConfigInt(ctx.op(), "low"));
    KILN_ASSIGN_OR_RETURN(const int64_t high, RequiredConfigInt(ctx.op(), "high"));
    if (low < 1 || low > std::max(1, n) || high < std::min<int64_t>(low, n) || high > n) {
      return CallError("low = " + std::to_string(low) + " and high = " + std::to_string(high) +
                       " are not a range of rows of order " + std::to_string(n));
    }
    plan->ilo = static_cast<int>(low);
    plan->ihi = static_cast<int>(high);
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 1, call.dtype, {n1}));
    KILN_RETURN_IF_ERROR(ExpectResult(ctx, call, 2, kI32, {}));
  }
  const int ld = std::max(1, n);
  KILN_ASSIGN_OR_RETURN(
      plan->lwork,
      Dispatch<ir::kBlasTypes>(call.name, call.dtype, [&]<typename T>() -> StatusOr<int> {
        T query{}, a1{}, tau1{};
        Real<T> d1{}, e1{};
        int info = 0;
        if (tridiagonal) {
          sytrd(plan->uplo, n, &a1, ld, &d1, &e1, &tau1, &query, -1, &info);
        } else {
          gehrd(n, plan->ilo, plan->ihi, &a1, ld, &tau1, &query, -1, &info);
        }
        return WorkSize(query);
      }));
  SlotLayout slot;
  plan->a = slot.Elements(call, int64_t{n} * n);
  plan->work = slot.Elements(call, plan->lwork);
  PlanScratch(call, ComplexFactor(call) * (tridiagonal ? 4.0 / 3 : 10.0 / 3) * n * n * n, slot);
  plan->call = std::move(call);
  return MakeKernel(
      std::shared_ptr<const ReducePlan>(plan),
      []<typename T>(const ReducePlan& p, std::byte* scratch, std::span<const View> in,
                     std::span<const View> out) {
        const int n = p.n, n1 = std::max(n - 1, 0), ld = std::max(1, n);
        const int64_t size = int64_t{n} * n;
        const T* a = in[0].data_as<const T>();
        T* a_out = out[0].data_as<T>();
        Real<T>* d = p.tridiagonal ? out[1].data_as<Real<T>>() : nullptr;
        Real<T>* e = p.tridiagonal ? out[2].data_as<Real<T>>() : nullptr;
        T* tau = out[p.tridiagonal ? 3 : 1].data_as<T>();
        int* info = out[p.tridiagonal ? 4 : 2].data_as<int>();
        ForEachTask(p.call, scratch, [&](std::byte* slot, int64_t begin, int64_t end) {
          T* wa = InSlot<T>(slot, p.a);
          T* work = InSlot<T>(slot, p.work);
          for (int64_t b = begin; b < end; ++b) {
            ToColumnMajor(a + b * size, n, n, wa, ld);
            if (p.tridiagonal) {
              sytrd(p.uplo, n, wa, ld, d + b * n, e + b * n1, tau + b * n1, work, p.lwork,
                    &info[b]);
            } else {
              gehrd(n, p.ilo, p.ihi, wa, ld, tau + b * n1, work, p.lwork, &info[b]);
            }
            FromColumnMajor(wa, ld, n, n, a_out + b * size);
          }
        });
      });
}

StatusOr<Kernel> LowerGehrd(LowerContext& ctx) { return LowerReduction(ctx, false); }
StatusOr<Kernel> LowerSytrd(LowerContext& ctx) { return LowerReduction(ctx, true); }

}  // namespace

void RegisterLapackEigenTargets(lower::OpRegistry& registry) {
  KILN_LAPACK_TARGETS(registry, "syevd", "heevd", &LowerSyevd);
  KILN_LAPACK_TARGETS(registry, "geev", "geev", &LowerGeev);
  KILN_LAPACK_TARGETS(registry, "gees", "gees", &LowerGees);
  KILN_LAPACK_TARGETS(registry, "gehrd", "gehrd", &LowerGehrd);
  KILN_LAPACK_TARGETS(registry, "sytrd", "hetrd", &LowerSytrd);
}

}  // namespace kiln::kernels::lapack
