// The eigenproblem targets (kernels/lapack_eigen.cc): geev, gees, gehrd and sytrd / hetrd, checked
// through what their outputs promise (A v = v w, A = Z T Z^T, similarity invariants of the
// reductions), their info paths, and their refusals of malformed calls. Runs under ASan and UBSan
// in CI: the kernels transpose, unpack LAPACK's packed eigenvectors and use workspaces.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <string>
#include <vector>

#include "lapack_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;
using c128 = std::complex<double>;
constexpr int64_t kV = 'V', kN = 'N';

// geev of a real n x n matrix (batch of `batch`): wr, wi, vl, vr, info.
OpBuilder RealGeev(int64_t batch, int64_t n, int64_t left, int64_t right) {
  OpBuilder b = CustomCall("lapack_dgeev_ffi", {{"compute_left", left}, {"compute_right", right}},
                           {Mat(3)}, {Row(2), Row(2), Mat(3), Mat(3), Row(1)});
  b.Operand(DType::kF64, {batch, n, n});
  b.Result(DType::kF64, {batch, n});
  b.Result(DType::kF64, {batch, n});
  b.Result(DType::kC128, {batch, n, n});
  b.Result(DType::kC128, {batch, n, n});
  b.Result(DType::kS32, {batch});
  return b;
}

// max |A v - v w| over the columns of v (row-major n x n), A real.
double EigenResidual(const std::vector<double>& a, const std::vector<c128>& v,
                     const std::vector<c128>& w, int n) {
  double worst = 0;
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      c128 av = 0;
      for (int k = 0; k < n; ++k) av += a[i * n + k] * v[k * n + j];
      worst = std::max(worst, std::abs(av - v[i * n + j] * w[j]));
    }
  }
  return worst;
}

TEST(LapackEigenTest, RealGeevUnpacksConjugatePairs) {
  // Eigenvalues 1 +- 2i (a rotation-scaling block) and 3, mixed by a similarity.
  const int n = 3;
  const std::vector<double> a = {1, -2, 0.5, 2, 1, -1, 0, 0, 3};
  OpBuilder b = RealGeev(1, n, kN, kV);
  auto out = RunTarget(b, "lapack_dgeev_ffi", {MakeArray(DType::kF64, {1, n, n}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<double> wr = ToVector<double>((*out)[0]), wi = ToVector<double>((*out)[1]);
  EXPECT_EQ(ToVector<int32_t>((*out)[4])[0], 0);
  std::vector<c128> w(n);
  int pairs = 0;
  for (int j = 0; j < n; ++j) {
    w[j] = c128(wr[j], wi[j]);
    if (wi[j] != 0) ++pairs;
  }
  EXPECT_EQ(pairs, 2);
  const std::vector<c128> vr = ToVector<c128>((*out)[3]);
  EXPECT_LT(EigenResidual(a, vr, w, n), 1e-12);
  // Left vectors were not asked for: zeros, never stale memory.
  for (c128 z : ToVector<c128>((*out)[2])) EXPECT_EQ(z, c128(0));
}

TEST(LapackEigenTest, RealGeevNonFiniteInputIsInfoMinusFourForThatMatrixOnly) {
  const int n = 2;
  std::vector<double> a = {2, 1, 1, 3, 1, NAN, 0, 1};
  OpBuilder b = RealGeev(2, n, kV, kV);
  auto out = RunTarget(b, "lapack_dgeev_ffi", {MakeArray(DType::kF64, {2, n, n}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<int32_t> info = ToVector<int32_t>((*out)[4]);
  EXPECT_EQ(info[0], 0);
  EXPECT_EQ(info[1], -4);
  const std::vector<double> wr = ToVector<double>((*out)[0]);
  EXPECT_TRUE(std::isfinite(wr[0]) && std::isfinite(wr[1]));
  EXPECT_TRUE(std::isnan(wr[2]) && std::isnan(wr[3]));
}

TEST(LapackEigenTest, ComplexGeevReconstructs) {
  const int n = 3;
  const std::vector<double> re = Randn(n * n, 11), im = Randn(n * n, 12);
  std::vector<c128> a(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = c128(re[i], im[i]);
  OpBuilder b = CustomCall("lapack_zgeev_ffi", {{"compute_left", kV}, {"compute_right", kV}},
                           {Mat(2)}, {Row(1), Mat(2), Mat(2), Row(0)});
  b.Operand(DType::kC128, {n, n});
  b.Result(DType::kC128, {n});
  b.Result(DType::kC128, {n, n});
  b.Result(DType::kC128, {n, n});
  b.Result(DType::kS32, {});
  auto out = RunTarget(b, "lapack_zgeev_ffi", {MakeArray(DType::kC128, {n, n}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<c128> w = ToVector<c128>((*out)[0]), vr = ToVector<c128>((*out)[2]);
  ExpectClose(
      MatMul(a, vr, n, n, n),
      [&] {
        std::vector<c128> vw = vr;
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < n; ++j) vw[i * n + j] *= w[j];
        return vw;
      }(),
      1e-12);
}

TEST(LapackEigenTest, GeesReconstructsAndReportsNoSelection) {
  const int n = 4;
  const std::vector<double> a = Randn(n * n, 13);
  OpBuilder b = CustomCall("lapack_dgees_ffi", {{"mode", kV}, {"sort", kN}}, {Mat(2)},
                           {Mat(2), Mat(2), Row(1), Row(1), Row(0), Row(0)});
  b.Operand(DType::kF64, {n, n});
  b.Result(DType::kF64, {n, n});
  b.Result(DType::kF64, {n, n});
  b.Result(DType::kF64, {n});
  b.Result(DType::kF64, {n});
  b.Result(DType::kS32, {});
  b.Result(DType::kS32, {});
  auto out = RunTarget(b, "lapack_dgees_ffi", {MakeArray(DType::kF64, {n, n}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<double> t = ToVector<double>((*out)[0]), z = ToVector<double>((*out)[1]);
  ExpectClose(MatMul(MatMul(z, t, n, n, n), z, n, n, n, /*transpose_b=*/true), a, 1e-12);
  for (int i = 2; i < n; ++i)
    for (int j = 0; j + 1 < i; ++j) EXPECT_EQ(t[i * n + j], 0.0) << i << "," << j;
  EXPECT_EQ(ToVector<int32_t>((*out)[4])[0], 0);  // sdim: nothing selected without sorting
  EXPECT_EQ(ToVector<int32_t>((*out)[5])[0], 0);
  // The trace is the sum of the eigenvalues.
  double trace = 0, sum = 0;
  const std::vector<double> wr = ToVector<double>((*out)[2]);
  for (int i = 0; i < n; ++i) trace += a[i * n + i], sum += wr[i];
  EXPECT_NEAR(trace, sum, 1e-12);
}

// gehrd and sytrd are orthogonal similarities: trace and Frobenius norm are kept.
TEST(LapackEigenTest, GehrdAndSytrdKeepTraceAndNorm) {
  const int n = 5;
  const std::vector<double> a = Randn(n * n, 14);
  OpBuilder h = CustomCall("lapack_dgehrd_ffi", {{"low", 1}, {"high", n}}, {Mat(2)},
                           {Mat(2), Row(1), Row(0)});
  h.Operand(DType::kF64, {n, n});
  h.Result(DType::kF64, {n, n});
  h.Result(DType::kF64, {n - 1});
  h.Result(DType::kS32, {});
  auto out = RunTarget(h, "lapack_dgehrd_ffi", {MakeArray(DType::kF64, {n, n}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<double> hr = ToVector<double>((*out)[0]);
  double trace_a = 0, trace_h = 0, norm_a = 0, norm_h = 0;
  for (int i = 0; i < n; ++i) {
    trace_a += a[i * n + i];
    trace_h += hr[i * n + i];
    for (int j = 0; j < n; ++j) {
      norm_a += a[i * n + j] * a[i * n + j];
      if (j >= i - 1) norm_h += hr[i * n + j] * hr[i * n + j];  // H: on and above the subdiagonal
    }
  }
  EXPECT_NEAR(trace_a, trace_h, 1e-12);
  EXPECT_NEAR(norm_a, norm_h, 1e-10);

  std::vector<double> s = MatMul(a, a, n, n, n, /*transpose_b=*/true);  // symmetric
  OpBuilder t = CustomCall("lapack_dsytrd_ffi", {{"uplo", 'U'}}, {Mat(2)},
                           {Mat(2), Row(1), Row(1), Row(1), Row(0)});
  t.Operand(DType::kF64, {n, n});
  t.Result(DType::kF64, {n, n});
  t.Result(DType::kF64, {n});
  t.Result(DType::kF64, {n - 1});
  t.Result(DType::kF64, {n - 1});
  t.Result(DType::kS32, {});
  auto tri = RunTarget(t, "lapack_dsytrd_ffi", {MakeArray(DType::kF64, {n, n}, s)});
  ASSERT_TRUE(tri.ok()) << tri.status().ToString();
  const std::vector<double> d = ToVector<double>((*tri)[1]), e = ToVector<double>((*tri)[2]);
  double trace_s = 0, norm_s = 0, trace_t = 0, norm_t = 0;
  for (int i = 0; i < n; ++i) {
    trace_s += s[i * n + i];
    trace_t += d[i];
    norm_t += d[i] * d[i] + (i + 1 < n ? 2 * e[i] * e[i] : 0.0);
    for (int j = 0; j < n; ++j) norm_s += s[i * n + j] * s[i * n + j];
  }
  EXPECT_NEAR(trace_s, trace_t, 1e-10);
  EXPECT_NEAR(norm_s, norm_t, 1e-8 * norm_s);
}

TEST(LapackEigenTest, RefusesMalformedCalls) {
  auto lower = [](OpBuilder& b, const std::string& target) { return LowerTarget(b, target); };
  // An attribute missing, and one with a value LAPACK does not know.
  {
    OpBuilder b = CustomCall("lapack_dgeev_ffi", {{"compute_left", kN}}, {Mat(3)},
                             {Row(2), Row(2), Mat(3), Mat(3), Row(1)});
    b.Operand(DType::kF64, {1, 2, 2});
    b.Result(DType::kF64, {1, 2});
    b.Result(DType::kF64, {1, 2});
    b.Result(DType::kC128, {1, 2, 2});
    b.Result(DType::kC128, {1, 2, 2});
    b.Result(DType::kS32, {1});
    const Status s = lower(b, "lapack_dgeev_ffi");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("compute_right"), std::string::npos) << s.ToString();
  }
  {
    OpBuilder b = RealGeev(1, 2, 'X', kV);
    const Status s = lower(b, "lapack_dgeev_ffi");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("compute_left"), std::string::npos) << s.ToString();
  }
  // Eigenvectors stated row-major: taken as XLA takes them (the column-major bytes LAPACK writes,
  // read row-major; kernels/lapack.h, Relayout), not refused.
  {
    OpBuilder b = CustomCall("lapack_dgeev_ffi", {{"compute_left", kN}, {"compute_right", kV}},
                             {Mat(3)}, {Row(2), Row(2), Mat(3), Row(3), Row(1)});
    b.Operand(DType::kF64, {1, 2, 2});
    b.Result(DType::kF64, {1, 2});
    b.Result(DType::kF64, {1, 2});
    b.Result(DType::kC128, {1, 2, 2});
    b.Result(DType::kC128, {1, 2, 2});
    b.Result(DType::kS32, {1});
    const Status s = lower(b, "lapack_dgeev_ffi");
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  // Real eigenvectors where geev returns complex ones.
  {
    OpBuilder b = CustomCall("lapack_dgeev_ffi", {{"compute_left", kN}, {"compute_right", kV}},
                             {Mat(2)}, {Row(1), Row(1), Mat(2), Mat(2), Row(0)});
    b.Operand(DType::kF64, {2, 2});
    b.Result(DType::kF64, {2});
    b.Result(DType::kF64, {2});
    b.Result(DType::kF64, {2, 2});
    b.Result(DType::kF64, {2, 2});
    b.Result(DType::kS32, {});
    EXPECT_EQ(lower(b, "lapack_dgeev_ffi").code(), StatusCode::kInvalidArgument);
  }
  // gees: sorting needs a select function JAX never passes; non-square input.
  {
    OpBuilder b = CustomCall("lapack_sgees_ffi", {{"mode", kV}, {"sort", 'S'}}, {Mat(2)},
                             {Mat(2), Mat(2), Row(1), Row(1), Row(0), Row(0)});
    b.Operand(DType::kF32, {2, 2});
    b.Result(DType::kF32, {2, 2});
    b.Result(DType::kF32, {2, 2});
    b.Result(DType::kF32, {2});
    b.Result(DType::kF32, {2});
    b.Result(DType::kS32, {});
    b.Result(DType::kS32, {});
    const Status s = lower(b, "lapack_sgees_ffi");
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
    EXPECT_NE(s.message().find("sort"), std::string::npos) << s.ToString();
  }
  {
    OpBuilder b = CustomCall("lapack_cgees_ffi", {{"mode", kV}, {"sort", kN}}, {Mat(2)},
                             {Mat(2), Mat(2), Row(1), Row(0), Row(0)});
    b.Operand(DType::kC64, {2, 3});
    b.Result(DType::kC64, {2, 3});
    b.Result(DType::kC64, {2, 3});
    b.Result(DType::kC64, {2});
    b.Result(DType::kS32, {});
    b.Result(DType::kS32, {});
    const Status s = lower(b, "lapack_cgees_ffi");
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("square"), std::string::npos) << s.ToString();
  }
  // gehrd: a row range outside the matrix.
  for (auto [low, high] : {std::pair<int64_t, int64_t>{0, 3}, {2, 1}, {1, 4}}) {
    OpBuilder b = CustomCall("lapack_dgehrd_ffi", {{"low", low}, {"high", high}}, {Mat(2)},
                             {Mat(2), Row(1), Row(0)});
    b.Operand(DType::kF64, {3, 3});
    b.Result(DType::kF64, {3, 3});
    b.Result(DType::kF64, {2});
    b.Result(DType::kS32, {});
    EXPECT_EQ(lower(b, "lapack_dgehrd_ffi").code(), StatusCode::kInvalidArgument)
        << low << ".." << high;
  }
  // hetrd: d and e must be real; a tau of the wrong length.
  {
    OpBuilder b = CustomCall("lapack_zhetrd_ffi", {{"uplo", 'L'}}, {Mat(2)},
                             {Mat(2), Row(1), Row(1), Row(1), Row(0)});
    b.Operand(DType::kC128, {3, 3});
    b.Result(DType::kC128, {3, 3});
    b.Result(DType::kC128, {3});
    b.Result(DType::kF64, {2});
    b.Result(DType::kC128, {2});
    b.Result(DType::kS32, {});
    EXPECT_EQ(lower(b, "lapack_zhetrd_ffi").code(), StatusCode::kInvalidArgument);
  }
  {
    OpBuilder b = CustomCall("lapack_dsytrd_ffi", {{"uplo", 'L'}}, {Mat(2)},
                             {Mat(2), Row(1), Row(1), Row(1), Row(0)});
    b.Operand(DType::kF64, {3, 3});
    b.Result(DType::kF64, {3, 3});
    b.Result(DType::kF64, {3});
    b.Result(DType::kF64, {2});
    b.Result(DType::kF64, {3});
    b.Result(DType::kS32, {});
    EXPECT_EQ(lower(b, "lapack_dsytrd_ffi").code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace kiln::testing
