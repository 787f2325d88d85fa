// The fused-run code generator's complex divide, real, imag, complex and real-to-complex convert
// members (codegen/fused_complex.cc, fused_complex_divide.cc) against the interpreter: random
// programs of them among the other complex members (complex64 and complex128), and every quotient
// of a palette of special parts (zeros, infinities, NaNs, extremes). Same bits, or NaN in both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
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

// Runs `p` with and without native code on `params`; the first difference, or "".
std::string NativeVsInterpreted(const Program& p, const Values& params) {
  const std::shared_ptr<const Program> q = Interpreted(p);
  Values native(ResultTypes(p)), interpreted(ResultTypes(p));
  if (!RunWithRunner(p, params, native).ok()) return "the native run failed";
  if (!RunWithRunner(*q, params, interpreted).ok()) return "the interpreted run failed";
  for (size_t r = 0; r < native.size(); ++r) {
    const std::string d = ComplexDifference(interpreted, native, r);
    if (!d.empty()) return d;
  }
  return "";
}

TEST(CodegenFusedComplexPartsTest, PartsAndQuotientsMatchTheInterpreter) {
  const bool code_expected = ComplexCodeExpected();
  const std::vector<int64_t> sizes = {256, 259, 300, 1024, 1029, 4099};
  std::mt19937 rng(20261130);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int native_runs = 0, c128_runs = 0, mismatches = 0;
  for (int i = 0; i < 160 && mismatches <= 5; ++i) {
    const std::vector<int64_t> dims = {sizes[static_cast<size_t>(i) % sizes.size()]};
    const bool c128 = i % 2 == 1;
    const DType cxt = c128 ? DType::kC128 : DType::kC64, flt = c128 ? DType::kF64 : DType::kF32;
    ir::Module module;
    const int arrays = uniform(1, 2), scalars = uniform(0, 1), floats = uniform(1, 2);
    std::vector<ir::Type> args(static_cast<size_t>(arrays), Ty(cxt, dims));
    args.insert(args.end(), static_cast<size_t>(scalars), Ty(cxt));
    args.insert(args.end(), static_cast<size_t>(floats), Ty(flt, dims));
    AddFunction(module, "main", args, [&](OpList& b, const std::vector<ValueId>& a) {
      RandomValues vals(rng);
      std::vector<ValueId> cx(a.begin(), a.begin() + arrays), fl;
      for (int k = 0; k < scalars; ++k) {
        cx.push_back(b.Broadcast(a[static_cast<size_t>(arrays + k)], dims, {}));
      }
      for (int k = 0; k < floats; ++k) fl.push_back(a[static_cast<size_t>(arrays + scalars + k)]);
      const int steps = uniform(3, 12);
      for (int k = 0; k < steps; ++k) {
        const int kind = uniform(0, 99);
        if (kind < 30) {
          const ValueId x = vals.Pick(cx);
          vals.Keep(cx, b.Binary("stablehlo.divide", x, vals.Pick(cx)));
        } else if (kind < 45) {
          const ValueId x = vals.Pick(cx);
          vals.Keep(fl,
                    b.Op(uniform(0, 1) ? "stablehlo.real" : "stablehlo.imag", {x}, Ty(flt, dims)));
        } else if (kind < 55) {
          const ValueId x = vals.Pick(fl);
          vals.Keep(cx, b.Op("stablehlo.complex", {x, vals.Pick(fl)}, Ty(cxt, dims)));
        } else if (kind < 62) {
          vals.Keep(cx, b.Convert(vals.Pick(fl), cxt));
        } else if (kind < 75) {
          const ValueId x = vals.Pick(cx);
          vals.Keep(cx, b.Binary(uniform(0, 1) ? "stablehlo.multiply" : "stablehlo.add", x,
                                 vals.Pick(cx)));
        } else if (kind < 82) {
          vals.Keep(cx, b.Unary("stablehlo.negate", vals.Pick(cx)));
        } else if (kind < 90) {
          vals.Keep(fl, b.Op("stablehlo.abs", {vals.Pick(cx)}, Ty(flt, dims)));
        } else {
          const ValueId x = vals.Pick(fl);
          vals.Keep(fl, b.Binary(uniform(0, 1) ? "stablehlo.add" : "stablehlo.multiply", x,
                                 vals.Pick(fl)));
        }
      }
      std::vector<ValueId> results = vals.Unread();
      if (results.empty()) results.push_back(cx.back());
      return results;
    });
    const std::string text = ir::PrintModule(module);
    const Compiled compiled = CompileFunctions(std::move(module), {"main"});
    const std::shared_ptr<const Program> p = compiled.programs[0];
    ASSERT_NE(p, nullptr);
    const auto [fused, with_code] = FusedAndNative(*p);
    native_runs += with_code;
    if (c128) c128_runs += with_code;
    if (code_expected) {
      EXPECT_EQ(with_code, fused) << text;
    }
    for (int run = 0; run < 2; ++run) {
      Values params(ParamTypes(*p));
      FillComplexParts(params, rng);
      const std::string d = NativeVsInterpreted(*p, params);
      if (d.empty()) continue;
      ++mismatches;
      ADD_FAILURE() << "case " << i << " run " << run << ": " << d << "\n" << text;
      break;
    }
  }
  std::printf("runs with native code: %d, %d complex128\n", native_runs, c128_runs);
  if (code_expected) {
    EXPECT_GT(native_runs, 120);
    EXPECT_GT(c128_runs, 60);
  }
}

// Every (ar + i ai) / (br + i bi) with parts from a palette of special values: Smith's quotient
// and each of its limits (zero divisor, infinite dividend, infinite divisor, NaNs).
template <typename F>
void EveryPaletteQuotient(DType cxt) {
  using L = std::numeric_limits<F>;
  const std::vector<F> palette = {
      F(0),     -F(0),           F(1),     -F(2.5), L::infinity(), -L::infinity(), L::quiet_NaN(),
      L::max(), L::denorm_min(), F(1e-30), -F(3e20)};
  const int64_t k = static_cast<int64_t>(palette.size());
  const int64_t n = k * k * k * k;
  ir::Module module;
  AddFunction(module, "main", {Ty(cxt, {n}), Ty(cxt, {n})},
              [&](OpList& b, const std::vector<ValueId>& a) {
                // negate: a second member, so the quotient is a fused run's (exact but for the
                // sign of NaNs, which the comparison leaves out)
                const ValueId q = b.Binary("stablehlo.divide", a[0], a[1]);
                return std::vector<ValueId>{b.Unary("stablehlo.negate", q)};
              });
  const Compiled compiled = CompileFunctions(std::move(module), {"main"});
  const std::shared_ptr<const Program> p = compiled.programs[0];
  ASSERT_NE(p, nullptr);
  if (ComplexCodeExpected()) {
    const auto [fused, with_code] = FusedAndNative(*p);
    EXPECT_EQ(with_code, 1);
    EXPECT_EQ(fused, 1);
  }
  Values params(ParamTypes(*p));
  for (int64_t e = 0; e < n; ++e) {
    const F parts[4] = {
        palette[static_cast<size_t>(e % k)], palette[static_cast<size_t>(e / k % k)],
        palette[static_cast<size_t>(e / k / k % k)], palette[static_cast<size_t>(e / k / k / k)]};
    std::memcpy(params.Data(0) + 2 * sizeof(F) * e, parts, 2 * sizeof(F));
    std::memcpy(params.Data(1) + 2 * sizeof(F) * e, parts + 2, 2 * sizeof(F));
  }
  EXPECT_EQ(NativeVsInterpreted(*p, params), "");
}

TEST(CodegenFusedComplexPartsTest, EveryPaletteQuotientComplex64) {
  EveryPaletteQuotient<float>(DType::kC64);
}
TEST(CodegenFusedComplexPartsTest, EveryPaletteQuotientComplex128) {
  EveryPaletteQuotient<double>(DType::kC128);
}

}  // namespace
}  // namespace kiln::testing
