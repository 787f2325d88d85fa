// Shape kernels: constant, iota, broadcast_in_dim, broadcast, reshape and transpose.
#include <gtest/gtest.h>

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

// Naive n-d transpose reference: out[i] = in[perm-mapped index].
template <typename T>
std::vector<T> NaiveTranspose(const std::vector<T>& in, const std::vector<int64_t>& dims,
                              const std::vector<int64_t>& perm) {
  std::vector<int64_t> out_dims;
  for (int64_t p : perm) out_dims.push_back(dims[static_cast<size_t>(p)]);
  const std::vector<int64_t> in_strides = kernels::strided::RowMajorStrides(dims);
  std::vector<T> out(in.size());
  std::vector<int64_t> idx(dims.size(), 0);
  size_t o = 0;
  if (!in.empty()) {
    do {
      int64_t src = 0;
      for (size_t i = 0; i < perm.size(); ++i)
        src += idx[i] * in_strides[static_cast<size_t>(perm[i])];
      out[o++] = in[static_cast<size_t>(src)];
    } while (kernels::strided::NextIndex(idx, out_dims));
  }
  return out;
}

// ---- constant / iota ----

TEST(ShapeOpsTest, ConstantIsMaterialisedOnce) {
  ir::Attr value;
  value.kind = ir::Attr::Kind::kElements;
  value.type = ir::Type::Tensor(DType::kF32, {2, 2});
  const std::vector<float> data{1, 2, 3, 4};
  value.data.resize(16);
  std::memcpy(value.data.data(), data.data(), 16);
  OpRun run("stablehlo.constant", {}, DType::kF32, {2, 2},
            [&](OpBuilder& b) { b.Attr("value", value); });
  StatusOr<Kernel> kernel = run.Lower();
  ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
  // The literal is made once at lowering; every run's result is those bytes, with no code run.
  EXPECT_FALSE(kernel->fn);
  ASSERT_NE(kernel->constant, nullptr);
  auto out = RunKernel(*kernel, run.builder->module(), run.builder->op(), {});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), data);

  OpRun wrong("stablehlo.constant", {}, DType::kF32, {4},
              [&](OpBuilder& b) { b.Attr("value", value); });
  EXPECT_EQ(LowerCode(std::move(wrong)), StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.constant", {}, DType::kF32, {2, 2})),
            StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTest, Iota) {
  auto dim = [](int64_t d) { return [d](OpBuilder& b) { b.Int("iota_dimension", d); }; };
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.iota", {}, DType::kS32, {2, 3}, dim(0))),
            (std::vector<int32_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.iota", {}, DType::kS32, {2, 3}, dim(1))),
            (std::vector<int32_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(RunOk<float>(OpRun("stablehlo.iota", {}, DType::kF32, {4}, dim(0))),
            (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(RunOk<uint64_t>(OpRun("stablehlo.iota", {}, DType::kU64, {2, 2, 2}, dim(1))),
            (std::vector<uint64_t>{0, 0, 1, 1, 0, 0, 1, 1}));
  EXPECT_EQ(RunOk<uint16_t>(OpRun("stablehlo.iota", {}, DType::kBF16, {3}, dim(0))),
            (std::vector<uint16_t>{0x0000, 0x3F80, 0x4000}));
  // Large enough to be split across threads.
  std::vector<int32_t> big =
      RunOk<int32_t>(OpRun("stablehlo.iota", {}, DType::kS32, {300, 1000}, dim(1)));
  ASSERT_EQ(big.size(), 300000u);
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(big[i], static_cast<int32_t>(i % 1000));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.iota", {}, DType::kS32, {2, 3}, dim(2))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.iota", {}, DType::kS32, {2, 3})),
            StatusCode::kInvalidArgument);
}

// ---- broadcast_in_dim / broadcast / reshape ----

TEST(ShapeOpsTest, BroadcastInDim) {
  // Scalar to matrix.
  EXPECT_EQ(RunOk<float>(OpRun("stablehlo.broadcast_in_dim", {Scalar<float>(DType::kF32, 2.5f)},
                               DType::kF32, {2, 3}, Ints("broadcast_dimensions", {}))),
            std::vector<float>(6, 2.5f));
  // Row vector along the columns and along the rows.
  Array v = MakeArray<int32_t>(DType::kS32, {3}, {1, 2, 3});
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.broadcast_in_dim", {v}, DType::kS32, {2, 3},
                                 Ints("broadcast_dimensions", {1}))),
            (std::vector<int32_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.broadcast_in_dim", {v}, DType::kS32, {3, 2},
                                 Ints("broadcast_dimensions", {0}))),
            (std::vector<int32_t>{1, 1, 2, 2, 3, 3}));
  // The spec's example: [1,3] -> [2,3,2] with dims [2, 1] (size-1 dim broadcasts, axes reordered).
  Array m = MakeArray<int32_t>(DType::kS32, {1, 3}, {1, 2, 3});
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.broadcast_in_dim", {m}, DType::kS32, {2, 3, 2},
                                 Ints("broadcast_dimensions", {2, 1}))),
            (std::vector<int32_t>{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  // A transposing broadcast: [2,3] -> [3,2] via dims [1, 0].
  Array t = MakeArray<int32_t>(DType::kS32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.broadcast_in_dim", {t}, DType::kS32, {3, 2},
                                 Ints("broadcast_dimensions", {1, 0}))),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  // Adding unit dims only: the plan views the operand's bytes (no code, no copy).
  OpRun alias("stablehlo.broadcast_in_dim", {v}, DType::kS32, {1, 3, 1},
              Ints("broadcast_dimensions", {1}));
  StatusOr<Array> out = alias.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(ToVector<int32_t>(*out), ToVector<int32_t>(v));
  EXPECT_EQ(alias.Lower()->alias_of(0), 0);
  // Large broadcast of a bias vector (parallel fill/copy path).
  std::vector<float> bias = Iota<float>(128);
  std::vector<float> big =
      RunOk<float>(OpRun("stablehlo.broadcast_in_dim", {MakeArray<float>(DType::kF32, {128}, bias)},
                         DType::kF32, {1000, 128}, Ints("broadcast_dimensions", {1})));
  ASSERT_EQ(big.size(), 128000u);
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(big[i], static_cast<float>(i % 128));

  // One long row (a scalar fill, a 1-D reverse) is split across threads too.
  std::vector<double> fill =
      RunOk<double>(OpRun("stablehlo.broadcast_in_dim", {Scalar<double>(DType::kF64, 0.25)},
                          DType::kF64, {100000}, Ints("broadcast_dimensions", {})));
  ASSERT_EQ(fill, std::vector<double>(100000, 0.25));
  std::vector<int32_t> rev = RunOk<int32_t>(
      OpRun("stablehlo.reverse", {MakeArray<int32_t>(DType::kS32, {100000}, Iota<int32_t>(100000))},
            DType::kS32, {100000}, Ints("dimensions", {0})));
  ASSERT_EQ(rev.size(), 100000u);
  for (size_t i = 0; i < rev.size(); ++i) ASSERT_EQ(rev[i], static_cast<int32_t>(99999 - i));

  EXPECT_EQ(LowerCode(OpRun("stablehlo.broadcast_in_dim", {v}, DType::kS32, {2, 4},
                            Ints("broadcast_dimensions", {1}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.broadcast_in_dim", {t}, DType::kS32, {2, 3},
                            Ints("broadcast_dimensions", {0, 0}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.broadcast_in_dim", {v}, DType::kS32, {2, 3},
                            Ints("broadcast_dimensions", {}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.broadcast_in_dim", {v}, DType::kS32, {2, 3})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.broadcast_in_dim", {v}, DType::kF32, {2, 3},
                            Ints("broadcast_dimensions", {1}))),
            StatusCode::kInvalidArgument);
}

// A broadcast gathered tile by tile (what a fused loop does) equals the whole broadcast, for every
// tile start and length: tiles that begin mid-row, span rows, or cover one element. Short rows
// (the periodic copy and the row splats of GatherFlat) at 1, 2, 4 and 8 bytes an element.
template <typename W>
void CheckGatherFlatTiles() {
  using kiln::kernels::strided::CopyBox;
  using kiln::kernels::strided::GatherFlat;
  using kiln::kernels::strided::RowMajorStrides;
  using kiln::kernels::strided::StridedBox;
  struct Case {
    std::vector<int64_t> dims, src_strides;
  };
  // [5,7] from a row (stride 0 on axis 0), from a column (stride 0 on the last axis), [3,4,5]
  // from its middle axis, and a scalar broadcast; short rows of 17, 5, 3 and 1 from a row and a
  // column, a period of two axes, rows of 64 (the longest the short paths take) and 65, and short
  // rows repeated along a middle axis.
  for (const Case& c : std::vector<Case>{{{5, 7}, {0, 1}},
                                         {{5, 7}, {1, 0}},
                                         {{3, 4, 5}, {0, 1, 0}},
                                         {{6}, {0}},
                                         {{20, 17}, {0, 1}},
                                         {{20, 17}, {1, 0}},
                                         {{19, 5}, {0, 1}},
                                         {{23, 3}, {1, 0}},
                                         {{9, 3, 2}, {0, 2, 1}},
                                         {{4, 64}, {0, 1}},
                                         {{4, 65}, {1, 0}},
                                         {{3, 64}, {2, 0}},
                                         // Rows repeated along the middle axis (x[:, None, :]
                                         // of a pairwise difference): rows of 2, 3, 8 and 64,
                                         // a strided (transposed) source, and too few repeats.
                                         {{7, 6, 2}, {2, 0, 1}},
                                         {{5, 4, 3}, {3, 0, 1}},
                                         {{4, 9, 8}, {8, 0, 1}},
                                         {{6, 5, 3}, {1, 0, 6}},
                                         {{2, 4, 64}, {64, 0, 1}},
                                         {{5, 3, 2}, {2, 0, 1}}}) {
    StridedBox box;
    box.dims = c.dims;
    box.src_strides = c.src_strides;
    box.dst_strides = RowMajorStrides(c.dims);
    box.Simplify();
    std::vector<W> src(160);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<W>(100 + i);
    const int64_t n = box.num_elements();
    std::vector<W> whole(static_cast<size_t>(n));
    CopyBox(box, src.data(), whole.data());
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t len = 1; b + len <= n; ++len) {
        std::vector<W> tile(static_cast<size_t>(len) + 1, W{0});
        tile[static_cast<size_t>(len)] = W{7};  // past the tile: never written
        GatherFlat(box, src.data(), tile.data(), b, len);
        for (int64_t i = 0; i < len; ++i) {
          ASSERT_EQ(tile[static_cast<size_t>(i)], whole[static_cast<size_t>(b + i)])
              << "dims rank " << c.dims.size() << " tile [" << b << ", " << b + len << ")";
        }
        ASSERT_EQ(tile[static_cast<size_t>(len)], W{7}) << "wrote past the tile";
      }
    }
  }
}

TEST(ShapeOpsTest, GatherFlatTilesEqualTheWholeBroadcast) {
  CheckGatherFlatTiles<uint32_t>();
  CheckGatherFlatTiles<uint8_t>();
  CheckGatherFlatTiles<uint16_t>();
  CheckGatherFlatTiles<uint64_t>();
}

TEST(ShapeOpsTest, BroadcastPrependsDims) {
  Array v = MakeArray<int16_t>(DType::kS16, {2}, {7, 8});
  EXPECT_EQ(RunOk<int16_t>(OpRun("stablehlo.broadcast", {v}, DType::kS16, {3, 2},
                                 Ints("broadcast_sizes", {3}))),
            (std::vector<int16_t>{7, 8, 7, 8, 7, 8}));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.broadcast", {v}, DType::kS16, {2, 3},
                            Ints("broadcast_sizes", {3}))),
            StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTest, ReshapeAliases) {
  Array x = MakeArray<float>(DType::kF32, {2, 3}, Iota<float>(6));
  OpRun run("stablehlo.reshape", {x}, DType::kF32, {3, 2});
  StatusOr<Array> out = run.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(run.Lower()->alias_of(0), 0);
  EXPECT_EQ(ToVector<float>(*out), Iota<float>(6));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.reshape", {x}, DType::kF32, {4})),
            StatusCode::kInvalidArgument);
}

// ---- transpose ----

TEST(ShapeOpsTest, TransposeSmall) {
  Array x = MakeArray<int32_t>(DType::kS32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.transpose", {x}, DType::kS32, {3, 2},
                                 Ints("permutation", {1, 0}))),
            (std::vector<int32_t>{1, 4, 2, 5, 3, 6}));
  Array y = MakeArray<int32_t>(DType::kS32, {2, 3, 4}, Iota<int32_t>(24));
  EXPECT_EQ(RunOk<int32_t>(OpRun("stablehlo.transpose", {y}, DType::kS32, {4, 2, 3},
                                 Ints("permutation", {2, 0, 1}))),
            NaiveTranspose(Iota<int32_t>(24), {2, 3, 4}, {2, 0, 1}));
  // Moving only unit dimensions keeps the bytes: aliased.
  Array z = MakeArray<int32_t>(DType::kS32, {1, 3}, {1, 2, 3});
  OpRun unit("stablehlo.transpose", {z}, DType::kS32, {3, 1}, Ints("permutation", {1, 0}));
  StatusOr<Array> out = unit.Run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(unit.Lower()->alias_of(0), 0);
  EXPECT_EQ(ToVector<int32_t>(*out), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(LowerCode(OpRun("stablehlo.transpose", {x}, DType::kS32, {3, 2},
                            Ints("permutation", {0, 0}))),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(LowerCode(OpRun("stablehlo.transpose", {x}, DType::kS32, {2, 3},
                            Ints("permutation", {1, 0}))),
            StatusCode::kInvalidArgument);
}

TEST(ShapeOpsTest, TransposeLargeMatchesReference) {
  struct Case {
    std::vector<int64_t> dims, perm;
  };
  const Case cases[] = {
      {{128, 784}, {1, 0}},  // MLP weight gradient shape: tiled path
      {{67, 131}, {1, 0}},   // ragged tiles
      {{5, 70, 90}, {0, 2, 1}}, {{6, 7, 8, 9}, {3, 1, 0, 2}}, {{40, 3, 50}, {2, 1, 0}},
  };
  for (const Case& c : cases) {
    int64_t n = 1;
    std::vector<int64_t> out_dims;
    for (int64_t d : c.dims) n *= d;
    for (int64_t p : c.perm) out_dims.push_back(c.dims[static_cast<size_t>(p)]);
    std::vector<float> in = Iota<float>(n);
    EXPECT_EQ(RunOk<float>(OpRun("stablehlo.transpose", {MakeArray<float>(DType::kF32, c.dims, in)},
                                 DType::kF32, out_dims, Ints("permutation", c.perm))),
              NaiveTranspose(in, c.dims, c.perm));
    // The same by byte width: 1, 2, 8 and 16 bytes.
    std::vector<uint8_t> in8(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) in8[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 7);
    EXPECT_EQ(
        RunOk<uint8_t>(OpRun("stablehlo.transpose", {MakeArray<uint8_t>(DType::kU8, c.dims, in8)},
                             DType::kU8, out_dims, Ints("permutation", c.perm))),
        NaiveTranspose(in8, c.dims, c.perm));
    std::vector<uint16_t> in16(in8.begin(), in8.end());
    EXPECT_EQ(RunOk<uint16_t>(OpRun("stablehlo.transpose",
                                    {MakeArray<uint16_t>(DType::kBF16, c.dims, in16)}, DType::kBF16,
                                    out_dims, Ints("permutation", c.perm))),
              NaiveTranspose(in16, c.dims, c.perm));
    std::vector<double> in64(in.begin(), in.end());
    EXPECT_EQ(
        RunOk<double>(OpRun("stablehlo.transpose", {MakeArray<double>(DType::kF64, c.dims, in64)},
                            DType::kF64, out_dims, Ints("permutation", c.perm))),
        NaiveTranspose(in64, c.dims, c.perm));
    std::vector<std::complex<double>> in128;
    for (int64_t i = 0; i < n; ++i)
      in128.emplace_back(static_cast<double>(i), -static_cast<double>(i));
    EXPECT_EQ(
        RunOk<std::complex<double>>(OpRun(
            "stablehlo.transpose", {MakeArray<std::complex<double>>(DType::kC128, c.dims, in128)},
            DType::kC128, out_dims, Ints("permutation", c.perm))),
        NaiveTranspose(in128, c.dims, c.perm));
  }
}

}  // namespace
}  // namespace kiln::testing
