// Column reductions split over blocks of rows (kernels/reduce_blocks.h): the same bits as
// ReduceFast's column walk, for every reducer, f32 and f64, several reduced axes, long and odd
// columns, NaNs, infinities and signed zeros.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/reduce_blocks.h"
#include "kernels/reduce_fast.h"
#include "runtime/parallel.h"

namespace kiln::testing {
namespace {

using kernels::ReducerKind;
using kernels::reduce::AnalyzeReduce;
using kernels::reduce::ReduceGeometry;

template <typename T>
std::vector<T> Values(size_t n, bool specials, std::mt19937& rng) {
  std::uniform_int_distribution<int> kind(0, 60);
  std::uniform_real_distribution<double> value(-2.0, 2.0);
  std::vector<T> v(n);
  for (T& x : v) {
    const int k = specials ? kind(rng) : 10;
    if (k == 0) {
      x = std::numeric_limits<T>::infinity();
    } else if (k == 1) {
      x = -std::numeric_limits<T>::infinity();
    } else if (k == 2) {
      x = std::numeric_limits<T>::quiet_NaN();
    } else if (k == 3) {
      x = T(-0.0);
    } else {
      x = static_cast<T>(value(rng));
    }
  }
  return v;
}

template <typename U, typename T>
void ExpectSameBits(const std::vector<T>& got, const std::vector<T>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
    } else {
      EXPECT_EQ(std::bit_cast<U>(got[i]), std::bit_cast<U>(want[i])) << "at " << i;
    }
  }
}

template <ReducerKind K, typename T, typename U>
void Check(uint32_t seed, bool specials) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int split = 0;
  for (int trial = 0; trial < 30; ++trial) {
    // [reduced, (kept,) (reduced,) kept]: long columns (65 to 700 rows, odd counts included), a
    // second reduced axis, few or many columns.
    std::vector<int64_t> dims = {pick(65, 700)};
    std::vector<bool> reduced = {true};
    if (trial % 3 == 1) {
      dims.push_back(pick(2, 3));
      reduced.push_back(false);
    }
    if (trial % 2 == 1) {
      dims.push_back(pick(2, 5));
      reduced.push_back(true);
    }
    const int widths[] = {1, 7, 33, 129, 512, 1000, 2100};
    dims.push_back(widths[pick(0, 6)]);
    reduced.push_back(false);
    const ReduceGeometry g = AnalyzeReduce(dims, reduced);
    if (g.inner_reduced) continue;  // a last axis of 1 leaves rows: not a column reduction
    SCOPED_TRACE("dims " + ::testing::PrintToString(dims) + " reduced " +
                 ::testing::PrintToString(reduced));
    int64_t n = 1, out_n = 1;
    for (size_t d = 0; d < dims.size(); ++d) {
      n *= dims[d];
      if (!reduced[d]) out_n *= dims[d];
    }
    std::vector<T> x = Values<T>(static_cast<size_t>(n), specials, rng);
    const T init = K == ReducerKind::kMultiply ? T(1) : T(0.25);
    std::vector<T> want(static_cast<size_t>(out_n)), got(static_cast<size_t>(out_n));
    kernels::reduce::ReduceFast<K, T>(g, x.data(), init, want.data());
    kernels::reduce::ReduceColumnBlocksOf<K, T>(g, x.data(), init, got.data());
    ExpectSameBits<U>(got, want);
    if (kernels::reduce::SplitsRowBlocks(g, sizeof(T))) ++split;
  }
  if (runtime::NumWorkerThreads() > 1) {
    EXPECT_GT(split, 5);
  }
}

TEST(ReduceBlocksTest, RowBlockSplitMatchesTheColumnWalkBits) {
  for (bool specials : {false, true}) {
    SCOPED_TRACE(specials ? "with specials" : "finite");
    Check<ReducerKind::kAdd, float, uint32_t>(31, specials);
    Check<ReducerKind::kMultiply, float, uint32_t>(32, specials);
    Check<ReducerKind::kMaximum, float, uint32_t>(33, specials);
    Check<ReducerKind::kMinimum, float, uint32_t>(34, specials);
    Check<ReducerKind::kAdd, double, uint64_t>(35, specials);
    Check<ReducerKind::kMaximum, double, uint64_t>(36, specials);
  }
}

TEST(ReduceBlocksTest, ReducedOffsetsFollowTheOdometer) {
  const ReduceGeometry g = AnalyzeReduce({5, 3, 7, 4}, {true, false, true, false});
  std::vector<int64_t> all;
  kernels::reduce::ForEachReducedOffset(g, [&](int64_t off) { all.push_back(off); });
  ASSERT_EQ(all.size(), 35u);
  for (int64_t r = 0; r < 35; ++r) {
    for (int64_t n = 1; r + n <= 35; n += 6) {
      std::vector<int64_t> offs(static_cast<size_t>(n));
      kernels::reduce::ReducedOffsets(g, r, n, offs.data());
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(offs[i], all[r + i]) << r << " " << i;
    }
  }
}

TEST(ReduceBlocksTest, SplitsOnlyLongColumnsWithFewColumnTasks) {
  if (runtime::NumWorkerThreads() < 2) GTEST_SKIP() << "one thread: never splits";
  using kernels::reduce::SplitsRowBlocks;
  EXPECT_TRUE(SplitsRowBlocks(AnalyzeReduce({2048, 512}, {true, false}), 4));
  EXPECT_TRUE(SplitsRowBlocks(AnalyzeReduce({2048, 2048}, {true, false}), 4));
  EXPECT_FALSE(SplitsRowBlocks(AnalyzeReduce({64, 512}, {true, false}), 4));    // one block
  EXPECT_FALSE(SplitsRowBlocks(AnalyzeReduce({2048, 512}, {false, true}), 4));  // rows
  EXPECT_FALSE(SplitsRowBlocks(AnalyzeReduce({64, 300, 16}, {false, true, false}), 4));
  EXPECT_FALSE(SplitsRowBlocks(AnalyzeReduce({1 << 16, 4096}, {true, false}), 4));  // scratch
}

}  // namespace
}  // namespace kiln::testing
