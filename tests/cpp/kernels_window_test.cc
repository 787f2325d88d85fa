// stablehlo.reduce_window and stablehlo.select_and_scatter against the spec's definition: pad and
// dilate the input, then reduce each window (kernels/window.h, kernels/reduce_window.cc).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/families.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

lower::LowerFn ReduceWindow() {
  return FindLowering(&kernels::RegisterWindowOps, "stablehlo.reduce_window");
}

// ---------------------------------------------------------------------------------------------
// reduce_window

struct WindowConfig {
  std::vector<int64_t> window, strides, base_dil, win_dil, padding;  // padding flattened [lo, hi]*
};

// Reference per the spec: pad and dilate the input with `init`, then reduce each window.
std::vector<double> ReferenceWindow(const std::vector<float>& x, const std::vector<int64_t>& dims,
                                    const WindowConfig& c, double init,
                                    double (*fn)(double, double), std::vector<int64_t>& out_dims) {
  size_t rank = dims.size();
  std::vector<int64_t> padded(rank);
  out_dims.assign(rank, 0);
  for (size_t d = 0; d < rank; ++d) {
    int64_t dilated = dims[d] == 0 ? 0 : (dims[d] - 1) * c.base_dil[d] + 1;
    padded[d] = c.padding[2 * d] + dilated + c.padding[2 * d + 1];
    int64_t span = (c.window[d] - 1) * c.win_dil[d] + 1;
    out_dims[d] = (padded[d] <= 0 || span > padded[d]) ? 0 : (padded[d] - span) / c.strides[d] + 1;
  }
  int64_t total = 1, wtotal = 1;
  for (size_t d = 0; d < rank; ++d) {
    total *= out_dims[d];
    wtotal *= c.window[d];
  }
  std::vector<double> out;
  for (int64_t o = 0; o < total; ++o) {
    std::vector<int64_t> oi(rank);
    for (int64_t r = o, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
      oi[d] = r % out_dims[d];
      r /= out_dims[d];
    }
    double acc = init;
    for (int64_t w = 0; w < wtotal; ++w) {
      std::vector<int64_t> wi(rank);
      for (int64_t r = w, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        wi[d] = r % c.window[d];
        r /= c.window[d];
      }
      double value = init;  // padding and dilation holes hold init
      int64_t flat = 0;
      bool inside = true;
      for (size_t d = 0; d < rank; ++d) {
        int64_t pos = oi[d] * c.strides[d] + wi[d] * c.win_dil[d] - c.padding[2 * d];
        if (pos < 0 || pos % c.base_dil[d] != 0 || pos / c.base_dil[d] >= dims[d]) inside = false;
        flat = flat * dims[d] + (inside ? pos / c.base_dil[d] : 0);
      }
      if (inside) value = x[static_cast<size_t>(flat)];
      acc = fn(acc, value);
    }
    out.push_back(acc);
  }
  return out;
}

TEST(ReduceWindowTest, PoolingPaddingAndDilationsMatchTheSpec) {
  const std::vector<int64_t> dims = {1, 6, 7, 2};
  std::vector<float> x = RandomFloats(84, 3);
  struct Case {
    const char* op;
    float init;
    double (*fn)(double, double);
    WindowConfig c;
  };
  auto add = [](double a, double b) { return a + b; };
  auto max = [](double a, double b) { return std::max(a, b); };
  auto min = [](double a, double b) { return std::min(a, b); };
  const Case cases[] = {
      {"stablehlo.maximum",
       -INFINITY,
       max,
       {{1, 2, 2, 1}, {1, 2, 2, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0}}},
      {"stablehlo.add",
       0.0f,
       add,
       {{1, 3, 3, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0, 1, 1, 1, 1, 0, 0}}},
      {"stablehlo.minimum",
       INFINITY,
       min,
       {{1, 2, 3, 1}, {1, 1, 2, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}, {0, 0, 1, 1, 0, 2, 0, 0}}},
      {"stablehlo.add",
       0.0f,
       add,
       {{1, 2, 3, 1}, {1, 1, 2, 1}, {1, 1, 1, 1}, {1, 2, 1, 1}, {0, 0, 1, 1, 0, 1, 0, 0}}},
      {"stablehlo.maximum",
       -INFINITY,
       max,
       {{1, 2, 2, 1}, {1, 1, 1, 1}, {1, 2, 1, 1}, {1, 1, 1, 1}, {0, 0, 0, 0, 0, 0, 0, 0}}},
      {"stablehlo.add",
       0.0f,
       add,
       {{1, 2, 2, 2}, {1, 3, 2, 1}, {1, 2, 3, 1}, {1, 2, 1, 1}, {0, 0, -1, 2, 1, 0, 0, 0}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + " window " + ::testing::PrintToString(c.c.window));
    std::vector<int64_t> out_dims;
    std::vector<double> want = ReferenceWindow(x, dims, c.c, c.init, c.fn, out_dims);
    OpBuilder b("stablehlo.reduce_window");
    b.Operand(DType::kF32, dims);
    b.Operand(DType::kF32, {});
    b.Result(DType::kF32, out_dims);
    b.Ints("window_dimensions", c.c.window);
    b.Ints("window_strides", c.c.strides);
    b.Ints("base_dilations", c.c.base_dil);
    b.Ints("window_dilations", c.c.win_dil);
    b.Attr("padding", IntsAttr(c.c.padding, {4, 2}));
    b.BinaryRegion(DType::kF32, c.op);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(ReduceWindow(), ctx,
                           {MakeArray(DType::kF32, dims, x), Scalar(DType::kF32, c.init)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ctx.compile_region_calls, 0);
    ExpectNear(ToVector<float>((*out)[0]), want, 1e-6, 1e-6);
  }
}

TEST(ReduceWindowTest, DefaultsAndGeneralPath) {
  // Cumulative sum along axis 1 written as a reduce_window with absent optional attributes'
  // stand-ins (strides/dilations default to 1) and a body that runs as a region program.
  const std::vector<int64_t> dims = {2, 4};
  std::vector<float> x = {1, 2, 3, 4, 5, 6, 7, 8};
  OpBuilder b("stablehlo.reduce_window");
  b.Operand(DType::kF32, dims);
  b.Operand(DType::kF32, {});
  b.Result(DType::kF32, dims);
  b.Ints("window_dimensions", {1, 4});
  b.Attr("window_strides", ir::Attr::None());
  b.Attr("padding", IntsAttr({0, 0, 3, 0}, {2, 2}));
  b.Region({DType::kF32, DType::kF32}, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
    ir::Op sum;  // an op nothing recognises: forces the compiled-program path
    sum.name = "test.add";
    sum.operands = {args[0], args[1]};
    sum.results = {b.NewValue(DType::kF32)};
    ir::Op ret;
    ret.name = "stablehlo.return";
    ret.operands = sum.results;
    block.ops = {sum, ret};
  });
  FakeLowerContext ctx(b);
  ctx.region_programs = {MakeProgram({DType::kF32, DType::kF32}, {DType::kF32},
                                     [](std::span<const Array> in, std::span<Array> out) -> Status {
                                       out[0] = Scalar(DType::kF32, ScalarValue<float>(in[0]) +
                                                                        ScalarValue<float>(in[1]));
                                       return Status::Ok();
                                     })};
  auto out = LowerAndRun(ReduceWindow(), ctx,
                         {MakeArray(DType::kF32, dims, x), Scalar(DType::kF32, 0.0f)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{1, 3, 6, 10, 5, 11, 18, 26}));
}

// ---------------------------------------------------------------------------------------------
// Random geometries: every combination of window, stride, base and window dilation and padding
// (negative included) on ranks 1-3, against the spec reference.

WindowConfig DrawWindow(std::mt19937& rng, const std::vector<int64_t>& dims) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  WindowConfig c;
  for (size_t d = 0; d < dims.size(); ++d) {
    c.window.push_back(pick(1, 4));
    c.strides.push_back(pick(1, 3));
    c.base_dil.push_back(pick(0, 2) == 0 ? pick(2, 3) : 1);
    c.win_dil.push_back(pick(0, 2) == 0 ? pick(2, 3) : 1);
    c.padding.push_back(pick(-1, 3));
    c.padding.push_back(pick(-1, 3));
  }
  return c;
}

Status RunWindow(const std::vector<float>& x, const std::vector<int64_t>& dims,
                 const WindowConfig& c, const char* body, float init,
                 const std::vector<int64_t>& out_dims, std::vector<float>* got) {
  OpBuilder b("stablehlo.reduce_window");
  b.Operand(DType::kF32, dims);
  b.Operand(DType::kF32, {});
  b.Result(DType::kF32, out_dims);
  b.Ints("window_dimensions", c.window);
  b.Ints("window_strides", c.strides);
  b.Ints("base_dilations", c.base_dil);
  b.Ints("window_dilations", c.win_dil);
  b.Attr("padding", IntsAttr(c.padding, {static_cast<int64_t>(dims.size()), 2}));
  b.BinaryRegion(DType::kF32, body);
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(ReduceWindow(), ctx,
                         {MakeArray(DType::kF32, dims, x), Scalar(DType::kF32, init)});
  if (!out.ok()) return out.status();
  *got = ToVector<float>((*out)[0]);
  return Status::Ok();
}

TEST(ReduceWindowTest, RandomGeometriesMatchTheSpec) {
  std::mt19937 rng(20261125);
  auto add = [](double a, double b) { return a + b; };
  auto max = [](double a, double b) { return std::max(a, b); };
  int checked = 0;
  for (int iter = 0; iter < 400; ++iter) {
    const int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(std::uniform_int_distribution<int>(0, 6)(rng));
    const WindowConfig c = DrawWindow(rng, dims);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    const std::vector<float> x = RandomFloats(static_cast<size_t>(n), iter);
    const bool use_max = iter % 2 == 1;
    std::vector<int64_t> out_dims;
    const std::vector<double> want =
        ReferenceWindow(x, dims, c, use_max ? -INFINITY : 0.0, use_max ? +max : +add, out_dims);
    SCOPED_TRACE("iteration " + std::to_string(iter) + " dims " + ::testing::PrintToString(dims) +
                 " window " + ::testing::PrintToString(c.window) + " strides " +
                 ::testing::PrintToString(c.strides) + " base " +
                 ::testing::PrintToString(c.base_dil) + " wdil " +
                 ::testing::PrintToString(c.win_dil) + " pad " +
                 ::testing::PrintToString(c.padding));
    std::vector<float> got;
    Status s = RunWindow(x, dims, c, use_max ? "stablehlo.maximum" : "stablehlo.add",
                         use_max ? -INFINITY : 0.0f, out_dims, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectNear(got, want, 1e-5, 1e-5);
    ++checked;
  }
  EXPECT_EQ(checked, 400);
}

// Windows that leave their trailing axes untouched (pooling over NHWC's H and W) reduce whole
// blocks of those axes per window position (kernels/reduce_window.cc, TypedBlockKernel): random
// windows on the leading axes, trivial trailing ones of 4 elements or more.
TEST(ReduceWindowTest, TrailingUntouchedAxesMatchTheSpec) {
  std::mt19937 rng(20261129);
  auto add = [](double a, double b) { return a + b; };
  auto max = [](double a, double b) { return std::max(a, b); };
  for (int iter = 0; iter < 200; ++iter) {
    const int lead = std::uniform_int_distribution<int>(1, 2)(rng);
    const int trail = std::uniform_int_distribution<int>(1, 2)(rng);
    std::vector<int64_t> dims;
    for (int d = 0; d < lead; ++d) dims.push_back(std::uniform_int_distribution<int>(0, 7)(rng));
    for (int d = 0; d < trail; ++d) dims.push_back(std::uniform_int_distribution<int>(4, 9)(rng));
    WindowConfig c = DrawWindow(rng, dims);
    for (size_t d = static_cast<size_t>(lead); d < dims.size(); ++d) {
      c.window[d] = c.strides[d] = c.base_dil[d] = c.win_dil[d] = 1;
      c.padding[2 * d] = c.padding[2 * d + 1] = 0;
    }
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    const std::vector<float> x = RandomFloats(static_cast<size_t>(n), iter);
    const bool use_max = iter % 2 == 1;
    std::vector<int64_t> out_dims;
    const std::vector<double> want =
        ReferenceWindow(x, dims, c, use_max ? -INFINITY : 0.0, use_max ? +max : +add, out_dims);
    SCOPED_TRACE("iteration " + std::to_string(iter) + " dims " + ::testing::PrintToString(dims) +
                 " window " + ::testing::PrintToString(c.window));
    std::vector<float> got;
    Status s = RunWindow(x, dims, c, use_max ? "stablehlo.maximum" : "stablehlo.add",
                         use_max ? -INFINITY : 0.0f, out_dims, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectNear(got, want, 1e-5, 1e-5);
  }
}

// Prefix and suffix windows (cumulative reductions) take the linear-time scan
// (kernels/window_scan.h for sums); they must equal the windowed definition, including windows
// shorter than the axis and padding beyond it.
TEST(ReduceWindowTest, ScanWindowsMatchTheSpec) {
  auto add = [](double a, double b) { return a + b; };
  struct Case {
    std::vector<int64_t> dims;
    int axis;
    int64_t window, pad_lo, pad_hi;
  };
  const Case cases[] = {
      {{300}, 0, 300, 299, 0},        // cumsum
      {{300}, 0, 300, 0, 299},        // reverse cumsum
      {{4, 50, 3}, 1, 50, 49, 0},     // cumsum along a middle axis
      {{4, 50, 3}, 1, 50, 0, 49},     // reverse, middle axis
      {{7, 2000}, 1, 2000, 1999, 0},  // long inner lines
      {{40}, 0, 60, 59, 5},           // window longer than the axis, extra outputs past the end
      {{40}, 0, 45, 44, 0},           // window longer than the axis
      {{40}, 0, 10, 39, 0},           // starts at 0 but ends early: still a prefix
      {{3, 1100}, 0, 3, 2, 0},        // inner wider than one scan block
      // The tree scan's block boundaries (16, 256, 4096 positions), both directions.
      {{4097}, 0, 4097, 4096, 0},
      {{4097}, 0, 4097, 0, 4096},
      {{2, 257, 33}, 1, 257, 256, 0},  // rows of 33 columns: vectors and a remainder
      {{2, 17, 33}, 1, 17, 0, 16},
      {{6, 1}, 1, 3, 2, 0},  // one-element lines
      {{40}, 0, 45, 3, 41},  // a suffix whose first outputs repeat the whole sum
      {{40}, 0, 45, 0, 60},  // a suffix with empty windows at the end
  };
  for (const Case& k : cases) {
    WindowConfig c;
    for (size_t d = 0; d < k.dims.size(); ++d) {
      const bool on = static_cast<int>(d) == k.axis;
      c.window.push_back(on ? k.window : 1);
      c.strides.push_back(1);
      c.base_dil.push_back(1);
      c.win_dil.push_back(1);
      c.padding.push_back(on ? k.pad_lo : 0);
      c.padding.push_back(on ? k.pad_hi : 0);
    }
    int64_t n = 1;
    for (int64_t d : k.dims) n *= d;
    const std::vector<float> x = RandomFloats(static_cast<size_t>(n), 5);
    std::vector<int64_t> out_dims;
    const std::vector<double> want = ReferenceWindow(x, k.dims, c, 0.0, +add, out_dims);
    SCOPED_TRACE(::testing::PrintToString(k.dims) + " window " + std::to_string(k.window) +
                 " pad " + std::to_string(k.pad_lo) + "," + std::to_string(k.pad_hi));
    std::vector<float> got;
    Status s = RunWindow(x, k.dims, c, "stablehlo.add", 0.0f, out_dims, &got);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ExpectNear(got, want, 1e-4, 1e-4);
  }
}

// A cumulative sum over 2^20 elements: the window is as long as the axis. It used to need
// 2^40-entry tables; it must run (and in linear time, which the benchmark suite measures).
TEST(ReduceWindowTest, MillionElementPrefixSum) {
  const int64_t n = int64_t{1} << 20;
  std::vector<float> x(static_cast<size_t>(n), 1.0f);
  WindowConfig c{{n}, {1}, {1}, {1}, {n - 1, 0}};
  std::vector<float> got;
  Status s = RunWindow(x, {n}, c, "stablehlo.add", 0.0f, {n}, &got);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(got.size(), static_cast<size_t>(n));
  for (int64_t i : {int64_t{0}, int64_t{1}, int64_t{4095}, n - 1}) {
    EXPECT_EQ(got[static_cast<size_t>(i)], static_cast<float>(i + 1));
  }
}

TEST(ReduceWindowTest, RejectsBadWindows) {
  OpBuilder b("stablehlo.reduce_window");
  b.Operand(DType::kF32, {4});
  b.Operand(DType::kF32, {});
  b.Result(DType::kF32, {4});
  b.Ints("window_dimensions", {0});
  b.BinaryRegion(DType::kF32, "stablehlo.add");
  FakeLowerContext ctx(b);
  auto k = ReduceWindow()(ctx);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// select_and_scatter

// Region `^bb(%a, %b): %p = compare <dir>, %a, %b; return %p`.
void CompareRegion(OpBuilder& b, DType dtype, const char* dir) {
  b.Region({dtype, dtype}, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
    ir::Op cmp;
    cmp.name = "stablehlo.compare";
    cmp.operands = {args[0], args[1]};
    cmp.results = {b.NewValue(DType::kPred)};
    cmp.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
    ir::Op ret;
    ret.name = "stablehlo.return";
    ret.operands = cmp.results;
    block.ops = {cmp, ret};
  });
}

OpBuilder SpecSelectAndScatter() {
  OpBuilder b("stablehlo.select_and_scatter");
  b.Operand(DType::kS64, {4, 2});
  b.Operand(DType::kS64, {2, 2});
  b.Operand(DType::kS64, {});
  b.Result(DType::kS64, {4, 2});
  b.Ints("window_dimensions", {3, 1});
  b.Ints("window_strides", {2, 1});
  b.Attr("padding", IntsAttr({0, 1, 0, 0}, {2, 2}));
  CompareRegion(b, DType::kS64, "GE");
  b.BinaryRegion(DType::kS64, "stablehlo.add");
  return b;
}

std::vector<Array> SpecSelectAndScatterInputs() {
  return {MakeArray<int64_t>(DType::kS64, {4, 2}, {1, 5, 2, 5, 3, 6, 4, 4}),
          MakeArray<int64_t>(DType::kS64, {2, 2}, {5, 6, 7, 8}), Scalar<int64_t>(DType::kS64, 0)};
}

TEST(SelectAndScatterTest, SpecExampleFastPath) {
  OpBuilder b = SpecSelectAndScatter();
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(FindLowering(&kernels::RegisterWindowOps, "stablehlo.select_and_scatter"),
                         ctx, SpecSelectAndScatterInputs());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ctx.compile_region_calls, 0);
  EXPECT_EQ(ToVector<int64_t>((*out)[0]), (std::vector<int64_t>{0, 0, 0, 0, 5, 14, 7, 0}));
}

TEST(SelectAndScatterTest, SpecExampleGeneralPath) {
  OpBuilder b = SpecSelectAndScatter();
  b.op().regions[0].blocks[0].ops[0].name = "test.ge";  // not recognised: run the region programs
  FakeLowerContext ctx(b);
  ctx.region_programs = {
      MakeProgram({DType::kS64, DType::kS64}, {DType::kPred},
                  [](std::span<const Array> in, std::span<Array> out) -> Status {
                    out[0] = Scalar<uint8_t>(
                        DType::kPred, ScalarValue<int64_t>(in[0]) >= ScalarValue<int64_t>(in[1]));
                    return Status::Ok();
                  }),
      MakeProgram({DType::kS64, DType::kS64}, {DType::kS64},
                  [](std::span<const Array> in, std::span<Array> out) -> Status {
                    out[0] = Scalar<int64_t>(
                        DType::kS64, ScalarValue<int64_t>(in[0]) + ScalarValue<int64_t>(in[1]));
                    return Status::Ok();
                  })};
  auto out = LowerAndRun(FindLowering(&kernels::RegisterWindowOps, "stablehlo.select_and_scatter"),
                         ctx, SpecSelectAndScatterInputs());
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ctx.compile_region_calls, 2);
  EXPECT_EQ(ToVector<int64_t>((*out)[0]), (std::vector<int64_t>{0, 0, 0, 0, 5, 14, 7, 0}));
}

// Pooling-shaped select_and_scatter (trailing trivial axes, the NHWC channels) runs a block per
// window position (SelectScatterBlockKernel); its bits must equal the general path's, which folds
// the regions one element at a time, with many ties (GE keeps the first maximum) and overlapping
// windows (scatter order) included.
std::vector<float> SelectAndScatterF32(const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& window,
                                       const std::vector<int64_t>& strides,
                                       const std::vector<int64_t>& padding,
                                       const std::vector<int64_t>& out_dims, bool general) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(0, 3);  // few distinct values: ties everywhere
  std::normal_distribution<float> normal;
  int64_t n = 1, m = 1;
  for (int64_t d : dims) n *= d;
  for (int64_t d : out_dims) m *= d;
  std::vector<float> x(static_cast<size_t>(n)), src(static_cast<size_t>(m));
  for (float& v : x) v = static_cast<float>(small(rng));
  for (float& v : src) v = normal(rng);
  OpBuilder b("stablehlo.select_and_scatter");
  b.Operand(DType::kF32, dims);
  b.Operand(DType::kF32, out_dims);
  b.Operand(DType::kF32, {});
  b.Result(DType::kF32, dims);
  b.Ints("window_dimensions", window);
  b.Ints("window_strides", strides);
  b.Attr("padding", IntsAttr(padding, {static_cast<int64_t>(dims.size()), 2}));
  CompareRegion(b, DType::kF32, "GE");
  b.BinaryRegion(DType::kF32, "stablehlo.add");
  if (general) b.op().regions[0].blocks[0].ops[0].name = "test.ge";
  FakeLowerContext ctx(b);
  ctx.region_programs = {
      MakeProgram({DType::kF32, DType::kF32}, {DType::kPred},
                  [](std::span<const Array> in, std::span<Array> out) -> Status {
                    out[0] = Scalar<uint8_t>(
                        DType::kPred, ScalarValue<float>(in[0]) >= ScalarValue<float>(in[1]));
                    return Status::Ok();
                  }),
      MakeProgram({DType::kF32, DType::kF32}, {DType::kF32},
                  [](std::span<const Array> in, std::span<Array> out) -> Status {
                    out[0] = Scalar<float>(DType::kF32,
                                           ScalarValue<float>(in[0]) + ScalarValue<float>(in[1]));
                    return Status::Ok();
                  })};
  auto out =
      LowerAndRun(FindLowering(&kernels::RegisterWindowOps, "stablehlo.select_and_scatter"), ctx,
                  {MakeArray<float>(DType::kF32, dims, x),
                   MakeArray<float>(DType::kF32, out_dims, src), Scalar<float>(DType::kF32, 0.5f)});
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ(ctx.compile_region_calls, general ? 2 : 0);
  return ToVector<float>((*out)[0]);
}

TEST(SelectAndScatterTest, ChannelBlocksMatchGeneralPath) {
  struct Case {
    std::vector<int64_t> dims, window, strides, padding, out_dims;
  };
  const std::vector<Case> cases = {
      // 2x2 max pooling, stride 2, NHWC with 8 channels: disjoint windows, split over threads.
      {{4, 20, 20, 8}, {1, 2, 2, 1}, {1, 2, 2, 1}, {0, 0, 0, 0, 0, 0, 0, 0}, {4, 10, 10, 8}},
      // flax's 3x3 stride 2 pooling with padding: overlapping windows, scatter order matters.
      {{2, 9, 11, 6}, {1, 3, 3, 1}, {1, 2, 2, 1}, {0, 0, 1, 1, 0, 1, 0, 0}, {2, 5, 5, 6}},
      // equinox under vmap: [N, 1, H, W, C], two trailing trivial axes of 1 and 5 (block 5).
      {{3, 1, 7, 6, 5},
       {1, 1, 2, 2, 1},
       {1, 1, 2, 2, 1},
       {0, 0, 0, 0, 0, 1, 0, 0, 0, 0},
       {3, 1, 4, 3, 5}},
      // Too many windows to list at plan time (ListWindows): walked with ForEachWindow.
      {{2, 300, 301, 4}, {1, 2, 2, 1}, {1, 2, 2, 1}, {0, 0, 0, 0, 0, 1, 0, 0}, {2, 150, 151, 4}},
      // Windows entirely in padding select nothing.
      {{2, 3, 4}, {1, 2, 1}, {1, 3, 1}, {0, 0, 0, 4, 0, 0}, {2, 2, 4}},
  };
  for (const Case& c : cases) {
    std::vector<float> fast =
        SelectAndScatterF32(c.dims, c.window, c.strides, c.padding, c.out_dims, false);
    std::vector<float> general =
        SelectAndScatterF32(c.dims, c.window, c.strides, c.padding, c.out_dims, true);
    ASSERT_EQ(fast.size(), general.size());
    for (size_t i = 0; i < fast.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(fast[i]), std::bit_cast<uint32_t>(general[i])) << i;
    }
  }
}

}  // namespace
}  // namespace kiln::testing
