// select_simd.h's AVX2 blocks against the choice they make per element (p != 0 ? a : b), for 4-
// and 8-byte words, predicate bytes of any non-zero value, every block count and offset.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

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

}  // namespace
}  // namespace kiln::kernels::ew
