// Elementwise arithmetic: integer edge cases (XLA semantics), floats, NaN, 16-bit floats, complex.
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

// ---- integer arithmetic ----

TEST(ElementwiseTest, IntegerArithmeticWraps) {
  EXPECT_EQ(Same<int8_t>("stablehlo.add", DType::kS8, {{127, -128, 5}, {1, -1, -6}}),
            (std::vector<int8_t>{-128, 127, -1}));
  EXPECT_EQ(Same<uint16_t>("stablehlo.multiply", DType::kU16, {{65535, 300}, {65535, 300}}),
            (std::vector<uint16_t>{1, static_cast<uint16_t>(90000 % 65536)}));
  EXPECT_EQ(Same<int32_t>("stablehlo.subtract", DType::kS32, {{INT32_MIN, 0}, {1, INT32_MIN}}),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN}));
  EXPECT_EQ(Same<int64_t>("stablehlo.negate", DType::kS64, {{INT64_MIN, 5, -7}}),
            (std::vector<int64_t>{INT64_MIN, -5, 7}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.negate", DType::kU8, {{1, 0}}),
            (std::vector<uint8_t>{255, 0}));
  EXPECT_EQ(Same<int32_t>("stablehlo.abs", DType::kS32, {{INT32_MIN, -3, 4}}),
            (std::vector<int32_t>{INT32_MIN, 3, 4}));
}

TEST(ElementwiseTest, IntegerDivisionFollowsXla) {
  // Truncation; x/0 = -1 (all ones); INT_MIN/-1 = INT_MIN.
  EXPECT_EQ(
      Same<int32_t>("stablehlo.divide", DType::kS32,
                    {{7, -7, 7, -7, 5, INT32_MIN, INT32_MIN, 0}, {2, 2, -2, -2, 0, -1, 0, 0}}),
      (std::vector<int32_t>{3, -3, -3, 3, -1, INT32_MIN, -1, -1}));
  EXPECT_EQ(Same<uint32_t>("stablehlo.divide", DType::kU32, {{7, 9}, {0, 2}}),
            (std::vector<uint32_t>{0xFFFFFFFFu, 4}));
  EXPECT_EQ(Same<int8_t>("stablehlo.divide", DType::kS8, {{-128, 100}, {-1, 0}}),
            (std::vector<int8_t>{-128, -1}));
  // Remainder: sign of the dividend; x%0 = x; INT_MIN % -1 = 0.
  EXPECT_EQ(Same<int32_t>("stablehlo.remainder", DType::kS32,
                          {{7, -7, 7, 5, INT32_MIN}, {3, 3, -3, 0, -1}}),
            (std::vector<int32_t>{1, -1, 1, 5, 0}));
  EXPECT_EQ(Same<uint64_t>("stablehlo.remainder", DType::kU64, {{17, 17}, {5, 0}}),
            (std::vector<uint64_t>{2, 17}));
  std::vector<float> r =
      Same<float>("stablehlo.remainder", DType::kF32, {{5.5f, -5.5f, 1.0f}, {2.0f, 2.0f, 0.0f}});
  EXPECT_FLOAT_EQ(r[0], 1.5f);
  EXPECT_FLOAT_EQ(r[1], -1.5f);
  EXPECT_TRUE(std::isnan(r[2]));
}

TEST(ElementwiseTest, IntegerPower) {
  EXPECT_EQ(
      Same<int32_t>("stablehlo.power", DType::kS32,
                    {{2, 3, -1, -1, 1, 2, 0, -3, -3, 0}, {10, 0, -1, -2, -5, -1, 0, 3, -3, 2}}),
      (std::vector<int32_t>{1024, 1, -1, 1, 1, 0, 1, -27, 0, 0}));
  EXPECT_EQ(Same<uint64_t>("stablehlo.power", DType::kU64, {{0, 0, 1, 5, 2}, {0, 1, 7, 5, 64}}),
            (std::vector<uint64_t>{1, 0, 1, 3125, 0}));  // 2^64 wraps to 0
  std::vector<double> p =
      Same<double>("stablehlo.power", DType::kF64, {{-2.0, 3.0, -36.0}, {2.0, -1.0, 1.1}});
  EXPECT_DOUBLE_EQ(p[0], 4.0);
  EXPECT_DOUBLE_EQ(p[1], 1.0 / 3.0);
  EXPECT_TRUE(std::isnan(p[2]));
}

TEST(ElementwiseTest, ShiftsBeyondBitWidth) {
  EXPECT_EQ(
      Same<int32_t>("stablehlo.shift_left", DType::kS32, {{1, 1, 1, -1, 3}, {3, 31, 32, -1, 0}}),
      (std::vector<int32_t>{8, INT32_MIN, 0, 0, 3}));
  EXPECT_EQ(Same<int32_t>("stablehlo.shift_right_logical", DType::kS32,
                          {{-1, 16, 16, -1}, {28, 4, 40, -1}}),
            (std::vector<int32_t>{15, 1, 0, 0}));
  EXPECT_EQ(Same<int32_t>("stablehlo.shift_right_arithmetic", DType::kS32,
                          {{-16, 16, -1, -5, 8}, {2, 40, 100, -3, 3}}),
            (std::vector<int32_t>{-4, 0, -1, -1, 1}));
  EXPECT_EQ(
      Same<int8_t>("stablehlo.shift_right_arithmetic", DType::kS8, {{-128, -128, 64}, {7, 8, 8}}),
      (std::vector<int8_t>{-1, -1, 0}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.shift_left", DType::kU8, {{0xFF, 1}, {4, 8}}),
            (std::vector<uint8_t>{0xF0, 0}));
  // Arithmetic shift of an unsigned type fills with the top bit.
  EXPECT_EQ(Same<uint8_t>("stablehlo.shift_right_arithmetic", DType::kU8, {{0x80, 0x40}, {2, 9}}),
            (std::vector<uint8_t>{0xE0, 0}));
  EXPECT_EQ(
      Same<uint64_t>("stablehlo.shift_right_logical", DType::kU64, {{~0ull, ~0ull}, {63, 64}}),
      (std::vector<uint64_t>{1, 0}));
}

TEST(ElementwiseTest, BitwiseAndLogical) {
  EXPECT_EQ(Same<uint32_t>("stablehlo.and", DType::kU32, {{0xF0F0u}, {0xFF00u}}),
            (std::vector<uint32_t>{0xF000u}));
  EXPECT_EQ(Same<uint32_t>("stablehlo.or", DType::kU32, {{0xF0F0u}, {0xFF00u}}),
            (std::vector<uint32_t>{0xFFF0u}));
  EXPECT_EQ(Same<uint32_t>("stablehlo.xor", DType::kU32, {{0xF0F0u}, {0xFF00u}}),
            (std::vector<uint32_t>{0x0FF0u}));
  EXPECT_EQ(Same<int16_t>("stablehlo.not", DType::kS16, {{0, -1, 5}}),
            (std::vector<int16_t>{-1, 0, -6}));
  const std::vector<uint8_t> a{0, 0, 1, 1}, b{0, 1, 0, 1};
  EXPECT_EQ(Same<uint8_t>("stablehlo.and", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.or", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.xor", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.not", DType::kPred, {a}), (std::vector<uint8_t>{1, 1, 0, 0}));
  // pred add = or, multiply = and, maximum = or, minimum = and.
  EXPECT_EQ(Same<uint8_t>("stablehlo.add", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.multiply", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.maximum", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.minimum", DType::kPred, {a, b}),
            (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.popcnt", DType::kU8, {{0xFF, 0, 0x81}}),
            (std::vector<uint8_t>{8, 0, 2}));
  EXPECT_EQ(Same<int32_t>("stablehlo.popcnt", DType::kS32, {{-1}}), (std::vector<int32_t>{32}));
  EXPECT_EQ(Same<int32_t>("stablehlo.count_leading_zeros", DType::kS32, {{1, 0, -1}}),
            (std::vector<int32_t>{31, 32, 0}));
  EXPECT_EQ(Same<uint8_t>("stablehlo.count_leading_zeros", DType::kU8, {{1, 0x80}}),
            (std::vector<uint8_t>{7, 0}));
}

// ---- floating point ----

TEST(ElementwiseTest, FloatArithmetic) {
  std::vector<float> a{1.5f, -2.0f, 1e30f, 0.1f}, b{0.25f, 4.0f, 1e30f, 0.2f};
  std::vector<float> s = Same<float>("stablehlo.add", DType::kF32, {a, b});
  std::vector<float> d = Same<float>("stablehlo.subtract", DType::kF32, {a, b});
  std::vector<float> m = Same<float>("stablehlo.multiply", DType::kF32, {a, b});
  std::vector<float> q = Same<float>("stablehlo.divide", DType::kF32, {a, b});
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(s[i], a[i] + b[i]);
    EXPECT_EQ(d[i], a[i] - b[i]);
    EXPECT_EQ(m[i], a[i] * b[i]);
    EXPECT_EQ(q[i], a[i] / b[i]);
  }
  std::vector<double> x =
      Same<double>("stablehlo.divide", DType::kF64, {{1.0, -1.0, 0.0}, {0.0, 0.0, 0.0}});
  EXPECT_EQ(x[0], std::numeric_limits<double>::infinity());
  EXPECT_EQ(x[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(x[2]));
}

TEST(ElementwiseTest, MaxMinPropagateNaNAndOrderZeros) {
  std::vector<float> a{1.0f, kNaN, 2.0f, -0.0f, 0.0f, -kInf},
      b{kNaN, 1.0f, 3.0f, 0.0f, -0.0f, 5.0f};
  std::vector<float> mx = Same<float>("stablehlo.maximum", DType::kF32, {a, b});
  std::vector<float> mn = Same<float>("stablehlo.minimum", DType::kF32, {a, b});
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
  EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mx[2], 3.0f);
  EXPECT_EQ(mn[2], 2.0f);
  EXPECT_EQ(Bits(mx[3]), Bits(0.0f));
  EXPECT_EQ(Bits(mx[4]), Bits(0.0f));
  EXPECT_EQ(Bits(mn[3]), Bits(-0.0f));
  EXPECT_EQ(Bits(mn[4]), Bits(-0.0f));
  EXPECT_EQ(mx[5], 5.0f);
  EXPECT_EQ(mn[5], -kInf);
  EXPECT_EQ(Same<int32_t>("stablehlo.maximum", DType::kS32, {{-5, 7}, {3, -8}}),
            (std::vector<int32_t>{3, 7}));
  EXPECT_EQ(Same<uint32_t>("stablehlo.minimum", DType::kU32, {{0xFFFFFFFFu, 1}, {2, 0}}),
            (std::vector<uint32_t>{2, 0}));
}

TEST(ElementwiseTest, Rounding) {
  std::vector<float> x{0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 2.7f, -2.7f};
  EXPECT_EQ(Same<float>("stablehlo.round_nearest_afz", DType::kF32, {x}),
            (std::vector<float>{1, 2, 3, -1, -3, 3, -3}));
  std::vector<float> even = Same<float>("stablehlo.round_nearest_even", DType::kF32, {x});
  EXPECT_EQ(even, (std::vector<float>{0, 2, 2, -0.0f, -2, 3, -3}));
  EXPECT_TRUE(std::signbit(even[3]));
  EXPECT_EQ(Same<float>("stablehlo.floor", DType::kF32, {x}),
            (std::vector<float>{0, 1, 2, -1, -3, 2, -3}));
  EXPECT_EQ(Same<float>("stablehlo.ceil", DType::kF32, {x}),
            (std::vector<float>{1, 2, 3, -0.0f, -2, 3, -2}));
}

TEST(ElementwiseTest, SignAndAbs) {
  std::vector<float> s =
      Same<float>("stablehlo.sign", DType::kF32, {{-2.0f, -0.0f, 0.0f, 3.0f, kNaN, -kInf}});
  EXPECT_EQ(s[0], -1.0f);
  EXPECT_EQ(Bits(s[1]), Bits(-0.0f));
  EXPECT_EQ(Bits(s[2]), Bits(0.0f));
  EXPECT_EQ(s[3], 1.0f);
  EXPECT_TRUE(std::isnan(s[4]));
  EXPECT_EQ(s[5], -1.0f);
  EXPECT_EQ(Same<int32_t>("stablehlo.sign", DType::kS32, {{-9, 0, 4}}),
            (std::vector<int32_t>{-1, 0, 1}));
  std::vector<float> a = Same<float>("stablehlo.abs", DType::kF32, {{-0.0f, -3.0f, kNaN}});
  EXPECT_EQ(Bits(a[0]), Bits(0.0f));
  EXPECT_EQ(a[1], 3.0f);
  EXPECT_TRUE(std::isnan(a[2]));
}

TEST(ElementwiseTest, TranscendentalsMatchLibm) {
  const std::vector<float> x{0.1f, 0.5f, 1.0f, 2.5f, 7.0f};
  struct Case {
    const char* name;
    double (*ref)(double);
  };
  const Case cases[] = {
      {"stablehlo.sqrt", [](double v) { return std::sqrt(v); }},
      {"stablehlo.rsqrt", [](double v) { return 1.0 / std::sqrt(v); }},
      {"stablehlo.cbrt", [](double v) { return std::cbrt(v); }},
      {"stablehlo.exponential", [](double v) { return std::exp(v); }},
      {"stablehlo.exponential_minus_one", [](double v) { return std::expm1(v); }},
      {"stablehlo.log", [](double v) { return std::log(v); }},
      {"stablehlo.log_plus_one", [](double v) { return std::log1p(v); }},
      {"stablehlo.logistic", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      {"stablehlo.sine", [](double v) { return std::sin(v); }},
      {"stablehlo.cosine", [](double v) { return std::cos(v); }},
      {"stablehlo.tan", [](double v) { return std::tan(v); }},
      {"stablehlo.tanh", [](double v) { return std::tanh(v); }},
  };
  for (const Case& c : cases) {
    std::vector<float> y = Same<float>(c.name, DType::kF32, {x});
    std::vector<double> yd =
        Same<double>(c.name, DType::kF64, {std::vector<double>(x.begin(), x.end())});
    ASSERT_EQ(y.size(), x.size()) << c.name;
    for (size_t i = 0; i < x.size(); ++i) {
      const double want = c.ref(x[i]);
      EXPECT_NEAR(y[i], want, 1e-6 * std::fabs(want) + 1e-7) << c.name << "(" << x[i] << ")";
      EXPECT_NEAR(yd[i], want, 1e-14 * std::fabs(want)) << c.name << "(" << x[i] << ")";
    }
  }
  // Logistic saturates cleanly at both ends.
  std::vector<float> l = Same<float>("stablehlo.logistic", DType::kF32, {{-200.0f, 200.0f}});
  EXPECT_EQ(l[0], 0.0f);
  EXPECT_EQ(l[1], 1.0f);
  std::vector<float> at =
      Same<float>("stablehlo.atan2", DType::kF32, {{1.0f, -1.0f, 0.0f}, {1.0f, -1.0f, -1.0f}});
  EXPECT_FLOAT_EQ(at[0], std::atan2(1.0f, 1.0f));
  EXPECT_FLOAT_EQ(at[1], std::atan2(-1.0f, -1.0f));
  EXPECT_FLOAT_EQ(at[2], std::atan2(0.0f, -1.0f));
}

TEST(ElementwiseTest, IsFinite) {
  EXPECT_EQ(Bools(Apply<PredByte, float>("stablehlo.is_finite", DType::kF32, DType::kPred,
                                         {{1.0f, kInf, -kInf, kNaN, -0.0f}})),
            (std::vector<uint8_t>{1, 0, 0, 0, 1}));
}

TEST(ElementwiseTest, ReducePrecision) {
  auto attrs = [](int e, int m) {
    return [e, m](OpBuilder& b) {
      b.Int("exponent_bits", e);
      b.Int("mantissa_bits", m);
    };
  };
  std::vector<double> y = Apply<double, double>(
      "stablehlo.reduce_precision", DType::kF64, DType::kF64,
      {{65519.0, 65520.0, 1e-300, 0.0, std::numeric_limits<double>::infinity(), std::nan(""),
        1.0 + 1.0 / 2048}},
      attrs(5, 10));
  EXPECT_EQ(y[0], 65504.0);
  EXPECT_EQ(y[1], std::numeric_limits<double>::infinity());
  EXPECT_EQ(y[2], 0.0);
  EXPECT_EQ(y[3], 0.0);
  EXPECT_EQ(y[4], std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[6], 1.0);  // a tie rounds to even
  // Emulating bf16 on f32.
  std::vector<float> z = Apply<float, float>("stablehlo.reduce_precision", DType::kF32, DType::kF32,
                                             {{1.00390625f, 1.01171875f, 3.4e38f}}, attrs(8, 7));
  EXPECT_EQ(z[0], 1.0f);
  EXPECT_EQ(z[1], 1.015625f);
  EXPECT_EQ(z[2], kernels::Bf16BitsToFloat(kernels::FloatToBf16Bits(3.4e38f)));

  // f16 operands: a target as wide as f16 is the identity (subnormals included).
  EXPECT_EQ((Apply<uint16_t, uint16_t>("stablehlo.reduce_precision", DType::kF16, DType::kF16,
                                       {{0x0001, 0x3C01}}, attrs(5, 10))),
            (std::vector<uint16_t>{0x0001, 0x3C01}));
  EXPECT_EQ((Apply<uint16_t, uint16_t>("stablehlo.reduce_precision", DType::kF16, DType::kF16,
                                       {{0x3C01, 0x3E00}}, attrs(5, 1))),
            (std::vector<uint16_t>{0x3C00, 0x3E00}));

  OpRun missing{"stablehlo.reduce_precision",
                {Vec<float>(DType::kF32, {1.0f})},
                DType::kF32,
                {1},
                [](OpBuilder& b) { b.Int("exponent_bits", 5); }};
  EXPECT_EQ(missing.Lower().status().code(), StatusCode::kInvalidArgument);
}

// ---- 16-bit float and complex arithmetic ----

TEST(ElementwiseTest, HalfArithmeticRoundsPerOp) {
  // 1 + 2^-11 is a tie in f16 and rounds to even (1.0); 65504 + 16 overflows to inf.
  EXPECT_EQ(Same<uint16_t>("stablehlo.add", DType::kF16, {{0x3C00, 0x7BFF}, {0x1000, 0x4C00}}),
            (std::vector<uint16_t>{0x3C00, 0x7C00}));
  // bf16: 3 * 1.0078125 = 3.0234375 -> rounds to 3.03125 (0x4042).
  EXPECT_EQ(Same<uint16_t>("stablehlo.multiply", DType::kBF16, {{0x4040}, {0x3F81}}),
            (std::vector<uint16_t>{0x4042}));
  std::vector<uint16_t> e =
      Same<uint16_t>("stablehlo.exponential", DType::kBF16, {{0x0000, 0x3F80}});
  EXPECT_EQ(e[0], 0x3F80);
  EXPECT_NEAR(kernels::Bf16BitsToFloat(e[1]), 2.71828f, 0.01f);
  EXPECT_EQ(Bools(Apply<PredByte, uint16_t>("stablehlo.compare", DType::kF16, DType::kPred,
                                            {{0x3C00, 0x8000}, {0x4000, 0x0000}},
                                            Compare("LT", "TOTALORDER"))),
            (std::vector<uint8_t>{1, 1}));
}

TEST(ElementwiseTest, ComplexOps) {
  std::vector<c64> a{{1, 2}, {3, -1}}, b{{0.5f, 1}, {-2, 4}};
  std::vector<c64> s = Same<c64>("stablehlo.add", DType::kC64, {a, b});
  std::vector<c64> m = Same<c64>("stablehlo.multiply", DType::kC64, {a, b});
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(s[i], a[i] + b[i]);
    EXPECT_NEAR(std::abs(m[i] - a[i] * b[i]), 0.0f, 1e-6f);
  }
  EXPECT_EQ((Apply<float, c64>("stablehlo.abs", DType::kC64, DType::kF32, {{{3, 4}}})),
            (std::vector<float>{5.0f}));
  EXPECT_EQ((Apply<float, c64>("stablehlo.real", DType::kC64, DType::kF32, {{{3, 4}}})),
            (std::vector<float>{3.0f}));
  EXPECT_EQ((Apply<float, c64>("stablehlo.imag", DType::kC64, DType::kF32, {{{3, 4}}})),
            (std::vector<float>{4.0f}));
  EXPECT_EQ((Apply<c64, float>("stablehlo.complex", DType::kF32, DType::kC64, {{1, 2}, {3, 4}})),
            (std::vector<c64>{{1, 3}, {2, 4}}));
  EXPECT_EQ(Bools(Apply<PredByte, c64>("stablehlo.compare", DType::kC64, DType::kPred,
                                       {a, {a[0], b[1]}}, Compare("EQ", "FLOAT"))),
            (std::vector<uint8_t>{1, 0}));
  std::vector<c128> ex =
      Same<c128>("stablehlo.exponential", DType::kC128, {{{0.0, std::numbers::pi}}});
  EXPECT_NEAR(ex[0].real(), -1.0, 1e-12);
  EXPECT_NEAR(ex[0].imag(), 0.0, 1e-12);
}

}  // namespace
}  // namespace kiln::testing
