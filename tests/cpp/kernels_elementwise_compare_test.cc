// Elementwise compare (IEEE and TOTALORDER), select and clamp.
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

}  // namespace
}  // namespace kiln::testing
