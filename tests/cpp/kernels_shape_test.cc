// Shape / data-movement kernels (constant, iota, broadcasts, reshape, transpose, slices, concat,
// pad, reverse) and the misc ops (optimization_barrier, tokens, partition/replica id). Results are
// checked against hand-computed values and, for larger shapes, a naive n-d reference.
#include <gtest/gtest.h>

#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "compiler/op_registry.h"
#include "kernels/families.h"
#include "kernels/strided.h"
#include "tests/cpp/kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;

// Which Register* function owns an op.
using RegisterFn = void (*)(compiler::OpRegistry&);

struct OpRun {
  OpRun(std::string name_in, std::vector<Array> inputs_in, DType out_dtype_in,
        std::vector<int64_t> out_dims_in, std::function<void(OpBuilder&)> attrs_in = {},
        RegisterFn reg_in = &compiler::RegisterShapeOps)
      : name(std::move(name_in)),
        inputs(std::move(inputs_in)),
        out_dtype(out_dtype_in),
        out_dims(std::move(out_dims_in)),
        attrs(std::move(attrs_in)),
        reg(reg_in) {}

  StatusOr<Kernel> Lower() {
    builder = std::make_unique<OpBuilder>(name);
    for (const Array& a : inputs) builder->Operand(a.dtype, a.dims);
    builder->Result(out_dtype, out_dims);
    if (attrs) attrs(*builder);
    ctx = std::make_unique<FakeLowerContext>(*builder);
    compiler::LowerFn lower = FindLowering(reg, name);
    if (lower == nullptr) return Internal("not registered: " + name);
    return lower(*ctx);
  }
  StatusOr<Array> Run(ExecContext ec = {}) {
    KILN_ASSIGN_OR_RETURN(Kernel kernel, Lower());
    KILN_ASSIGN_OR_RETURN(std::vector<Array> outputs,
                          RunKernel(kernel, builder->module(), builder->op(), inputs, ec));
    EXPECT_EQ(outputs[0].dims, out_dims);
    return outputs[0];
  }

  std::string name;
  std::vector<Array> inputs;
  DType out_dtype;
  std::vector<int64_t> out_dims;
  std::function<void(OpBuilder&)> attrs;
  RegisterFn reg;
  std::unique_ptr<OpBuilder> builder;
  std::unique_ptr<FakeLowerContext> ctx;
};

template <typename T>
std::vector<T> Iota(int64_t n, T start = T(0)) {
  std::vector<T> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = static_cast<T>(start + static_cast<T>(i));
  return v;
}

template <typename T>
std::vector<T> RunOk(OpRun run) {
  StatusOr<Array> out = run.Run();
  EXPECT_TRUE(out.ok()) << run.name << ": " << out.status().ToString();
  if (!out.ok()) return {};
  EXPECT_EQ(out->dtype, run.out_dtype);
  return ToVector<T>(*out);
}

StatusCode LowerCode(OpRun run) { return run.Lower().status().code(); }

std::function<void(OpBuilder&)> Ints(std::string name, std::vector<int64_t> v) {
  return [name, v](OpBuilder& b) { b.Ints(name, v); };
}

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
    } while (kernels::strided::NextIndex(out_dims, idx));
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
// tile start and length: tiles that begin mid-row, span rows, or cover one element.
TEST(ShapeOpsTest, GatherFlatTilesEqualTheWholeBroadcast) {
  using kiln::kernels::strided::CopyBox;
  using kiln::kernels::strided::GatherFlat;
  using kiln::kernels::strided::RowMajorStrides;
  using kiln::kernels::strided::StridedBox;
  struct Case {
    std::vector<int64_t> dims, src_strides;
  };
  // [5,7] from a row (stride 0 on axis 0), from a column (stride 0 on the last axis), [3,4,5]
  // from its middle axis, and a scalar broadcast.
  for (const Case& c :
       std::vector<Case>{{{5, 7}, {0, 1}}, {{5, 7}, {1, 0}}, {{3, 4, 5}, {0, 1, 0}}, {{6}, {0}}}) {
    StridedBox box;
    box.dims = c.dims;
    box.src_strides = c.src_strides;
    box.dst_strides = RowMajorStrides(c.dims);
    box.Simplify();
    std::vector<uint32_t> src(64);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint32_t>(1000 + i);
    const int64_t n = box.num_elements();
    std::vector<uint32_t> whole(static_cast<size_t>(n));
    CopyBox(box, src.data(), whole.data());
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t len = 1; b + len <= n; ++len) {
        std::vector<uint32_t> tile(static_cast<size_t>(len), 0);
        GatherFlat(box, src.data(), tile.data(), b, len);
        for (int64_t i = 0; i < len; ++i) {
          ASSERT_EQ(tile[static_cast<size_t>(i)], whole[static_cast<size_t>(b + i)])
              << "dims rank " << c.dims.size() << " tile [" << b << ", " << b + len << ")";
        }
      }
    }
  }
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
  EXPECT_EQ(FindLowering(&compiler::RegisterShapeOps, "stablehlo.transpose")(ctx).status().code(),
            StatusCode::kInvalidArgument);
  // Sub-byte / fp8 types are one byte each in storage, so moving them works.
  Array f8 = MakeArray<uint8_t>(DType::kF8E4M3FN, {2}, {1, 2});
  EXPECT_EQ(RunOk<uint8_t>(
                OpRun("stablehlo.reverse", {f8}, DType::kF8E4M3FN, {2}, Ints("dimensions", {0}))),
            (std::vector<uint8_t>{2, 1}));
}

// ---- misc ops ----

TEST(MiscOpsTest, OptimizationBarrierForwards) {
  OpBuilder b("stablehlo.optimization_barrier");
  b.Operand(DType::kF32, {2});
  b.Operand(DType::kS32, {});
  b.Result(DType::kF32, {2});
  b.Result(DType::kS32, {});
  FakeLowerContext ctx(b);
  Array x = MakeArray<float>(DType::kF32, {2}, {1, 2});
  Array y = Scalar<int32_t>(DType::kS32, 3);
  StatusOr<std::vector<Array>> out = LowerAndRun(
      FindLowering(&compiler::RegisterMiscOps, "stablehlo.optimization_barrier"), ctx, {x, y});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), ToVector<float>(x));
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), ToVector<int32_t>(y));
  StatusOr<Kernel> k =
      FindLowering(&compiler::RegisterMiscOps, "stablehlo.optimization_barrier")(ctx);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->fn);  // the results are the operands: the plan points them there
  EXPECT_EQ(k->alias_of(0), 0);
  EXPECT_EQ(k->alias_of(1), 1);

  OpBuilder bad("stablehlo.optimization_barrier");
  bad.Operand(DType::kF32, {2});
  bad.Result(DType::kF32, {3});
  FakeLowerContext bad_ctx(bad);
  EXPECT_EQ(FindLowering(&compiler::RegisterMiscOps, "stablehlo.optimization_barrier")(bad_ctx)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST(MiscOpsTest, TokensHaveTokenType) {
  for (const char* name : {"stablehlo.after_all", "stablehlo.create_token"}) {
    OpBuilder b(name);
    if (std::string(name) == "stablehlo.after_all") {
      b.op().operands.push_back(b.module().AddValue(ir::Type::Token()));
      b.op().operands.push_back(b.module().AddValue(ir::Type::Token()));
    }
    b.op().results.push_back(b.module().AddValue(ir::Type::Token()));
    FakeLowerContext ctx(b);
    std::vector<Array> inputs;
    for (size_t i = 0; i < b.op().operands.size(); ++i)
      inputs.push_back(*Array::Allocate(DType::kToken, {}));
    StatusOr<std::vector<Array>> out =
        LowerAndRun(FindLowering(&compiler::RegisterMiscOps, name), ctx, inputs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].dtype, DType::kToken);
    EXPECT_TRUE((*out)[0].dims.empty());
    EXPECT_TRUE((*out)[0].valid());
  }
  OpBuilder bad("stablehlo.after_all");
  bad.Operand(DType::kF32, {});
  bad.op().results.push_back(bad.module().AddValue(ir::Type::Token()));
  FakeLowerContext ctx(bad);
  EXPECT_EQ(FindLowering(&compiler::RegisterMiscOps, "stablehlo.after_all")(ctx).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(MiscOpsTest, PartitionAndReplicaIdComeFromTheExecContext) {
  ExecContext ec;
  ec.partition_id = 3;
  ec.replica_id = 5;
  OpRun part("stablehlo.partition_id", {}, DType::kU32, {}, {}, &compiler::RegisterMiscOps);
  StatusOr<Array> p = part.Run(ec);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(ScalarValue<uint32_t>(*p), 3u);
  OpRun rep("stablehlo.replica_id", {}, DType::kU32, {}, {}, &compiler::RegisterMiscOps);
  StatusOr<Array> r = rep.Run(ec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ScalarValue<uint32_t>(*r), 5u);
  EXPECT_EQ(
      LowerCode(OpRun("stablehlo.replica_id", {}, DType::kS32, {}, {}, &compiler::RegisterMiscOps)),
      StatusCode::kInvalidArgument);
}

// ---- the copy engine directly ----

TEST(StridedCopyTest, SimplifyMergesContiguousAxes) {
  kernels::strided::StridedBox box;
  box.dims = {2, 3, 4};
  box.src_strides = {12, 4, 1};
  box.dst_strides = {12, 4, 1};
  box.Simplify();
  EXPECT_EQ(box.dims, (std::vector<int64_t>{24}));
  kernels::strided::StridedBox t;
  t.dims = {1, 5, 1, 6};
  t.src_strides = {30, 1, 30, 5};
  t.dst_strides = {30, 6, 6, 1};
  t.Simplify();
  EXPECT_EQ(t.dims, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(t.src_strides, (std::vector<int64_t>{1, 5}));
  EXPECT_TRUE(t.InBounds(30, 30));
  EXPECT_FALSE(t.InBounds(29, 30));
}

}  // namespace
}  // namespace kiln::testing
