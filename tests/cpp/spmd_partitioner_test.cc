// The SPMD partitioner's rules (compiler/spmd_partitioner.h): programs as JAX prints them
// (StableHLO text) on a 2x2 mesh, the per-device body each becomes (its ops, collectives, replica
// groups and local types), and programs that must stay in global view (null).
#include "compiler/spmd_partitioner.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ingest/text_reader.h"

namespace kiln {
namespace {

StatusOr<std::shared_ptr<ir::Module>> Partition(const std::string& main,
                                                const std::string& mesh = "<[\"x\"=2, \"y\"=2]>") {
  const std::string text =
      "module @m attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {\n"
      "  sdy.mesh @mesh = " +
      mesh + "\n" + main + "}";
  KILN_ASSIGN_OR_RETURN(ir::Module module, ingest::ReadStableHloText(text));
  ingest::CompileOptions options;
  options.num_partitions = 4;
  return compiler::PartitionSpmd(module, options);
}

// The manual computation's body in @main of `m`, or null.
const ir::Block* Body(const ir::Module& m) {
  const ir::Function* main = m.MainFunction();
  if (main == nullptr || main->body.blocks.size() != 1) return nullptr;
  const ir::Block& block = main->body.blocks[0];
  if (block.ops.size() != 2 || block.ops[0].name != "sdy.manual_computation") return nullptr;
  return &block.ops[0].regions.at(0).blocks.at(0);
}

std::vector<std::string> OpNames(const ir::Block& body) {
  std::vector<std::string> names;
  for (const ir::Op& op : body.ops) names.push_back(op.name);
  return names;
}

const ir::Op* Find(const ir::Block& body, const std::string& name) {
  for (const ir::Op& op : body.ops) {
    if (op.name == name) return &op;
  }
  return nullptr;
}

using Names = std::vector<std::string>;

constexpr const char* kDot = R"(
  func.func public @main(%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [%s]>}, %arg1: tensor<2x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [%s]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [%s]>}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0] : (tensor<8x2xf32>, tensor<2x8xf32>) -> tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
)";

std::string Dot(const std::string& lhs, const std::string& rhs, const std::string& out) {
  std::string text = kDot;
  for (const std::string* s : {&lhs, &rhs, &out}) text.replace(text.find("%s"), 2, *s);
  return text;
}

TEST(SpmdPartitionerTest, FsdpGathersTheRhsContractingDim) {
  auto m = Partition(Dot(R"({"x"}, {})", R"({"x"}, {})", R"({"x"}, {})"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_NE(*m, nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(OpNames(*body), (Names{"stablehlo.all_gather", "stablehlo.dot_general", "sdy.return"}));
  const ir::Op& gather = body->ops[0];
  EXPECT_EQ(gather.operands[0], body->args[1]);
  EXPECT_EQ(gather.attr("all_gather_dim")->AsInt(), 0);
  // Devices that differ along x only: {0, 2} and {1, 3} on the row-major 2x2 mesh.
  EXPECT_EQ(gather.attr("replica_groups")->AsInts(), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ((*m)->type_of(body->args[0]).dims, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ((*m)->type_of(body->args[1]).dims, (std::vector<int64_t>{1, 8}));
  EXPECT_EQ((*m)->type_of(body->ops[1].results[0]).dims, (std::vector<int64_t>{4, 8}));
}

TEST(SpmdPartitionerTest, GroupsFollowTheMeshsDeviceIds) {
  auto m = Partition(Dot(R"({"x"}, {})", R"({"x"}, {})", R"({"x"}, {})"),
                     "<[\"x\"=2, \"y\"=2], device_ids=[3, 2, 1, 0]>");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_NE(*m, nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  // Mesh positions (0, y) and (1, y) hold devices {3, 1} (y = 0) and {2, 0} (y = 1).
  EXPECT_EQ(body->ops.at(0).attr("replica_groups")->AsInts(), (std::vector<int64_t>{3, 1, 2, 0}));
}

TEST(SpmdPartitionerTest, HalfTpGathersTheLhsContractingDim) {
  auto m = Partition(Dot(R"({}, {"y"})", R"({}, {"y"})", R"({}, {"y"})"));
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(OpNames(*body), (Names{"stablehlo.all_gather", "stablehlo.dot_general", "sdy.return"}));
  EXPECT_EQ(body->ops[0].operands[0], body->args[0]);
  EXPECT_EQ(body->ops[0].attr("all_gather_dim")->AsInt(), 1);
  EXPECT_EQ(body->ops[0].attr("replica_groups")->AsInts(), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(SpmdPartitionerTest, FreeDimsSplitRunLocally) {
  auto m = Partition(Dot(R"({"x"}, {})", R"({}, {"y"})", R"({"x"}, {"y"})"));
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(OpNames(*body), (Names{"stablehlo.dot_general", "sdy.return"}));
  EXPECT_EQ((*m)->type_of(body->ops[0].results[0]).dims, (std::vector<int64_t>{4, 4}));
}

TEST(SpmdPartitionerTest, ContractionSplitAlikeIsSummedByAnAllReduce) {
  auto m = Partition(Dot(R"({}, {"x"})", R"({"x"}, {})", R"({}, {})"));
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(OpNames(*body), (Names{"stablehlo.dot_general", "stablehlo.all_reduce", "sdy.return"}));
  const ir::Op& sum = body->ops[1];
  EXPECT_EQ(sum.attr("replica_groups")->AsInts(), (std::vector<int64_t>{0, 2, 1, 3}));
  ASSERT_EQ(sum.regions.size(), 1u);
  EXPECT_EQ(sum.regions[0].blocks.at(0).ops.at(0).name, "stablehlo.add");
}

TEST(SpmdPartitionerTest, AResultSplitFurtherIsSlicedAtThePartitionsOffset) {
  // The dot's result is split along x; the result wants x and y: each device slices its y block.
  auto m = Partition(Dot(R"({"x"}, {})", R"({}, {})", R"({"x"}, {"y"})"));
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_NE(Find(*body, "stablehlo.partition_id"), nullptr);
  const ir::Op& slice = body->ops.at(body->ops.size() - 2);
  EXPECT_EQ(slice.name, "stablehlo.dynamic_slice");
  EXPECT_EQ((*m)->type_of(slice.results[0]).dims, (std::vector<int64_t>{4, 4}));
  // The table of offsets along dim 1, per device: y coordinate * 4.
  bool table = false;
  for (const ir::Op& op : body->ops) {
    const ir::Attr* v = op.name == "stablehlo.constant" ? op.attr("value") : nullptr;
    if (v != nullptr && v->type.dims == std::vector<int64_t>{4}) {
      EXPECT_EQ(v->AsInts(), (std::vector<int64_t>{0, 4, 0, 4}));
      table = true;
    }
  }
  EXPECT_TRUE(table);
}

TEST(SpmdPartitionerTest, ReduceOverASplitDimIsCombinedAcrossDevices) {
  auto m = Partition(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  })");
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(OpNames(*body), (Names{"stablehlo.constant", "stablehlo.reduce", "stablehlo.all_reduce",
                                   "sdy.return"}));
  EXPECT_EQ((*m)->type_of(body->ops[1].results[0]).dims, (std::vector<int64_t>{2}));
}

TEST(SpmdPartitionerTest, ASumFromANonzeroInitStaysGlobal) {
  auto m = Partition(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4xf32>) {
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<8x4xf32>, tensor<f32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  })");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, nullptr);
}

TEST(SpmdPartitionerTest, AnOpWithoutARuleOnASplitOperandStaysGlobal) {
  auto m = Partition(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, nullptr);
}

TEST(SpmdPartitionerTest, ReshapeKeepsASplitThatStaysOneBlock) {
  auto m = Partition(R"(
  func.func public @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<48xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = stablehlo.reshape %arg0 : (tensor<8x6xf32>) -> tensor<48xf32>
    return %0 : tensor<48xf32>
  })");
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  EXPECT_EQ(OpNames(*body), (Names{"stablehlo.reshape", "sdy.return"}));
  EXPECT_EQ((*m)->type_of(body->ops[0].results[0]).dims, (std::vector<int64_t>{24}));
  // Splitting the minor dim of the merged pair would not be one block per device: global.
  auto moved = Partition(R"(
  func.func public @main(%arg0: tensor<6x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x"}]>}) -> (tensor<48xf32>) {
    %0 = stablehlo.reshape %arg0 : (tensor<6x8xf32>) -> tensor<48xf32>
    return %0 : tensor<48xf32>
  })");
  ASSERT_TRUE(moved.ok()) << moved.status().ToString();
  EXPECT_EQ(*moved, nullptr);
}

TEST(SpmdPartitionerTest, SliceOfASplitDimStaysGlobal) {
  auto m = Partition(R"(
  func.func public @main(%arg0: tensor<8x6xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<4x6xf32>) {
    %0 = stablehlo.slice %arg0 [0:4, 0:6] : (tensor<8x6xf32>) -> tensor<4x6xf32>
    return %0 : tensor<4x6xf32>
  })");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(*m, nullptr);
}

TEST(SpmdPartitionerTest, ElementwiseOperandsAreReshardedAndCallsInlined) {
  auto m = Partition(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
    %0 = call @f(%arg0, %arg1) : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  }
  func.func private @f(%a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %0 = stablehlo.add %a, %b : tensor<8x4xf32>
    %1 = stablehlo.tanh %0 : tensor<8x4xf32>
    return %1 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(m.ok() && *m != nullptr);
  const ir::Block* body = Body(**m);
  ASSERT_NE(body, nullptr);
  // arg1 is sliced along x (its rows of the device's x block), then added to arg0's piece.
  const ir::Op* add = Find(*body, "stablehlo.add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->operands[0], body->args[0]);
  EXPECT_NE(add->operands[1], body->args[1]);
  EXPECT_EQ((*m)->type_of(add->operands[1]).dims, (std::vector<int64_t>{4, 2}));
  EXPECT_NE(Find(*body, "stablehlo.tanh"), nullptr);
  EXPECT_EQ(Find(*body, "func.call"), nullptr);
}

TEST(SpmdPartitionerTest, ShardMapProgramsAndUnshardedOnesAreLeftAlone) {
  auto replicated = Partition(R"(
  func.func public @main(%arg0: tensor<8x4xf32>) -> (tensor<8x4xf32>) {
    %0 = stablehlo.negate %arg0 : tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(replicated.ok());
  EXPECT_EQ(*replicated, nullptr);
  auto manual = Partition(R"(
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{"x"}, {}]>] manual_axes={"x", "y"} (%a: tensor<4x4xf32>) {
      %1 = stablehlo.negate %a : tensor<4x4xf32>
      sdy.return %1 : tensor<4x4xf32>
    } : (tensor<8x4xf32>) -> tensor<8x4xf32>
    return %0 : tensor<8x4xf32>
  })");
  ASSERT_TRUE(manual.ok()) << manual.status().ToString();
  EXPECT_EQ(*manual, nullptr);
}

}  // namespace
}  // namespace kiln
