#include "kernels/lapack_calls.h"

// The Fortran entry points OpenBLAS exports. Every CHARACTER argument has a hidden length
// argument at the end (gfortran passes size_t); each of ours is one character.
extern "C" {
#define KILN_LAPACK_DECLARE(p, T, R)                                     \
  void p##potrf_(const char*, const int*, T*, const int*, int*, size_t); \
  void p##getrf_(const int*, const int*, T*, const int*, int*, int*);    \
  void p##geqrf_(const int*, const int*, T*, const int*, T*, T*, const int*, int*);
KILN_LAPACK_DECLARE(s, float, float)
KILN_LAPACK_DECLARE(d, double, double)
KILN_LAPACK_DECLARE(c, kiln::kernels::lapack::c64, float)
KILN_LAPACK_DECLARE(z, kiln::kernels::lapack::c128, double)
#undef KILN_LAPACK_DECLARE
void sorgqr_(const int*, const int*, const int*, float*, const int*, const float*, float*,
             const int*, int*);
void dorgqr_(const int*, const int*, const int*, double*, const int*, const double*, double*,
             const int*, int*);
void cungqr_(const int*, const int*, const int*, kiln::kernels::lapack::c64*, const int*,
             const kiln::kernels::lapack::c64*, kiln::kernels::lapack::c64*, const int*, int*);
void zungqr_(const int*, const int*, const int*, kiln::kernels::lapack::c128*, const int*,
             const kiln::kernels::lapack::c128*, kiln::kernels::lapack::c128*, const int*, int*);
void ssyevd_(const char*, const char*, const int*, float*, const int*, float*, float*, const int*,
             int*, const int*, int*, size_t, size_t);
void dsyevd_(const char*, const char*, const int*, double*, const int*, double*, double*,
             const int*, int*, const int*, int*, size_t, size_t);
void cheevd_(const char*, const char*, const int*, kiln::kernels::lapack::c64*, const int*, float*,
             kiln::kernels::lapack::c64*, const int*, float*, const int*, int*, const int*, int*,
             size_t, size_t);
void zheevd_(const char*, const char*, const int*, kiln::kernels::lapack::c128*, const int*,
             double*, kiln::kernels::lapack::c128*, const int*, double*, const int*, int*,
             const int*, int*, size_t, size_t);
void sgesdd_(const char*, const int*, const int*, float*, const int*, float*, float*, const int*,
             float*, const int*, float*, const int*, int*, int*, size_t);
void dgesdd_(const char*, const int*, const int*, double*, const int*, double*, double*, const int*,
             double*, const int*, double*, const int*, int*, int*, size_t);
void cgesdd_(const char*, const int*, const int*, kiln::kernels::lapack::c64*, const int*, float*,
             kiln::kernels::lapack::c64*, const int*, kiln::kernels::lapack::c64*, const int*,
             kiln::kernels::lapack::c64*, const int*, float*, int*, int*, size_t);
void zgesdd_(const char*, const int*, const int*, kiln::kernels::lapack::c128*, const int*, double*,
             kiln::kernels::lapack::c128*, const int*, kiln::kernels::lapack::c128*, const int*,
             kiln::kernels::lapack::c128*, const int*, double*, int*, int*, size_t);
}

namespace kiln::kernels::lapack {

#define KILN_LAPACK_DEFINE(p, T, R)                                                \
  void potrf(char uplo, int n, T* a, int lda, int* info) {                         \
    p##potrf_(&uplo, &n, a, &lda, info, 1);                                        \
  }                                                                                \
  void getrf(int m, int n, T* a, int lda, int* ipiv, int* info) {                  \
    p##getrf_(&m, &n, a, &lda, ipiv, info);                                        \
  }                                                                                \
  void geqrf(int m, int n, T* a, int lda, T* tau, T* work, int lwork, int* info) { \
    p##geqrf_(&m, &n, a, &lda, tau, work, &lwork, info);                           \
  }
KILN_LAPACK_DEFINE(s, float, float)
KILN_LAPACK_DEFINE(d, double, double)
KILN_LAPACK_DEFINE(c, c64, float)
KILN_LAPACK_DEFINE(z, c128, double)
#undef KILN_LAPACK_DEFINE

void orgqr(int m, int n, int k, float* a, int lda, const float* tau, float* work, int lwork,
           int* info) {
  sorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, double* a, int lda, const double* tau, double* work, int lwork,
           int* info) {
  dorgqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, c64* a, int lda, const c64* tau, c64* work, int lwork, int* info) {
  cungqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}
void orgqr(int m, int n, int k, c128* a, int lda, const c128* tau, c128* work, int lwork,
           int* info) {
  zungqr_(&m, &n, &k, a, &lda, tau, work, &lwork, info);
}

void syevd(char jobz, char uplo, int n, float* a, int lda, float* w, float* work, int lwork, float*,
           int, int* iwork, int liwork, int* info) {
  ssyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void syevd(char jobz, char uplo, int n, double* a, int lda, double* w, double* work, int lwork,
           double*, int, int* iwork, int liwork, int* info) {
  dsyevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, iwork, &liwork, info, 1, 1);
}
void syevd(char jobz, char uplo, int n, c64* a, int lda, float* w, c64* work, int lwork,
           float* rwork, int lrwork, int* iwork, int liwork, int* info) {
  cheevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info, 1, 1);
}
void syevd(char jobz, char uplo, int n, c128* a, int lda, double* w, c128* work, int lwork,
           double* rwork, int lrwork, int* iwork, int liwork, int* info) {
  zheevd_(&jobz, &uplo, &n, a, &lda, w, work, &lwork, rwork, &lrwork, iwork, &liwork, info, 1, 1);
}

void gesdd(char jobz, int m, int n, float* a, int lda, float* s, float* u, int ldu, float* vt,
           int ldvt, float* work, int lwork, float*, int* iwork, int* info) {
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, double* a, int lda, double* s, double* u, int ldu, double* vt,
           int ldvt, double* work, int lwork, double*, int* iwork, int* info) {
  dgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, c64* a, int lda, float* s, c64* u, int ldu, c64* vt, int ldvt,
           c64* work, int lwork, float* rwork, int* iwork, int* info) {
  cgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, 1);
}
void gesdd(char jobz, int m, int n, c128* a, int lda, double* s, c128* u, int ldu, c128* vt,
           int ldvt, c128* work, int lwork, double* rwork, int* iwork, int* info) {
  zgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work, &lwork, rwork, iwork, info, 1);
}

}  // namespace kiln::kernels::lapack
