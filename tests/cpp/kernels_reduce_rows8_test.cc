// avx2::ReduceRows8 (kernels/reduce_rows8.h): up to eight short rows at once must give each row
// exactly the one-row leaf's bits (reduce::ReduceLeaf, and a plain scalar 32-lane tree written
// here).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reduce_fast.h"
#include "kernels/reduce_rows8.h"
#include "kernels/reduce_simd.h"
#include "tests/cpp/reduce_test_util.h"

namespace kiln::testing {
namespace {

using kernels::ReducerKind;

template <ReducerKind K>
void ExpectRows8MatchOneRow() {
  std::mt19937 rng(7);
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(), inf, -inf, -0.0f, 0.0f,
                            std::numeric_limits<float>::denorm_min()};
  std::uniform_real_distribution<float> value(-4, 4);
  std::vector<int64_t> lengths;
  for (int64_t n = 1; n <= 300; ++n) lengths.push_back(n);
  lengths.push_back(kernels::kShortRowMax);
  for (int64_t n : lengths) {
    for (int pattern = 0; pattern < 3; ++pattern) {
      // 0: ordinary values with a few specials; 1: rare specials; 2: rows of all -inf (masked).
      std::vector<std::vector<float>> x(8, std::vector<float>(static_cast<size_t>(n)));
      for (size_t r = 0; r < 8; ++r) {
        for (float& v : x[r]) {
          if (pattern == 2 && r % 2 == 0) {
            v = -inf;
          } else if (pattern == 0 && rng() % 8 == 0) {
            v = specials[rng() % 6];
          } else if (pattern == 1 && rng() % 97 == 0) {
            v = specials[rng() % 6];
          } else {
            v = value(rng);
          }
        }
      }
      const float* rows[8];
      for (int r = 0; r < 8; ++r) rows[r] = x[static_cast<size_t>(r)].data();
      const int m = 1 + static_cast<int>((n + pattern) % 8);  // 1..8 rows
      float got[8];
      kernels::avx2::ReduceRows8(K, rows, m, n, kernels::ReducerFn<K, float>::Identity(), got);
      for (int r = 0; r < m; ++r) {
        const float want = ScalarLeaf<K, float>(rows[r], n);
        const float leaf = kernels::reduce::ReduceLeaf<K, float>(rows[r], n);
        ASSERT_TRUE(SameBitsOrBothNan(got[r], want))
            << kernels::ReducerName(K) << " n=" << n << " pattern " << pattern << " row " << r
            << ": " << got[r] << " vs " << want;
        ASSERT_TRUE(SameBitsOrBothNan(got[r], leaf)) << kernels::ReducerName(K) << " n=" << n;
      }
    }
  }
}

TEST(ReduceRows8Test, SumMatchesOneRowBits) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  ExpectRows8MatchOneRow<ReducerKind::kAdd>();
}
TEST(ReduceRows8Test, ProductMatchesOneRowBits) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  ExpectRows8MatchOneRow<ReducerKind::kMultiply>();
}
TEST(ReduceRows8Test, MaximumMatchesOneRowBits) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  ExpectRows8MatchOneRow<ReducerKind::kMaximum>();
}
TEST(ReduceRows8Test, MinimumMatchesOneRowBits) {
  if (!kernels::ReduceSimdAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  ExpectRows8MatchOneRow<ReducerKind::kMinimum>();
}

}  // namespace
}  // namespace kiln::testing
