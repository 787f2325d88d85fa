// Integer scatter reducers split over private copies (kernels/scatter_row.h ScatterRowPrivate):
// bit-identical to the serial order for every part count, with duplicate and dropped indices.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "kernels/scatter_row.h"

namespace kiln::testing {
namespace {

using kernels::ReducerKind;
using kernels::indexing::ScatterRow;

constexpr int64_t kBins = 256;

// Indices in [-8, kBins + 8): many duplicates, some out of range (dropped, as a window that does
// not fit is in StableHLO).
std::vector<int32_t> RandomIndices(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(-8, kBins + 7);
  std::vector<int32_t> idx(static_cast<size_t>(n));
  for (auto& i : idx) i = dist(rng);
  return idx;
}

template <typename T>
std::vector<T> RandomValues(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<T> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<T>(rng());
  return v;
}

template <ReducerKind K, typename T>
void ExpectPrivateMatchesSerial(int64_t bstep, int64_t ostep) {
  const int64_t n = 10007;
  const std::vector<int32_t> idx = RandomIndices(2 * n, 7);  // bstep 2 reads every other one
  const std::vector<T> upd = RandomValues<T>(n, 11);
  const std::vector<T> init = RandomValues<T>(kBins, 13);
  auto base_of = [&](int64_t b) -> int64_t {
    const int32_t i = idx[static_cast<size_t>(b)];
    return i < 0 || i >= kBins ? -1 : i;
  };
  // bstep 1, ostep 0: one-element updates. bstep 0 would put every update on one base; ostep 0
  // with bstep 1 is the bincount row, the other form walks the generic loop.
  ScatterRow<decltype(base_of)> row{0, 0, bstep, 0, ostep, n, base_of};
  std::vector<T> serial = init;
  kernels::indexing::ScatterRowSerial<K, T>(serial.data(), upd.data(), row, 0, n);
  for (int64_t parts = 1; parts <= 4; ++parts) {
    std::vector<T> split = init;
    kernels::indexing::ScatterRowPrivate<K, T>(split.data(), kBins, upd.data(), row, parts);
    EXPECT_EQ(split, serial) << "parts " << parts << ", reducer " << static_cast<int>(K);
  }
}

TEST(ScatterPrivateTest, EveryIntegerReducerAndPartCountMatchesTheSerialOrder) {
  for (int64_t bstep : {int64_t{1}, int64_t{2}}) {
    // bstep 2 reads every other index (a strided batch row) through the generic loop.
    const int64_t ostep = 0;
    ExpectPrivateMatchesSerial<ReducerKind::kAdd, int32_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kAdd, int8_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kAdd, uint32_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kAdd, int64_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kMultiply, int32_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kMaximum, int32_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kMinimum, int8_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kMaximum, uint8_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kAnd, uint32_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kOr, uint8_t>(bstep, ostep);
    ExpectPrivateMatchesSerial<ReducerKind::kXor, int16_t>(bstep, ostep);
  }
}

}  // namespace
}  // namespace kiln::testing
