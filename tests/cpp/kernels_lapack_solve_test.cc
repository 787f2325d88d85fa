// QR with column pivoting and applying Q (kernels/lapack_factor.cc: geqp3, ormqr), tridiagonal
// solves and SVD by QR iteration (kernels/lapack_solve.cc: gtsv, tridiagonal_solve_perturbed_ffi;
// lapack_svd.cc: gesvd): results checked through what they promise, info paths, refusals of
// malformed calls. Runs under ASan and UBSan in CI.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "lapack_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

// Row-major n x n tridiagonal matrix from (dl[1..n), d, du[0..n-1)).
std::vector<double> Dense(const std::vector<double>& dl, const std::vector<double>& d,
                          const std::vector<double>& du) {
  const int n = static_cast<int>(d.size());
  std::vector<double> t(static_cast<size_t>(n) * n, 0.0);
  for (int i = 0; i < n; ++i) {
    t[i * n + i] = d[i];
    if (i > 0) t[i * n + i - 1] = dl[i];
    if (i + 1 < n) t[i * n + i + 1] = du[i];
  }
  return t;
}

OpBuilder Tridiagonal(const std::string& target, int64_t n, int64_t nrhs,
                      DType dtype = DType::kF64) {
  const bool perturbed = target == "tridiagonal_solve_perturbed_ffi";
  OpBuilder b = CustomCall(target, {}, {Row(1), Row(1), Row(1), Mat(2)},
                           perturbed ? std::vector<Form>{Mat(2)}
                                     : std::vector<Form>{Row(1), Row(1), Row(1), Mat(2), Row(0)});
  for (int i = 0; i < 3; ++i) b.Operand(dtype, {n});
  b.Operand(dtype, {n, nrhs});
  if (!perturbed) {
    for (int i = 0; i < 3; ++i) b.Result(dtype, {n});
  }
  b.Result(dtype, {n, nrhs});
  if (!perturbed) b.Result(DType::kS32, {});
  return b;
}

TEST(LapackSolveTest, GtsvSolvesAndReportsSingular) {
  const int n = 5, nrhs = 2;
  std::vector<double> dl = Randn(n, 21), d = Randn(n, 22), du = Randn(n, 23);
  const std::vector<double> rhs = Randn(n * nrhs, 24);
  OpBuilder b = Tridiagonal("lapack_dgtsv_ffi", n, nrhs);
  auto arrays = [&] {
    return std::vector<Array>{MakeArray(DType::kF64, {n}, dl), MakeArray(DType::kF64, {n}, d),
                              MakeArray(DType::kF64, {n}, du),
                              MakeArray(DType::kF64, {n, nrhs}, rhs)};
  };
  auto out = RunTarget(b, "lapack_dgtsv_ffi", arrays());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<int32_t>((*out)[4])[0], 0);
  ExpectClose(MatMul(Dense(dl, d, du), ToVector<double>((*out)[3]), n, n, nrhs), rhs, 1e-10);

  // Row 2 all zero: singular, LAPACK's info names the zero pivot (> 0).
  dl[2] = d[2] = du[2] = 0;
  OpBuilder s = Tridiagonal("lapack_dgtsv_ffi", n, nrhs);
  out = RunTarget(s, "lapack_dgtsv_ffi", arrays());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_GT(ToVector<int32_t>((*out)[4])[0], 0);
}

TEST(LapackSolveTest, PerturbedSolveMatchesAndStaysFiniteOnSingularSystems) {
  const int n = 6, nrhs = 3;
  std::vector<double> dl = Randn(n, 31), d = Randn(n, 32), du = Randn(n, 33);
  const std::vector<double> rhs = Randn(n * nrhs, 34);
  auto run = [&]() {
    OpBuilder b = Tridiagonal("tridiagonal_solve_perturbed_ffi", n, nrhs);
    return RunTarget(b, "tridiagonal_solve_perturbed_ffi",
                     {MakeArray(DType::kF64, {n}, dl), MakeArray(DType::kF64, {n}, d),
                      MakeArray(DType::kF64, {n}, du), MakeArray(DType::kF64, {n, nrhs}, rhs)});
  };
  auto out = run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ExpectClose(MatMul(Dense(dl, d, du), ToVector<double>((*out)[0]), n, n, nrhs), rhs, 1e-9);

  // Exactly singular (row 2 all zero): the perturbed pivots keep every entry finite.
  dl[2] = d[2] = du[2] = 0;
  out = run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  for (double x : ToVector<double>((*out)[0])) EXPECT_TRUE(std::isfinite(x));
}

TEST(LapackSolveTest, TridiagonalRefusals) {
  // Integer systems: the perturbed solve takes its type from its operands.
  OpBuilder i = Tridiagonal("tridiagonal_solve_perturbed_ffi", 3, 1, DType::kS32);
  const Status si = LowerTarget(i, "tridiagonal_solve_perturbed_ffi");
  EXPECT_EQ(si.code(), StatusCode::kUnimplemented);
  EXPECT_NE(si.message().find("tridiagonal_solve_perturbed_ffi"), std::string::npos);
  // Diagonals of another length than b's rows.
  OpBuilder b = CustomCall("lapack_dgtsv_ffi", {}, {Row(1), Row(1), Row(1), Mat(2)},
                           {Row(1), Row(1), Row(1), Mat(2), Row(0)});
  b.Operand(DType::kF64, {4});
  b.Operand(DType::kF64, {3});
  b.Operand(DType::kF64, {3});
  b.Operand(DType::kF64, {3, 2});
  for (int k = 0; k < 3; ++k) b.Result(DType::kF64, {3});
  b.Result(DType::kF64, {3, 2});
  b.Result(DType::kS32, {});
  EXPECT_EQ(LowerTarget(b, "lapack_dgtsv_ffi").code(), StatusCode::kInvalidArgument);
  // The right-hand sides stated row-major: taken as XLA takes them (kernels/lapack.h, Relayout).
  OpBuilder r = CustomCall("lapack_sgtsv_ffi", {}, {Row(1), Row(1), Row(1), Row(2)},
                           {Row(1), Row(1), Row(1), Mat(2), Row(0)});
  for (int k = 0; k < 3; ++k) r.Operand(DType::kF32, {3});
  r.Operand(DType::kF32, {3, 2});
  for (int k = 0; k < 3; ++k) r.Result(DType::kF32, {3});
  r.Result(DType::kF32, {3, 2});
  r.Result(DType::kS32, {});
  const Status sr = LowerTarget(r, "lapack_sgtsv_ffi");
  EXPECT_TRUE(sr.ok()) << sr.ToString();
}

TEST(LapackSolveTest, Geqp3PivotsAndOrgqrReconstructs) {
  const int m = 5, n = 4;
  std::vector<double> a = Randn(m * n, 41);
  for (int i = 0; i < m; ++i) a[i * n + 3] = 10 * a[i * n + 3];  // column 3 dominates
  OpBuilder g = CustomCall("lapack_dgeqp3_ffi", {}, {Mat(2), Row(1)}, {Mat(2), Row(1), Row(1)});
  g.Operand(DType::kF64, {m, n});
  g.Operand(DType::kS32, {n});
  g.Result(DType::kF64, {m, n});
  g.Result(DType::kS32, {n});
  g.Result(DType::kF64, {n});
  auto qr = RunTarget(
      g, "lapack_dgeqp3_ffi",
      {MakeArray(DType::kF64, {m, n}, a), MakeArray(DType::kS32, {n}, std::vector<int32_t>(n, 0))});
  ASSERT_TRUE(qr.ok()) << qr.status().ToString();
  const std::vector<int32_t> p = ToVector<int32_t>((*qr)[1]);
  EXPECT_EQ(p[0], 4);  // 1-based: the dominant column first
  std::vector<bool> seen(n, false);
  for (int32_t j : p) {
    ASSERT_GE(j, 1);
    ASSERT_LE(j, n);
    seen[j - 1] = true;
  }
  for (bool s : seen) EXPECT_TRUE(s);
  OpBuilder o = CustomCall("lapack_dorgqr_ffi", {}, {Mat(2), Row(1)}, {Mat(2)});
  o.Operand(DType::kF64, {m, n});
  o.Operand(DType::kF64, {n});
  o.Result(DType::kF64, {m, n});
  auto q = RunTarget(o, "lapack_dorgqr_ffi", {(*qr)[0], (*qr)[2]});
  ASSERT_TRUE(q.ok()) << q.status().ToString();
  const std::vector<double> rf = ToVector<double>((*qr)[0]);
  std::vector<double> r(n * n, 0.0), ap(m * n);
  for (int i = 0; i < n; ++i)
    for (int j = i; j < n; ++j) r[i * n + j] = rf[i * n + j];
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) ap[i * n + j] = a[i * n + (p[j] - 1)];
  ExpectClose(MatMul(ToVector<double>((*q)[0]), r, m, n, n), ap, 1e-10);
}

TEST(LapackSolveTest, OrmqrAppliesQAndItsTranspose) {
  const int m = 5, n = 3, cols = 2;
  const std::vector<double> a = Randn(m * n, 51), c = Randn(m * cols, 52);
  OpBuilder g = CustomCall("lapack_dgeqrf_ffi", {}, {Mat(2)}, {Mat(2), Row(1)});
  g.Operand(DType::kF64, {m, n});
  g.Result(DType::kF64, {m, n});
  g.Result(DType::kF64, {n});
  auto qr = RunTarget(g, "lapack_dgeqrf_ffi", {MakeArray(DType::kF64, {m, n}, a)});
  ASSERT_TRUE(qr.ok()) << qr.status().ToString();
  auto apply = [&](bool transpose, const Array& rhs) {
    OpBuilder b =
        CustomCall("lapack_dormqr_ffi", {Flag("left", true), Flag("transpose", transpose)},
                   {Mat(2), Row(1), Mat(2)}, {Mat(2)});
    b.Operand(DType::kF64, {m, n});
    b.Operand(DType::kF64, {n});
    b.Operand(DType::kF64, {m, cols});
    b.Result(DType::kF64, {m, cols});
    return RunTarget(b, "lapack_dormqr_ffi", {(*qr)[0], (*qr)[1], rhs});
  };
  auto qtc = apply(true, MakeArray(DType::kF64, {m, cols}, c));
  ASSERT_TRUE(qtc.ok()) << qtc.status().ToString();
  auto back = apply(false, (*qtc)[0]);  // Q Q^T c = c
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ExpectClose(ToVector<double>((*back)[0]), c, 1e-12);
  // An array of another shape than the call states (3 columns for 2): refused at run time.
  auto mismatched = apply(true, MakeArray(DType::kF64, {m, n}, a));
  EXPECT_FALSE(mismatched.ok());
  // Reflectors that do not fit c: a of 4 rows for a left-applied Q of order 5.
  OpBuilder bad = CustomCall("lapack_dormqr_ffi", {Flag("left", true), Flag("transpose", false)},
                             {Mat(2), Row(1), Mat(2)}, {Mat(2)});
  bad.Operand(DType::kF64, {4, n});
  bad.Operand(DType::kF64, {n});
  bad.Operand(DType::kF64, {m, cols});
  bad.Result(DType::kF64, {m, cols});
  EXPECT_EQ(LowerTarget(bad, "lapack_dormqr_ffi").code(), StatusCode::kInvalidArgument);
}

TEST(LapackSolveTest, GesvdReconstructsAndRefusesOverwriteMode) {
  const int m = 3, n = 5, k = 3;
  const std::vector<double> a = Randn(m * n, 61);
  OpBuilder s = CustomCall("lapack_dgesvd_ffi", {{"mode", 'S'}}, {Mat(2)},
                           {Mat(2), Row(1), Mat(2), Mat(2), Row(0)});
  s.Operand(DType::kF64, {m, n});
  s.Result(DType::kF64, {m, n});
  s.Result(DType::kF64, {k});
  s.Result(DType::kF64, {m, k});
  s.Result(DType::kF64, {k, n});
  s.Result(DType::kS32, {});
  auto svd = RunTarget(s, "lapack_dgesvd_ffi", {MakeArray(DType::kF64, {m, n}, a)});
  ASSERT_TRUE(svd.ok()) << svd.status().ToString();
  std::vector<double> us = ToVector<double>((*svd)[2]);
  const std::vector<double> sv = ToVector<double>((*svd)[1]);
  EXPECT_GE(sv[0], sv[1]);
  EXPECT_GE(sv[1], sv[2]);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j) us[i * k + j] *= sv[j];
  ExpectClose(MatMul(us, ToVector<double>((*svd)[3]), m, k, n), a, 1e-12);

  OpBuilder o = CustomCall("lapack_dgesvd_ffi", {{"mode", 'O'}}, {Mat(2)},
                           {Mat(2), Row(1), Mat(2), Mat(2), Row(0)});
  o.Operand(DType::kF64, {m, n});
  o.Result(DType::kF64, {m, n});
  o.Result(DType::kF64, {k});
  o.Result(DType::kF64, {m, k});
  o.Result(DType::kF64, {k, n});
  o.Result(DType::kS32, {});
  EXPECT_EQ(LowerTarget(o, "lapack_dgesvd_ffi").code(), StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace kiln::testing
