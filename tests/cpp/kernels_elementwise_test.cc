// Elementwise kernels: arithmetic with XLA's integer edge cases, NaN handling, compare (incl.
// TOTALORDER), select, clamp, convert (saturation, 16-bit floats), bitcast_convert,
// reduce_precision, complex, and the lowering errors (UNIMPLEMENTED dtype vs INVALID_ARGUMENT op).
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

#include "compiler/op_registry.h"
#include "kernels/elementwise_ops.h"
#include "kernels/families.h"
#include "kernels/float16.h"
#include "tests/cpp/kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;
using kernels::ew::PredByte;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Builds `name` over operands shaped like `inputs`, with result (out_dtype, out_dims) and optional
// attributes, lowers it with the elementwise registry and runs it.
struct OpRun {
  OpRun(std::string name_in, std::vector<Array> inputs_in, DType out_dtype_in,
        std::vector<int64_t> out_dims_in, std::function<void(OpBuilder&)> attrs_in = {})
      : name(std::move(name_in)),
        inputs(std::move(inputs_in)),
        out_dtype(out_dtype_in),
        out_dims(std::move(out_dims_in)),
        attrs(std::move(attrs_in)) {}

  std::string name;
  std::vector<Array> inputs;
  DType out_dtype;
  std::vector<int64_t> out_dims;
  std::function<void(OpBuilder&)> attrs;

  StatusOr<Kernel> Lower() {
    builder = std::make_unique<OpBuilder>(name);
    for (const Array& a : inputs) builder->Operand(a.dtype, a.dims);
    builder->Result(out_dtype, out_dims);
    if (attrs) attrs(*builder);
    ctx = std::make_unique<FakeLowerContext>(*builder);
    compiler::LowerFn lower = FindLowering(&compiler::RegisterElementwiseOps, name);
    if (lower == nullptr) return Internal("not registered: " + name);
    return lower(*ctx);
  }
  StatusOr<Array> Run() {
    KILN_ASSIGN_OR_RETURN(Kernel kernel, Lower());
    KILN_ASSIGN_OR_RETURN(std::vector<Array> outputs,
                          RunKernel(kernel, builder->module(), builder->op(), inputs));
    return outputs[0];
  }

  std::unique_ptr<OpBuilder> builder;
  std::unique_ptr<FakeLowerContext> ctx;
};

template <typename T>
Array Vec(DType dtype, const std::vector<T>& values) {
  return MakeArray<T>(dtype, {static_cast<int64_t>(values.size())}, values);
}

// Runs a same-shape op over 1-D inputs and returns the result values.
template <typename R, typename T>
std::vector<R> Apply(const std::string& name, DType in_dtype, DType out_dtype,
                     std::vector<std::vector<T>> args, std::function<void(OpBuilder&)> attrs = {}) {
  OpRun run{name, {}, out_dtype, {static_cast<int64_t>(args[0].size())}, std::move(attrs)};
  for (const auto& a : args) run.inputs.push_back(Vec<T>(in_dtype, a));
  StatusOr<Array> out = run.Run();
  EXPECT_TRUE(out.ok()) << name << ": " << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ(out->dtype, out_dtype);
  return ToVector<R>(*out);
}

template <typename T>
std::vector<T> Same(const std::string& name, DType dtype, std::vector<std::vector<T>> args) {
  return Apply<T, T>(name, dtype, dtype, std::move(args));
}

std::function<void(OpBuilder&)> Compare(const std::string& dir, const std::string& type = "") {
  return [dir, type](OpBuilder& b) {
    b.Attr("comparison_direction", ir::Attr::Enum(dir));
    if (!type.empty()) b.Attr("compare_type", ir::Attr::Enum(type));
  };
}

std::vector<uint8_t> Bools(const std::vector<PredByte>& v) {
  std::vector<uint8_t> out;
  for (PredByte p : v) out.push_back(p.v);
  return out;
}

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

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

// ---- compare ----

TEST(ElementwiseTest, CompareFloatIeee) {
  std::vector<float> a{1.0f, 2.0f, kNaN, 1.0f, -0.0f}, b{2.0f, 2.0f, 1.0f, kNaN, 0.0f};
  auto cmp = [&](const std::string& dir) {
    return Bools(Apply<PredByte, float>("stablehlo.compare", DType::kF32, DType::kPred, {a, b},
                                        Compare(dir, "FLOAT")));
  };
  EXPECT_EQ(cmp("LT"), (std::vector<uint8_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(cmp("LE"), (std::vector<uint8_t>{1, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("GT"), (std::vector<uint8_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(cmp("GE"), (std::vector<uint8_t>{0, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("EQ"), (std::vector<uint8_t>{0, 1, 0, 0, 1}));
  EXPECT_EQ(cmp("NE"), (std::vector<uint8_t>{1, 0, 1, 1, 0}));
}

TEST(ElementwiseTest, CompareTotalOrder) {
  const float neg_nan = -kNaN;
  // -NaN < -Inf < -1 < -0 < +0 < 1 < +Inf < +NaN
  std::vector<float> order{neg_nan, -kInf, -1.0f, -0.0f, 0.0f, 1.0f, kInf, kNaN};
  std::vector<float> a, b;
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    a.push_back(order[i]);
    b.push_back(order[i + 1]);
  }
  auto cmp = [&](const std::string& dir, const std::vector<float>& x, const std::vector<float>& y) {
    return Bools(Apply<PredByte, float>("stablehlo.compare", DType::kF32, DType::kPred, {x, y},
                                        Compare(dir, "TOTALORDER")));
  };
  EXPECT_EQ(cmp("LT", a, b), std::vector<uint8_t>(a.size(), 1));
  EXPECT_EQ(cmp("GT", b, a), std::vector<uint8_t>(a.size(), 1));
  EXPECT_EQ(cmp("GE", a, b), std::vector<uint8_t>(a.size(), 0));
  // Under totalOrder -0 != +0 and NaN == NaN (same bits).
  EXPECT_EQ(cmp("EQ", {-0.0f, kNaN}, {0.0f, kNaN}), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(cmp("LE", {kNaN, 1.0f}, {kNaN, 1.0f}), (std::vector<uint8_t>{1, 1}));
  std::vector<double> ad{-std::numeric_limits<double>::quiet_NaN(), -0.0}, bd{-1e300, 0.0};
  EXPECT_EQ(Bools(Apply<PredByte, double>("stablehlo.compare", DType::kF64, DType::kPred, {ad, bd},
                                          Compare("LT", "TOTALORDER"))),
            (std::vector<uint8_t>{1, 1}));
}

TEST(ElementwiseTest, CompareIntegersAndPred) {
  EXPECT_EQ(Bools(Apply<PredByte, int32_t>("stablehlo.compare", DType::kS32, DType::kPred,
                                           {{-1, 5}, {1, 5}}, Compare("LT", "SIGNED"))),
            (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(Bools(Apply<PredByte, uint32_t>("stablehlo.compare", DType::kU32, DType::kPred,
                                            {{0xFFFFFFFFu, 5}, {1, 5}}, Compare("GT", "UNSIGNED"))),
            (std::vector<uint8_t>{1, 0}));
  // compare_type may be omitted.
  EXPECT_EQ(Bools(Apply<PredByte, int64_t>("stablehlo.compare", DType::kS64, DType::kPred,
                                           {{3, 4}, {3, 3}}, Compare("GE"))),
            (std::vector<uint8_t>{1, 1}));
  EXPECT_EQ(Bools(Apply<PredByte, uint8_t>("stablehlo.compare", DType::kPred, DType::kPred,
                                           {{0, 1, 1}, {1, 0, 1}}, Compare("LT", "UNSIGNED"))),
            (std::vector<uint8_t>{1, 0, 0}));
}

TEST(ElementwiseTest, CompareRejectsMalformedAttributes) {
  OpRun wrong_type{"stablehlo.compare",
                   {Vec<float>(DType::kF32, {1}), Vec<float>(DType::kF32, {1})},
                   DType::kPred,
                   {1},
                   Compare("LT", "SIGNED")};
  EXPECT_EQ(wrong_type.Lower().status().code(), StatusCode::kInvalidArgument);
  OpRun no_dir{"stablehlo.compare",
               {Vec<float>(DType::kF32, {1}), Vec<float>(DType::kF32, {1})},
               DType::kPred,
               {1}};
  EXPECT_EQ(no_dir.Lower().status().code(), StatusCode::kInvalidArgument);
  OpRun bad_dir{"stablehlo.compare",
                {Vec<float>(DType::kF32, {1}), Vec<float>(DType::kF32, {1})},
                DType::kPred,
                {1},
                Compare("XX")};
  EXPECT_EQ(bad_dir.Lower().status().code(), StatusCode::kInvalidArgument);
  OpRun bad_result{"stablehlo.compare",
                   {Vec<float>(DType::kF32, {1}), Vec<float>(DType::kF32, {1})},
                   DType::kF32,
                   {1},
                   Compare("LT")};
  EXPECT_EQ(bad_result.Lower().status().code(), StatusCode::kInvalidArgument);
}

// ---- select / clamp ----

TEST(ElementwiseTest, SelectElementwiseAndScalar) {
  Array pred = Vec<uint8_t>(DType::kPred, {1, 0, 1});
  Array t = Vec<float>(DType::kF32, {1, 2, 3}), f = Vec<float>(DType::kF32, {10, 20, 30});
  OpRun run{"stablehlo.select", {pred, t, f}, DType::kF32, {3}};
  StatusOr<Array> out = run.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>(*out), (std::vector<float>{1, 20, 3}));

  // A scalar predicate picks one operand whole.
  OpRun scalar{"stablehlo.select", {Scalar<uint8_t>(DType::kPred, 0), t, f}, DType::kF32, {3}};
  out = scalar.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>(*out), ToVector<float>(f));

  // 16-byte elements (complex<f64>) move by width.
  Array tc = Vec<c128>(DType::kC128, {{1, 2}, {3, 4}}),
        fc = Vec<c128>(DType::kC128, {{5, 6}, {7, 8}});
  OpRun wide{"stablehlo.select", {Vec<uint8_t>(DType::kPred, {0, 1}), tc, fc}, DType::kC128, {2}};
  out = wide.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<c128>(*out), (std::vector<c128>{{5, 6}, {3, 4}}));

  OpRun bad{"stablehlo.select", {Vec<int32_t>(DType::kS32, {1, 0, 1}), t, f}, DType::kF32, {3}};
  EXPECT_EQ(bad.Lower().status().code(), StatusCode::kInvalidArgument);
  OpRun bad_shape{"stablehlo.select", {Vec<uint8_t>(DType::kPred, {1, 0}), t, f}, DType::kF32, {3}};
  EXPECT_EQ(bad_shape.Lower().status().code(), StatusCode::kInvalidArgument);
}

TEST(ElementwiseTest, ClampWithScalarAndTensorBounds) {
  OpRun scalar{"stablehlo.clamp",
               {Scalar<float>(DType::kF32, -1.0f), Vec<float>(DType::kF32, {-5, 0.5f, 9, kNaN}),
                Scalar<float>(DType::kF32, 2.0f)},
               DType::kF32,
               {4}};
  StatusOr<Array> out = scalar.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<float> v = ToVector<float>(*out);
  EXPECT_EQ(v[0], -1.0f);
  EXPECT_EQ(v[1], 0.5f);
  EXPECT_EQ(v[2], 2.0f);
  EXPECT_TRUE(std::isnan(v[3]));

  OpRun tensor{"stablehlo.clamp",
               {Vec<int32_t>(DType::kS32, {0, 10, -5}), Vec<int32_t>(DType::kS32, {-3, 4, 100}),
                Scalar<int32_t>(DType::kS32, 50)},
               DType::kS32,
               {3}};
  out = tensor.Run();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<int32_t>(*out), (std::vector<int32_t>{0, 10, 50}));

  OpRun bad{"stablehlo.clamp",
            {Vec<int32_t>(DType::kS32, {0, 1}), Vec<int32_t>(DType::kS32, {1, 2, 3}),
             Scalar<int32_t>(DType::kS32, 1)},
            DType::kS32,
            {3}};
  EXPECT_EQ(bad.Lower().status().code(), StatusCode::kInvalidArgument);
}

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

// ---- large arrays take the parallel path ----

TEST(ElementwiseTest, LargeArraysMatchScalarReference) {
  const int64_t n = (1 << 20) + 37;  // several chunks plus a ragged tail
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    a[static_cast<size_t>(i)] = static_cast<float>(i % 1000) * 0.5f - 100.0f;
    b[static_cast<size_t>(i)] = static_cast<float>(i % 77) - 30.0f;
  }
  std::vector<float> sum = Same<float>("stablehlo.add", DType::kF32, {a, b});
  std::vector<float> mx = Same<float>("stablehlo.maximum", DType::kF32, {a, b});
  std::vector<float> ex = Same<float>("stablehlo.exponential", DType::kF32, {b});
  std::vector<int32_t> cv =
      Apply<int32_t, float>("stablehlo.convert", DType::kF32, DType::kS32, {a});
  std::vector<PredByte> lt =
      Apply<PredByte, float>("stablehlo.compare", DType::kF32, DType::kPred, {a, b}, Compare("LT"));
  ASSERT_EQ(sum.size(), a.size());
  ASSERT_EQ(lt.size(), a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(sum[i], a[i] + b[i]) << i;
    ASSERT_EQ(mx[i], std::max(a[i], b[i])) << i;
    // Vector math (SLEEF, 1.0 ulp) may differ from the C library in the last bit: compare with
    // the exact result within 1 ulp of float.
    const double ref = std::exp(static_cast<double>(b[i]));
    ASSERT_LE(std::abs(ex[i] - ref), std::ldexp(std::abs(ref), -23)) << i;
    ASSERT_EQ(cv[i], static_cast<int32_t>(a[i])) << i;
    ASSERT_EQ(lt[i].v, a[i] < b[i] ? 1 : 0) << i;
  }
  std::vector<uint8_t> p(a.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = lt[i].v;
  OpRun sel{"stablehlo.select",
            {Vec<uint8_t>(DType::kPred, p), Vec<float>(DType::kF32, a), Vec<float>(DType::kF32, b)},
            DType::kF32,
            {n}};
  StatusOr<Array> out = sel.Run();
  ASSERT_TRUE(out.ok());
  std::vector<float> s = ToVector<float>(*out);
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(s[i], std::min(a[i], b[i])) << i;
}

// ---- errors ----

TEST(ElementwiseTest, UnsupportedElementTypesAreUnimplemented) {
  struct Case {
    const char* op;
    DType dtype;
    int arity;
  };
  const Case cases[] = {
      {"stablehlo.popcnt", DType::kF32, 1},    {"stablehlo.sqrt", DType::kS32, 1},
      {"stablehlo.subtract", DType::kPred, 2}, {"stablehlo.and", DType::kF64, 2},
      {"stablehlo.add", DType::kF8E4M3FN, 2},  {"stablehlo.shift_left", DType::kF32, 2},
      {"stablehlo.is_finite", DType::kS32, 1}, {"stablehlo.cbrt", DType::kC64, 1},
      {"stablehlo.remainder", DType::kC64, 2}, {"stablehlo.not", DType::kF32, 1},
  };
  for (const Case& c : cases) {
    OpRun run{c.op, {}, c.dtype, {2}};
    for (int i = 0; i < c.arity; ++i) {
      Array a;
      a.dtype = c.dtype;
      a.dims = {2};
      run.inputs.push_back(a);
    }
    Status s = run.Lower().status();
    EXPECT_EQ(s.code(), StatusCode::kUnimplemented) << c.op << ": " << s.ToString();
    EXPECT_NE(s.message().find(c.op), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(std::string(ir::DTypeName(c.dtype))), std::string::npos)
        << s.message();
  }
}

TEST(ElementwiseTest, MalformedOpsAreInvalidArgument) {
  // Shape mismatch (no implicit broadcasting in StableHLO).
  OpRun shapes{"stablehlo.add",
               {Vec<float>(DType::kF32, {1, 2}), Vec<float>(DType::kF32, {1, 2, 3})},
               DType::kF32,
               {2}};
  EXPECT_EQ(shapes.Lower().status().code(), StatusCode::kInvalidArgument);
  // Result shape differs from the operands.
  OpRun result{"stablehlo.add",
               {Vec<float>(DType::kF32, {1, 2}), Vec<float>(DType::kF32, {1, 2})},
               DType::kF32,
               {3}};
  EXPECT_EQ(result.Lower().status().code(), StatusCode::kInvalidArgument);
  // Result dtype differs.
  OpRun dtype{"stablehlo.add",
              {Vec<float>(DType::kF32, {1, 2}), Vec<float>(DType::kF32, {1, 2})},
              DType::kF64,
              {2}};
  EXPECT_EQ(dtype.Lower().status().code(), StatusCode::kInvalidArgument);
  // Mixed operand dtypes.
  OpRun mixed{"stablehlo.add",
              {Vec<float>(DType::kF32, {1}), Vec<int32_t>(DType::kS32, {1})},
              DType::kF32,
              {1}};
  EXPECT_EQ(mixed.Lower().status().code(), StatusCode::kInvalidArgument);
  // Wrong operand count.
  OpRun arity{"stablehlo.add", {Vec<float>(DType::kF32, {1})}, DType::kF32, {1}};
  EXPECT_EQ(arity.Lower().status().code(), StatusCode::kInvalidArgument);
  // Dynamic dimensions are not supported (yet): UNIMPLEMENTED, not a crash.
  OpRun dynamic{"stablehlo.negate", {}, DType::kF32, {ir::kDynamicDim}};
  Array d;
  d.dtype = DType::kF32;
  d.dims = {ir::kDynamicDim};
  dynamic.inputs.push_back(d);
  EXPECT_EQ(dynamic.Lower().status().code(), StatusCode::kUnimplemented);
}

TEST(ElementwiseTest, KernelRejectsInputsThatContradictTheIr) {
  OpRun run{"stablehlo.add",
            {Vec<float>(DType::kF32, {1, 2, 3}), Vec<float>(DType::kF32, {1, 2, 3})},
            DType::kF32,
            {3}};
  StatusOr<Kernel> kernel = run.Lower();
  ASSERT_TRUE(kernel.ok());
  std::vector<Array> short_inputs{Vec<float>(DType::kF32, {1, 2}),
                                  Vec<float>(DType::kF32, {1, 2, 3})};
  auto run_with = [&](const std::vector<Array>& inputs) {
    return RunKernel(*kernel, run.builder->module(), run.builder->op(), inputs).status();
  };
  EXPECT_FALSE(run_with(short_inputs).ok());
  std::vector<Array> wrong_width{Vec<double>(DType::kF64, {1, 2, 3}),
                                 Vec<float>(DType::kF32, {1, 2, 3})};
  EXPECT_FALSE(run_with(wrong_width).ok());
  std::vector<Array> missing{Vec<float>(DType::kF32, {1, 2, 3})};
  EXPECT_FALSE(run_with(missing).ok());
}

TEST(ElementwiseTest, EveryRegisteredOpHasAUniqueName) {
  compiler::OpRegistry registry;
  compiler::RegisterElementwiseOps(registry);
  std::vector<std::string> names;
  for (const compiler::OpDef& def : registry.ops()) names.emplace_back(def.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_GE(names.size(), 45u);
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
