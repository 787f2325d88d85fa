// avx2::ReduceColumnStrips (kernels/reduce_columns_avx2.cc): column folds with the accumulators in
// registers give the same bits as ReduceColumnsOf's order written out here with the scalar
// ReducerFn (init, then each row; with more than `block` rows, each block from its first row,
// joined to init in block order), for every width from 1 to 70 (strips of four vectors, of one,
// and single columns), row counts on both sides of the block, rows apart in memory, NaNs,
// infinities and signed zeros; and ReduceFast, which uses it for short output rows, agrees.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reduce_fast.h"
#include "kernels/reduce_simd.h"
#include "kernels/scalar_body.h"

namespace kiln::testing {
namespace {

using kernels::ReducerKind;

template <typename T>
T Draw(std::mt19937& rng) {
  const int k = std::uniform_int_distribution<int>(0, 40)(rng);
  if (k == 0) return std::numeric_limits<T>::infinity();
  if (k == 1) return -std::numeric_limits<T>::infinity();
  if (k == 2) return std::numeric_limits<T>::quiet_NaN();
  if (k == 3) return T(-0.0);
  if (k == 4) return T(0.0);
  return static_cast<T>(std::uniform_real_distribution<double>(-2.0, 2.0)(rng));
}

template <ReducerKind K, typename T>
T Model(const T* base, const std::vector<int64_t>& offs, int64_t block, T init) {
  using F = kernels::ReducerFn<K, T>;
  const int64_t rows = static_cast<int64_t>(offs.size());
  if (rows <= block) {
    for (int64_t r = 0; r < rows; ++r) init = F::Apply(init, base[offs[r]]);
    return init;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += block) {
    T part = base[offs[r0]];
    for (int64_t r = r0 + 1; r < std::min(rows, r0 + block); ++r)
      part = F::Apply(part, base[offs[r]]);
    init = F::Apply(init, part);
  }
  return init;
}

template <typename U, typename T>
void ExpectSameBits(T got, T want, int64_t j) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "column " << j;
  } else {
    EXPECT_EQ(std::bit_cast<U>(got), std::bit_cast<U>(want)) << "column " << j;
  }
}

template <ReducerKind K, typename T, typename U>
void Check(uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr int64_t kBlock = 8;  // small, so the blocked order is reached with few rows
  for (int64_t w = 1; w <= 70; ++w) {
    for (int64_t rows : {1, 2, 7, 8, 9, 16, 17, 30}) {
      const int64_t stride = w + 3;  // rows apart, with a gap the fold must not read
      std::vector<T> x(static_cast<size_t>(stride * rows));
      for (T& v : x) v = Draw<T>(rng);
      std::vector<int64_t> offs(static_cast<size_t>(rows));
      for (int64_t r = 0; r < rows; ++r) offs[r] = (rows - 1 - r) * stride;  // any order
      const T init = K == ReducerKind::kMultiply ? T(1) : T(0.25);
      std::vector<T> got(static_cast<size_t>(w) + 1, T(7));
      kernels::avx2::ReduceColumnStrips(K, x.data(), offs.data(), rows, kBlock, w, init,
                                        got.data());
      SCOPED_TRACE(::testing::Message() << "w " << w << " rows " << rows);
      for (int64_t j = 0; j < w; ++j) {
        ExpectSameBits<U>(got[j], Model<K, T>(x.data() + j, offs, kBlock, init), j);
      }
      EXPECT_EQ(got[w], T(7));  // nothing past the output row written
    }
  }
}

TEST(ReduceStripsTest, RegisterColumnFoldsMatchTheScalarOrder) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2";
  Check<ReducerKind::kAdd, float, uint32_t>(1);
  Check<ReducerKind::kMultiply, float, uint32_t>(2);
  Check<ReducerKind::kMaximum, float, uint32_t>(3);
  Check<ReducerKind::kMinimum, float, uint32_t>(4);
  Check<ReducerKind::kAdd, double, uint64_t>(5);
  Check<ReducerKind::kMultiply, double, uint64_t>(6);
  Check<ReducerKind::kMaximum, double, uint64_t>(7);
  Check<ReducerKind::kMinimum, double, uint64_t>(8);
}

// ReduceFast over a middle axis (the bench's f64[37, 129, 65] maximum over axis 1, and a sum with
// more rows than kRowBlock) against the scalar order.
TEST(ReduceStripsTest, MiddleAxisReductionsUseTheSameOrder) {
  std::mt19937 rng(9);
  const std::vector<int64_t> dims = {5, 129, 65};
  const kernels::reduce::ReduceGeometry g =
      kernels::reduce::AnalyzeReduce(dims, {false, true, false});
  std::vector<double> x(5 * 129 * 65);
  for (double& v : x) v = Draw<double>(rng);
  std::vector<double> got(5 * 65);
  std::vector<int64_t> offs(129);
  for (int64_t r = 0; r < 129; ++r) offs[r] = r * 65;
  kernels::reduce::ReduceFast<ReducerKind::kMaximum, double>(g, x.data(), -1.0 / 0.0, got.data());
  for (int64_t p = 0; p < 5; ++p) {
    for (int64_t j = 0; j < 65; ++j) {
      ExpectSameBits<uint64_t>(
          got[p * 65 + j],
          Model<ReducerKind::kMaximum, double>(x.data() + p * 129 * 65 + j, offs,
                                               kernels::reduce::kRowBlock, -1.0 / 0.0),
          j);
    }
  }
  kernels::reduce::ReduceFast<ReducerKind::kAdd, double>(g, x.data(), 0.0, got.data());
  for (int64_t p = 0; p < 5; ++p) {
    for (int64_t j = 0; j < 65; ++j) {
      ExpectSameBits<uint64_t>(got[p * 65 + j],
                               Model<ReducerKind::kAdd, double>(x.data() + p * 129 * 65 + j, offs,
                                                                kernels::reduce::kRowBlock, 0.0),
                               j);
    }
  }
}

}  // namespace
}  // namespace kiln::testing
