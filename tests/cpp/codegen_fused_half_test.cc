// Native code of fused runs over 16-bit floats (codegen/native_half.h) against the interpreter:
// random elementwise programs on bf16 and f16 (arithmetic, inline and called vector functions,
// conversions to and from f32 with f32 members between), over inputs of random 16-bit codes (every
// class: NaNs with payloads, infinities, signed zeros, subnormals, ties after arithmetic), compiled
// and run once with each run's native code and once interpreted (RunFused calling each member's
// range function). Same bits required, except which NaN payload an op on two NaNs returns.
//
// The register width and the bf16 rounding are chosen once per process: this process covers what
// the CPU has (zmm and vcvtneps2bf16 on AVX-512 BF16 CPUs), child processes rerun the test with
// KILN_FUSED_JIT_AVX512=0 (ymm code) and KILN_FUSED_JIT_AVX512BF16=0 (rounding by integer
// instructions), when the CPU makes them different code.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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

bool HalfCodeExpected() { return CodeExpected() && __builtin_cpu_supports("avx2"); }

// A 16-bit code: mostly uniform over all codes, often subnormal or small (products reach f32
// subnormals), sometimes one of a few values (ties, equal operands).
uint16_t RandomCode(std::mt19937& rng, DType t) {
  const int k = std::uniform_int_distribution<int>(0, 9)(rng);
  const uint16_t r = static_cast<uint16_t>(rng());
  const int mantissa = t == DType::kBF16 ? 7 : 10;
  if (k < 5) return r;
  if (k < 7) return static_cast<uint16_t>(r & (0x8000 | ((1 << (mantissa + 1)) - 1)));  // tiny
  if (k < 9) {  // magnitudes near 1
    const int bias = t == DType::kBF16 ? 127 : 15;
    return static_cast<uint16_t>((r & 0x8000) | ((bias - 2 + (r % 5)) << mantissa) |
                                 (r & ((1 << mantissa) - 1)));
  }
  static const uint16_t kBf16[] = {0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0xffc1};
  static const uint16_t kF16[] = {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0xfe01};
  return (t == DType::kBF16 ? kBf16 : kF16)[r % 8];
}

bool IsNan16(uint16_t c, DType t) {
  return t == DType::kBF16 ? (c & 0x7fff) > 0x7f80 : (c & 0x7fff) > 0x7c00;
}

// Builds a random run over `n` elements of t: half arithmetic, vector functions, and stretches in
// f32 between conversions. `calls`: whether a member calls a SLEEF function.
ir::Module MakeProgram(std::mt19937& rng, DType t, int64_t n, bool& calls) {
  ir::Module m;
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int arrays = uniform(1, 3);
  const bool scalar = uniform(0, 1) == 1;
  std::vector<ir::Type> args(static_cast<size_t>(arrays), Ty(t, {n}));
  if (scalar) args.push_back(Ty(t));
  AddFunction(m, "main", args, [&](OpList& b, const std::vector<ValueId>& a) {
    std::vector<ValueId> pool(a.begin(), a.begin() + arrays);
    if (scalar) pool.push_back(b.Broadcast(a.back(), {n}, {}));
    std::vector<ValueId> made;
    auto pick = [&] {
      return uniform(0, 1)
                 ? pool.back()
                 : pool[static_cast<size_t>(uniform(0, static_cast<int>(pool.size()) - 1))];
    };
    static const char* const kBinary[] = {"add",    "subtract", "multiply",
                                          "divide", "maximum",  "minimum"};
    static const char* const kUnary[] = {"negate", "abs", "sqrt", "exponential", "tanh"};
    const int steps = uniform(2, 12);
    for (int i = 0; i < steps; ++i) {
      const int k = uniform(0, 99);
      ValueId v;
      if (k < 45) {
        v = b.Binary(std::string("stablehlo.") + kBinary[uniform(0, 5)], pick(), pick());
      } else if (k < 75) {
        v = b.Unary(std::string("stablehlo.") + kUnary[uniform(0, 4)], pick());
      } else if (k < 80) {
        calls = true;
        v = b.Unary(uniform(0, 1) ? "stablehlo.log" : "stablehlo.sine", pick());
      } else {  // through f32: widen, an f32 op or two, round back
        ValueId w = b.Convert(pick(), DType::kF32);
        if (uniform(0, 1)) made.push_back(w);  // an f32 result too
        w = b.Binary(std::string("stablehlo.") + kBinary[uniform(0, 5)], w,
                     b.Convert(pick(), DType::kF32));
        if (uniform(0, 1)) w = b.Unary("stablehlo.tanh", w);
        v = b.Convert(w, t);
      }
      pool.push_back(v);
      made.push_back(v);
    }
    // The last value and a few others are results.
    std::vector<ValueId> results = {made.back()};
    for (size_t i = 0; i + 1 < made.size(); ++i) {
      if (uniform(0, 2) == 0) results.push_back(made[i]);
    }
    return results;
  });
  return m;
}

TEST(CodegenFusedHalfTest, RandomHalfRunsMatchTheInterpreter) {
  const std::vector<int64_t> sizes = {256, 257, 263, 300, 511, 1000, 1024, 1025, 2049, 4099};
  std::mt19937 rng(20261129);
  int native_runs = 0, mismatches = 0;
  for (int i = 0; i < 240 && mismatches <= 5; ++i) {
    const DType t = i % 2 == 0 ? DType::kBF16 : DType::kF16;
    const int64_t n = sizes[static_cast<size_t>(i / 2) % sizes.size()];
    bool calls = false;
    ir::Module module = MakeProgram(rng, t, n, calls);
    const std::string text = ir::PrintModule(module);
    const Compiled compiled = CompileFunctions(std::move(module), {"main"});
    const std::shared_ptr<const Program> p = compiled.programs[0];
    ASSERT_NE(p, nullptr);
    int fused = 0, with_code = 0;
    for (const lower::Step& s : p->steps) {
      if (s.fused == nullptr) continue;
      ++fused;
      with_code += s.fused->native != nullptr;
    }
    native_runs += with_code;
    if (HalfCodeExpected()) {
      EXPECT_EQ(with_code, fused) << text;
    }
    const std::shared_ptr<const Program> q = Interpreted(*p);
    Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
    for (size_t a = 0; a < params.size(); ++a) {
      auto* codes = reinterpret_cast<uint16_t*>(params.Data(a));
      for (int64_t k = 0; k < params.type(a).num_elements(); ++k) codes[k] = RandomCode(rng, t);
    }
    ASSERT_TRUE(RunWithRunner(*p, params, native).ok());
    ASSERT_TRUE(RunWithRunner(*q, params, interpreted).ok());
    for (size_t r = 0; r < native.size(); ++r) {
      const DType rt = native.type(r).dtype;
      if (rt == DType::kF32) {
        const std::string d = Difference(interpreted, native, r, true);
        if (d.empty()) continue;
        ++mismatches;
        ADD_FAILURE() << "case " << i << ": " << d << "\n" << text;
        break;
      }
      const auto* x = reinterpret_cast<const uint16_t*>(interpreted.Data(r));
      const auto* y = reinterpret_cast<const uint16_t*>(native.Data(r));
      for (int64_t k = 0; k < native.type(r).num_elements(); ++k) {
        if (x[k] == y[k] || (IsNan16(x[k], rt) && IsNan16(y[k], rt))) continue;
        ++mismatches;
        ADD_FAILURE() << "case " << i << " result " << r << " element " << k << ": interpreted 0x"
                      << std::hex << x[k] << " native 0x" << y[k] << std::dec << "\n"
                      << text;
        break;
      }
    }
  }
  std::printf("16-bit runs with native code: %d\n", native_runs);
  if (HalfCodeExpected()) {
    EXPECT_GT(native_runs, 200);
  }
}

constexpr char kRandomTest[] = "CodegenFusedHalfTest.RandomHalfRunsMatchTheInterpreter";

TEST(CodegenFusedHalfTest, YmmCodeInAChildProcess) {
  if (!__builtin_cpu_supports("avx512f") || EnvIsZero("KILN_FUSED_JIT_AVX512")) {
    GTEST_SKIP() << "this process runs the ymm code already";
  }
  RerunWithSwitchOff("KILN_FUSED_JIT_AVX512", kRandomTest);
}

TEST(CodegenFusedHalfTest, IntegerBf16RoundingInAChildProcess) {
  if (!__builtin_cpu_supports("avx512bf16") || EnvIsZero("KILN_FUSED_JIT_AVX512BF16")) {
    GTEST_SKIP() << "this process rounds bf16 by integer instructions already";
  }
  RerunWithSwitchOff("KILN_FUSED_JIT_AVX512BF16", kRandomTest);
}

}  // namespace
}  // namespace kiln::testing
