// select_simd.h's AVX2 blocks against the choice they make per element (p != 0 ? a : b), for 4-
// and 8-byte words, predicate bytes of any non-zero value, every block count and offset; and
// compare_simd.h's f32 compares against C++'s operators on values with NaNs, infinities, signed
// zeros and equal pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/compare_simd.h"
#include "kernels/select_simd.h"

namespace kiln::kernels::ew {
namespace {

template <typename W>
void ExpectBlocksChoose() {
  std::mt19937_64 rng(35);
  for (int64_t n : {0, 1, 7, 8, 9, 16, 31, 64, 1000, 1031}) {
    for (int64_t offset : {0, 1, 3}) {
      std::vector<uint8_t> p(static_cast<size_t>(n + offset));
      std::vector<W> a(p.size()), b(p.size()), y(p.size(), W{0x5a});
      for (size_t i = 0; i < p.size(); ++i) {
        const uint64_t r = rng();
        p[i] = r % 3 == 0 ? 0 : static_cast<uint8_t>(1 + r % 255);  // any non-zero byte is true
        a[i] = static_cast<W>(rng());
        b[i] = static_cast<W>(rng());
      }
      const auto o = static_cast<size_t>(offset);
      const int64_t r = SelectBlocks(p.data() + o, a.data() + o, b.data() + o, y.data() + o, n);
      ASSERT_GE(r, 0);
      ASSERT_LE(r, n);
      EXPECT_EQ(r % 8, 0);
      if (__builtin_cpu_supports("avx2")) {
        EXPECT_EQ(r, n / 8 * 8) << "n " << n;
      }
      for (int64_t i = 0; i < r; ++i) {
        const size_t k = o + static_cast<size_t>(i);
        ASSERT_EQ(y[k], p[k] != 0 ? a[k] : b[k]) << "n " << n << " element " << i;
      }
      for (int64_t i = r; i < n; ++i) {  // the rest untouched
        ASSERT_EQ(y[o + static_cast<size_t>(i)], W{0x5a});
      }
    }
  }
}

TEST(SelectSimd, FourByteBlocksChooseAsThePredicateSays) { ExpectBlocksChoose<uint32_t>(); }
TEST(SelectSimd, EightByteBlocksChooseAsThePredicateSays) { ExpectBlocksChoose<uint64_t>(); }

TEST(CompareSimd, F32BlocksAreTheIeeePredicates) {
  std::mt19937_64 rng(36);
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, std::nanf(""), 2.5f};
  for (int64_t n : {0, 5, 8, 17, 64, 1031}) {
    std::vector<float> a(static_cast<size_t>(n)), b(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = special[rng() % 8];
      b[i] = rng() % 4 == 0 ? a[i] : special[rng() % 8];
    }
    for (int dir = 0; dir < 4; ++dir) {
      std::vector<uint8_t> y(a.size(), 7);
      const int64_t r = CompareF32Blocks(dir, a.data(), b.data(), y.data(), n);
      if (__builtin_cpu_supports("avx2")) {
        EXPECT_EQ(r, n / 8 * 8);
      }
      for (int64_t i = 0; i < r; ++i) {
        const float x = a[static_cast<size_t>(i)], z = b[static_cast<size_t>(i)];
        const bool want = dir == 0 ? x == z : dir == 1 ? x != z : dir == 2 ? x < z : x <= z;
        ASSERT_EQ(y[static_cast<size_t>(i)], want ? 1 : 0) << dir << " " << x << " " << z;
      }
      for (int64_t i = r; i < n; ++i) ASSERT_EQ(y[static_cast<size_t>(i)], 7);
    }
  }
}

}  // namespace
}  // namespace kiln::kernels::ew
