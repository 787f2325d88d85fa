// compiler/narrow_counters.h: which uint64 computations narrow to uint32 (values provably below
// 2^32) and which must not (values that may reach 2^32, signed types, arithmetic that would wrap),
// and that a narrowed program computes the same bits as the original.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "compiler/narrow_counters.h"
#include "ingest/text_reader.h"
#include "ir/module.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

ir::Module Read(const std::string& text) {
  auto m = ingest::ReadStableHloText(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(*m) : ir::Module{};
}

// How many ops of @main (at any depth) have a result of `dtype`.
int CountOf(const std::vector<ir::Op>& ops, const ir::Module& m, ir::DType dtype) {
  int n = 0;
  for (const ir::Op& op : ops) {
    for (ir::ValueId r : op.results) n += m.type_of(r).dtype == dtype ? 1 : 0;
    for (const ir::Region& region : op.regions) {
      for (const ir::Block& b : region.blocks) n += CountOf(b.ops, m, dtype);
    }
  }
  return n;
}

int U64Ops(const ir::Module& m) {
  return CountOf(m.MainFunction()->body.blocks[0].ops, m, ir::DType::kU64);
}

// Narrows `text`'s module, expects it to change as `narrows` says and to compute the same bits.
void ExpectSameBits(const std::string& text, bool narrows) {
  ir::Module original = Read(text);
  ir::Module narrowed = original;
  ASSERT_EQ(compiler::HasNarrowableCounters(original), narrows);
  compiler::NarrowCounters(narrowed);
  EXPECT_FALSE(compiler::HasNarrowableCounters(narrowed));
  if (narrows) {
    EXPECT_LT(U64Ops(narrowed), U64Ops(original)) << ir::PrintModule(narrowed);
  } else {
    EXPECT_EQ(ir::PrintModule(narrowed), ir::PrintModule(original));
  }
  for (uint32_t fill : {1u, 0xA5u}) {
    const auto want = RunMainBytes(original, fill);
    const auto got = RunMainBytes(narrowed, fill);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(want[i], got[i]) << "result " << i;
  }
}

// jax.random's counters, as jax.random.uniform writes them (past 2^16 elements).
constexpr const char* kJaxCounters = R"(
func.func @main(%k: tensor<ui32>) -> (tensor<70001xui32>, tensor<70001xui32>) {
  %0 = stablehlo.iota dim = 0 : tensor<70001xui64>
  %c = stablehlo.constant dense<1> : tensor<ui64>
  %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<70001xui64>
  %2 = stablehlo.multiply %1, %0 : tensor<70001xui64>
  %c_0 = stablehlo.constant dense<32> : tensor<ui64>
  %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<ui64>) -> tensor<70001xui64>
  %4 = stablehlo.shift_right_logical %2, %3 : tensor<70001xui64>
  %5 = stablehlo.convert %2 : (tensor<70001xui64>) -> tensor<70001xui32>
  %6 = stablehlo.convert %4 : (tensor<70001xui64>) -> tensor<70001xui32>
  %7 = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<ui32>) -> tensor<70001xui32>
  %8 = stablehlo.add %5, %7 : tensor<70001xui32>
  %9 = stablehlo.xor %6, %7 : tensor<70001xui32>
  return %8, %9 : tensor<70001xui32>, tensor<70001xui32>
})";

TEST(NarrowCountersTest, JaxRandomCountersBecomeUint32) {
  ir::Module m = Read(kJaxCounters);
  ASSERT_TRUE(compiler::HasNarrowableCounters(m));
  compiler::NarrowCounters(m);
  EXPECT_EQ(U64Ops(m), 0) << ir::PrintModule(m);  // the whole ui64 chain is gone
  ExpectSameBits(kJaxCounters, true);
}

// Shifts by less than 32 stay shifts; and/or/xor and adds that stay below 2^32 narrow; a widened
// ui32 value's twin is the value itself; a ui64 value with another use keeps its ui64 op.
TEST(NarrowCountersTest, ShiftsLogicAndWidenedValuesNarrow) {
  ExpectSameBits(R"(
func.func @main(%x: tensor<1000xui32>) -> (tensor<1000xui32>, tensor<1000xui32>, tensor<1000xui64>) {
  %0 = stablehlo.iota dim = 0 : tensor<1000xui64>
  %c3 = stablehlo.constant dense<3> : tensor<1000xui64>
  %1 = stablehlo.shift_right_logical %0, %c3 : tensor<1000xui64>
  %c = stablehlo.constant dense<4294966000> : tensor<ui64>
  %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui64>) -> tensor<1000xui64>
  %3 = stablehlo.add %1, %2 : tensor<1000xui64>
  %4 = stablehlo.convert %x : (tensor<1000xui32>) -> tensor<1000xui64>
  %5 = stablehlo.xor %4, %0 : tensor<1000xui64>
  %6 = stablehlo.and %5, %3 : tensor<1000xui64>
  %7 = stablehlo.convert %6 : (tensor<1000xui64>) -> tensor<1000xui32>
  %c20 = stablehlo.constant dense<20> : tensor<1000xui64>
  %8 = stablehlo.shift_left %0, %c20 : tensor<1000xui64>
  %9 = stablehlo.convert %8 : (tensor<1000xui64>) -> tensor<1000xui32>
  return %7, %9, %0 : tensor<1000xui32>, tensor<1000xui32>, tensor<1000xui64>
})",
                 true);
}

// Values that may reach 2^32 keep ui64: an iota past 2^32 elements (not run), a product or sum
// past 2^32 (where ui32 would wrap), a left shift past 32 bits.
TEST(NarrowCountersTest, ValuesThatMayReach2To32Stay) {
  EXPECT_FALSE(compiler::HasNarrowableCounters(Read(R"(
func.func @main() -> tensor<4294967297xui32> {
  %0 = stablehlo.iota dim = 0 : tensor<4294967297xui64>
  %1 = stablehlo.convert %0 : (tensor<4294967297xui64>) -> tensor<4294967297xui32>
  return %1 : tensor<4294967297xui32>
})")));
  ExpectSameBits(R"(
func.func @main() -> (tensor<70000xui32>, tensor<70000xui32>, tensor<70000xui32>) {
  %0 = stablehlo.iota dim = 0 : tensor<70000xui64>
  %c = stablehlo.constant dense<70000> : tensor<70000xui64>
  %1 = stablehlo.multiply %0, %c : tensor<70000xui64>
  %2 = stablehlo.convert %1 : (tensor<70000xui64>) -> tensor<70000xui32>
  %m = stablehlo.constant dense<4294930000> : tensor<70000xui64>
  %3 = stablehlo.add %0, %m : tensor<70000xui64>
  %4 = stablehlo.convert %3 : (tensor<70000xui64>) -> tensor<70000xui32>
  %c16 = stablehlo.constant dense<16> : tensor<70000xui64>
  %5 = stablehlo.shift_left %0, %c16 : tensor<70000xui64>
  %6 = stablehlo.convert %5 : (tensor<70000xui64>) -> tensor<70000xui32>
  return %2, %4, %6 : tensor<70000xui32>, tensor<70000xui32>, tensor<70000xui32>
})",
                 false);
}

// Signed types are left alone (the rules are for ui64), and so are converts to other types and
// shifts by counts that are not one constant.
TEST(NarrowCountersTest, SignedAndOtherConvertsStay) {
  ExpectSameBits(R"(
func.func @main(%s: tensor<64xui64>) -> (tensor<64xi32>, tensor<64xui32>, tensor<64xf32>, tensor<64xui32>) {
  %0 = stablehlo.iota dim = 0 : tensor<64xi64>
  %1 = stablehlo.convert %0 : (tensor<64xi64>) -> tensor<64xi32>
  %2 = stablehlo.convert %0 : (tensor<64xi64>) -> tensor<64xui32>
  %3 = stablehlo.iota dim = 0 : tensor<64xui64>
  %4 = stablehlo.convert %3 : (tensor<64xui64>) -> tensor<64xf32>
  %5 = stablehlo.shift_right_logical %3, %s : tensor<64xui64>
  %6 = stablehlo.convert %5 : (tensor<64xui64>) -> tensor<64xui32>
  return %1, %2, %4, %6 : tensor<64xi32>, tensor<64xui32>, tensor<64xf32>, tensor<64xui32>
})",
                 false);
}

// A convert or counter carrying a sharding keeps it: nothing narrows.
TEST(NarrowCountersTest, OpsWithShardingsStay) {
  EXPECT_FALSE(compiler::HasNarrowableCounters(Read(R"(
func.func @main() -> tensor<8xui32> {
  %0 = stablehlo.iota dim = 0 : tensor<8xui64>
  %1 = stablehlo.convert %0 {mhlo.sharding = "{replicated}"} : (tensor<8xui64>) -> tensor<8xui32>
  return %1 : tensor<8xui32>
})")));
  EXPECT_FALSE(compiler::HasNarrowableCounters(Read(R"(
func.func @main() -> tensor<8xui32> {
  %0 = stablehlo.iota dim = 0 {mhlo.sharding = "{replicated}"} : tensor<8xui64>
  %1 = stablehlo.convert %0 : (tensor<8xui64>) -> tensor<8xui32>
  return %1 : tensor<8xui32>
})")));
}

}  // namespace
}  // namespace kiln::testing
