// Elementwise kernels: the parallel path for large arrays, and the lowering errors.
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
  lower::OpRegistry registry;
  kernels::RegisterElementwiseOps(registry);
  std::vector<std::string> names;
  for (const lower::OpDef& def : registry.ops()) names.emplace_back(def.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  EXPECT_GE(names.size(), 45u);
}

}  // namespace
}  // namespace kiln::testing
