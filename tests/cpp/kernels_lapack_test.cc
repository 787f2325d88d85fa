// LAPACK custom-call targets (kernels/lapack_factor.cc, lapack_eigen.cc, lapack_svd.cc,
// lapack_solve.cc) on small matrices, checked through what each factorization promises (A = L L^T,
// P A = L U, A = Q R, A = V diag(w) V^T, A = U S V^T, A X = B), and their refusals. Runs under ASan
// and UBSan in CI: the kernels transpose and use workspaces.
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

TEST(LapackTest, CholeskyFactorsAndReportsNonPositiveDefinite) {
  // Batch of two: an SPD matrix and a negative definite one.
  const std::vector<double> a = {4, 2, 2, 3, -1, 0, 0, -1};
  OpBuilder b = CustomCall("lapack_dpotrf_ffi", {{"uplo", 'L'}}, {Mat(3)}, {Mat(3), Row(1)});
  b.Operand(DType::kF64, {2, 2, 2});
  b.Result(DType::kF64, {2, 2, 2});
  b.Result(DType::kS32, {2});
  auto out = RunTarget(b, "lapack_dpotrf_ffi", {MakeArray(DType::kF64, {2, 2, 2}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<double> l = ToVector<double>((*out)[0]);
  EXPECT_NEAR(l[0], 2.0, 1e-12);
  EXPECT_NEAR(l[2], 1.0, 1e-12);
  EXPECT_NEAR(l[3], std::sqrt(2.0), 1e-12);
  const std::vector<int32_t> info = ToVector<int32_t>((*out)[1]);
  EXPECT_EQ(info[0], 0);
  EXPECT_GT(info[1], 0);
}

TEST(LapackTest, LuReconstructsWithPivots) {
  const int n = 4;
  const std::vector<double> a = Randn(n * n, 3);
  OpBuilder b = CustomCall("lapack_dgetrf_ffi", {}, {Mat(2)}, {Mat(2), Row(1), Row(0)});
  b.Operand(DType::kF64, {n, n});
  b.Result(DType::kF64, {n, n});
  b.Result(DType::kS32, {n});
  b.Result(DType::kS32, {});
  auto out = RunTarget(b, "lapack_dgetrf_ffi", {MakeArray(DType::kF64, {n, n}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  const std::vector<double> lu = ToVector<double>((*out)[0]);
  const std::vector<int32_t> piv = ToVector<int32_t>((*out)[1]);
  std::vector<double> l(n * n, 0.0), u(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (j < i) l[i * n + j] = lu[i * n + j];
      if (j == i) l[i * n + j] = 1.0;
      if (j >= i) u[i * n + j] = lu[i * n + j];
    }
  std::vector<double> pa = a;  // apply the row swaps in order (1-based pivots)
  for (int i = 0; i < n; ++i) {
    ASSERT_GE(piv[i], 1);
    ASSERT_LE(piv[i], n);
    for (int j = 0; j < n; ++j) std::swap(pa[i * n + j], pa[(piv[i] - 1) * n + j]);
  }
  ExpectClose(MatMul(l, u, n, n, n), pa, 1e-10);
}

TEST(LapackTest, QrAndSvdAndEighReconstruct) {
  const int m = 5, n = 3;
  const std::vector<double> a = Randn(m * n, 4);
  // geqrf then orgqr: Q R = A.
  OpBuilder g = CustomCall("lapack_dgeqrf_ffi", {}, {Mat(2)}, {Mat(2), Row(1)});
  g.Operand(DType::kF64, {m, n});
  g.Result(DType::kF64, {m, n});
  g.Result(DType::kF64, {n});
  auto qr = RunTarget(g, "lapack_dgeqrf_ffi", {MakeArray(DType::kF64, {m, n}, a)});
  ASSERT_TRUE(qr.ok()) << qr.status().ToString();
  OpBuilder o = CustomCall("lapack_dorgqr_ffi", {}, {Mat(2), Row(1)}, {Mat(2)});
  o.Operand(DType::kF64, {m, n});
  o.Operand(DType::kF64, {n});
  o.Result(DType::kF64, {m, n});
  auto q = RunTarget(o, "lapack_dorgqr_ffi", {(*qr)[0], (*qr)[1]});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const std::vector<double> r_full = ToVector<double>((*qr)[0]);
  std::vector<double> r(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j) r[i * n + j] = r_full[i * n + j];
  ExpectClose(MatMul(ToVector<double>((*q)[0]), r, m, n, n), a, 1e-10);

  // gesdd, reduced: U S V^T = A.
  OpBuilder s = CustomCall("lapack_dgesdd_ffi", {{"mode", 'S'}}, {Mat(2)},
                           {Mat(2), Row(1), Mat(2), Mat(2), Row(0)});
  s.Operand(DType::kF64, {m, n});
  s.Result(DType::kF64, {m, n});
  s.Result(DType::kF64, {n});
  s.Result(DType::kF64, {m, n});
  s.Result(DType::kF64, {n, n});
  s.Result(DType::kS32, {});
  auto svd = RunTarget(s, "lapack_dgesdd_ffi", {MakeArray(DType::kF64, {m, n}, a)});
  ASSERT_TRUE(svd.ok()) << svd.status().ToString();
  std::vector<double> us = ToVector<double>((*svd)[2]);
  const std::vector<double> sv = ToVector<double>((*svd)[1]);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) us[i * n + j] *= sv[j];
  ExpectClose(MatMul(us, ToVector<double>((*svd)[3]), m, n, n), a, 1e-10);

  // syevd: V diag(w) V^T = S for S = A^T A.
  std::vector<double> at(n * m);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) at[j * m + i] = a[i * n + j];
  const std::vector<double> ata = MatMul(at, a, n, m, n);
  OpBuilder e = CustomCall("lapack_dsyevd_ffi", {{"mode", 'V'}, {"uplo", 'L'}}, {Mat(2)},
                           {Mat(2), Row(1), Row(0)});
  e.Operand(DType::kF64, {n, n});
  e.Result(DType::kF64, {n, n});
  e.Result(DType::kF64, {n});
  e.Result(DType::kS32, {});
  auto eig = RunTarget(e, "lapack_dsyevd_ffi", {MakeArray(DType::kF64, {n, n}, ata)});
  ASSERT_TRUE(eig.ok()) << eig.status().ToString();
  std::vector<double> vw = ToVector<double>((*eig)[0]);
  const std::vector<double> w = ToVector<double>((*eig)[1]);
  EXPECT_LE(w[0], w[1]);
  EXPECT_LE(w[1], w[2]);
  const std::vector<double> v = vw;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) vw[i * n + j] *= w[j];
  ExpectClose(MatMul(vw, v, n, n, n, /*transpose_b=*/true), ata, 1e-9);
}

TEST(LapackTest, TriangularSolveAndComplexCholesky) {
  const int n = 3;
  const std::vector<double> l = {2, 0, 0, 1, 3, 0, -1, 0.5, 4};
  const std::vector<double> bm = Randn(n * 2, 6);
  OpBuilder t = CustomCall("lapack_dtrsm_ffi",
                           {{"side", 'L'}, {"uplo", 'L'}, {"trans_x", 'N'}, {"diag", 'N'}},
                           {Mat(2), Mat(2)}, {Mat(2)});
  t.Operand(DType::kF64, {n, n});
  t.Operand(DType::kF64, {n, 2});
  t.Result(DType::kF64, {n, 2});
  auto x = RunTarget(t, "lapack_dtrsm_ffi",
                     {MakeArray(DType::kF64, {n, n}, l), MakeArray(DType::kF64, {n, 2}, bm)});
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ExpectClose(MatMul(l, ToVector<double>((*x)[0]), n, n, 2), bm, 1e-12);

  // Hermitian positive definite: L L^H = A.
  const std::vector<c128> h = {{4, 0}, {1, 1}, {1, -1}, {3, 0}};
  OpBuilder c = CustomCall("lapack_zpotrf_ffi", {{"uplo", 'L'}}, {Mat(2)}, {Mat(2), Row(0)});
  c.Operand(DType::kC128, {2, 2});
  c.Result(DType::kC128, {2, 2});
  c.Result(DType::kS32, {});
  auto z = RunTarget(c, "lapack_zpotrf_ffi", {MakeArray(DType::kC128, {2, 2}, h)});
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  const std::vector<c128> f = ToVector<c128>((*z)[0]);
  const c128 l00 = f[0], l10 = f[2], l11 = f[3];
  EXPECT_NEAR(std::abs(l00 * std::conj(l00) - h[0]), 0, 1e-12);
  EXPECT_NEAR(std::abs(l10 * std::conj(l00) - h[2]), 0, 1e-12);
  EXPECT_NEAR(std::abs(l10 * std::conj(l10) + l11 * std::conj(l11) - h[3]), 0, 1e-12);
}

TEST(LapackTest, TriangularSolveTakesOldJaxlibsAlpha) {
  // jaxlib < 0.5.3 passes (a, b, alpha): x = alpha a^-1 b.
  const int n = 3;
  const std::vector<double> l = {2, 0, 0, 1, 3, 0, -1, 0.5, 4};
  const std::vector<double> bm = Randn(n * 2, 7);
  auto solve = [&](Array alpha) {
    const DType alpha_type = alpha.dtype;
    OpBuilder t = CustomCall("lapack_dtrsm_ffi",
                             {{"side", 'L'}, {"uplo", 'L'}, {"trans_x", 'N'}, {"diag", 'N'}},
                             {Mat(2), Mat(2), Row(0)}, {Mat(2)});
    t.Operand(DType::kF64, {n, n});
    t.Operand(DType::kF64, {n, 2});
    t.Operand(alpha_type, {});
    t.Result(DType::kF64, {n, 2});
    return RunTarget(
        t, "lapack_dtrsm_ffi",
        {MakeArray(DType::kF64, {n, n}, l), MakeArray(DType::kF64, {n, 2}, bm), alpha});
  };
  auto x = solve(Scalar<double>(DType::kF64, 2.5));
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  std::vector<double> scaled = bm;
  for (double& v : scaled) v *= 2.5;
  ExpectClose(MatMul(l, ToVector<double>((*x)[0]), n, n, 2), scaled, 1e-12);
  auto wrong = solve(Scalar<float>(DType::kF32, 2.5f));
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("alpha"), std::string::npos) << wrong.status().ToString();
}

TEST(LapackTest, RefusesWrongLayoutsShapesAndTypes) {
  // Row-major matrices where LAPACK reads column-major ones: as XLA does, the target reads the
  // row-major bytes of A as a column-major matrix (A^T, A being square) and its column-major output
  // is read back row-major. So the call on A with row-major layouts gives the transpose of the call
  // on A^T with column-major layouts, and the same pivots.
  const std::vector<double> a = {4, 3, 6, 3};
  const std::vector<double> at = {4, 6, 3, 3};
  OpBuilder b("stablehlo.custom_call");
  b.Attr("call_target_name", ir::Attr::String("lapack_dgetrf_ffi"));
  b.Attr("operand_layouts", ir::Attr::Array({IntsAttr({1, 0})}));
  b.Operand(DType::kF64, {2, 2});
  b.Result(DType::kF64, {2, 2});
  b.Result(DType::kS32, {2});
  b.Result(DType::kS32, {});
  auto out = RunTarget(b, "lapack_dgetrf_ffi", {MakeArray(DType::kF64, {2, 2}, a)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  OpBuilder c = CustomCall("lapack_dgetrf_ffi", {}, {Mat(2)}, {Mat(2), Row(1), Row(0)});
  c.Operand(DType::kF64, {2, 2});
  c.Result(DType::kF64, {2, 2});
  c.Result(DType::kS32, {2});
  c.Result(DType::kS32, {});
  auto want = RunTarget(c, "lapack_dgetrf_ffi", {MakeArray(DType::kF64, {2, 2}, at)});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  const std::vector<double> lu = ToVector<double>((*want)[0]);
  ExpectClose(ToVector<double>((*out)[0]), {lu[0], lu[2], lu[1], lu[3]}, 1e-12);
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), ToVector<int32_t>((*want)[1]));

  // A pivot result of the wrong length.
  OpBuilder p = CustomCall("lapack_dgetrf_ffi", {}, {Mat(2)}, {Mat(2), Row(1), Row(0)});
  p.Operand(DType::kF64, {3, 3});
  p.Result(DType::kF64, {3, 3});
  p.Result(DType::kS32, {2});
  p.Result(DType::kS32, {});
  out = RunTarget(p, "lapack_dgetrf_ffi", {MakeArray(DType::kF64, {3, 3}, std::vector<double>(9))});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);

  // Column-major operands but no result layouts (row-major by default): the results are stored
  // column-major and read row-major, as XLA does (above).
  OpBuilder r("stablehlo.custom_call");
  r.Attr("call_target_name", ir::Attr::String("lapack_dgetrf_ffi"));
  r.Attr("operand_layouts", Layouts({Mat(2)}));
  r.Operand(DType::kF64, {2, 2});
  r.Result(DType::kF64, {2, 2});
  r.Result(DType::kS32, {2});
  r.Result(DType::kS32, {});
  const Status no_results = LowerTarget(r, "lapack_dgetrf_ffi");
  EXPECT_TRUE(no_results.ok()) << no_results.ToString();

  // Integer matrices for a target whose letter names f32: a malformed call, named as such.
  OpBuilder i = CustomCall("lapack_spotrf_ffi", {{"uplo", 'L'}}, {Mat(2)}, {Mat(2), Row(0)});
  i.Operand(DType::kS32, {2, 2});
  i.Result(DType::kS32, {2, 2});
  i.Result(DType::kS32, {});
  out =
      RunTarget(i, "lapack_spotrf_ffi", {MakeArray(DType::kS32, {2, 2}, std::vector<int32_t>(4))});
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find("the target takes f32"), std::string::npos)
      << out.status().message();
  EXPECT_NE(out.status().message().find("f32"), std::string::npos) << out.status().ToString();
}

}  // namespace
}  // namespace kiln::testing
