// stablehlo.dot_general / stablehlo.dot against a naive reference over the StableHLO definition.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/families.h"
#include "kernels/float16.h"
#include "kernels/lowering.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

lower::LowerFn DotGeneral() {
  return FindLowering(&kernels::RegisterLinalgOps, "stablehlo.dot_general");
}
lower::LowerFn Dot() { return FindLowering(&kernels::RegisterLinalgOps, "stablehlo.dot"); }

struct DotDims {
  std::vector<int64_t> lb, rb, lc, rc;
};

int64_t Numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

std::vector<int64_t> FreeAxes(size_t rank, const std::vector<int64_t>& a,
                              const std::vector<int64_t>& b) {
  std::vector<int64_t> f;
  for (int64_t d = 0; d < static_cast<int64_t>(rank); ++d) {
    if (std::find(a.begin(), a.end(), d) == a.end() && std::find(b.begin(), b.end(), d) == b.end())
      f.push_back(d);
  }
  return f;
}

std::vector<int64_t> ResultDims(const std::vector<int64_t>& ld, const std::vector<int64_t>& rd,
                                const DotDims& dd) {
  std::vector<int64_t> out;
  for (int64_t a : dd.lb) out.push_back(ld[a]);
  for (int64_t a : FreeAxes(ld.size(), dd.lb, dd.lc)) out.push_back(ld[a]);
  for (int64_t a : FreeAxes(rd.size(), dd.rb, dd.rc)) out.push_back(rd[a]);
  return out;
}

int64_t Flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}

// result[batch, lhs free, rhs free] = sum over contracting indices, straight from the spec.
std::vector<double> ReferenceDot(const std::vector<double>& l, const std::vector<int64_t>& ld,
                                 const std::vector<double>& r, const std::vector<int64_t>& rd,
                                 const DotDims& dd) {
  std::vector<int64_t> out_dims = ResultDims(ld, rd, dd);
  std::vector<int64_t> lf = FreeAxes(ld.size(), dd.lb, dd.lc),
                       rf = FreeAxes(rd.size(), dd.rb, dd.rc);
  std::vector<int64_t> csizes;
  for (int64_t a : dd.lc) csizes.push_back(ld[a]);
  std::vector<double> out(static_cast<size_t>(Numel(out_dims)), 0.0);
  std::vector<int64_t> oi(out_dims.size(), 0);
  for (size_t o = 0; o < out.size(); ++o) {
    std::vector<int64_t> li(ld.size()), ri(rd.size());
    size_t p = 0;
    for (size_t i = 0; i < dd.lb.size(); ++i, ++p) {
      li[dd.lb[i]] = oi[p];
      ri[dd.rb[i]] = oi[p];
    }
    for (int64_t a : lf) li[a] = oi[p++];
    for (int64_t a : rf) ri[a] = oi[p++];
    double acc = 0;
    std::vector<int64_t> ci(csizes.size(), 0);
    if (Numel(csizes) > 0) {
      do {
        for (size_t i = 0; i < ci.size(); ++i) {
          li[dd.lc[i]] = ci[i];
          ri[dd.rc[i]] = ci[i];
        }
        acc += l[Flat(ld, li)] * r[Flat(rd, ri)];
      } while (kernels::NextIndex(ci, csizes));
    }
    out[o] = acc;
    kernels::NextIndex(oi, out_dims);
  }
  return out;
}

std::vector<double> SmallInts(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(-4, 4);
  std::vector<double> v(n);
  for (double& x : v) x = dist(rng);
  return v;
}

std::vector<double> Reals(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v(n);
  for (double& x : v) x = static_cast<float>(dist(rng));
  return v;
}

template <typename T>
std::vector<T> Cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

struct DotCase {
  std::string name;
  std::vector<int64_t> ld, rd;
  DotDims dd;
};

// The einsums of the op tests plus the MLP's forward and gradient products.
std::vector<DotCase> Cases() {
  return {
      {"bij,bjk->bik", {4, 3, 5}, {4, 5, 2}, {{0}, {0}, {2}, {1}}},
      {"ji,jk->ik (A^T B)", {5, 3}, {5, 4}, {{}, {}, {0}, {0}}},
      {"ij,kj->ik (A B^T)", {3, 5}, {4, 5}, {{}, {}, {1}, {1}}},
      {"ji,kj->ik", {5, 3}, {4, 5}, {{}, {}, {0}, {1}}},
      {"abij,abjk->abik", {2, 3, 4, 5}, {2, 3, 5, 2}, {{0, 1}, {0, 1}, {3}, {2}}},
      {"ibj,bjk->bik", {3, 4, 5}, {4, 5, 2}, {{1}, {0}, {2}, {1}}},
      {"bij,bkj->bik", {2, 3, 4}, {2, 5, 4}, {{0}, {0}, {2}, {2}}},
      {"ijk,jkl->il", {2, 3, 4}, {3, 4, 5}, {{}, {}, {1, 2}, {0, 1}}},
      {"ikj,jkl->il (contracting order differs from memory)",
       {2, 4, 3},
       {3, 4, 5},
       {{}, {}, {2, 1}, {0, 1}}},
      {"i,j->ij", {4}, {3}, {{}, {}, {}, {}}},
      {"bi,bi->b", {6, 5}, {6, 5}, {{0}, {0}, {1}, {1}}},
      {"i,i->", {7}, {7}, {{}, {}, {0}, {0}}},
      {"mlp forward", {64, 784}, {784, 128}, {{}, {}, {1}, {0}}},
      {"mlp dW2 = h^T g", {64, 10}, {64, 128}, {{}, {}, {0}, {0}}},
      {"mlp dh = g W2^T", {64, 10}, {128, 10}, {{}, {}, {1}, {1}}},
      {"unit dims", {1, 3, 1}, {1, 1, 3, 2}, {{0}, {1}, {1}, {2}}},
      {"empty K", {2, 0}, {0, 3}, {{}, {}, {1}, {0}}},
      {"empty M", {0, 4}, {4, 3}, {{}, {}, {1}, {0}}},
  };
}

OpBuilder BuildDot(const DotCase& c, DType lt, DType rt, DType out) {
  OpBuilder b("stablehlo.dot_general");
  b.Operand(lt, c.ld);
  b.Operand(rt, c.rd);
  b.Result(out, ResultDims(c.ld, c.rd, c.dd));
  b.Ints("lhs_batching_dimensions", c.dd.lb);
  b.Ints("rhs_batching_dimensions", c.dd.rb);
  b.Ints("lhs_contracting_dimensions", c.dd.lc);
  b.Ints("rhs_contracting_dimensions", c.dd.rc);
  b.Attr("precision_config",
         ir::Attr::Array({ir::Attr::Enum("DEFAULT"), ir::Attr::Enum("DEFAULT")}));
  b.Attr("lhs_precision_type", ir::Attr::None());
  return b;
}

template <typename T>
void ExpectClose(const std::vector<T>& got, const std::vector<double>& want, double rtol,
                 double atol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(static_cast<double>(got[i]) - want[i]), atol + rtol * std::abs(want[i]))
        << "at " << i << ": " << got[i] << " vs " << want[i];
  }
}

TEST(DotGeneralTest, FloatCasesMatchReference) {
  for (const DotCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::vector<double> l = Reals(static_cast<size_t>(Numel(c.ld)), 1),
                        r = Reals(static_cast<size_t>(Numel(c.rd)), 2);
    std::vector<double> want = ReferenceDot(l, c.ld, r, c.rd, c.dd);
    {
      OpBuilder b = BuildDot(c, DType::kF32, DType::kF32, DType::kF32);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(DotGeneral(), ctx,
                             {MakeArray(DType::kF32, c.ld, Cast<float>(l)),
                              MakeArray(DType::kF32, c.rd, Cast<float>(r))});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ((*out)[0].dims, ResultDims(c.ld, c.rd, c.dd));
      // f32 rounding of partial sums up to ~sqrt(784) in size: absolute error around 1e-5.
      ExpectClose(ToVector<float>((*out)[0]), want, 1e-5, 1e-4);
    }
    {
      OpBuilder b = BuildDot(c, DType::kF64, DType::kF64, DType::kF64);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(DotGeneral(), ctx,
                             {MakeArray(DType::kF64, c.ld, l), MakeArray(DType::kF64, c.rd, r)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectClose(ToVector<double>((*out)[0]), want, 1e-12, 1e-12);
    }
  }
}

TEST(DotGeneralTest, IntegerAndPredCasesMatchReference) {
  for (const DotCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::vector<double> l = SmallInts(static_cast<size_t>(Numel(c.ld)), 3),
                        r = SmallInts(static_cast<size_t>(Numel(c.rd)), 4);
    std::vector<double> want = ReferenceDot(l, c.ld, r, c.rd, c.dd);
    {
      OpBuilder b = BuildDot(c, DType::kS32, DType::kS32, DType::kS32);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(DotGeneral(), ctx,
                             {MakeArray(DType::kS32, c.ld, Cast<int32_t>(l)),
                              MakeArray(DType::kS32, c.rd, Cast<int32_t>(r))});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectClose(ToVector<int32_t>((*out)[0]), want, 0, 0);
    }
    {
      // preferred_element_type: i8 x i8 -> i32.
      OpBuilder b = BuildDot(c, DType::kS8, DType::kS8, DType::kS32);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(DotGeneral(), ctx,
                             {MakeArray(DType::kS8, c.ld, Cast<int8_t>(l)),
                              MakeArray(DType::kS8, c.rd, Cast<int8_t>(r))});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectClose(ToVector<int32_t>((*out)[0]), want, 0, 0);
    }
    {
      std::vector<double> lp(l.size()), rp(r.size());
      for (size_t i = 0; i < l.size(); ++i) lp[i] = l[i] > 1;
      for (size_t i = 0; i < r.size(); ++i) rp[i] = r[i] > 1;
      std::vector<double> want_or = ReferenceDot(lp, c.ld, rp, c.rd, c.dd);
      for (double& w : want_or) w = w != 0;
      OpBuilder b = BuildDot(c, DType::kPred, DType::kPred, DType::kPred);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(DotGeneral(), ctx,
                             {MakeArray(DType::kPred, c.ld, Cast<uint8_t>(lp)),
                              MakeArray(DType::kPred, c.rd, Cast<uint8_t>(rp))});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectClose(ToVector<uint8_t>((*out)[0]), want_or, 0, 0);
    }
  }
}

TEST(DotGeneralTest, Bf16OperandsAccumulateInF32) {
  DotCase c{"bf16", {4, 6}, {6, 3}, {{}, {}, {1}, {0}}};
  std::vector<double> l = Reals(24, 5), r = Reals(18, 6);
  std::vector<uint16_t> lb, rb;
  for (double& x : l) {
    lb.push_back(kernels::FloatToBf16Bits(static_cast<float>(x)));
    x = kernels::Bf16BitsToFloat(lb.back());
  }
  for (double& x : r) {
    rb.push_back(kernels::FloatToBf16Bits(static_cast<float>(x)));
    x = kernels::Bf16BitsToFloat(rb.back());
  }
  std::vector<double> want = ReferenceDot(l, c.ld, r, c.rd, c.dd);
  {
    OpBuilder b = BuildDot(c, DType::kBF16, DType::kBF16, DType::kF32);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(DotGeneral(), ctx,
                           {MakeArray(DType::kBF16, c.ld, lb), MakeArray(DType::kBF16, c.rd, rb)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    ExpectClose(ToVector<float>((*out)[0]), want, 1e-6, 1e-6);
  }
  {
    OpBuilder b = BuildDot(c, DType::kBF16, DType::kBF16, DType::kBF16);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(DotGeneral(), ctx,
                           {MakeArray(DType::kBF16, c.ld, lb), MakeArray(DType::kBF16, c.rd, rb)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    // One rounding of the f32 accumulation to bf16 (8 significant bits).
    std::vector<uint16_t> got = ToVector<uint16_t>((*out)[0]);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(kernels::Bf16BitsToFloat(got[i]), want[i], std::abs(want[i]) * (1.0 / 256) + 1e-6)
          << i;
    }
  }
}

TEST(DotTest, LegacyDotMatrixVector) {
  OpBuilder b("stablehlo.dot");
  b.Operand(DType::kF32, {2, 3});
  b.Operand(DType::kF32, {3});
  b.Result(DType::kF32, {2});
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(Dot(), ctx,
                         {MakeArray<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                          MakeArray<float>(DType::kF32, {3}, {1, 0, -1})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{-2, -2}));
}

TEST(DotGeneralTest, RejectsInconsistentDimensionNumbers) {
  DotCase ok{"ok", {3, 4}, {4, 5}, {{}, {}, {1}, {0}}};
  {
    DotCase c = ok;
    c.dd.rc = {1};  // contracting sizes 4 vs 5
    OpBuilder b("stablehlo.dot_general");
    b.Operand(DType::kF32, c.ld);
    b.Operand(DType::kF32, c.rd);
    b.Result(DType::kF32, {3, 4});
    b.Ints("lhs_contracting_dimensions", c.dd.lc);
    b.Ints("rhs_contracting_dimensions", c.dd.rc);
    FakeLowerContext ctx(b);
    auto k = DotGeneral()(ctx);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
  }
  {
    OpBuilder b = BuildDot(ok, DType::kF32, DType::kF32, DType::kF32);
    b.op().attrs[2].value = IntsAttr({2});  // lhs_contracting_dimensions out of range
    FakeLowerContext ctx(b);
    EXPECT_EQ(DotGeneral()(ctx).status().code(), StatusCode::kInvalidArgument);
  }
  {
    OpBuilder b("stablehlo.dot_general");
    b.Operand(DType::kF32, ok.ld);
    b.Operand(DType::kF32, ok.rd);
    b.Result(DType::kF32, {5, 3});  // wrong result shape
    b.Ints("lhs_contracting_dimensions", ok.dd.lc);
    b.Ints("rhs_contracting_dimensions", ok.dd.rc);
    FakeLowerContext ctx(b);
    EXPECT_EQ(DotGeneral()(ctx).status().code(), StatusCode::kInvalidArgument);
  }
}

// ---------------------------------------------------------------------------------------------
// cholesky / triangular_solve

lower::LowerFn Cholesky() {
  return FindLowering(&kernels::RegisterLinalgOps, "stablehlo.cholesky");
}
lower::LowerFn TriangularSolve() {
  return FindLowering(&kernels::RegisterLinalgOps, "stablehlo.triangular_solve");
}

TEST(CholeskyTest, SpecExampleLowerAndUpper) {
  std::vector<double> a = {1, 2, 3, 2, 20, 26, 3, 26, 70};
  for (bool lower : {true, false}) {
    OpBuilder b("stablehlo.cholesky");
    b.Operand(DType::kF64, {3, 3});
    b.Result(DType::kF64, {3, 3});
    b.Bool("lower", lower);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(Cholesky(), ctx, {MakeArray(DType::kF64, {3, 3}, a)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<double> l = {1, 0, 0, 2, 4, 0, 3, 5, 6};
    std::vector<double> u = {1, 2, 3, 0, 4, 5, 0, 0, 6};
    ExpectClose(ToVector<double>((*out)[0]), lower ? l : u, 1e-12, 1e-12);
  }
}

TEST(CholeskyTest, BatchedRandomSpdAndFailure) {
  // Two SPD matrices A = M M^T + n I, then one that is not positive definite (NaNs).
  const int64_t n = 5;
  std::vector<double> m = Reals(2 * n * n, 11), a(3 * n * n, 0.0);
  for (int64_t bi = 0; bi < 2; ++bi) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = i == j ? static_cast<double>(n) : 0.0;
        for (int64_t k = 0; k < n; ++k)
          sum += m[bi * n * n + i * n + k] * m[bi * n * n + j * n + k];
        a[bi * n * n + i * n + j] = static_cast<float>(sum);
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) a[2 * n * n + i * n + i] = i == 2 ? -1.0 : 1.0;
  OpBuilder b("stablehlo.cholesky");
  b.Operand(DType::kF32, {3, n, n});
  b.Result(DType::kF32, {3, n, n});
  b.Bool("lower", true);
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(Cholesky(), ctx, {MakeArray(DType::kF32, {3, n, n}, Cast<float>(a))});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> l = ToVector<float>((*out)[0]);
  for (int64_t bi = 0; bi < 2; ++bi) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (j > i) {
          EXPECT_EQ(l[bi * n * n + i * n + j], 0.0f);
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k)
          sum += l[bi * n * n + i * n + k] * l[bi * n * n + j * n + k];
        EXPECT_NEAR(sum, a[bi * n * n + i * n + j], 1e-4);
      }
    }
  }
  for (int64_t i = 0; i < n * n; ++i) EXPECT_TRUE(std::isnan(l[2 * n * n + i]));
}

TEST(TriangularSolveTest, EveryVariantSolvesItsSystem) {
  const int64_t n = 4, k = 3;
  // A well-conditioned triangular-ish matrix; the other triangle holds junk that must be ignored.
  std::vector<double> a = Reals(2 * n * n, 21);
  for (int64_t bi = 0; bi < 2; ++bi) {
    for (int64_t i = 0; i < n; ++i) a[bi * n * n + i * n + i] += 4.0;
  }
  for (bool left : {true, false}) {
    for (bool lower : {true, false}) {
      for (const char* transpose : {"NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"}) {
        for (bool unit : {false, true}) {
          SCOPED_TRACE(std::string(left ? "left " : "right ") + (lower ? "lower " : "upper ") +
                       transpose + (unit ? " unit" : ""));
          std::vector<int64_t> bdims =
              left ? std::vector<int64_t>{2, n, k} : std::vector<int64_t>{2, k, n};
          std::vector<double> rhs = Reals(2 * n * k, 22);
          OpBuilder b("stablehlo.triangular_solve");
          b.Operand(DType::kF64, {2, n, n});
          b.Operand(DType::kF64, bdims);
          b.Result(DType::kF64, bdims);
          b.Bool("left_side", left);
          b.Bool("lower", lower);
          b.Bool("unit_diagonal", unit);
          b.Attr("transpose_a", ir::Attr::Enum(transpose));
          FakeLowerContext ctx(b);
          auto out = LowerAndRun(
              TriangularSolve(), ctx,
              {MakeArray(DType::kF64, {2, n, n}, a), MakeArray(DType::kF64, bdims, rhs)});
          ASSERT_TRUE(out.ok()) << out.status().ToString();
          std::vector<double> x = ToVector<double>((*out)[0]);
          bool trans = std::string(transpose) != "NO_TRANSPOSE";
          // op(A) as the solver sees it: the chosen triangle, unit diagonal if asked, transposed.
          auto op_a = [&](int64_t bi, int64_t i, int64_t j) {
            int64_t r = trans ? j : i, c = trans ? i : j;
            if (r == c) return unit ? 1.0 : a[bi * n * n + r * n + c];
            bool in_triangle = lower ? c < r : c > r;
            return in_triangle ? a[bi * n * n + r * n + c] : 0.0;
          };
          int64_t rows = bdims[1], cols = bdims[2];
          for (int64_t bi = 0; bi < 2; ++bi) {
            for (int64_t i = 0; i < rows; ++i) {
              for (int64_t j = 0; j < cols; ++j) {
                double sum = 0;
                for (int64_t t = 0; t < n; ++t) {
                  sum += left ? op_a(bi, i, t) * x[bi * rows * cols + t * cols + j]
                              : x[bi * rows * cols + i * cols + t] * op_a(bi, t, j);
                }
                EXPECT_NEAR(sum, rhs[bi * rows * cols + i * cols + j], 1e-9);
              }
            }
          }
        }
      }
    }
  }
}

TEST(TriangularSolveTest, RejectsMismatchedShapes) {
  OpBuilder b("stablehlo.triangular_solve");
  b.Operand(DType::kF32, {3, 3});
  b.Operand(DType::kF32, {4, 2});
  b.Result(DType::kF32, {4, 2});
  b.Bool("left_side", true);
  FakeLowerContext ctx(b);
  EXPECT_EQ(TriangularSolve()(ctx).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::testing
