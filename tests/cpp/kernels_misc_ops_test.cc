// Misc ops (optimization_barrier, tokens, partition/replica id) and the strided copy engine.
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
      FindLowering(&kernels::RegisterMiscOps, "stablehlo.optimization_barrier"), ctx, {x, y});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), ToVector<float>(x));
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), ToVector<int32_t>(y));
  StatusOr<Kernel> k =
      FindLowering(&kernels::RegisterMiscOps, "stablehlo.optimization_barrier")(ctx);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->fn);  // the results are the operands: the plan points them there
  EXPECT_EQ(k->alias_of(0), 0);
  EXPECT_EQ(k->alias_of(1), 1);

  OpBuilder bad("stablehlo.optimization_barrier");
  bad.Operand(DType::kF32, {2});
  bad.Result(DType::kF32, {3});
  FakeLowerContext bad_ctx(bad);
  EXPECT_EQ(FindLowering(&kernels::RegisterMiscOps, "stablehlo.optimization_barrier")(bad_ctx)
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
        LowerAndRun(FindLowering(&kernels::RegisterMiscOps, name), ctx, inputs);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].dtype, DType::kToken);
    EXPECT_TRUE((*out)[0].dims.empty());
    EXPECT_TRUE((*out)[0].valid());
  }
  OpBuilder bad("stablehlo.after_all");
  bad.Operand(DType::kF32, {});
  bad.op().results.push_back(bad.module().AddValue(ir::Type::Token()));
  FakeLowerContext ctx(bad);
  EXPECT_EQ(FindLowering(&kernels::RegisterMiscOps, "stablehlo.after_all")(ctx).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(MiscOpsTest, PartitionAndReplicaIdComeFromTheExecContext) {
  ExecContext ec;
  ec.partition_id = 3;
  ec.replica_id = 5;
  OpRun part("stablehlo.partition_id", {}, DType::kU32, {}, {}, &kernels::RegisterMiscOps);
  StatusOr<Array> p = part.Run(ec);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(ScalarValue<uint32_t>(*p), 3u);
  OpRun rep("stablehlo.replica_id", {}, DType::kU32, {}, {}, &kernels::RegisterMiscOps);
  StatusOr<Array> r = rep.Run(ec);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ScalarValue<uint32_t>(*r), 5u);
  EXPECT_EQ(
      LowerCode(OpRun("stablehlo.replica_id", {}, DType::kS32, {}, {}, &kernels::RegisterMiscOps)),
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
