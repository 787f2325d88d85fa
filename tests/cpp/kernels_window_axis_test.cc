// WindowAxis::At (kernels/window.h) against its definition, by enumeration: along one axis the
// window of output o reads padded positions p = o * stride + w * window_dilation - pad_low for w in
// [0, window), of which those on an input element count (p >= 0, p % base_dilation == 0,
// p / base_dilation < dim). At() answers with an arithmetic progression in O(1): a closed form for
// base dilation 1 (pooling, cumulative sums), a congruence otherwise. Random axes with negative
// padding, dilations and windows longer than the input.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/window.h"

namespace kiln::kernels {
namespace {

std::vector<int64_t> Enumerate(const WindowAxis& a, int64_t o) {
  std::vector<int64_t> out;
  for (int64_t w = 0; w < a.window; ++w) {
    const int64_t p = o * a.stride + w * a.window_dilation - a.pad_low;
    if (p < 0 || p % a.base_dilation != 0 || p / a.base_dilation >= a.dim) continue;
    out.push_back(p / a.base_dilation);
  }
  return out;
}

std::vector<int64_t> Expand(const WindowRun& r) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < r.n; ++k) out.push_back(r.first + k * r.step);
  return out;
}

TEST(WindowAxisTest, AtMatchesTheDefinition) {
  std::mt19937 rng(20261129);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int checked = 0, base_dilated = 0;
  for (int i = 0; i < 4000; ++i) {
    WindowAxis a;
    a.dim = pick(0, 12);
    a.window = pick(1, 7);
    a.stride = pick(1, 4);
    a.base_dilation = i % 2 == 0 ? 1 : pick(1, 4);
    a.window_dilation = pick(1, 4);
    a.pad_low = pick(-4, 6);
    a.pad_high = pick(-4, 6);
    base_dilated += a.base_dilation > 1;
    for (int64_t o = 0; o < 24; ++o) {
      const std::vector<int64_t> want = Enumerate(a, o);
      const WindowRun run = a.At(o);
      if (want.empty()) {
        EXPECT_EQ(run.n, 0) << "axis " << i << " output " << o;
      } else {
        EXPECT_EQ(Expand(run), want)
            << "axis " << i << " output " << o << ": dim " << a.dim << " window " << a.window
            << " stride " << a.stride << " base_dilation " << a.base_dilation << " window_dilation "
            << a.window_dilation << " pad_low " << a.pad_low;
      }
      ++checked;
    }
  }
  EXPECT_GT(base_dilated, 1000);
  EXPECT_EQ(checked, 4000 * 24);
}

}  // namespace
}  // namespace kiln::kernels
