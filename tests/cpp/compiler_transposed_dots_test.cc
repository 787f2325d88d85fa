// compiler/transposed_dots.h: which dot + transpose pairs fold into a swapped dot, and what the
// swapped dot is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/transposed_dots.h"
#include "ingest/text_reader.h"
#include "ir/module.h"

namespace kiln::testing {
namespace {

ir::Module Read(const std::string& text) {
  auto m = ingest::ReadStableHloText(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : ir::Module{};
}

std::vector<std::string> OpNames(const ir::Module& m) {
  std::vector<std::string> names;
  for (const ir::Op& op : m.MainFunction()->body.blocks[0].ops) names.push_back(op.name);
  return names;
}

std::vector<int64_t> Ints(const ir::Op& op, const char* name) {
  const ir::Attr* a = op.attr(name);
  return a != nullptr ? a->AsInts().value_or(std::vector<int64_t>{}) : std::vector<int64_t>{};
}

// An MLP layer's weight gradient, as JAX writes it: dot_general(dh, x) contracting the batch,
// then a transpose to the weight's layout.
TEST(TransposedDotsTest, AGradientsTransposeBecomesTheSwappedDot) {
  ir::Module m = Read(R"(
func.func @main(%dh: tensor<64x128xf32>, %x: tensor<64x784xf32>) -> tensor<784x128xf32> {
  %0 = stablehlo.dot_general %dh, %x, contracting_dims = [0] x [0], precision = [DEFAULT, HIGHEST] : (tensor<64x128xf32>, tensor<64x784xf32>) -> tensor<128x784xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<128x784xf32>) -> tensor<784x128xf32>
  return %1 : tensor<784x128xf32>
})");
  ASSERT_TRUE(compiler::HasTransposedDots(m));
  const ir::ValueId dh = m.MainFunction()->body.blocks[0].args[0];
  const ir::ValueId x = m.MainFunction()->body.blocks[0].args[1];
  const ir::ValueId result = m.MainFunction()->body.blocks[0].ops[1].results[0];
  compiler::FoldTransposedDots(m);
  ASSERT_EQ(OpNames(m), (std::vector<std::string>{"stablehlo.dot_general", "func.return"}));
  const ir::Op& dot = m.MainFunction()->body.blocks[0].ops[0];
  EXPECT_EQ(dot.operands, (std::vector<ir::ValueId>{x, dh}));
  EXPECT_EQ(dot.results, (std::vector<ir::ValueId>{result}));
  EXPECT_EQ(Ints(dot, "lhs_contracting_dimensions"), (std::vector<int64_t>{0}));
  EXPECT_EQ(Ints(dot, "rhs_contracting_dimensions"), (std::vector<int64_t>{0}));
  const ir::Attr* precision = dot.attr("precision_config");
  ASSERT_NE(precision, nullptr);
  ASSERT_EQ(precision->array.size(), 2u);
  EXPECT_EQ(precision->array[0].str, "HIGHEST");
  EXPECT_EQ(precision->array[1].str, "DEFAULT");
  EXPECT_EQ(m.MainFunction()->body.blocks[0].ops[1].operands, (std::vector<ir::ValueId>{result}));
  EXPECT_FALSE(compiler::HasTransposedDots(m));
}

// Batch axes stay in front; free axes move as groups (two lhs-free axes here).
TEST(TransposedDotsTest, BatchedDotsWithSeveralFreeAxesFold) {
  ir::Module m = Read(R"(
func.func @main(%a: tensor<3x5x7x4xf32>, %b: tensor<3x4x6xf32>) -> tensor<3x6x5x7xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [3] x [1] : (tensor<3x5x7x4xf32>, tensor<3x4x6xf32>) -> tensor<3x5x7x6xf32>
  %1 = stablehlo.transpose %0, dims = [0, 3, 1, 2] : (tensor<3x5x7x6xf32>) -> tensor<3x6x5x7xf32>
  return %1 : tensor<3x6x5x7xf32>
})");
  compiler::FoldTransposedDots(m);
  ASSERT_EQ(OpNames(m), (std::vector<std::string>{"stablehlo.dot_general", "func.return"}));
  const ir::Op& dot = m.MainFunction()->body.blocks[0].ops[0];
  EXPECT_EQ(Ints(dot, "lhs_batching_dimensions"), (std::vector<int64_t>{0}));
  EXPECT_EQ(Ints(dot, "rhs_batching_dimensions"), (std::vector<int64_t>{0}));
  EXPECT_EQ(Ints(dot, "lhs_contracting_dimensions"), (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(dot, "rhs_contracting_dimensions"), (std::vector<int64_t>{3}));
}

// Left alone: another use of the dot, a permutation that is not the swap (within a free group or
// moving a batch axis), a transpose of something else.
TEST(TransposedDotsTest, OtherPairsStay) {
  const char* programs[] = {
      R"(
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x6xf32>) -> (tensor<6x4xf32>, tensor<4x6xf32>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return %1, %0 : tensor<6x4xf32>, tensor<4x6xf32>
})",
      R"(
func.func @main(%a: tensor<5x7x4xf32>, %b: tensor<4x6xf32>) -> tensor<7x5x6xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [2] x [0] : (tensor<5x7x4xf32>, tensor<4x6xf32>) -> tensor<5x7x6xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0, 2] : (tensor<5x7x6xf32>) -> tensor<7x5x6xf32>
  return %1 : tensor<7x5x6xf32>
})",
      R"(
func.func @main(%a: tensor<3x5x4xf32>, %b: tensor<3x4x6xf32>) -> tensor<5x3x6xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<3x5x4xf32>, tensor<3x4x6xf32>) -> tensor<3x5x6xf32>
  %1 = stablehlo.transpose %0, dims = [1, 0, 2] : (tensor<3x5x6xf32>) -> tensor<5x3x6xf32>
  return %1 : tensor<5x3x6xf32>
})",
      R"(
func.func @main(%a: tensor<4x6xf32>) -> tensor<6x4xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<4x6xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
})",
  };
  for (const char* text : programs) {
    ir::Module m = Read(text);
    EXPECT_FALSE(compiler::HasTransposedDots(m)) << text;
    const std::vector<std::string> before = OpNames(m);
    compiler::FoldTransposedDots(m);
    EXPECT_EQ(OpNames(m), before) << text;
  }
}

}  // namespace
}  // namespace kiln::testing
