// RoundToBf16 (kernels/half_round.h, AVX2 lanes with a scalar tail) against the scalar
// FloatToBf16Bits, bit for bit: every high half (sign, exponent, top mantissa bits: zeros,
// subnormals, infinities, NaNs) with low halves at and around the rounding boundaries and ties,
// and every length 0-40 for the tails.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels/float16.h"
#include "kernels/half_round.h"

namespace kiln::kernels {
namespace {

TEST(HalfRoundTest, MatchesScalarOnEveryHighHalf) {
  const uint32_t lows[] = {0x0000, 0x0001, 0x7fff, 0x8000, 0x8001, 0xbfff, 0xc000, 0xffff};
  std::vector<float> in;
  for (uint32_t hi = 0; hi < 0x10000; ++hi) {
    for (uint32_t lo : lows) in.push_back(std::bit_cast<float>(hi << 16 | lo));
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 100000; ++i) in.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  std::vector<uint16_t> got(in.size() + 1, 0xabcd);
  RoundToBf16(in.data(), got.data(), static_cast<int64_t>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(got[i], FloatToBf16Bits(in[i]))
        << "input bits " << std::hex << std::bit_cast<uint32_t>(in[i]);
  }
  EXPECT_EQ(got[in.size()], 0xabcd);  // nothing written past the end
}

TEST(HalfRoundTest, EveryTailLength) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist;
  for (int64_t n = 0; n <= 40; ++n) {
    std::vector<float> in(static_cast<size_t>(n));
    for (float& x : in) x = dist(rng);
    std::vector<uint16_t> got(static_cast<size_t>(n) + 2, 0x1234);
    RoundToBf16(in.data(), got.data() + 1, n);
    EXPECT_EQ(got[0], 0x1234);
    EXPECT_EQ(got[static_cast<size_t>(n) + 1], 0x1234) << n;
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(got[i + 1], FloatToBf16Bits(in[i])) << n << " " << i;
  }
}

}  // namespace
}  // namespace kiln::kernels
