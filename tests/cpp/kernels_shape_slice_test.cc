// Shape kernels: slice, reverse, concatenate, pad, dynamic_slice, dynamic_update_slice, checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels/families.h"
#include "kernels/strided.h"
#include "lower/op_registry.h"
#include "tests/cpp/kernels_test_util.h"
#include "tests/cpp/shape_test_util.h"

namespace kiln::testing {
namespace {

// ---- the row copy under every box copy ----

// CopyBytes moves up to 256 bytes as fixed-size pieces: every length from 0 to 300, at every
// source and destination misalignment of 0-3 bytes, copies exactly those bytes and writes nothing
// around them.
TEST(ShapeOpsTest, CopyBytesCopiesExactlyTheBytesAtEveryLength) {
  std::vector<unsigned char> src(320), dst(336);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 37 + 11);
  for (size_t from = 0; from < 4; ++from) {
    for (size_t to = 0; to < 4; ++to) {
      for (size_t n = 0; n <= 300; ++n) {
        std::fill(dst.begin(), dst.end(), static_cast<unsigned char>(0xA5));
        kernels::strided::detail::CopyBytes(dst.data() + 8 + to, src.data() + from, n);
        for (size_t i = 0; i < dst.size(); ++i) {
          const bool inside = i >= 8 + to && i < 8 + to + n;
          const unsigned char want = inside ? src[from + i - 8 - to] : 0xA5;
          ASSERT_EQ(dst[i], want) << "n=" << n << " from=" << from << " to=" << to << " i=" << i;
        }
      }
    }
  }
}

// ---- slice / reverse ----

std::function<void(OpBuilder&)> SliceAttrs(std::vector<int64_t> start, std::vector<int64_t> limit,
                                           std::vector<int64_t> strides) {
  return [=](OpBuilder& b) {
    b.Ints("start_indices", start);
    b.Ints("limit_indices", limit);
    b.Ints("strides", strides);
  };
}

TEST(ShapeOpsTest, Slice) {
  Array x = MakeArray<int32_t>(DType::kS32, {3, 4}, Iota<int32_t>(12));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.slice", {x}, DType::kS32, {2, 2},
                                 SliceAttrs({1, 1}, {3, 3}, {1, 1}))),
            (std::vector<int32_t>{5, 6, 9, 10}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.slice", {x}, DType::kS32, {2, 2},
                                 SliceAttrs({0, 0}, {3, 4}, {2, 3}))),
            (std::vector<int32_t>{0, 3, 8, 11}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.slice", {x}, DType::kS32, {0, 4},
                                 SliceAttrs({2, 0}, {2, 4}, {1, 1}))),
            (std::vector<int32_t>{}));
  // Slicing one element of a 2-vector (as jax.random does): a small copy.
  Array key = MakeArray<uint32_t>(DType::kU32, {2}, {11, 22});
  EXPECT_EQ(
      RunOk<uint32_t>(OpRun("stablehlo.slice", {key}, DType::kU32, {1}, SliceAttrs({1}, {2}, {1}))),
      (std::vector<uint32_t>{22}));
  // Most of the rows of a matrix: contiguous, so the result aliases with an offset.
  OpRun rows("stablehlo.slice", {x}, DType::kS32, {2, 4}, SliceAttrs({1, 0}, {3, 4}, {1, 1}));
  StatusOr<Array> out = rows.Run();
  ASSERT_TRUE(out.ok());
  StatusOr<Kernel> rows_kernel = rows.Lower();
  EXPECT_EQ(rows_kernel->alias_of(0), 0);
  EXPECT_EQ(rows_kernel->aliases[0].byte_offset, 4 * sizeof(int32_t));
  EXPECT_EQ(ToVector<int32_t>(*out), (std::vector<int32_t>{4, 5, 6, 7, 8, 9, 10, 11}));

  EXPECT_EQ(LowerCode(OpRun("stablehlo.slice", {x}, DType::kS32, {2, 2},
                            SliceAttrs({1, 1}, {3, 5}, {1, 1}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.slice", {x}, DType::kS32, {2, 2},
                            SliceAttrs({1, 1}, {3, 3}, {0, 1}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.slice", {x}, DType::kS32, {2, 3},
                            SliceAttrs({1, 1}, {3, 3}, {1, 1}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      LowerCode(OpRun("stablehlo.slice", {x}, DType::kS32, {2, 2}, SliceAttrs({1}, {3}, {1}))),
      StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTest, Reverse) {
  Array x = MakeArray<int32_t>(DType::kS32, {2, 3}, {1, 2, 3, 4, 5, 6});
  auto dims = [](std::vector<int64_t> d) { return Ints("dimensions", std::move(d)); };
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.reverse", {x}, DType::kS32, {2, 3}, dims({0}))),
            (std::vector<int32_t>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.reverse", {x}, DType::kS32, {2, 3}, dims({1}))),
            (std::vector<int32_t>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.reverse", {x}, DType::kS32, {2, 3}, dims({0, 1}))),
            (std::vector<int32_t>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.reverse", {x}, DType::kS32, {2, 3}, dims({}))),
            (std::vector<int32_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.reverse", {x}, DType::kS32, {2, 3}, dims({2}))),
            StatusCode::kInvalidArgument);
}

// ---- concatenate ----

TEST(ShapeOpsTest, Concatenate) {
  Array a = MakeArray<float>(DType::kF32, {1, 2}, {1, 2});
  Array b = MakeArray<float>(DType::kF32, {2, 2}, {3, 4, 5, 6});
  auto dim = [](int64_t d) { return [d](OpBuilder& bb) { bb.Int("dimension", d); }; };
  EXPECT_EQ(RunOk<float>(OpRun("stablehlo.concatenate", {a, b}, DType::kF32, {3, 2}, dim(0))),
            (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Array c = MakeArray<float>(DType::kF32, {2, 1}, {7, 8});
  Array d = MakeArray<float>(DType::kF32, {2, 3}, {9, 10, 11, 12, 13, 14});
  EXPECT_EQ(RunOk<float>(OpRun("stablehlo.concatenate", {c, b, d}, DType::kF32, {2, 6}, dim(1))),
            (std::vector<float>{7, 3, 4, 9, 10, 11, 8, 5, 6, 12, 13, 14}));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.concatenate", {a, b}, DType::kF32, {3, 2}, dim(1))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.concatenate", {a, b}, DType::kF32, {4, 2}, dim(0))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.concatenate", {a, b}, DType::kF32, {3, 2})),
            StatusCode::kInvalidArgument);
}

// ---- pad ----

std::function<void(OpBuilder&)> PadAttrs(std::vector<int64_t> low, std::vector<int64_t> high,
                                         std::vector<int64_t> interior) {
  return [=](OpBuilder& b) {
    b.Ints("edge_padding_low", low);
    b.Ints("edge_padding_high", high);
    b.Ints("interior_padding", interior);
  };
}

TEST(ShapeOpsTest, PadSpecExample) {
  Array x = MakeArray<int32_t>(DType::kS32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.pad", {x, Scalar<int32_t>(DType::kS32, 0)}, DType::kS32,
                                 {5, 9}, PadAttrs({0, 1}, {2, 1}, {1, 2}))),
            (std::vector<int32_t>{0, 1, 0, 0, 2, 0, 0, 3, 0,  //
                                  0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                  0, 4, 0, 0, 5, 0, 0, 6, 0,  //
                                  0, 0, 0, 0, 0, 0, 0, 0, 0,  //
                                  0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(ShapeOpsTest, PadNegativeEdgesCrop) {
  Array x = MakeArray<float>(DType::kF32, {5}, {1, 2, 3, 4, 5});
  Array pv = Scalar<float>(DType::kF32, -1.0f);
  EXPECT_EQ(
      RunOk<float>(OpRun("stablehlo.pad", {x, pv}, DType::kF32, {2}, PadAttrs({-1}, {-2}, {0}))),
      (std::vector<float>{2, 3}));
  EXPECT_EQ(
      RunOk<float>(OpRun("stablehlo.pad", {x, pv}, DType::kF32, {6}, PadAttrs({-1}, {2}, {0}))),
      (std::vector<float>{2, 3, 4, 5, -1, -1}));
  // Interior padding happens before negative edge padding removes elements.
  Array y = MakeArray<float>(DType::kF32, {3}, {1, 2, 3});
  EXPECT_EQ(
      RunOk<float>(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {3}, PadAttrs({-1}, {-1}, {1}))),
      (std::vector<float>{-1, 2, -1}));
  EXPECT_EQ(
      RunOk<float>(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {4}, PadAttrs({-2}, {1}, {1}))),
      (std::vector<float>{2, -1, 3, -1}));
  // Everything cropped.
  EXPECT_EQ(
      RunOk<float>(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {0}, PadAttrs({-2}, {-1}, {0}))),
      (std::vector<float>{}));
  // 2-D with mixed signs, f64.
  Array m = MakeArray<double>(DType::kF64, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(RunOk<double>(OpRun("stablehlo.pad", {m, Scalar<double>(DType::kF64, 0.5)}, DType::kF64,
                                {3, 2}, PadAttrs({1, -1}, {0, 0}, {0, 0}))),
            (std::vector<double>{0.5, 0.5, 2, 3, 5, 6}));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {5}, PadAttrs({0}, {0}, {1}))),
            StatusCode::kOk);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {6}, PadAttrs({0}, {0}, {1}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {3}, PadAttrs({0}, {0}, {-1}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.pad", {y, pv}, DType::kF32, {0}, PadAttrs({-3}, {-1}, {0}))),
            StatusCode::kInvalidArgument);
}

// ---- dynamic_slice / dynamic_update_slice ----

TEST(ShapeOpsTest, DynamicSliceClampsStarts) {
  Array x =
      MakeArray<int32_t>(DType::kS32, {4, 4}, {0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0});
  // The spec's example: starts (-1, 3) clamp to (0, 2).
  EXPECT_EQ(
      RunOk<int32_t>(OpRun("stablehlo.dynamic_slice",
                           {x, Scalar<int64_t>(DType::kS64, -1), Scalar<int64_t>(DType::kS64, 3)},
                           DType::kS32, {2, 2}, Ints("slice_sizes", {2, 2}))),
      (std::vector<int32_t>{1, 1, 1, 1}));
  Array y = MakeArray<int32_t>(DType::kS32, {3, 4}, Iota<int32_t>(12));
  EXPECT_EQ(
      RunOk<int32_t>(OpRun("stablehlo.dynamic_slice",
                           {y, Scalar<uint32_t>(DType::kU32, 1), Scalar<uint32_t>(DType::kU32, 1)},
                           DType::kS32, {2, 3}, Ints("slice_sizes", {2, 3}))),
      (std::vector<int32_t>{5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(
      RunOk<int32_t>(OpRun("stablehlo.dynamic_slice",
                           {y, Scalar<int8_t>(DType::kS8, 100), Scalar<int8_t>(DType::kS8, -100)},
                           DType::kS32, {1, 2}, Ints("slice_sizes", {1, 2}))),
      (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.dynamic_slice", {y, Scalar<int32_t>(DType::kS32, 0)},
                            DType::kS32, {1, 2}, Ints("slice_sizes", {1, 2}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.dynamic_slice",
                            {y, Scalar<int32_t>(DType::kS32, 0), Scalar<int32_t>(DType::kS32, 0)},
                            DType::kS32, {4, 2}, Ints("slice_sizes", {4, 2}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.dynamic_slice",
                            {y, Scalar<float>(DType::kF32, 0), Scalar<float>(DType::kF32, 0)},
                            DType::kS32, {1, 2}, Ints("slice_sizes", {1, 2}))),
            StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTest, DynamicUpdateSliceClampsAndKeepsOperand) {
  Array x =
      MakeArray<int32_t>(DType::kS32, {4, 4}, {1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1});
  Array u = MakeArray<int32_t>(DType::kS32, {2, 2}, {1, 1, 1, 1});
  EXPECT_EQ(RunOk<int32_t>(
                OpRun("stablehlo.dynamic_update_slice",
                      {x, u, Scalar<int64_t>(DType::kS64, -1), Scalar<int64_t>(DType::kS64, 3)},
                      DType::kS32, {4, 4})),
            std::vector<int32_t>(16, 1));
  // The operand is untouched (arrays are immutable).
  EXPECT_EQ(ToVector<int32_t>(x),
            (std::vector<int32_t>{1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1}));
  Array v = MakeArray<float>(DType::kF32, {5}, {0, 0, 0, 0, 0});
  Array w = MakeArray<float>(DType::kF32, {2}, {7, 8});
  EXPECT_EQ(RunOk<float>(OpRun("stablehlo.dynamic_update_slice",
                               {v, w, Scalar<int32_t>(DType::kS32, 2)}, DType::kF32, {5})),
            (std::vector<float>{0, 0, 7, 8, 0}));
  EXPECT_EQ(RunOk<float>(OpRun("stablehlo.dynamic_update_slice",
                               {v, w, Scalar<int32_t>(DType::kS32, 9)}, DType::kF32, {5})),
            (std::vector<float>{0, 0, 0, 7, 8}));
  Array too_big = MakeArray<float>(DType::kF32, {6}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(LowerCode(OpRun("stablehlo.dynamic_update_slice",
                            {v, too_big, Scalar<int32_t>(DType::kS32, 0)}, DType::kF32, {5})),
            StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTest, GetDimensionSize) {
  Array x = MakeArray<float>(DType::kF32, {3, 7}, Iota<float>(21));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.get_dimension_size", {x}, DType::kS32, {},
                                 [](OpBuilder& b) { b.Int("dimension", 1); })),
            (std::vector<int32_t>{7}));
}

TEST(ShapeOpsTest, KernelsRejectInputsThatContradictTheIr) {
  Array x = MakeArray<int32_t>(DType::kS32, {2, 3}, Iota<int32_t>(6));
  OpRun run("stablehlo.transpose", {x}, DType::kS32, {3, 2}, Ints("permutation", {1, 0}));
  StatusOr<Kernel> kernel = run.Lower();
  ASSERT_TRUE(kernel.ok());
  std::vector<Array> small{MakeArray<int32_t>(DType::kS32, {2, 2}, {1, 2, 3, 4})};
  EXPECT_FALSE(RunKernel(*kernel, run.builder->module(), run.builder->op(), small).ok());
  std::vector<Array> none;
  EXPECT_FALSE(RunKernel(*kernel, run.builder->module(), run.builder->op(), none).ok());
}

TEST(ShapeOpsTest, MovesAnyByteWidthButNotTokens) {
  // Data movement works by byte width; a token is not a tensor at all.
  OpBuilder b("stablehlo.transpose");
  b.op().operands.push_back(b.module().AddValue(ir::Type::Token()));
  b.op().results.push_back(b.module().AddValue(ir::Type::Token()));
  b.Ints("permutation", {});
  FakeLowerContext ctx(b);
  EXPECT_EQ(FindLowering(&kernels::RegisterShapeOps, "stablehlo.transpose")(ctx).status().code(),
            StatusCode::kInvalidArgument);
  // Sub-byte / fp8 types are one byte each in storage, so moving them works.
  Array f8 = MakeArray<uint8_t>(DType::kF8E4M3FN, {2}, {1, 2});
  EXPECT_EQ(RunOk<uint8_t>(
                OpRun("stablehlo.reverse", {f8}, DType::kF8E4M3FN, {2}, Ints("dimensions", {0}))),
            (std::vector<uint8_t>{2, 1}));
}

}  // namespace
}  // namespace kiln::testing
