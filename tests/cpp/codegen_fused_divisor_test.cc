// s32 / u32 divide and remainder by a divisor known at compile time (codegen/native_int32.cc:
// DivRemPowerOfTwo, DivRemByConstant), reached through the fusion pass's splat constants
// (FusedPlan::input_splat): every divisor kind (1, powers of two, small and large odd and even
// constants, the largest ones, and those left to the general code: 0, negative ones, INT_MIN),
// broadcast from a constant (folded into a splat, or, past the folding limit, a broadcast member),
// on dividends at the extremes, around multiples of the divisor and random over the whole range.
// Each result against the interpreter (the same program with its native code taken out) and
// against IntDiv / IntRem's definition computed here. On an AVX-512 CPU this process runs the zmm
// code; YmmCodeInAChildProcess reruns it with KILN_FUSED_JIT_AVX512=0.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "lower/fused_plan.h"
#include "tests/cpp/fused_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using lower::Program;

// IntDiv / IntRem (elementwise_ops.h): a divisor of 0 gives -1 (all bits) and the dividend,
// INT_MIN / -1 gives INT_MIN and 0; otherwise C++'s truncating division.
template <typename T>
T Quotient(T a, T b) {
  if (b == 0) return static_cast<T>(-1);
  if constexpr (std::is_signed_v<T>) {
    if (a == std::numeric_limits<T>::min() && b == -1) return a;
  }
  return static_cast<T>(a / b);
}
template <typename T>
T Remainder(T a, T b) {
  if (b == 0) return a;
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

// Dividends: the extremes, multiples of `d` and their neighbours, and random 32-bit values.
template <typename T>
std::vector<T> Dividends(T d, int64_t n, std::mt19937& rng) {
  std::vector<T> x(static_cast<size_t>(n));
  const T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  const std::vector<T> edges = {lo, static_cast<T>(lo + 1), hi, static_cast<T>(hi - 1), 0,
                                1,  static_cast<T>(-1)};
  for (int64_t i = 0; i < n; ++i) {
    const int kind = static_cast<int>(rng() % 4);
    T v = static_cast<T>(rng());
    if (kind == 0) {
      v = edges[rng() % edges.size()];
    } else if (kind == 1 && d != 0) {  // k * d + {-1, 0, 1}, k anywhere in range
      const auto k = static_cast<T>(static_cast<T>(rng()) / (d == static_cast<T>(-1) ? 1 : d));
      v = static_cast<T>(static_cast<T>(static_cast<uint32_t>(k) * static_cast<uint32_t>(d)) +
                         static_cast<T>(static_cast<int>(rng() % 3) - 1));
    }
    x[static_cast<size_t>(i)] = v;
  }
  return x;
}

template <typename T>
void CheckDivisor(DType t, T d, int64_t n, std::mt19937& rng, int& native_runs, int& failures) {
  const std::vector<int64_t> dims = {n};
  ir::Module module;
  AddFunction(module, "main", {Ty(t, dims)}, [&](OpList& b, const std::vector<ValueId>& a) {
    const ValueId c = b.Broadcast(b.Constant(Ty(t), {static_cast<double>(d)}), dims, {});
    const ValueId q = b.Binary("stablehlo.divide", a[0], c);
    const ValueId r = b.Binary("stablehlo.remainder", a[0], c);
    // A member after the division, so that both stay in one run with more than one op.
    return std::vector<ValueId>{b.Binary("stablehlo.add", q, a[0]), r, q};
  });
  const std::string what = std::string(t == DType::kS32 ? "s32" : "u32") + " by " +
                           std::to_string(d) + " over " + std::to_string(n);
  const Compiled compiled = CompileFunctions(std::move(module), {"main"});
  const std::shared_ptr<const Program> p = compiled.programs[0];
  ASSERT_NE(p, nullptr) << what;
  for (const lower::Step& s : p->steps) native_runs += s.fused != nullptr && s.fused->native;
  const std::shared_ptr<const Program> interp = Interpreted(*p);
  Values params(ParamTypes(*p)), native(ResultTypes(*p)), interpreted(ResultTypes(*p));
  const std::vector<T> x = Dividends<T>(d, n, rng);
  std::memcpy(params.Data(0), x.data(), x.size() * sizeof(T));
  ASSERT_TRUE(RunWithRunner(*p, params, native).ok()) << what;
  ASSERT_TRUE(RunWithRunner(*interp, params, interpreted).ok()) << what;
  for (size_t r = 0; r < native.size(); ++r) {
    const std::string diff = Difference(interpreted, native, r, false);
    if (!diff.empty()) {
      ++failures;
      ADD_FAILURE() << what << ", result " << r << ": " << diff;
    }
  }
  const auto* rem = reinterpret_cast<const T*>(native.Data(1));
  const auto* quo = reinterpret_cast<const T*>(native.Data(2));
  for (int64_t i = 0; i < n && failures < 20; ++i) {
    const T a = x[static_cast<size_t>(i)];
    if (quo[i] != Quotient(a, d) || rem[i] != Remainder(a, d)) {
      ++failures;
      ADD_FAILURE() << what << ": " << a << " gives " << quo[i] << ", " << rem[i] << ", not "
                    << Quotient(a, d) << ", " << Remainder(a, d);
    }
  }
}

TEST(CodegenFusedDivisorTest, KnownDivisorsMatchTheInterpreterAndTheDefinition) {
  const bool code_expected =
      CodeExpected() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2");
  const int32_t kMin = std::numeric_limits<int32_t>::min(),
                kMax = std::numeric_limits<int32_t>::max();
  const std::vector<int32_t> s32 = {
      1,       2,     3,          4,          5,        6,    7, 10, 16, 641, 1009,       65536,
      1 << 30, 12345, 1000000007, 0x40000001, kMax - 1, kMax, 0, -1, -2, -7,  -(1 << 30), kMin};
  const std::vector<uint32_t> u32 = {
      1,           2,           3,           7,           10,
      1u << 16,    641,         1009,        1u << 31,    (1u << 31) + 1,
      3000000000u, 0xFFFFFFFEu, 0xFFFFFFFFu, 0x7FFFFFFFu, 0};
  // 1031 elements: the constant folds into a splat input; 17000 (68 KB, past the folding limit):
  // a broadcast member of the one-element constant.
  const std::vector<int64_t> sizes = {1031, 17000};
  std::mt19937 rng(20261129);
  int native_runs = 0, failures = 0;
  for (int64_t n : sizes) {
    for (int32_t d : s32) CheckDivisor<int32_t>(DType::kS32, d, n, rng, native_runs, failures);
    for (uint32_t d : u32) CheckDivisor<uint32_t>(DType::kU32, d, n, rng, native_runs, failures);
  }
  if (code_expected) {
    EXPECT_EQ(native_runs, static_cast<int>(sizes.size() * (s32.size() + u32.size())));
  }
}

TEST(CodegenFusedDivisorTest, YmmCodeInAChildProcess) {
  if (!WideExpected()) GTEST_SKIP() << "this process runs the ymm code already";
  RerunWithSwitchOff("KILN_FUSED_JIT_AVX512",
                     "CodegenFusedDivisorTest.KnownDivisorsMatchTheInterpreterAndTheDefinition");
}

}  // namespace
}  // namespace kiln::testing
