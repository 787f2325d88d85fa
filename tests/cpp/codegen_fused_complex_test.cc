// The fused-run code generator's complex64 members and f32 compares (codegen/fused_complex.cc)
// against the interpreter, as codegen_fused_int_test.cc checks the integer lane members: random
// programs compiled and fused by the compiler, run once as compiled and once with every fused
// step's native code taken out; the same bits. Complex runs are ymm code; f32 compares without
// complex values are zmm code on a CPU with AVX-512, and YmmCodeInAChildProcess reruns the test
// with KILN_FUSED_JIT_AVX512=0 for their ymm code.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lower/fused_plan.h"
#include "tests/cpp/fused_complex_test_util.h"
#include "tests/cpp/fused_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using lower::Program;

// Runs of complex64 add, subtract, multiply, negate, abs, select and compare eq/ne with f32
// compares (every direction) and f32 members between them, over complex arrays, a complex scalar
// broadcast, and f32 arrays (tails of every length). One case in four has no complex value: f32
// compares and selects only; one in four is complex128 with f64 members (add, subtract,
// multiply, negate, abs: no predicates in f64 runs).
TEST(CodegenFusedComplexTest, ComplexMembersMatchTheInterpreter) {
  const bool code_expected = ComplexCodeExpected();
  static const char* const kDirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  const std::vector<int64_t> sizes = {256, 257, 263, 300, 511, 1024, 1031, 4099};
  std::mt19937 rng(20261129);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int native_runs = 0, complex_runs = 0, c128_runs = 0, mismatches = 0;
  for (int i = 0; i < 200 && mismatches <= 5; ++i) {
    const std::vector<int64_t> dims = {sizes[static_cast<size_t>(i) % sizes.size()]};
    const bool no_complex = i % 4 == 3, c128 = i % 4 == 2;
    const DType cxt = c128 ? DType::kC128 : DType::kC64, flt = c128 ? DType::kF64 : DType::kF32;
    ir::Module module;
    const int arrays = no_complex ? 0 : uniform(1, 3), scalars = no_complex ? 0 : uniform(0, 1);
    const int floats = no_complex ? uniform(2, 3) : uniform(0, 1);
    std::vector<ir::Type> args(static_cast<size_t>(arrays), Ty(cxt, dims));
    args.insert(args.end(), static_cast<size_t>(scalars), Ty(cxt));
    args.insert(args.end(), static_cast<size_t>(floats), Ty(flt, dims));
    AddFunction(module, "main", args, [&](OpList& b, const std::vector<ValueId>& a) {
      RandomValues vals(rng);
      std::vector<ValueId> cx(a.begin(), a.begin() + arrays), fl, bools;
      for (int k = 0; k < scalars; ++k) {
        cx.push_back(b.Broadcast(a[static_cast<size_t>(arrays + k)], dims, {}));
      }
      for (int k = 0; k < floats; ++k) fl.push_back(a[static_cast<size_t>(arrays + scalars + k)]);
      const int steps = uniform(3, 14);
      for (int k = 0; k < steps; ++k) {
        const int kind = uniform(0, 99);
        if (kind < 35 && !cx.empty()) {
          static const char* const kBinary[] = {"add", "subtract", "multiply", "multiply"};
          const ValueId x = vals.Pick(cx), y = vals.Pick(cx);
          vals.Keep(cx, b.Binary(std::string("stablehlo.") + kBinary[uniform(0, 3)], x, y));
        } else if (kind < 40 && !cx.empty()) {
          vals.Keep(cx, b.Unary("stablehlo.negate", vals.Pick(cx)));
        } else if (kind < 55 && !cx.empty()) {
          vals.Keep(fl, b.Op("stablehlo.abs", {vals.Pick(cx)}, Ty(flt, dims)));
        } else if (kind < 90 && c128) {
          if (cx.empty()) continue;
          const ValueId x = vals.Pick(cx);
          vals.Keep(cx, b.Binary(uniform(0, 1) ? "stablehlo.subtract" : "stablehlo.multiply", x,
                                 vals.Pick(cx)));
        } else if (kind < 70 && !fl.empty()) {
          const ValueId x = vals.Pick(fl), y = vals.Pick(fl);
          vals.Keep(bools, b.Compare(kDirs[uniform(0, 5)], x, y));
        } else if (kind < 75 && !cx.empty()) {
          const ValueId x = vals.Pick(cx), y = vals.Pick(cx);
          vals.Keep(bools, b.Compare(uniform(0, 1) ? "EQ" : "NE", x, y));
        } else if (kind < 90 && !bools.empty()) {
          const ValueId p = vals.Pick(bools);
          std::vector<ValueId>& pool = cx.empty() || uniform(0, 2) == 0 ? fl : cx;
          if (pool.empty()) continue;
          const ValueId x = vals.Pick(pool);
          vals.Keep(pool, b.Select(p, x, vals.Pick(pool)));
        } else if (!fl.empty()) {
          const ValueId x = vals.Pick(fl);
          vals.Keep(fl, b.Binary(uniform(0, 1) ? "stablehlo.add" : "stablehlo.multiply", x,
                                 vals.Pick(fl)));
        }
      }
      std::vector<ValueId> results = vals.Unread();
      if (results.empty()) results.push_back(no_complex ? fl.back() : cx.back());
      return results;
    });
    const std::string text = ir::PrintModule(module);
    const Compiled compiled = CompileFunctions(std::move(module), {"main"});
    const std::shared_ptr<const Program> p = compiled.programs[0];
    ASSERT_NE(p, nullptr);
    const auto [fused, with_code] = FusedAndNative(*p);
    if (!no_complex) complex_runs += with_code;
    if (c128) c128_runs += with_code;
    native_runs += with_code;
    if (code_expected) {
      EXPECT_EQ(with_code, fused) << text;
    }
    const std::shared_ptr<const Program> q = Interpreted(*p);
    for (int run = 0; run < 2; ++run) {
      Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
      FillComplexParts(params, rng);
      ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
      ASSERT_TRUE(RunWithRunner(*q, params, interpreted).ok());
      for (size_t r = 0; r < native.size(); ++r) {
        const std::string d = ComplexDifference(interpreted, native, r);
        if (d.empty()) continue;
        ++mismatches;
        ADD_FAILURE() << "case " << i << " run " << run << ": " << d << "\n" << text;
        break;
      }
    }
  }
  std::printf("runs with native code: %d, %d of them complex, %d complex128\n", native_runs,
              complex_runs, c128_runs);
  if (code_expected) {
    EXPECT_GT(native_runs, 120);
    EXPECT_GT(complex_runs, 90);
    EXPECT_GT(c128_runs, 40);
  }
}

TEST(CodegenFusedComplexTest, YmmCodeInAChildProcess) {
  if (!WideExpected()) GTEST_SKIP() << "this process runs the ymm code already";
  RerunWithSwitchOff("KILN_FUSED_JIT_AVX512",
                     "CodegenFusedComplexTest.ComplexMembersMatchTheInterpreter");
}

}  // namespace
}  // namespace kiln::testing
