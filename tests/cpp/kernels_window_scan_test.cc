// The tree-ordered scan of kernels/window_scan.h: its results against an independent recursive
// statement of the order (bit for bit), segmented runs against whole ones, the error bound, and
// NaN/inf propagation.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/window_scan.h"

namespace kiln::kernels {
namespace {

template <typename T>
struct AddOp {
  using Storage = T;
  using Value = T;
  static constexpr bool kVectorizable = false;
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<T>;
      return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
    } else {
      return a + b;
    }
  }
};

// The same sum taking 16-byte vectors too (the kernel's float rows run so).
struct VectorAddOp : AddOp<float> {
  static constexpr bool kVectorizable = true;
  using AddOp<float>::operator();
  template <typename Vec>
  Vec operator()(Vec a, Vec b) const {
    return a + b;
  }
};

// The order as window_scan.h states it, written recursively over whole arrays.
template <typename T, typename F>
std::vector<T> Reference(const std::vector<T>& x, T init, const F& f) {
  const size_t n = x.size(), block = static_cast<size_t>(kScanBlock);
  std::vector<T> local(n), y(n);
  for (size_t i = 0; i < n; ++i) local[i] = i % block == 0 ? x[i] : f(local[i - 1], x[i]);
  std::vector<T> totals(n / block);
  for (size_t b = 0; b < totals.size(); ++b) totals[b] = local[b * block + block - 1];
  const std::vector<T> up = totals.empty() ? std::vector<T>{} : Reference(totals, init, f);
  for (size_t i = 0; i < n; ++i) {
    const size_t b = i / block;
    if (b < up.size() && i % block == block - 1) {
      y[i] = up[b];
    } else {
      y[i] = f(b == 0 ? init : up[b - 1], local[i]);
    }
  }
  return y;
}

std::vector<float> Normals(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (float& v : x) v = d(rng);
  return x;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Column j of a [n, w] array (row stride w), read forwards or backwards.
std::vector<float> Column(const std::vector<float>& a, int64_t n, int64_t w, int64_t j, bool back) {
  std::vector<float> c(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    c[static_cast<size_t>(k)] = a[static_cast<size_t>((back ? n - 1 - k : k) * w + j)];
  }
  return c;
}

TEST(WindowScanTest, LevelsCoverTheLine) {
  EXPECT_EQ(ScanLevels(1), 1);
  EXPECT_EQ(ScanLevels(15), 1);
  EXPECT_EQ(ScanLevels(16), 2);
  EXPECT_EQ(ScanLevels(255), 2);
  EXPECT_EQ(ScanLevels(256), 3);
  EXPECT_EQ(ScanLevels(int64_t{1} << 20), 6);
}

// Lengths around every block boundary, one and several columns, forwards and backwards, a
// non-identity init, rows in vectors: the same bits as the recursive statement.
TEST(WindowScanTest, MatchesTheRecursiveOrderBitForBit) {
  const VectorAddOp op;
  for (int64_t n : {1, 2, 15, 16, 17, 31, 255, 256, 257, 4095, 4096, 4097, 70001}) {
    for (int64_t w : {1, 3, 8, 19}) {
      for (bool back : {false, true}) {
        SCOPED_TRACE("n " + std::to_string(n) + " w " + std::to_string(w) + (back ? " back" : ""));
        const std::vector<float> x = Normals(static_cast<size_t>(n * w), static_cast<uint32_t>(n));
        std::vector<float> y(x.size());
        const std::vector<float> init(static_cast<size_t>(w), 0.25f);
        const int64_t start = back ? (n - 1) * w : 0, stride = back ? -w : w;
        ScanLine(op, w, init.data(), x.data() + start, stride, y.data() + start, stride, n);
        for (int64_t j = 0; j < w; ++j) {
          const std::vector<float> want = Reference(Column(x, n, w, j, back), 0.25f, op);
          const std::vector<float> got = Column(y, n, w, j, back);
          for (size_t k = 0; k < want.size(); ++k) {
            ASSERT_TRUE(SameBits(got[k], want[k]))
                << "column " << j << " position " << k << ": " << got[k] << " vs " << want[k];
          }
        }
      }
    }
  }
}

// Split into segments of 16^k positions run in any order, the results are the whole run's bits:
// the thread count cannot change them.
TEST(WindowScanTest, SegmentsGiveTheWholeLinesBits) {
  const AddOp<float> op;
  for (int64_t n : {4096, 4097, 70000, 65536 * 3 + 5}) {
    for (int64_t w : {1, 5}) {
      const std::vector<float> x = Normals(static_cast<size_t>(n * w), 7);
      const std::vector<float> init(static_cast<size_t>(w), 0.0f);
      std::vector<float> whole(x.size());
      ScanLine(op, w, init.data(), x.data(), w, whole.data(), w, n);
      for (int k = 1; k <= 4; ++k) {
        SCOPED_TRACE("n " + std::to_string(n) + " w " + std::to_string(w) + " k " +
                     std::to_string(k));
        std::vector<float> split(x.size());
        auto backwards = [](int64_t count, auto&& fn) {
          for (int64_t i = count; i-- > 0;) fn(i);
        };
        ScanSegments([&] { return op; }, backwards, k, w, init.data(), x.data(), w, split.data(), w,
                     n);
        for (size_t i = 0; i < x.size(); ++i) ASSERT_TRUE(SameBits(split[i], whole[i])) << i;
      }
    }
  }
}

// 2^20 standard normals: the error against a double sum stays within the bound of the header's
// comment, (16 L) u sum|x| with L = 5 levels, and far below a running float sum's.
TEST(WindowScanTest, ErrorGrowsWithTheLevelsNotTheLength) {
  const int64_t n = int64_t{1} << 20;
  const std::vector<float> x = Normals(static_cast<size_t>(n), 11);
  std::vector<float> y(x.size());
  const float init = 0.0f;
  ScanLine(AddOp<float>{}, 1, &init, x.data(), 1, y.data(), 1, n);
  double exact = 0, abs_sum = 0, tree_err = 0, running_err = 0;
  float running = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    exact += x[i];
    abs_sum += std::fabs(x[i]);
    running += x[i];
    tree_err = std::max(tree_err, std::fabs(y[i] - exact));
    running_err = std::max(running_err, std::fabs(running - exact));
  }
  const double u = std::numeric_limits<float>::epsilon() / 2;
  EXPECT_LT(tree_err, 16 * 5 * u * abs_sum);
  EXPECT_LT(tree_err * 10, running_err);
}

// NaN and infinities reach exactly the outputs whose windows hold them, as in a running sum.
TEST(WindowScanTest, NanAndInfinityPropagateFromWhereTheyAre) {
  const int64_t n = 1000;
  std::vector<float> x = Normals(static_cast<size_t>(n), 3);
  x[300] = std::numeric_limits<float>::infinity();
  x[517] = -std::numeric_limits<float>::infinity();
  x[900] = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> y(x.size());
  const float init = 0.0f;
  ScanLine(AddOp<float>{}, 1, &init, x.data(), 1, y.data(), 1, n);
  for (int64_t i = 0; i < n; ++i) {
    const float v = y[static_cast<size_t>(i)];
    if (i < 300) {
      EXPECT_TRUE(std::isfinite(v)) << i;
    } else if (i < 517) {
      EXPECT_EQ(v, std::numeric_limits<float>::infinity()) << i;
    } else {
      EXPECT_TRUE(std::isnan(v)) << i;
    }
  }
}

// Integers wrap, and any order gives the running sum's values.
TEST(WindowScanTest, IntegerSumsEqualTheRunningSum) {
  const int64_t n = 5000;
  std::vector<int32_t> x(static_cast<size_t>(n));
  std::mt19937 rng(5);
  for (int32_t& v : x) v = static_cast<int32_t>(rng());
  std::vector<int32_t> y(x.size());
  const int32_t init = 7;
  ScanLine(AddOp<int32_t>{}, 1, &init, x.data(), 1, y.data(), 1, n);
  uint32_t running = 7;
  for (size_t i = 0; i < x.size(); ++i) {
    running += static_cast<uint32_t>(x[i]);
    ASSERT_EQ(y[i], static_cast<int32_t>(running)) << i;
  }
}

}  // namespace
}  // namespace kiln::kernels
