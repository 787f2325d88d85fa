// kernels/matvec.h and Gemm<T>'s matrix-vector path (kernels/gemm.h): products with one side a
// vector, every transpose combination and stride MatVec takes, against a long-double reference
// within a bound on the rounding of the sums; and the layouts it does not take are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/matvec.h"

namespace kiln::testing {
namespace {

// |got - want| <= (k + 2) eps sum |a_i x_i| per output: the bound of any summation order.
template <typename T>
void ExpectClose(const std::vector<T>& got, const std::vector<long double>& want,
                 const std::vector<long double>& magnitude, int64_t k, const char* what) {
  const long double eps = std::numeric_limits<T>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    const long double bound = (k + 2) * eps * magnitude[i] + std::numeric_limits<T>::min();
    EXPECT_LE(std::fabs(static_cast<long double>(got[i]) - want[i]), bound)
        << what << " output " << i << " of " << got.size() << ", k = " << k;
  }
}

// C[m, n] = op(A) op(B) through Gemm<T> (which takes MatVec when m or n is 1) against the
// reference, for every transpose combination.
template <typename T>
void CheckGemm(int64_t m, int64_t n, int64_t k, std::mt19937& rng) {
  std::normal_distribution<double> normal;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      std::vector<T> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n));
      for (T& v : a) v = static_cast<T>(normal(rng));
      for (T& v : b) v = static_cast<T>(normal(rng));
      const int64_t lda = ta ? m : k, ldb = tb ? k : n;
      auto at = [&](int64_t i, int64_t p) {
        return a[static_cast<size_t>(ta ? p * lda + i : i * lda + p)];
      };
      auto bt = [&](int64_t p, int64_t j) {
        return b[static_cast<size_t>(tb ? j * ldb + p : p * ldb + j)];
      };
      std::vector<long double> want(static_cast<size_t>(m * n)), mag(want.size());
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          for (int64_t p = 0; p < k; ++p) {
            const long double prod = static_cast<long double>(at(i, p)) * bt(p, j);
            want[static_cast<size_t>(i * n + j)] += prod;
            mag[static_cast<size_t>(i * n + j)] += std::fabs(prod);
          }
        }
      }
      std::vector<T> c(static_cast<size_t>(m * n), T(-7));
      kernels::Gemm<T>(ta, tb, m, n, k, a.data(), lda, b.data(), ldb, c.data(), n);
      ExpectClose(c, want, mag, k, ta ? (tb ? "TT" : "TN") : (tb ? "NT" : "NN"));
    }
  }
}

TEST(MatVecTest, GemmWithAVectorSideMatchesTheReference) {
  std::mt19937 rng(5);
  // Rows shorter and longer than the lanes, groups of rows and their remainders, outputs in
  // blocks of 1-4 vectors and a tail, k below and above each partial-sum count.
  const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 65, 128};
  for (int64_t m : sizes) {
    for (int64_t k : {int64_t{1}, int64_t{3}, int64_t{8}, int64_t{16}, int64_t{37}, int64_t{128}}) {
      CheckGemm<float>(m, 1, k, rng);
      CheckGemm<float>(1, m, k, rng);
      CheckGemm<double>(m, 1, k, rng);
      CheckGemm<double>(1, m, k, rng);
    }
  }
}

TEST(MatVecTest, SpecialValuesPropagate) {
  if (!kernels::MatVecAvailable()) GTEST_SKIP() << "no AVX2 + FMA";
  // Rows of 16: the grouped-rows path. A NaN or an infinity in a row reaches its output only.
  std::vector<float> a(8 * 16, 1.0f), x(16, 0.5f), y(8, 0.0f);
  a[2 * 16 + 3] = std::nanf("");
  a[5 * 16 + 9] = INFINITY;
  a[6 * 16 + 0] = -INFINITY;
  ASSERT_TRUE(kernels::MatVec(a.data(), 16, 1, x.data(), 1, y.data(), 8, 16));
  for (int i = 0; i < 8; ++i) {
    if (i == 2) {
      EXPECT_TRUE(std::isnan(y[i]));
    } else if (i == 5) {
      EXPECT_EQ(y[i], INFINITY);
    } else if (i == 6) {
      EXPECT_EQ(y[i], -INFINITY);
    } else {
      EXPECT_EQ(y[i], 8.0f) << i;
    }
  }
  // Signed zeros: -0 * 1 summed from +0 gives +0, as any order does.
  std::vector<double> z(4 * 4, -0.0), ones(4, 1.0), out(4, 5.0);
  ASSERT_TRUE(kernels::MatVec(z.data(), 4, 1, ones.data(), 1, out.data(), 4, 4));
  for (double v : out) EXPECT_EQ(v, 0.0);
}

TEST(MatVecTest, RefusesLayoutsItDoesNotTake) {
  std::vector<float> a(64, 1.0f), x(8, 1.0f), y(8, 3.0f);
  // Neither the rows nor the outputs contiguous; rows contiguous but x strided.
  EXPECT_FALSE(kernels::MatVec(a.data(), 8, 2, x.data(), 1, y.data(), 4, 4));
  EXPECT_FALSE(kernels::MatVec(a.data(), 8, 1, x.data(), 2, y.data(), 4, 4));
  for (float v : y) EXPECT_EQ(v, 3.0f);  // nothing written
}

}  // namespace
}  // namespace kiln::testing
