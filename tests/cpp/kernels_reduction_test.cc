// stablehlo.reduce against straightforward reference loops (windows: kernels_window_test.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/families.h"
#include "kernels/reduce_simd.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

lower::LowerFn Reduce() { return FindLowering(&kernels::RegisterReductionOps, "stablehlo.reduce"); }

// Reference reduce of a row-major array over `axes`, folding in `init` first, in double.
template <typename T, typename Acc, typename Fn>
std::vector<Acc> ReferenceReduce(const std::vector<T>& x, const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& axes, Acc init, Fn fn) {
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : axes) reduced[a] = true;
  std::vector<int64_t> out_dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (!reduced[d]) out_dims.push_back(dims[d]);
  }
  int64_t out_n = 1;
  for (int64_t d : out_dims) out_n *= d;
  std::vector<Acc> out(static_cast<size_t>(out_n), init);
  std::vector<int64_t> idx(dims.size(), 0);
  for (size_t flat = 0; flat < x.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat), o = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) o = o * dims[d] + idx[d];
    }
    out[static_cast<size_t>(o)] = fn(out[static_cast<size_t>(o)], static_cast<Acc>(x[flat]));
  }
  return out;
}

std::vector<int64_t> ReducedDims(const std::vector<int64_t>& dims,
                                 const std::vector<int64_t>& axes) {
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d) {
    bool r = false;
    for (int64_t a : axes) r |= a == static_cast<int64_t>(d);
    if (!r) out.push_back(dims[d]);
  }
  return out;
}

// Builds `reduce(x, init) applies <body_op> across axes` for one input.
struct SingleReduce {
  OpBuilder b{"stablehlo.reduce"};
  SingleReduce(DType dtype, const std::vector<int64_t>& dims, const std::vector<int64_t>& axes,
               const std::string& body_op) {
    b.Operand(dtype, dims);
    b.Operand(dtype, {});
    b.Result(dtype, ReducedDims(dims, axes));
    b.Ints("dimensions", axes);
    b.BinaryRegion(dtype, body_op);
  }
};

std::vector<std::vector<int64_t>> AllAxisSubsets(int rank) {
  std::vector<std::vector<int64_t>> subsets;
  for (int mask = 0; mask < (1 << rank); ++mask) {
    std::vector<int64_t> axes;
    for (int d = 0; d < rank; ++d) {
      if (mask & (1 << d)) axes.push_back(d);
    }
    subsets.push_back(axes);
  }
  return subsets;
}

TEST(ReduceTest, FloatOpsOverEveryAxisSubsetOf3D) {
  const std::vector<int64_t> dims = {3, 4, 5};
  std::vector<float> x = RandomFloats(60, 1, 0.5f, 1.5f);
  struct Case {
    const char* op;
    float init;
    double (*fn)(double, double);
  };
  const Case cases[] = {
      {"stablehlo.add", 0.0f, [](double a, double b) { return a + b; }},
      {"stablehlo.multiply", 1.0f, [](double a, double b) { return a * b; }},
      {"stablehlo.maximum", -INFINITY, [](double a, double b) { return std::max(a, b); }},
      {"stablehlo.minimum", INFINITY, [](double a, double b) { return std::min(a, b); }},
  };
  for (const Case& c : cases) {
    for (const std::vector<int64_t>& axes : AllAxisSubsets(3)) {
      SCOPED_TRACE(std::string(c.op) + " over " + ::testing::PrintToString(axes));
      SingleReduce r(DType::kF32, dims, axes, c.op);
      FakeLowerContext ctx(r.b);
      auto out = LowerAndRun(Reduce(), ctx,
                             {MakeArray(DType::kF32, dims, x), Scalar(DType::kF32, c.init)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(ctx.compile_region_calls, 0) << "expected the fast path";
      EXPECT_EQ((*out)[0].dims, ReducedDims(dims, axes));
      ExpectNear(ToVector<float>((*out)[0]),
                 ReferenceReduce<float, double>(x, dims, axes, c.init, c.fn), 1e-6, 0);
    }
  }
}

// f32 maxima and minima over every axis set of an odd-sized 3-D array (rows long enough for the
// vector loops, four at a time, and their prefetch) with NaNs, infinities and signed zeros at
// random places: NaN exactly where a reduced element is NaN, else the extreme value; sums against a
// float64 reference.
TEST(ReduceTest, FloatSpecialsOverEveryAxisSubsetOfOdd3D) {
  const std::vector<int64_t> dims = {7, 9, 133};
  std::vector<float> x = RandomFloats(7 * 9 * 133, 3, -2.0f, 2.0f);
  const float specials[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  uint32_t state = 99;
  for (float& v : x) {
    state = state * 1664525u + 1013904223u;
    if (state % 97 == 0) v = specials[(state >> 8) % 5];
  }
  struct Case {
    const char* op;
    float init;
    double (*fn)(double, double);
  };
  const Case cases[] = {
      {"stablehlo.maximum", -INFINITY,
       [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }},
      {"stablehlo.minimum", INFINITY,
       [](double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }},
      {"stablehlo.add", 0.0f, [](double a, double b) { return a + b; }},
  };
  for (const Case& c : cases) {
    for (const std::vector<int64_t>& axes : AllAxisSubsets(3)) {
      SCOPED_TRACE(std::string(c.op) + " over " + ::testing::PrintToString(axes));
      SingleReduce r(DType::kF32, dims, axes, c.op);
      FakeLowerContext ctx(r.b);
      auto out = LowerAndRun(Reduce(), ctx,
                             {MakeArray(DType::kF32, dims, x), Scalar(DType::kF32, c.init)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      const std::vector<float> got = ToVector<float>((*out)[0]);
      const std::vector<double> want = ReferenceReduce<float, double>(x, dims, axes, c.init, c.fn);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << i;
        } else if (std::isinf(want[i])) {
          EXPECT_EQ(static_cast<double>(got[i]), want[i]) << i;
        } else {
          EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::abs(want[i]))) << i;
        }
      }
    }
  }
}

// 32-bit integers over every axis set of an odd-sized 3-D array whose rows are long enough for the
// vector folds (kernels/reduce_simd.h: ReduceInts), with values that wrap around: exactly the
// sequential fold.
template <typename T>
void ExpectWideIntReductions(DType dtype) {
  const std::vector<int64_t> dims = {5, 9, 67};
  std::vector<T> x(5 * 9 * 67);
  uint32_t state = 12345;
  for (T& v : x) {
    state = state * 1664525u + 1013904223u;
    v = static_cast<T>(state % 7 == 0 ? state : state % 201);
  }
  const T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  x[3] = hi;
  x[70] = lo;
  struct Case {
    const char* op;
    T init;
    T (*fn)(T, T);
  };
  const Case cases[] = {
      {"stablehlo.add", T(3),
       [](T a, T b) {
         return static_cast<T>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
       }},
      {"stablehlo.multiply", T(1),
       [](T a, T b) {
         return static_cast<T>(static_cast<uint32_t>(a) * static_cast<uint32_t>(b));
       }},
      {"stablehlo.maximum", lo, [](T a, T b) { return std::max(a, b); }},
      {"stablehlo.minimum", hi, [](T a, T b) { return std::min(a, b); }},
  };
  for (const Case& c : cases) {
    for (const std::vector<int64_t>& axes : AllAxisSubsets(3)) {
      SCOPED_TRACE(std::string(c.op) + " over " + ::testing::PrintToString(axes));
      SingleReduce r(dtype, dims, axes, c.op);
      FakeLowerContext ctx(r.b);
      auto out = LowerAndRun(Reduce(), ctx, {MakeArray(dtype, dims, x), Scalar<T>(dtype, c.init)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(ctx.compile_region_calls, 0) << "expected the fast path";
      EXPECT_EQ(ToVector<T>((*out)[0]), (ReferenceReduce<T, T>(x, dims, axes, c.init, c.fn)));
    }
  }
}

TEST(ReduceTest, Int32OverEveryAxisSubsetOfOdd3D) { ExpectWideIntReductions<int32_t>(DType::kS32); }
TEST(ReduceTest, Uint32OverEveryAxisSubsetOfOdd3D) {
  ExpectWideIntReductions<uint32_t>(DType::kU32);
}

TEST(ReduceTest, IntegerAndPredOverEveryAxisSubset) {
  const std::vector<int64_t> dims = {2, 3, 4};
  std::vector<int32_t> xi(24);
  std::vector<uint8_t> xu(24), xp(24);
  for (int i = 0; i < 24; ++i) {
    xi[i] = (i * 7919) % 23 - 11;
    xu[i] = static_cast<uint8_t>(i * 37 + 200);  // sums wrap around in uint8
    xp[i] = (i * 5) % 3 == 0;
  }
  for (const std::vector<int64_t>& axes : AllAxisSubsets(3)) {
    SCOPED_TRACE(::testing::PrintToString(axes));
    {
      SingleReduce r(DType::kS32, dims, axes, "stablehlo.add");
      FakeLowerContext ctx(r.b);
      auto out = LowerAndRun(Reduce(), ctx,
                             {MakeArray(DType::kS32, dims, xi), Scalar<int32_t>(DType::kS32, 5)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<int32_t> want = ReferenceReduce<int32_t, int32_t>(
          xi, dims, axes, 5, [](int32_t a, int32_t b) { return a + b; });
      EXPECT_EQ(ToVector<int32_t>((*out)[0]), want);
    }
    {
      SingleReduce r(DType::kS32, dims, axes, "stablehlo.maximum");
      FakeLowerContext ctx(r.b);
      auto out =
          LowerAndRun(Reduce(), ctx,
                      {MakeArray(DType::kS32, dims, xi), Scalar<int32_t>(DType::kS32, INT32_MIN)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<int32_t> want = ReferenceReduce<int32_t, int32_t>(
          xi, dims, axes, INT32_MIN, [](int32_t a, int32_t b) { return std::max(a, b); });
      EXPECT_EQ(ToVector<int32_t>((*out)[0]), want);
    }
    {
      SingleReduce r(DType::kU8, dims, axes, "stablehlo.add");
      FakeLowerContext ctx(r.b);
      auto out = LowerAndRun(Reduce(), ctx,
                             {MakeArray(DType::kU8, dims, xu), Scalar<uint8_t>(DType::kU8, 0)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<uint8_t> want = ReferenceReduce<uint8_t, uint8_t>(
          xu, dims, axes, 0, [](uint8_t a, uint8_t b) { return static_cast<uint8_t>(a + b); });
      EXPECT_EQ(ToVector<uint8_t>((*out)[0]), want);
    }
    for (const char* op : {"stablehlo.and", "stablehlo.or"}) {
      bool is_and = std::string(op) == "stablehlo.and";
      SingleReduce r(DType::kPred, dims, axes, op);
      FakeLowerContext ctx(r.b);
      auto out = LowerAndRun(
          Reduce(), ctx,
          {MakeArray(DType::kPred, dims, xp), Scalar<uint8_t>(DType::kPred, is_and ? 1 : 0)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<uint8_t> want = ReferenceReduce<uint8_t, uint8_t>(
          xp, dims, axes, is_and ? 1 : 0,
          [&](uint8_t a, uint8_t b) { return static_cast<uint8_t>(is_and ? (a & b) : (a | b)); });
      EXPECT_EQ(ToVector<uint8_t>((*out)[0]), want);
    }
  }
}

TEST(ReduceTest, PredAddIsOrAndMultiplyIsAnd) {
  std::vector<uint8_t> x = {0, 1, 1, 0, 0, 0};
  for (auto [op, want] : {std::pair{"stablehlo.add", std::vector<uint8_t>{1, 0}},
                          std::pair{"stablehlo.multiply", std::vector<uint8_t>{0, 0}}}) {
    SingleReduce r(DType::kPred, {2, 3}, {1}, op);
    FakeLowerContext ctx(r.b);
    auto out =
        LowerAndRun(Reduce(), ctx,
                    {MakeArray(DType::kPred, {2, 3}, x),
                     Scalar<uint8_t>(DType::kPred, std::string(op) == "stablehlo.add" ? 0 : 1)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<uint8_t>((*out)[0]), want) << op;
  }
}

TEST(ReduceTest, MlpShapesAndLargeSums) {
  // The MLP's sums over axis 0 and 1 of [64,128] / [64,10], plus large ones that exercise the
  // blocked column path, the pairwise tree and the parallel row split.
  const std::vector<std::vector<int64_t>> shapes = {
      {64, 128}, {64, 10}, {1000, 257}, {3, 300001}, {1, 1 << 19}};
  for (const std::vector<int64_t>& dims : shapes) {
    std::vector<float> x = RandomFloats(static_cast<size_t>(dims[0] * dims[1]), 7, 0.5f, 1.5f);
    for (std::vector<int64_t> axes : {std::vector<int64_t>{0}, {1}, {0, 1}}) {
      SCOPED_TRACE(::testing::PrintToString(dims) + " over " + ::testing::PrintToString(axes));
      SingleReduce r(DType::kF32, dims, axes, "stablehlo.add");
      FakeLowerContext ctx(r.b);
      std::vector<Array> inputs = {MakeArray(DType::kF32, dims, x), Scalar(DType::kF32, 0.0f)};
      auto out = LowerAndRun(Reduce(), ctx, inputs);
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      ExpectNear(ToVector<float>((*out)[0]),
                 ReferenceReduce<float, double>(x, dims, axes, 0.0,
                                                [](double a, double b) { return a + b; }),
                 1e-5, 0);
      // Deterministic: a second run gives the same bits.
      auto again = LowerAndRun(Reduce(), ctx, inputs);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ(ToVector<float>((*out)[0]), ToVector<float>((*again)[0]));
    }
  }
}

TEST(ReduceTest, NanPropagatesThroughMaxAndMin) {
  std::vector<float> x = {1.0f, NAN, 3.0f, -1.0f, -2.0f, -3.0f};
  for (const char* op : {"stablehlo.maximum", "stablehlo.minimum"}) {
    SingleReduce r(DType::kF32, {2, 3}, {1}, op);
    FakeLowerContext ctx(r.b);
    auto out =
        LowerAndRun(Reduce(), ctx, {MakeArray(DType::kF32, {2, 3}, x), Scalar(DType::kF32, 0.0f)});
    ASSERT_TRUE(out.ok());
    std::vector<float> v = ToVector<float>((*out)[0]);
    EXPECT_TRUE(std::isnan(v[0])) << op;
    EXPECT_EQ(v[1], std::string(op) == "stablehlo.maximum" ? 0.0f : -3.0f);
  }
}

TEST(ReduceTest, EmptyReductionGivesInit) {
  SingleReduce r(DType::kF32, {0, 4}, {0}, "stablehlo.add");
  FakeLowerContext ctx(r.b);
  auto out = LowerAndRun(Reduce(), ctx,
                         {MakeArray<float>(DType::kF32, {0, 4}, {}), Scalar(DType::kF32, 7.0f)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), std::vector<float>(4, 7.0f));

  SingleReduce r2(DType::kF32, {0, 4}, {1}, "stablehlo.maximum");
  FakeLowerContext ctx2(r2.b);
  out = LowerAndRun(Reduce(), ctx2,
                    {MakeArray<float>(DType::kF32, {0, 4}, {}), Scalar(DType::kF32, 7.0f)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ((*out)[0].dims, std::vector<int64_t>{0});
}

// argmax over axis 1 with JAX's body (reduce_ops fixture): (value, index) pairs, NaN wins, the
// first index wins ties. Compare/select/logic only, so it runs in the ScalarEvaluator.
TEST(ReduceTest, VariadicArgmaxBodyIsEvaluatedDirectly) {
  const std::vector<int64_t> dims = {3, 4};
  std::vector<float> x = {1, 5, 5, 2, NAN, 0, 9, 9, -1, -3, -2, -1};
  std::vector<int32_t> iota = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  OpBuilder b("stablehlo.reduce");
  b.Operand(DType::kF32, dims);
  b.Operand(DType::kS32, dims);
  b.Operand(DType::kF32, {});
  b.Operand(DType::kS32, {});
  b.Result(DType::kF32, {3});
  b.Result(DType::kS32, {3});
  b.Ints("dimensions", {1});
  b.Region({DType::kF32, DType::kS32, DType::kF32, DType::kS32},
           [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
             auto op = [&](const char* name, std::vector<ir::ValueId> operands, DType result_type,
                           const char* dir = nullptr, const char* type = nullptr) {
               ir::Op o;
               o.name = name;
               o.operands = std::move(operands);
               o.results = {b.NewValue(result_type)};
               if (dir != nullptr) o.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
               if (type != nullptr) o.attrs.push_back({"compare_type", ir::Attr::Enum(type)});
               block.ops.push_back(o);
               return o.results[0];
             };
             ir::ValueId av = args[0], ai = args[1], bv = args[2], bi = args[3];
             ir::ValueId gt = op("stablehlo.compare", {av, bv}, DType::kPred, "GT", "FLOAT");
             ir::ValueId nan = op("stablehlo.compare", {av, av}, DType::kPred, "NE", "FLOAT");
             ir::ValueId take_value = op("stablehlo.or", {gt, nan}, DType::kPred);
             ir::ValueId eq = op("stablehlo.compare", {av, bv}, DType::kPred, "EQ", "FLOAT");
             ir::ValueId lt = op("stablehlo.compare", {ai, bi}, DType::kPred, "LT", "SIGNED");
             ir::ValueId tie = op("stablehlo.and", {eq, lt}, DType::kPred);
             ir::ValueId take_index = op("stablehlo.or", {take_value, tie}, DType::kPred);
             ir::ValueId v = op("stablehlo.select", {take_value, av, bv}, DType::kF32);
             ir::ValueId i = op("stablehlo.select", {take_index, ai, bi}, DType::kS32);
             ir::Op ret;
             ret.name = "stablehlo.return";
             ret.operands = {v, i};
             block.ops.push_back(ret);
           });
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(Reduce(), ctx,
                         {MakeArray(DType::kF32, dims, x), MakeArray(DType::kS32, dims, iota),
                          Scalar(DType::kF32, -INFINITY), Scalar<int32_t>(DType::kS32, 0)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ctx.compile_region_calls, 0) << "expected the ScalarEvaluator";
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), (std::vector<int32_t>{1, 0, 0}));
  std::vector<float> v = ToVector<float>((*out)[0]);
  EXPECT_EQ(v[0], 5.0f);
  EXPECT_TRUE(std::isnan(v[1]));
  EXPECT_EQ(v[2], -1.0f);
}

TEST(ReduceTest, GeneralPathPassesCapturesToTheBody) {
  // body(acc, x) = acc + x * c, with c captured from the enclosing scope.
  OpBuilder b("stablehlo.reduce");
  b.Operand(DType::kF32, {2, 3});
  b.Operand(DType::kF32, {});
  b.Result(DType::kF32, {2});
  b.Ints("dimensions", {1});
  ir::ValueId c = b.NewValue(DType::kF32);
  b.Region({DType::kF32, DType::kF32}, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
    ir::Op mul;
    mul.name = "stablehlo.multiply";
    mul.operands = {args[1], c};
    mul.results = {b.NewValue(DType::kF32)};
    ir::Op add;
    add.name = "stablehlo.add";
    add.operands = {args[0], mul.results[0]};
    add.results = {b.NewValue(DType::kF32)};
    ir::Op ret;
    ret.name = "stablehlo.return";
    ret.operands = add.results;
    block.ops = {mul, add, ret};
  });
  FakeLowerContext ctx(b);
  ctx.captures_ = {c};
  ctx.region_programs = {MakeProgram(
      {DType::kF32, DType::kF32, DType::kF32}, {DType::kF32},
      [](std::span<const Array> in, std::span<Array> out) -> Status {
        out[0] = Scalar(DType::kF32, ScalarValue<float>(in[0]) +
                                         ScalarValue<float>(in[1]) * ScalarValue<float>(in[2]));
        return Status::Ok();
      })};
  auto out = LowerAndRun(Reduce(), ctx,
                         {MakeArray<float>(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6}),
                          Scalar(DType::kF32, 0.5f), Scalar(DType::kF32, 10.0f)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{60.5f, 150.5f}));
}

TEST(ReduceTest, RejectsBadAttributesAndTypes) {
  {
    SingleReduce r(DType::kF32, {2, 3}, {1}, "stablehlo.add");
    r.b.op().attrs.clear();
    r.b.Ints("dimensions", {2});
    FakeLowerContext ctx(r.b);
    auto k = Reduce()(ctx);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(k.status().message().find("out of range for rank 2"), std::string::npos)
        << k.status().message();
  }
  {
    SingleReduce r(DType::kF32, {2, 3}, {1, 1}, "stablehlo.add");
    FakeLowerContext ctx(r.b);
    EXPECT_EQ(Reduce()(ctx).status().code(), StatusCode::kInvalidArgument);
  }
  {
    OpBuilder b("stablehlo.reduce");
    b.Operand(DType::kF32, {2, 3});
    b.Operand(DType::kF32, {});
    b.Result(DType::kF32, {3});  // wrong: reducing axis 1 leaves [2]
    b.Ints("dimensions", {1});
    b.BinaryRegion(DType::kF32, "stablehlo.add");
    FakeLowerContext ctx(b);
    EXPECT_EQ(Reduce()(ctx).status().code(), StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace kiln::testing
