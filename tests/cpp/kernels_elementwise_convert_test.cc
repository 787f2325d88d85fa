// Elementwise convert (saturation, 16-bit floats, complex), bitcast_convert, 16-bit float helpers.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/float16.h"
#include "lower/op_registry.h"
#include "tests/cpp/elementwise_test_util.h"
#include "tests/cpp/kernels_test_util.h"

namespace kiln::testing {
namespace {

// ---- convert ----

TEST(ElementwiseTest, ConvertFloatToIntSaturates) {
  EXPECT_EQ(
      (Apply<int32_t, float>("stablehlo.convert", DType::kF32, DType::kS32,
                             {{1.9f, -1.9f, 3e9f, -3e9f, kNaN, kInf, -kInf, 2147483520.0f}})),
      (std::vector<int32_t>{1, -1, INT32_MAX, INT32_MIN, 0, INT32_MAX, INT32_MIN, 2147483520}));
  EXPECT_EQ((Apply<uint8_t, float>("stablehlo.convert", DType::kF32, DType::kU8,
                                   {{-5.0f, 300.0f, 255.9f, kNaN, -0.5f}})),
            (std::vector<uint8_t>{0, 255, 255, 0, 0}));
  EXPECT_EQ((Apply<int64_t, double>("stablehlo.convert", DType::kF64, DType::kS64,
                                    {{1e19, -1e19, -7.5}})),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN, -7}));
  EXPECT_EQ(
      (Apply<uint64_t, double>("stablehlo.convert", DType::kF64, DType::kU64, {{1.8e19, 2e19}})),
      (std::vector<uint64_t>{18000000000000000000ull, UINT64_MAX}));
}

TEST(ElementwiseTest, ConvertBetweenIntsFloatsAndPred) {
  EXPECT_EQ(
      Bools(Apply<PredByte, int32_t>("stablehlo.convert", DType::kS32, DType::kPred, {{0, 5, -1}})),
      (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(Bools(Apply<PredByte, float>("stablehlo.convert", DType::kF32, DType::kPred,
                                         {{0.0f, -0.0f, 0.5f, kNaN}})),
            (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ((Apply<float, uint8_t>("stablehlo.convert", DType::kPred, DType::kF32, {{0, 1}})),
            (std::vector<float>{0.0f, 1.0f}));
  EXPECT_EQ((Apply<int8_t, int32_t>("stablehlo.convert", DType::kS32, DType::kS8, {{300, -129}})),
            (std::vector<int8_t>{44, 127}));  // wraps modulo 2^8
  EXPECT_EQ((Apply<uint32_t, uint64_t>("stablehlo.convert", DType::kU64, DType::kU32,
                                       {{0x100000005ull}})),
            (std::vector<uint32_t>{5}));
  EXPECT_EQ(
      (Apply<double, int64_t>("stablehlo.convert", DType::kS64, DType::kF64, {{-3, 1ll << 40}})),
      (std::vector<double>{-3.0, 1099511627776.0}));
  EXPECT_EQ(
      (Apply<float, uint32_t>("stablehlo.convert", DType::kU32, DType::kF32, {{0xFFFFFFFFu}})),
      (std::vector<float>{4294967296.0f}));
  EXPECT_EQ((Apply<float, double>("stablehlo.convert", DType::kF64, DType::kF32, {{0.1, 1e300}})),
            (std::vector<float>{0.1f, kInf}));
}

TEST(ElementwiseTest, ConvertSixteenBitFloats) {
  // f32 -> f16: normal, rounding to the largest half, overflow, subnormal, underflow, NaN.
  std::vector<uint16_t> h =
      Apply<uint16_t, float>("stablehlo.convert", DType::kF32, DType::kF16,
                             {{1.0f, -2.0f, 65519.0f, 65520.0f, 5.9604645e-8f, 1e-8f, kNaN,
                               1.0f + 1.0f / 2048, 6.1035156e-5f}});
  EXPECT_EQ(h, (std::vector<uint16_t>{0x3C00, 0xC000, 0x7BFF, 0x7C00, 0x0001, 0x0000,
                                      static_cast<uint16_t>(h[6]), 0x3C00, 0x0400}));
  EXPECT_EQ(h[6] & 0x7C00, 0x7C00);
  EXPECT_NE(h[6] & 0x03FF, 0);  // still a NaN
  // f16 -> f32 round-trips, including subnormals.
  std::vector<float> back = Apply<float, uint16_t>("stablehlo.convert", DType::kF16, DType::kF32,
                                                   {{0x3C00, 0x0001, 0x7BFF, 0xFC00, 0x8000}});
  EXPECT_EQ(back, (std::vector<float>{1.0f, 5.9604645e-8f, 65504.0f, -kInf, -0.0f}));
  // f32 -> bf16 rounds to nearest even.
  EXPECT_EQ((Apply<uint16_t, float>("stablehlo.convert", DType::kF32, DType::kBF16,
                                    {{1.0f, 1.00390625f, 1.01171875f, 3.0e38f}})),
            (std::vector<uint16_t>{0x3F80, 0x3F80, 0x3F82, 0x7F62}));
  // f64 -> f16 rounds once: 1 + 2^-11 + 2^-40 is just above the tie, so it rounds up. Rounding
  // through f32 first would land exactly on the tie and round down to 1.0.
  EXPECT_EQ((Apply<uint16_t, double>("stablehlo.convert", DType::kF64, DType::kF16,
                                     {{1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)}})),
            (std::vector<uint16_t>{0x3C01}));
  // int -> bf16 through double: 2^24 + 1 + 2^16 rounds correctly.
  EXPECT_EQ(
      (Apply<uint16_t, int32_t>("stablehlo.convert", DType::kS32, DType::kBF16, {{-3, 16842753}})),
      (std::vector<uint16_t>{0xC040, 0x4B81}));
  // bf16 -> f16 and f16 -> s32.
  EXPECT_EQ((Apply<uint16_t, uint16_t>("stablehlo.convert", DType::kBF16, DType::kF16, {{0x3F80}})),
            (std::vector<uint16_t>{0x3C00}));
  EXPECT_EQ(
      (Apply<int32_t, uint16_t>("stablehlo.convert", DType::kF16, DType::kS32, {{0xC100, 0x7C00}})),
      (std::vector<int32_t>{-2, INT32_MAX}));
}

TEST(ElementwiseTest, ConvertSameTypeAliases) {
  Array x = Vec<float>(DType::kF32, {1, 2});
  OpRun run{"stablehlo.convert", {x}, DType::kF32, {2}};
  StatusOr<Array> out = run.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ToVector<float>(*out), ToVector<float>(x));
  EXPECT_EQ(run.Lower()->alias_of(0), 0);
}

TEST(ElementwiseTest, ConvertComplex) {
  EXPECT_EQ((Apply<c64, float>("stablehlo.convert", DType::kF32, DType::kC64, {{1.5f, -2.0f}})),
            (std::vector<c64>{{1.5f, 0.0f}, {-2.0f, 0.0f}}));
  EXPECT_EQ((Apply<float, c64>("stablehlo.convert", DType::kC64, DType::kF32, {{{1.5f, 7.0f}}})),
            (std::vector<float>{1.5f}));
  EXPECT_EQ((Apply<c128, c64>("stablehlo.convert", DType::kC64, DType::kC128, {{{1.5f, 7.0f}}})),
            (std::vector<c128>{{1.5, 7.0}}));
  EXPECT_EQ(Bools(Apply<PredByte, c64>("stablehlo.convert", DType::kC64, DType::kPred,
                                       {{{0, 0}, {0, 1}}})),
            (std::vector<uint8_t>{0, 1}));
}

// ---- bitcast_convert ----

TEST(ElementwiseTest, BitcastConvertSameWidthAliases) {
  Array x = Vec<float>(DType::kF32, {1.0f, -2.0f});
  OpRun run{"stablehlo.bitcast_convert", {x}, DType::kU32, {2}};
  StatusOr<Array> out = run.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(run.Lower()->alias_of(0), 0);
  EXPECT_EQ(out->dtype, DType::kU32);
  EXPECT_EQ(ToVector<uint32_t>(*out), (std::vector<uint32_t>{0x3F800000u, 0xC0000000u}));
}

TEST(ElementwiseTest, BitcastConvertChangesWidth) {
  // Narrower result: a trailing dimension, little-endian (the spec's f64 -> 4 x f16 example).
  OpRun split{"stablehlo.bitcast_convert",
              {Scalar<uint64_t>(DType::kF64, 0x0123456789ABCDEFull)},
              DType::kF16,
              {4}};
  StatusOr<Array> out = split.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<uint16_t>(*out), (std::vector<uint16_t>{0xCDEF, 0x89AB, 0x4567, 0x0123}));
  EXPECT_EQ(out->dims, (std::vector<int64_t>{4}));
  // Wider result: the trailing dimension is consumed.
  OpRun join{"stablehlo.bitcast_convert",
             {MakeArray<uint8_t>(DType::kU8, {2, 4}, {1, 0, 0, 0, 0x78, 0x56, 0x34, 0x12})},
             DType::kS32,
             {2}};
  out = join.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<int32_t>(*out), (std::vector<int32_t>{1, 0x12345678}));
  // Mismatched shapes are malformed.
  OpRun bad{"stablehlo.bitcast_convert",
            {MakeArray<uint8_t>(DType::kU8, {2, 3}, {0, 0, 0, 0, 0, 0})},
            DType::kS32,
            {2}};
  EXPECT_EQ(bad.Lower().status().code(), StatusCode::kInvalidArgument);
  OpRun bad_same{"stablehlo.bitcast_convert", {Vec<float>(DType::kF32, {1, 2})}, DType::kS32, {3}};
  EXPECT_EQ(bad_same.Lower().status().code(), StatusCode::kInvalidArgument);
}

// ---- scalar helpers, directly ----

TEST(ElementwiseScalarTest, FloatHalfConversionsRoundTripEveryHalf) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = kernels::HalfBitsToFloat(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(kernels::HalfBitsToFloat(kernels::FloatToHalfBits(f))));
      continue;
    }
    ASSERT_EQ(kernels::FloatToHalfBits(f), h) << std::hex << bits;
    const double d = f;
    ASSERT_EQ(kernels::DoubleToHalfBits(d), h) << std::hex << bits;
  }
}

TEST(ElementwiseScalarTest, Bf16RoundTripsAndRounds) {
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<uint16_t>(bits);
    const float f = kernels::Bf16BitsToFloat(h);
    if (std::isnan(f)) continue;
    ASSERT_EQ(kernels::FloatToBf16Bits(f), h) << std::hex << bits;
  }
  EXPECT_EQ(kernels::FloatToBf16Bits(std::bit_cast<float>(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(kernels::FloatToBf16Bits(std::bit_cast<float>(0x3F818000u)),
            0x3F82);  // tie -> even (up)
  EXPECT_EQ(kernels::FloatToBf16Bits(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(kernels::FloatToBf16Bits(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // FLT_MAX -> inf
  EXPECT_TRUE(std::isnan(
      kernels::Bf16BitsToFloat(kernels::FloatToBf16Bits(std::bit_cast<float>(0x7F800001u)))));
}

TEST(ElementwiseScalarTest, HalfRoundingMatchesDirectComputation) {
  // Compare FloatToHalfBits against an exhaustive nearest-even search over a sample of floats.
  auto reference = [](float f) -> uint16_t {
    // Find the nearest half by scanning neighbours of the truncated candidate.
    uint16_t best = 0;
    double best_err = INFINITY;
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    for (uint32_t m = 0; m < 0x7C00; ++m) {
      const double v = kernels::HalfBitsToFloat(static_cast<uint16_t>(m));
      const double err = std::fabs(std::fabs(static_cast<double>(f)) - v);
      if (err < best_err || (err == best_err && (m & 1) == 0)) {
        best_err = err;
        best = static_cast<uint16_t>(m);
      }
    }
    // Beyond 65520 the nearest-even result is infinity.
    if (std::fabs(f) >= 65520.0f) return sign | 0x7C00;
    return sign | best;
  };
  for (float f : {0.1f, 1e-7f, 3e-5f, 6.1e-5f, 1000.3f, 2049.0f, 2051.0f, 65519.0f, 65535.0f,
                  -7.77e-6f, 2.98e-8f, 2.99e-8f, 5.96e-8f}) {
    EXPECT_EQ(kernels::FloatToHalfBits(f), reference(f)) << f;
  }
}

TEST(ElementwiseScalarTest, TotalOrderKeysAreMonotonic) {
  const float seq[] = {-kNaN, -kInf,  -1e30f, -1.0f, -1e-40f, -0.0f,
                       0.0f,  1e-40f, 1.0f,   1e30f, kInf,    kNaN};
  for (size_t i = 0; i + 1 < std::size(seq); ++i) {
    EXPECT_LT(kernels::ew::TotalOrderKey(seq[i]), kernels::ew::TotalOrderKey(seq[i + 1])) << i;
  }
}

}  // namespace
}  // namespace kiln::testing
