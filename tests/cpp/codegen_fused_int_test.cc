// The fused-run code generator's members on 32-bit integer and predicate lanes
// (codegen/native_int32.cc, EmitInt32Lanes) against the interpreter, as codegen_fused_test.cc
// checks the float and the plain integer members: random programs compiled and fused by the
// compiler, run once as compiled and once with every fused step's native code taken out. On a CPU
// with AVX-512 this process runs the zmm code; YmmCodeInAChildProcess reruns the test with
// KILN_FUSED_JIT_AVX512=0 for the ymm code.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

// Runs of the other 32-bit lane members (EmitInt32Lanes): s32 / u32 divide and remainder (by 0,
// by -1, INT_MIN / -1: the fill has INT_MIN, INT_MAX, -1, 0 and 1, and splat constants add them),
// abs, sign, compares of integers and of predicates, predicate logic, select, and conversions
// pred <-> s32 / u32, s32 <-> u32, s32 -> f32 (then a float member), over pred inputs and
// results too (bytes in memory, lane masks in registers; tails of every length). The same bits as
// the interpreter; a power now and then leaves the run interpreted.
TEST(CodegenFusedIntTest, IntegerLaneOpsMatchTheInterpreter) {
  const bool code_expected =
      CodeExpected() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  static const char* const kBinary[] = {"divide",  "remainder", "add",     "multiply",
                                        "maximum", "and",       "xor",     "shift_right_logical",
                                        "divide",  "remainder", "subtract"};
  static const char* const kDirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const std::vector<int64_t> sizes = {256, 257, 263, 300, 511, 1024, 1031, 4099};
  std::mt19937 rng(20261130);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int native_runs = 0, mismatches = 0;
  for (int i = 0; i < 240 && mismatches <= 5; ++i) {
    const DType t = i % 2 == 0 ? DType::kS32 : DType::kU32;
    const std::vector<int64_t> dims = {sizes[static_cast<size_t>(i / 2) % sizes.size()]};
    bool handled = true;
    ir::Module module;
    const int arrays = uniform(1, 3), scalars = uniform(0, 1), preds = uniform(0, 1);
    std::vector<ir::Type> args(static_cast<size_t>(arrays), Ty(t, dims));
    args.insert(args.end(), static_cast<size_t>(scalars), Ty(t));
    args.insert(args.end(), static_cast<size_t>(preds), Ty(DType::kPred, dims));
    AddFunction(module, "main", args, [&](OpList& b, const std::vector<ValueId>& a) {
      RandomValues vals(rng);
      std::vector<ValueId> ints(a.begin(), a.begin() + arrays), bools;
      for (int k = 0; k < scalars; ++k) {
        ints.push_back(b.Broadcast(a[static_cast<size_t>(arrays + k)], dims, {}));
      }
      for (int k = 0; k < preds; ++k) bools.push_back(a[static_cast<size_t>(arrays + scalars + k)]);
      const bool s32 = t == DType::kS32;
      for (double c : {0.0, s32 ? -1.0 : 4294967295.0, s32 ? -2147483648.0 : 2147483648.0, 7.0}) {
        if (uniform(0, 2) == 0) ints.push_back(b.Broadcast(b.Constant(Ty(t), {c}), dims, {}));
      }
      auto compare = [&] {
        const ValueId x = vals.Pick(ints), y = vals.Pick(ints);
        return b.Compare(kDirs[uniform(0, 5)], x, y);
      };
      const int steps = uniform(3, 14);
      for (int k = 0; k < steps; ++k) {
        const int kind = uniform(0, 99);
        if (kind < 40) {
          const ValueId x = vals.Pick(ints), y = vals.Pick(ints);
          vals.Keep(ints, b.Binary(std::string("stablehlo.") + kBinary[uniform(0, 10)], x, y));
        } else if (kind < 50) {
          static const char* const kUnary[] = {"abs", "sign", "negate", "not"};
          vals.Keep(ints,
                    b.Unary(std::string("stablehlo.") + kUnary[uniform(0, 3)], vals.Pick(ints)));
        } else if (kind < 62) {
          vals.Keep(bools, compare());
        } else if (kind < 70 && !bools.empty()) {
          const ValueId p = vals.Pick(bools);
          switch (uniform(0, 3)) {
            case 0:
              vals.Keep(bools, b.Unary("stablehlo.not", p));
              break;
            case 1:
              vals.Keep(bools, b.Binary(uniform(0, 1) ? "stablehlo.and" : "stablehlo.or", p,
                                        vals.Pick(bools)));
              break;
            case 2:
              vals.Keep(bools, b.Binary("stablehlo.xor", p, vals.Pick(bools)));
              break;
            default:
              vals.Keep(bools, b.Compare(kDirs[uniform(0, 5)], p, vals.Pick(bools)));
              break;
          }
        } else if (kind < 82) {
          const ValueId p = bools.empty() || uniform(0, 1) ? compare() : vals.Pick(bools);
          const ValueId x = vals.Pick(ints);
          vals.Keep(ints, b.Select(p, x, vals.Pick(ints)));
        } else if (kind < 88 && !bools.empty()) {
          vals.Keep(ints, b.Convert(vals.Pick(bools), t));
        } else if (kind < 92) {
          vals.Keep(bools, b.Convert(vals.Pick(ints), DType::kPred));
        } else if (kind < 95) {
          vals.Keep(ints, b.Convert(vals.Pick(ints), s32 ? DType::kU32 : DType::kS32));
          ints.back() = b.Convert(ints.back(), t);
          vals.made.back() = ints.back();
        } else if (kind < 98 && s32) {  // to f32, then a float member (a result of its own)
          vals.made.push_back(b.Unary("stablehlo.negate", b.Convert(vals.Pick(ints), DType::kF32)));
        } else {  // left to the interpreter
          handled = false;
          const ValueId x = vals.Pick(ints);
          vals.Keep(ints, b.Binary("stablehlo.power", x, vals.Pick(ints)));
        }
      }
      std::vector<ValueId> results = vals.Unread();
      return results;
    });
    const std::string text = ir::PrintModule(module);
    const Compiled compiled = CompileFunctions(std::move(module), {"main"});
    const std::shared_ptr<const Program> p = compiled.programs[0];
    ASSERT_NE(p, nullptr);
    const auto [fused, with_code] = FusedAndNative(*p);
    native_runs += with_code;
    if (handled && code_expected) {
      EXPECT_EQ(with_code, fused) << text;
    }
    const std::shared_ptr<const Program> q = Interpreted(*p);
    for (int run = 0; run < 2; ++run) {
      Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
      FillRandom(params, rng, 30, run == 1);
      ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
      ASSERT_TRUE(RunWithRunner(*q, params, interpreted).ok());
      for (size_t r = 0; r < native.size(); ++r) {
        const std::string d = Difference(interpreted, native, r, false);
        if (d.empty()) continue;
        ++mismatches;
        ADD_FAILURE() << "case " << i << " run " << run << ": " << d << "\n" << text;
        break;
      }
    }
  }
  std::printf("integer lane runs: %d with native code\n", native_runs);
  if (code_expected) {
    EXPECT_GT(native_runs, 150);
  }
}

TEST(CodegenFusedIntTest, YmmCodeInAChildProcess) {
  if (!WideExpected()) GTEST_SKIP() << "this process runs the ymm code already";
  RerunWithSwitchOff("KILN_FUSED_JIT_AVX512",
                     "CodegenFusedIntTest.IntegerLaneOpsMatchTheInterpreter");
}

}  // namespace
}  // namespace kiln::testing
