// Fused runs of the same structure share one piece of native code (codegen/fused_native.cc,
// TileCache): the code is keyed by everything the generator reads from the plan. Two programs
// that differ only in their inputs' values or in the element count share it; programs that differ
// in an op, a dtype or the way a member reads its operands do not. The shared code must still give
// each program its own results (checked against the interpreter).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/fused_run.h"
#include "lower/fused_plan.h"
#include "tests/cpp/fused_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using lower::FusedPlan;
using lower::Program;

// The program x * y + x, then `last` of it, over `n` elements of `t`; and its one fused plan.
struct Built {
  std::shared_ptr<const Program> program;
  const FusedPlan* plan = nullptr;
};

Built Build(DType t, int64_t n, const std::string& last, bool swap = false) {
  const ir::Type ty = Ty(t, {n});
  Built b;
  b.program = BuildMain({ty, ty}, [&](OpList& o, const std::vector<ValueId>& a) {
    ValueId v = o.Binary("stablehlo.multiply", a[0], a[1]);
    v = swap ? o.Binary("stablehlo.add", a[0], v) : o.Binary("stablehlo.add", v, a[0]);
    return std::vector<ValueId>{o.Unary(last, v)};
  });
  for (const lower::Step& s : b.program->steps) {
    if (s.fused != nullptr) b.plan = s.fused.get();
  }
  return b;
}

// Runs `p` on random inputs and on the same inputs with its native code taken out.
void ExpectSameAsInterpreter(const Program& p, uint32_t seed) {
  std::mt19937 rng(seed);
  Values params(ParamTypes(p)), native(ResultTypes(p)), interpreted(ResultTypes(p));
  FillRandom(params, rng);
  ASSERT_TRUE(RunWithRunner(p, params, native).ok());
  const std::shared_ptr<const Program> q = Interpreted(p);
  ASSERT_TRUE(RunWithRunner(*q, params, interpreted).ok());
  for (size_t r = 0; r < native.size(); ++r) {
    EXPECT_EQ(Difference(interpreted, native, r, true), "") << "result " << r;
  }
}

TEST(CodegenTileCacheTest, SameStructureSharesCode) {
  if (!CodeExpected()) GTEST_SKIP() << "no native code on this machine";
  const Built a = Build(DType::kF32, 1024, "stablehlo.negate");
  const Built b = Build(DType::kF32, 1024, "stablehlo.negate");
  const Built c = Build(DType::kF32, 4099, "stablehlo.negate");  // another length: same code
  ASSERT_NE(a.plan, nullptr);
  ASSERT_NE(a.plan->native, nullptr);
  EXPECT_EQ(a.plan->native, b.plan->native);
  EXPECT_EQ(a.plan->native, c.plan->native);
  ExpectSameAsInterpreter(*a.program, 1);
  ExpectSameAsInterpreter(*c.program, 2);
}

TEST(CodegenTileCacheTest, OtherStructureGetsItsOwnCode) {
  if (!CodeExpected()) GTEST_SKIP() << "no native code on this machine";
  const Built a = Build(DType::kF32, 1024, "stablehlo.negate");
  const std::vector<Built> others = {
      Build(DType::kF32, 1024, "stablehlo.abs"),          // another op
      Build(DType::kF64, 1024, "stablehlo.negate"),       // another dtype
      Build(DType::kF32, 1024, "stablehlo.negate", true)  // operands read in another order
  };
  ASSERT_NE(a.plan->native, nullptr);
  for (size_t i = 0; i < others.size(); ++i) {
    ASSERT_NE(others[i].plan, nullptr) << i;
    ASSERT_NE(others[i].plan->native, nullptr) << i;
    EXPECT_NE(others[i].plan->native, a.plan->native) << i;
    ExpectSameAsInterpreter(*others[i].program, 10 + static_cast<uint32_t>(i));
  }
}

TEST(CodegenTileCacheTest, CodeOutlivesTheCacheEntryOnlyWhileUsed) {
  if (!CodeExpected()) GTEST_SKIP() << "no native code on this machine";
  std::weak_ptr<const lower::NativeTile> weak;
  {
    const Built a = Build(DType::kF32, 777, "stablehlo.sqrt");
    ASSERT_NE(a.plan->native, nullptr);
    weak = a.plan->native;
  }
  EXPECT_TRUE(weak.expired());  // the cache does not keep code no program uses
  const Built b = Build(DType::kF32, 777, "stablehlo.sqrt");
  ASSERT_NE(b.plan->native, nullptr);
  ExpectSameAsInterpreter(*b.program, 3);
}

}  // namespace
}  // namespace kiln::testing
