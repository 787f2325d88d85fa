// Result shardings from compiler/sharding_propagation.h, through PlanPartitions: programs as JAX
// prints them (StableHLO text), the sharding each result gets, and malformed attributes that must
// leave a value replicated rather than fail or read out of bounds.
#include "compiler/sharding_propagation.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/partition.h"
#include "ingest/text_reader.h"

namespace kiln {
namespace {

constexpr const char* kMesh = R"(
  sdy.mesh @mesh = <["x"=2, "y"=2]>
)";

// The axis names splitting each dim of result `r` ("" for none, "x,y" for several).
StatusOr<std::vector<std::string>> ResultAxes(const std::string& body, size_t r = 0) {
  const std::string text =
      std::string(
          "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : "
          "i32} {") +
      kMesh + body + "}";
  KILN_ASSIGN_OR_RETURN(ir::Module module, ingest::ReadStableHloText(text));
  const ir::Function* main = module.FindFunction("main");
  if (main == nullptr) return Internal("no @main");
  ingest::CompileOptions options;
  options.num_partitions = 4;
  KILN_ASSIGN_OR_RETURN(
      lower::SpmdLayout layout,
      compiler::PlanPartitions(module, *main, main->arg_types, main->result_types, options));
  std::vector<std::string> out;
  const lower::TensorSharding& s = layout.results.at(r).sharding;
  for (const auto& dim : s.dims) {
    std::string axes;
    for (const lower::AxisRef& ref : dim) {
      if (!axes.empty()) axes += ",";
      axes += s.mesh.axis_names[static_cast<size_t>(ref.axis)];
    }
    out.push_back(axes);
  }
  if (s.dims.empty()) out.assign(main->result_types.at(r).dims.size(), "");
  return out;
}

using Axes = std::vector<std::string>;

TEST(ShardingPropagationTest, TransposePermutesTheDimsAxes) {
  auto axes = ResultAxes(R"(
  func.func public @main(%arg0: tensor<4x4x2xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}, {}]>}) -> (tensor<2x4x4xi32>) {
    %0 = stablehlo.transpose %arg0, dims = [2, 1, 0] : (tensor<4x4x2xi32>) -> tensor<2x4x4xi32>
    return %0 : tensor<2x4x4xi32>
  })");
  ASSERT_TRUE(axes.ok()) << axes.status().ToString();
  EXPECT_EQ(*axes, (Axes{"", "y", "x"}));
}

TEST(ShardingPropagationTest, ThroughAConstraintAndALayoutCustomCall) {
  auto axes = ResultAxes(R"(
  func.func public @main(%arg0: tensor<16x128xi32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<128x16xi32> {mhlo.layout_mode = "auto"}) {
    %0 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<16x128xi32>) -> tensor<128x16xi32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<128x16xi32>
    %2 = stablehlo.custom_call @LayoutConstraint(%1) {backend_config = "", operand_layouts = [dense<[0, 1]> : tensor<2xindex>], result_layouts = [dense<[1, 0]> : tensor<2xindex>]} : (tensor<128x16xi32>) -> tensor<128x16xi32>
    return %2 : tensor<128x16xi32>
  })");
  ASSERT_TRUE(axes.ok()) << axes.status().ToString();
  EXPECT_EQ(*axes, (Axes{"x", ""}));
}

TEST(ShardingPropagationTest, DotGeneralBatchAndFreeDims) {
  auto axes = ResultAxes(R"(
  func.func public @main(%arg0: tensor<4x8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}, {"y"}]>}, %arg1: tensor<4x6x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}, {}]>}) -> (tensor<4x8x2xf32>) {
    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<4x8x6xf32>, tensor<4x6x2xf32>) -> tensor<4x8x2xf32>
    return %0 : tensor<4x8x2xf32>
  })");
  ASSERT_TRUE(axes.ok()) << axes.status().ToString();
  EXPECT_EQ(*axes, (Axes{"x", "", ""}));  // the contracting dim's y is dropped
}

TEST(ShardingPropagationTest, ReshapeMapsOnlyContiguousBlocks) {
  // Split: x's two blocks of 8 rows are the first dim of 2x4. Merge of a y-split minor dim: no.
  auto split = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<2x4x6xf32>) {
    %0 = stablehlo.reshape %arg0 : (tensor<8x6xf32>) -> tensor<2x4x6xf32>
    return %0 : tensor<2x4x6xf32>
  })");
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  EXPECT_EQ(*split, (Axes{"x", "", ""}));
  auto merge = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<48xf32>) {
    %0 = stablehlo.reshape %arg0 : (tensor<8x6xf32>) -> tensor<48xf32>
    return %0 : tensor<48xf32>
  })");
  ASSERT_TRUE(merge.ok()) << merge.status().ToString();
  EXPECT_EQ(*merge, (Axes{""}));
}

TEST(ShardingPropagationTest, UnevenSplitsLeaveTheValueReplicated) {
  auto axes = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<3x4xf32>) {
    %0 = stablehlo.slice %arg0 [0:3, 0:4] : (tensor<8x4xf32>) -> tensor<3x4xf32>
    %1 = stablehlo.reshape %0 : (tensor<3x4xf32>) -> tensor<3x4xf32>
    return %1 : tensor<3x4xf32>
  })");
  ASSERT_TRUE(axes.ok()) << axes.status().ToString();
  EXPECT_EQ(*axes, (Axes{"", ""}));
}

TEST(ShardingPropagationTest, GivenShardingsWinAndOpenDimsAreFilled) {
  auto closed = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %0 = stablehlo.negate %arg0 : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(closed.ok()) << closed.status().ToString();
  EXPECT_EQ(*closed, (Axes{"", ""}));
  auto open = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{?}, {}]>}) {
    %0 = stablehlo.negate %arg0 : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(open.ok()) << open.status().ToString();
  EXPECT_EQ(*open, (Axes{"x", ""}));
}

TEST(ShardingPropagationTest, MalformedAttributesPropagateNothing) {
  // A permutation out of range and a reduce without dimensions: no sharding, no failure.
  auto axes = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
    %0 = "stablehlo.transpose"(%arg0) {permutation = array<i64: 7, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg0) {broadcast_dimensions = array<i64: 9, -3>} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0, %1 : tensor<4x8xf32>, tensor<8x4xf32>
  })");
  ASSERT_TRUE(axes.ok()) << axes.status().ToString();
  EXPECT_EQ(*axes, (Axes{"", ""}));
  auto second = ResultAxes(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
    %0 = "stablehlo.transpose"(%arg0) {permutation = array<i64: 7, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
    %1 = "stablehlo.broadcast_in_dim"(%arg0) {broadcast_dimensions = array<i64: 9, -3>} : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0, %1 : tensor<4x8xf32>, tensor<8x4xf32>
  })",
                           1);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, (Axes{"", ""}));
}

TEST(ShardingPropagationTest, SameShardingComparesMeshAxesAndUnreduced) {
  lower::TensorSharding a;
  a.mesh.axis_names = {"x"};
  a.mesh.axis_sizes = {2};
  a.dims = {{lower::AxisRef{0, 1, 2}}, {}};
  lower::TensorSharding b = a;
  EXPECT_TRUE(compiler::SameSharding(a, b));
  b.dims = {{}, {lower::AxisRef{0, 1, 2}}};
  EXPECT_FALSE(compiler::SameSharding(a, b));
  b = a;
  b.dims = {{}, {}};
  b.unreduced = {0};
  EXPECT_FALSE(compiler::SameSharding(a, b));
}

}  // namespace
}  // namespace kiln
