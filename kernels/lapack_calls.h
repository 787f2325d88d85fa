// Typed wrappers over OpenBLAS's LAPACK (Fortran symbols, LP64 integers, gfortran's hidden string
// lengths): one overload per routine and element type (float, double, complex<float>,
// complex<double>), so the kernels in kernels/lapack.cc are written once as templates.
#pragma once

#include <complex>
#include <cstddef>

namespace kiln::kernels::lapack {

using c64 = std::complex<float>;
using c128 = std::complex<double>;

template <typename T>
struct RealOf {
  using type = T;
};
template <typename R>
struct RealOf<std::complex<R>> {
  using type = R;
};
template <typename T>
using Real = typename RealOf<T>::type;
template <typename T>
inline constexpr bool kComplex = !std::is_same_v<T, Real<T>>;

// Cholesky: A = L L^H (uplo 'L') or U^H U ('U'), in place.
void potrf(char uplo, int n, float* a, int lda, int* info);
void potrf(char uplo, int n, double* a, int lda, int* info);
void potrf(char uplo, int n, c64* a, int lda, int* info);
void potrf(char uplo, int n, c128* a, int lda, int* info);

// LU with partial pivoting; ipiv is 1-based.
void getrf(int m, int n, float* a, int lda, int* ipiv, int* info);
void getrf(int m, int n, double* a, int lda, int* ipiv, int* info);
void getrf(int m, int n, c64* a, int lda, int* ipiv, int* info);
void getrf(int m, int n, c128* a, int lda, int* ipiv, int* info);

// Householder QR; lwork = -1 queries the workspace size into work[0].
void geqrf(int m, int n, float* a, int lda, float* tau, float* work, int lwork, int* info);
void geqrf(int m, int n, double* a, int lda, double* tau, double* work, int lwork, int* info);
void geqrf(int m, int n, c64* a, int lda, c64* tau, c64* work, int lwork, int* info);
void geqrf(int m, int n, c128* a, int lda, c128* tau, c128* work, int lwork, int* info);

// Q from geqrf's reflectors (orgqr for real, ungqr for complex).
void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork,
           int* info);
void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork,
           int* info);
void orgqr(int m, int n, int k, c64* a, int lda, const c64* tau, c64* work, int lwork, int* info);
void orgqr(int m, int n, int k, c128* a, int lda, const c128* tau, c128* work, int lwork,
           int* info);

// Symmetric / Hermitian eigendecomposition, divide and conquer (syevd / heevd). rwork is unused
// for real types.
void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* work, int lwork,
           float* rwork, int lrwork, int* iwork, int liwork, int* info);
void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* work, int lwork,
           double* rwork, int lrwork, int* iwork, int liwork, int* info);
void syevd(char jobz, char uplo, int n, c64* a, int lda, float* w, c64* work, int lwork,
           float* rwork, int lrwork, int* iwork, int liwork, int* info);
void syevd(char jobz, char uplo, int n, c128* a, int lda, double* w, c128* work, int lwork,
           double* rwork, int lrwork, int* iwork, int liwork, int* info);

// SVD, divide and conquer. rwork is unused for real types.
void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt,
           int ldvt, float* work, int lwork, float* rwork, int* iwork, int* info);
void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt,
           int ldvt, double* work, int lwork, double* rwork, int* iwork, int* info);
void gesdd(char jobz, int m, int n, c64* a, int lda, float* s, c64* u, int ldu, c64* vt, int ldvt,
           c64* work, int lwork, float* rwork, int* iwork, int* info);
void gesdd(char jobz, int m, int n, c128* a, int lda, double* s, c128* u, int ldu, c128* vt,
           int ldvt, c128* work, int lwork, double* rwork, int* iwork, int* info);

}  // namespace kiln::kernels::lapack
