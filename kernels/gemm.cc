#include "kernels/gemm.h"

#include <algorithm>
#include <complex>
#include <type_traits>

#include "ir/dtype_dispatch.h"
#include "kernels/blas.h"
#include "kernels/matvec.h"
#include "runtime/parallel.h"

namespace kiln::kernels {

void UseBlasSingleThreaded() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

bool IsGemmType(ir::DType t) { return ir::InSet(t, ir::kBlasTypes); }

std::optional<ir::DType> ProductAccumulationType(ir::DType out) {
  if (ir::InSet(out, ir::kHalfFloats)) return ir::DType::kF32;
  if (ir::InSet(out, ir::kBlasTypes | ir::kPredicates) || ir::IsInteger(out)) return out;
  return std::nullopt;
}

// Products with one side a vector and at most this many multiply-adds run as MatVec
// (kernels/matvec.h); larger ones stay on BLAS.
constexpr int64_t kMaxMatVecProducts = int64_t{1} << 16;

// C = op(A) op(B) as a matrix-vector product when n == 1 (y = op(A) x, x = op(B)'s column) or
// m == 1 (y = op(B)^T x, x = op(A)'s row): strides of the matrix over the outputs and over k, and
// of x. False when MatVec does not take the layout.
template <typename T>
bool GemmAsMatVec(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                  const T* b, int64_t ldb, T* c, int64_t ldc) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (m * n * k > kMaxMatVecProducts || k == 0) return false;
    if (n == 1 && (m == 1 || ldc == 1)) {
      return MatVec(a, ta ? 1 : lda, ta ? lda : 1, b, tb ? 1 : ldb, c, m, k);
    }
    if (m == 1) return MatVec(b, tb ? ldb : 1, tb ? 1 : ldb, a, ta ? lda : 1, c, n, k);
  }
  return false;
}

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc) {
  if ((m == 1 || n == 1) && GemmAsMatVec(ta, tb, m, n, k, a, lda, b, ldb, c, ldc)) return;
  UseBlasSingleThreaded();
  const auto tA = ta ? CblasTrans : CblasNoTrans;
  const auto tB = tb ? CblasTrans : CblasNoTrans;
  const int im = static_cast<int>(m), in = static_cast<int>(n), ik = static_cast<int>(k);
  const int ia = static_cast<int>(lda), ib = static_cast<int>(ldb), ic = static_cast<int>(ldc);
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, tA, tB, im, in, ik, 1.0f, a, ia, b, ib, 0.0f, c, ic);
  } else if constexpr (std::is_same_v<T, double>) {
    cblas_dgemm(CblasRowMajor, tA, tB, im, in, ik, 1.0, a, ia, b, ib, 0.0, c, ic);
  } else if constexpr (std::is_same_v<T, std::complex<float>>) {
    const T one(1), zero(0);
    cblas_cgemm(CblasRowMajor, tA, tB, im, in, ik, &one, a, ia, b, ib, &zero, c, ic);
  } else {
    static_assert(std::is_same_v<T, std::complex<double>>);
    const T one(1), zero(0);
    cblas_zgemm(CblasRowMajor, tA, tB, im, in, ik, &one, a, ia, b, ib, &zero, c, ic);
  }
}

template <typename T>
void ParallelGemm(int64_t batch, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
                  int64_t lda, int64_t a_batch, const T* b, int64_t ldb, int64_t b_batch, T* c) {
  const int64_t threads = runtime::NumWorkerThreads();
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (threads <= 1 || flops * static_cast<double>(batch) < 1e6) {
    for (int64_t i = 0; i < batch; ++i) {
      Gemm<T>(ta, tb, m, n, k, a + i * a_batch, lda, b + i * b_batch, ldb, c + i * m * n, n);
    }
    return;
  }
  if (batch >= threads || flops < 1e6) {
    runtime::ParallelFor(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        Gemm<T>(ta, tb, m, n, k, a + i * a_batch, lda, b + i * b_batch, ldb, c + i * m * n, n);
      }
    });
    return;
  }
  const bool split_rows = m >= n;
  const int64_t extent = split_rows ? m : n;
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(threads, extent / 32));
  const int64_t step = (extent + blocks - 1) / blocks;
  for (int64_t i = 0; i < batch; ++i) {
    const T* ai = a + i * a_batch;
    const T* bi = b + i * b_batch;
    T* ci = c + i * m * n;
    runtime::ParallelFor(blocks, 1, [&](int64_t begin, int64_t end) {
      for (int64_t blk = begin; blk < end; ++blk) {
        const int64_t lo = blk * step, hi = std::min(extent, lo + step);
        if (lo >= hi) continue;
        if (split_rows) {
          Gemm<T>(ta, tb, hi - lo, n, k, ta ? ai + lo : ai + lo * lda, lda, bi, ldb, ci + lo * n,
                  n);
        } else {
          Gemm<T>(ta, tb, m, hi - lo, k, ai, lda, tb ? bi + lo * ldb : bi + lo, ldb, ci + lo, n);
        }
      }
    });
  }
}

#define KILN_GEMM_INSTANTIATE(T)                                                                   \
  template void Gemm<T>(bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, const T*,        \
                        int64_t, T*, int64_t);                                                     \
  template void ParallelGemm<T>(int64_t, bool, bool, int64_t, int64_t, int64_t, const T*, int64_t, \
                                int64_t, const T*, int64_t, int64_t, T*);
KILN_GEMM_INSTANTIATE(float)
KILN_GEMM_INSTANTIATE(double)
KILN_GEMM_INSTANTIATE(std::complex<float>)
KILN_GEMM_INSTANTIATE(std::complex<double>)
#undef KILN_GEMM_INSTANTIATE

}  // namespace kiln::kernels
