// JAX's CPU linear-algebra custom calls, on OpenBLAS's LAPACK: lapack_{s,d,c,z}{potrf, getrf,
// geqrf, gesdd, trsm}_ffi, lapack_{s,d}{orgqr,syevd}_ffi and lapack_{c,z}{ungqr,heevd}_ffi. Kiln's
// Python package registers JAX's own CPU lowering rules for platform "kiln"
// (python/kiln/_linalg.py), so programs arrive exactly as XLA:CPU would get them; JAX wraps each
// call with the masking it does on CPU (NaN where info != 0, pivots made 0-based).
//
// Every operand is a batch of matrices, batch dims first; the calls state column-major matrices
// (operand_layouts), which is how LAPACK reads them. Kiln's arrays are row-major, so each matrix is
// transposed into a column-major work copy, factored, and transposed back; batches run in
// parallel on Kiln's pool (OpenBLAS itself single-threaded inside it).
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/custom_call.h"
#include "kernels/dispatch.h"
#include "kernels/lapack_calls.h"
#include "kernels/lowering_util.h"
#include "runtime/parallel.h"

namespace kiln::kernels {
namespace {

using compiler::ExecContext;
using compiler::Kernel;
using compiler::LowerContext;
using runtime::View;
namespace lp = lapack;

enum class Routine { kPotrf, kGetrf, kGeqrf, kOrgqr, kSyevd, kGesdd, kTrsm };

struct Plan {
  Routine routine;
  ir::DType dtype;
  int64_t batch = 1;
  int m = 0, n = 0, k = 0;  // the first operand's matrix dims (trsm: b's), k = min(m, n)
  char a1 = 0, a2 = 0, a3 = 0, a4 = 0;  // routine attributes (uplo, mode, side, trans, diag)
  std::vector<ir::Type> in_types, out_types;
};

template <typename T>
void ToColMajor(const T* src, T* dst, int m, int n) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j)
      dst[i + static_cast<int64_t>(j) * m] = src[static_cast<int64_t>(i) * n + j];
  }
}
template <typename T>
void FromColMajor(const T* src, T* dst, int m, int n) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j)
      dst[static_cast<int64_t>(i) * n + j] = src[i + static_cast<int64_t>(j) * m];
  }
}

template <typename T>
int WorkSize(T query) {
  return std::max(1, static_cast<int>(std::real(query)));
}

// Runs `body(b, scratch)` for every batch entry in parallel; `body` gets a per-chunk workspace.
template <typename Body>
void ForEachMatrix(int64_t batch, Body&& body) {
  runtime::ParallelFor(batch, 1, [&](int64_t begin, int64_t end) { body(begin, end); });
}

template <typename T>
Status Run(const Plan& p, std::span<const View> in, std::span<const View> out) {
  using R = lp::Real<T>;
  const int m = p.m, n = p.n, k = p.k;
  const int64_t mn = static_cast<int64_t>(m) * n;
  const T* a_in = in[0].data_as<const T>();
  switch (p.routine) {
    case Routine::kPotrf: {
      T* a_out = out[0].data_as<T>();
      int32_t* info = out[1].data_as<int32_t>();
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        std::vector<T> a(static_cast<size_t>(mn));
        for (int64_t b = b0; b < b1; ++b) {
          ToColMajor(a_in + b * mn, a.data(), n, n);
          int i = 0;
          lp::potrf(p.a1, n, a.data(), std::max(1, n), &i);
          FromColMajor(a.data(), a_out + b * mn, n, n);
          info[b] = i;
        }
      });
      return Status::Ok();
    }
    case Routine::kGetrf: {
      T* a_out = out[0].data_as<T>();
      int32_t* ipiv = out[1].data_as<int32_t>();
      int32_t* info = out[2].data_as<int32_t>();
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        std::vector<T> a(static_cast<size_t>(mn));
        for (int64_t b = b0; b < b1; ++b) {
          ToColMajor(a_in + b * mn, a.data(), m, n);
          int i = 0;
          lp::getrf(m, n, a.data(), std::max(1, m), ipiv + b * k, &i);
          FromColMajor(a.data(), a_out + b * mn, m, n);
          info[b] = i;
        }
      });
      return Status::Ok();
    }
    case Routine::kGeqrf: {
      T* a_out = out[0].data_as<T>();
      T* tau = out[1].data_as<T>();
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        std::vector<T> a(static_cast<size_t>(std::max<int64_t>(mn, 1)));
        T query{};
        int i = 0;
        lp::geqrf(m, n, a.data(), std::max(1, m), tau, &query, -1, &i);
        std::vector<T> work(static_cast<size_t>(WorkSize(query)));
        for (int64_t b = b0; b < b1; ++b) {
          ToColMajor(a_in + b * mn, a.data(), m, n);
          lp::geqrf(m, n, a.data(), std::max(1, m), tau + b * k, work.data(),
                    static_cast<int>(work.size()), &i);
          FromColMajor(a.data(), a_out + b * mn, m, n);
        }
      });
      return Status::Ok();
    }
    case Routine::kOrgqr: {
      const T* tau = in[1].data_as<const T>();
      T* q = out[0].data_as<T>();
      const int kk = k;  // the number of reflectors (tau's length)
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        std::vector<T> a(static_cast<size_t>(std::max<int64_t>(mn, 1)));
        T query{};
        int i = 0;
        lp::orgqr(m, n, kk, a.data(), std::max(1, m), tau, &query, -1, &i);
        std::vector<T> work(static_cast<size_t>(WorkSize(query)));
        for (int64_t b = b0; b < b1; ++b) {
          ToColMajor(a_in + b * mn, a.data(), m, n);
          lp::orgqr(m, n, kk, a.data(), std::max(1, m), tau + b * kk, work.data(),
                    static_cast<int>(work.size()), &i);
          FromColMajor(a.data(), q + b * mn, m, n);
        }
      });
      return Status::Ok();
    }
    case Routine::kSyevd: {
      T* v = out[0].data_as<T>();
      R* w = out[1].data_as<R>();
      int32_t* info = out[2].data_as<int32_t>();
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        std::vector<T> a(static_cast<size_t>(std::max<int64_t>(mn, 1)));
        T wq{};
        R rq{};
        int iq = 0, i = 0;
        R wdummy{};
        lp::syevd(p.a1, p.a2, n, a.data(), std::max(1, n), &wdummy, &wq, -1, &rq, -1, &iq, -1, &i);
        std::vector<T> work(static_cast<size_t>(WorkSize(wq)));
        std::vector<R> rwork(static_cast<size_t>(std::max(1, static_cast<int>(rq))));
        std::vector<int> iwork(static_cast<size_t>(std::max(1, iq)));
        for (int64_t b = b0; b < b1; ++b) {
          ToColMajor(a_in + b * mn, a.data(), n, n);
          lp::syevd(p.a1, p.a2, n, a.data(), std::max(1, n), w + b * n, work.data(),
                    static_cast<int>(work.size()), rwork.data(), static_cast<int>(rwork.size()),
                    iwork.data(), static_cast<int>(iwork.size()), &i);
          FromColMajor(a.data(), v + b * mn, n, n);
          info[b] = i;
        }
      });
      return Status::Ok();
    }
    case Routine::kGesdd: {
      T* a_out = out[0].data_as<T>();
      R* s = out[1].data_as<R>();
      T* u = out[2].data_as<T>();
      T* vt = out[3].data_as<T>();
      int32_t* info = out[4].data_as<int32_t>();
      const char jobz = p.a1;
      const int ucols = static_cast<int>(p.out_types[2].dims.back());
      const int vrows = static_cast<int>(p.out_types[3].dims[p.out_types[3].dims.size() - 2]);
      const int64_t usize = static_cast<int64_t>(m) * ucols,
                    vsize = static_cast<int64_t>(vrows) * n;
      std::fill(u, u + out[2].num_elements(), T{});
      std::fill(vt, vt + out[3].num_elements(), T{});
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        std::vector<T> a(static_cast<size_t>(std::max<int64_t>(mn, 1)));
        std::vector<T> ub(static_cast<size_t>(std::max<int64_t>(usize, 1)));
        std::vector<T> vb(static_cast<size_t>(std::max<int64_t>(vsize, 1)));
        const int mx = std::max(m, n);
        const int64_t lrwork =
            jobz == 'N' ? 7 * int64_t{k} : int64_t{k} * std::max(5 * k + 7, 2 * mx + 2 * k + 1);
        std::vector<R> rwork(static_cast<size_t>(std::max<int64_t>(lrwork, 1)));
        std::vector<int> iwork(static_cast<size_t>(std::max(8 * k, 1)));
        T query{};
        int i = 0;
        R sdummy{};
        lp::gesdd(jobz, m, n, a.data(), std::max(1, m), &sdummy, ub.data(), std::max(1, m),
                  vb.data(), std::max(1, vrows), &query, -1, rwork.data(), iwork.data(), &i);
        std::vector<T> work(static_cast<size_t>(WorkSize(query)));
        for (int64_t b = b0; b < b1; ++b) {
          ToColMajor(a_in + b * mn, a.data(), m, n);
          lp::gesdd(jobz, m, n, a.data(), std::max(1, m), s + b * k, ub.data(), std::max(1, m),
                    vb.data(), std::max(1, vrows), work.data(), static_cast<int>(work.size()),
                    rwork.data(), iwork.data(), &i);
          FromColMajor(a.data(), a_out + b * mn, m, n);
          if (jobz != 'N') {
            FromColMajor(ub.data(), u + b * usize, m, ucols);
            FromColMajor(vb.data(), vt + b * vsize, vrows, n);
          }
          info[b] = i;
        }
      });
      return Status::Ok();
    }
    case Routine::kTrsm: {
      // BLAS works on row-major data directly: no transposition.
      const T* bm = in[1].data_as<const T>();
      T* x = out[0].data_as<T>();
      const bool left = p.a1 == 'L';
      const int adim = left ? m : n;
      const int64_t asize = static_cast<int64_t>(adim) * adim;
      std::copy(bm, bm + out[0].num_elements(), x);
      const CBLAS_SIDE side = left ? CblasLeft : CblasRight;
      const CBLAS_UPLO uplo = p.a2 == 'L' ? CblasLower : CblasUpper;
      const CBLAS_TRANSPOSE trans =
          p.a3 == 'N' ? CblasNoTrans : (p.a3 == 'T' ? CblasTrans : CblasConjTrans);
      const CBLAS_DIAG diag = p.a4 == 'U' ? CblasUnit : CblasNonUnit;
      if (m == 0 || n == 0) return Status::Ok();
      ForEachMatrix(p.batch, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const T* ab = a_in + b * asize;
          T* xb = x + b * mn;
          if constexpr (std::is_same_v<T, float>) {
            cblas_strsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0f, ab, adim, xb, n);
          } else if constexpr (std::is_same_v<T, double>) {
            cblas_dtrsm(CblasRowMajor, side, uplo, trans, diag, m, n, 1.0, ab, adim, xb, n);
          } else {
            const T one(1);
            if constexpr (std::is_same_v<T, lp::c64>) {
              cblas_ctrsm(CblasRowMajor, side, uplo, trans, diag, m, n, &one, ab, adim, xb, n);
            } else {
              cblas_ztrsm(CblasRowMajor, side, uplo, trans, diag, m, n, &one, ab, adim, xb, n);
            }
          }
        }
      });
      return Status::Ok();
    }
  }
  return Status::Ok();
}

// Reads the [batch..., rows, cols] operand `index`; batch dims must match `batch_dims`.
Status MatrixDims(const ir::Op& op, const ir::Type& t, const std::vector<int64_t>* batch_dims,
                  int64_t* rows, int64_t* cols, std::string_view what) {
  KILN_RETURN_IF_ERROR(CheckStaticTensor(op, t, what));
  if (t.dims.size() < 2) return OpError(op, std::string(what) + " must be a batch of matrices");
  *rows = t.dims[t.dims.size() - 2];
  *cols = t.dims.back();
  if (batch_dims != nullptr &&
      !std::equal(batch_dims->begin(), batch_dims->end(), t.dims.begin(), t.dims.end() - 2)) {
    return OpError(op, std::string(what) + " has other batch dimensions than the first operand");
  }
  if (*rows > (int64_t{1} << 30) || *cols > (int64_t{1} << 30)) {
    return OpError(op, std::string(what) + " is too large for LAPACK's 32-bit sizes");
  }
  return Status::Ok();
}

StatusOr<Kernel> LowerLapack(LowerContext& ctx, Routine routine) {
  const ir::Op& op = ctx.op();
  auto plan = std::make_shared<Plan>();
  plan->routine = routine;
  for (size_t i = 0; i < op.operands.size(); ++i) plan->in_types.push_back(ctx.operand_type(i));
  for (size_t i = 0; i < op.results.size(); ++i) plan->out_types.push_back(ctx.result_type(i));
  const size_t want_in = routine == Routine::kOrgqr || routine == Routine::kTrsm ? 2 : 1;
  const size_t want_out = routine == Routine::kGesdd                                 ? 5
                          : routine == Routine::kGetrf || routine == Routine::kSyevd ? 3
                          : routine == Routine::kPotrf || routine == Routine::kGeqrf ? 2
                                                                                     : 1;
  if (op.operands.size() != want_in || op.results.size() != want_out) {
    return OpError(op, "expected " + std::to_string(want_in) + " operand(s) and " +
                           std::to_string(want_out) + " result(s)");
  }
  const ir::Type& a = plan->in_types[0];
  plan->dtype = a.dtype;
  if (a.dtype != ir::DType::kF32 && a.dtype != ir::DType::kF64 && a.dtype != ir::DType::kC64 &&
      a.dtype != ir::DType::kC128) {
    return UnsupportedDType(op.name, a.dtype);
  }
  int64_t rows = 0, cols = 0;
  KILN_RETURN_IF_ERROR(MatrixDims(op, a, nullptr, &rows, &cols, "operand #0"));
  const std::vector<int64_t> batch_dims(a.dims.begin(), a.dims.end() - 2);
  plan->batch = Product(batch_dims);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    KILN_ASSIGN_OR_RETURN(std::vector<int64_t> layout, OperandLayout(op, ctx.module(), i));
    const bool vectors = routine == Routine::kOrgqr && i == 1;  // tau: a batch of vectors
    if (vectors ? !IsRowMajor(layout) : !IsBatchedColumnMajor(layout)) {
      return OpError(op, "operand #" + std::to_string(i) + " must have " +
                             (vectors ? "row-major vectors" : "column-major matrices"));
    }
  }
  auto char_attr = [&](std::string_view name) -> StatusOr<char> {
    KILN_ASSIGN_OR_RETURN(int64_t v, RequiredConfigInt(op, name));
    return static_cast<char>(v);
  };
  plan->m = static_cast<int>(rows);
  plan->n = static_cast<int>(cols);
  plan->k = static_cast<int>(std::min(rows, cols));
  auto expect = [&](size_t out, ir::DType dtype, std::vector<int64_t> dims) -> Status {
    std::vector<int64_t> full = batch_dims;
    full.insert(full.end(), dims.begin(), dims.end());
    if (plan->out_types[out].dtype != dtype || plan->out_types[out].dims != full) {
      return OpError(op, "result #" + std::to_string(out) + " must be " +
                             ir::Type::Tensor(dtype, full).ToString());
    }
    return Status::Ok();
  };
  const ir::DType real = a.dtype == ir::DType::kC64    ? ir::DType::kF32
                         : a.dtype == ir::DType::kC128 ? ir::DType::kF64
                                                       : a.dtype;
  const ir::DType i32 = ir::DType::kS32;
  switch (routine) {
    case Routine::kPotrf: {
      if (rows != cols) return OpError(op, "needs square matrices");
      KILN_ASSIGN_OR_RETURN(plan->a1, char_attr("uplo"));
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {rows, cols}));
      KILN_RETURN_IF_ERROR(expect(1, i32, {}));
      break;
    }
    case Routine::kGetrf: {
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {rows, cols}));
      KILN_RETURN_IF_ERROR(expect(1, i32, {plan->k}));
      KILN_RETURN_IF_ERROR(expect(2, i32, {}));
      break;
    }
    case Routine::kGeqrf: {
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {rows, cols}));
      KILN_RETURN_IF_ERROR(expect(1, a.dtype, {plan->k}));
      break;
    }
    case Routine::kOrgqr: {
      const ir::Type& tau = plan->in_types[1];
      if (tau.dtype != a.dtype || tau.dims.size() != batch_dims.size() + 1 ||
          !std::equal(batch_dims.begin(), batch_dims.end(), tau.dims.begin()) ||
          tau.dims.back() > cols || cols > rows) {
        return OpError(op, "needs m >= n and tau of [batch..., k <= n]");
      }
      plan->k = static_cast<int>(tau.dims.back());  // the number of reflectors
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {rows, cols}));
      break;
    }
    case Routine::kSyevd: {
      if (rows != cols) return OpError(op, "needs square matrices");
      KILN_ASSIGN_OR_RETURN(plan->a1, char_attr("mode"));
      KILN_ASSIGN_OR_RETURN(plan->a2, char_attr("uplo"));
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {rows, cols}));
      KILN_RETURN_IF_ERROR(expect(1, real, {rows}));
      KILN_RETURN_IF_ERROR(expect(2, i32, {}));
      break;
    }
    case Routine::kGesdd: {
      KILN_ASSIGN_OR_RETURN(plan->a1, char_attr("mode"));
      const int64_t ucols = plan->a1 == 'S' ? plan->k : rows;
      const int64_t vrows = plan->a1 == 'S' ? plan->k : cols;
      if (plan->a1 != 'A' && plan->a1 != 'S' && plan->a1 != 'N') {
        return OpError(op, std::string("unknown mode '") + plan->a1 + "'");
      }
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {rows, cols}));
      KILN_RETURN_IF_ERROR(expect(1, real, {plan->k}));
      KILN_RETURN_IF_ERROR(expect(2, a.dtype, {rows, ucols}));
      KILN_RETURN_IF_ERROR(expect(3, a.dtype, {vrows, cols}));
      KILN_RETURN_IF_ERROR(expect(4, i32, {}));
      break;
    }
    case Routine::kTrsm: {
      KILN_ASSIGN_OR_RETURN(plan->a1, char_attr("side"));
      KILN_ASSIGN_OR_RETURN(plan->a2, char_attr("uplo"));
      KILN_ASSIGN_OR_RETURN(plan->a3, char_attr("trans_x"));
      KILN_ASSIGN_OR_RETURN(plan->a4, char_attr("diag"));
      int64_t brows = 0, bcols = 0;
      KILN_RETURN_IF_ERROR(
          MatrixDims(op, plan->in_types[1], &batch_dims, &brows, &bcols, "operand #1"));
      if (plan->in_types[1].dtype != a.dtype) return OpError(op, "operands differ in type");
      const int64_t need = plan->a1 == 'L' ? brows : bcols;
      if (rows != cols || rows != need) return OpError(op, "a must be square and match b's side");
      plan->m = static_cast<int>(brows);
      plan->n = static_cast<int>(bcols);
      KILN_RETURN_IF_ERROR(expect(0, a.dtype, {brows, bcols}));
      break;
    }
  }
  return Kernel([plan, name = op.name](ExecContext&, std::span<const View> in,
                                       std::span<const View> out) -> Status {
    KILN_RETURN_IF_ERROR(CheckArrays(name, in, plan->in_types));
    if (out.size() != plan->out_types.size()) return Internal(name + ": wrong result count");
    if (plan->batch == 0) return Status::Ok();
    switch (plan->dtype) {
      case ir::DType::kF32:
        return Run<float>(*plan, in, out);
      case ir::DType::kF64:
        return Run<double>(*plan, in, out);
      case ir::DType::kC64:
        return Run<lp::c64>(*plan, in, out);
      default:
        return Run<lp::c128>(*plan, in, out);
    }
  });
}

template <Routine R>
StatusOr<Kernel> Lower(LowerContext& ctx) {
  return LowerLapack(ctx, R);
}

}  // namespace
}  // namespace kiln::kernels

namespace kiln::compiler {

void RegisterLapackTargets(OpRegistry& registry) {
  using kernels::Routine;
#define KILN_LAPACK_TARGETS(real_name, complex_name, routine)                         \
  registry.AddCustomCall(                                                             \
      {"lapack_s" real_name "_ffi", "linalg", &kernels::Lower<Routine::routine>});    \
  registry.AddCustomCall(                                                             \
      {"lapack_d" real_name "_ffi", "linalg", &kernels::Lower<Routine::routine>});    \
  registry.AddCustomCall(                                                             \
      {"lapack_c" complex_name "_ffi", "linalg", &kernels::Lower<Routine::routine>}); \
  registry.AddCustomCall(                                                             \
      {"lapack_z" complex_name "_ffi", "linalg", &kernels::Lower<Routine::routine>});
  KILN_LAPACK_TARGETS("potrf", "potrf", kPotrf)
  KILN_LAPACK_TARGETS("getrf", "getrf", kGetrf)
  KILN_LAPACK_TARGETS("geqrf", "geqrf", kGeqrf)
  KILN_LAPACK_TARGETS("orgqr", "ungqr", kOrgqr)
  KILN_LAPACK_TARGETS("syevd", "heevd", kSyevd)
  KILN_LAPACK_TARGETS("gesdd", "gesdd", kGesdd)
  KILN_LAPACK_TARGETS("trsm", "trsm", kTrsm)
#undef KILN_LAPACK_TARGETS
}

}  // namespace kiln::compiler
