// The loop code generator (codegen/native_loop.h) on small vectors built from scalars and scalars
// taken from vectors, the pattern of `jnp.array([f(y[0], y[1]), ...])` in an ODE right-hand side:
// a concatenate of scalars computed one at a time is read back by a vector op (the native code
// composes the vector from the registers holding its elements, some cached and some loaded:
// NativeEmitter::ComposeVector), and a vector op's result is read back element by element (lanes
// taken out of the cached vector: NativeEmitter::Extract). f32 vectors of 4 and 8 elements, f64
// of 2 and 4 (16- and 32-byte vectors), from random values and from a palette of signed zeros,
// NaNs and infinities, run four ways (loop_test_util.h); the same bits but for which NaN comes
// out of an op on two NaNs. And scalar carries kept in registers from one iteration to the next.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "tests/cpp/loop_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

// One iteration: carries counter, a: T[n], r: T[n].
std::vector<ValueId> Body(OpList& b, const std::vector<ValueId>& c, DType t, int64_t n) {
  const ValueId a = c[1];
  std::vector<ValueId> s, computed, mixed;
  for (int64_t k = 0; k < n; ++k) s.push_back(b.Reshape(b.Slice(a, k, k + 1), {}));
  for (int64_t k = 0; k < n; ++k) {
    const ValueId x =
        b.Binary("stablehlo.subtract", b.Binary("stablehlo.multiply", s[k], s[(k + 1) % n]), s[k]);
    computed.push_back(b.Reshape(x, {1}));
  }
  // Element 0 computed, the others slices of the carry (read from memory).
  mixed.push_back(computed[0]);
  for (int64_t k = 1; k < n; ++k) mixed.push_back(b.Slice(a, k, k + 1));
  const ValueId built = b.Concat(computed, 0), half = b.Concat(mixed, 0);
  const ValueId v = b.Binary("stablehlo.add", b.Binary("stablehlo.multiply", built, half), built);
  const ValueId scale = b.Broadcast(b.Constant(Ty(t), {0.5}), {n}, {});
  const ValueId next = b.Binary("stablehlo.subtract", v, b.Binary("stablehlo.multiply", a, scale));
  // v's elements one by one, in another order.
  std::vector<ValueId> picked;
  for (int64_t k = 0; k < n; ++k) {
    const ValueId e = b.Reshape(b.Slice(v, n - 1 - k, n - k), {});
    picked.push_back(b.Reshape(b.Binary("stablehlo.multiply", e, s[k]), {1}));
  }
  const ValueId r = b.Binary("stablehlo.maximum", b.Concat(picked, 0), c[2]);
  return {b.Binary("stablehlo.add", c[0], b.Constant(Ty(DType::kS32), {1})), next, r};
}

TEST(CodegenLoopVectorsTest, ArraysOfScalarsMatchTheInterpreters) {
  const Watchdog watchdog(60);
  const std::pair<DType, int64_t> shapes[] = {
      {DType::kF32, 4}, {DType::kF32, 8}, {DType::kF64, 2}, {DType::kF64, 4}, {DType::kF32, 3}};
  for (const auto& shape : shapes) {
    // Plain locals, not structured bindings: clang 14 cannot capture those in lambdas.
    const DType t = shape.first;
    const int64_t n = shape.second;
    const std::vector<ir::Type> carries = {Ty(DType::kS32), Ty(t, {n}), Ty(t, {n})};
    ir::Module m;
    auto cond = [](OpList& b, const std::vector<ValueId>& a) {
      return std::vector<ValueId>{b.Compare("LT", a[0], b.Constant(Ty(DType::kS32), {3}))};
    };
    auto body = [&](OpList& b, const std::vector<ValueId>& a) { return Body(b, a, t, n); };
    AddFunction(m, "cond", carries, cond);
    AddFunction(m, "body", carries, body);
    AddFunction(m, "main", carries,
                [&](OpList& b, const std::vector<ValueId>& a) { return b.While(a, cond, body); });
    const CompiledLoop loop(std::move(m), carries, {});
    ASSERT_TRUE(loop.ok()) << loop.text;
    ASSERT_EQ(loop.native != nullptr, LoopCodeExpected());
    LoopStats stats;
    std::mt19937 rng(11);
    const Values captures(std::vector<ir::Type>{});
    for (int run = 0; run < 40; ++run) {
      Values init(carries);
      // Half the runs from a palette of few values: signed zeros, NaNs, infinities.
      FillRandom(init, rng, 20, run % 2 == 1);
      const int32_t start = run % 5 == 0 ? 3 : run % 3;  // zero trips, or one to three
      std::memcpy(init.Data(0), &start, 4);
      const std::string d = CheckLoop(loop, init, captures, stats);
      ASSERT_EQ(d, "") << "run " << run << "\n" << loop.text;
    }
    EXPECT_GT(stats.iterations, 40);
  }
}

// Scalar f32 and f64 carries kept in registers across iterations (NativeEmitter::Loop): two
// carries that trade places (one's result is the other's register), one read by the condition,
// with and without a call (a function the code calls, which clobbers every register) in the
// condition or the body.
TEST(CodegenLoopVectorsTest, CarriesInRegistersMatchTheInterpreters) {
  const Watchdog watchdog(60);
  for (int call_in = 0; call_in < 3; ++call_in) {  // none, in the condition, in the body
    const std::vector<ir::Type> carries = {Ty(DType::kS32), Ty(DType::kF32), Ty(DType::kF32),
                                           Ty(DType::kF64), Ty(DType::kF64)};
    ir::Module m;
    auto cond = [&](OpList& b, const std::vector<ValueId>& a) {
      ValueId z = a[3];
      if (call_in == 1) z = b.Unary("stablehlo.sine", z);
      const ValueId more = b.Compare("LT", a[0], b.Constant(Ty(DType::kS32), {7}));
      const ValueId small = b.Compare("LT", z, b.Constant(Ty(DType::kF64), {1e6}));
      return std::vector<ValueId>{b.Binary("stablehlo.and", more, small)};
    };
    auto body = [&](OpList& b, const std::vector<ValueId>& a) {
      const ValueId x = a[1], y = a[2];
      ValueId z =
          b.Binary("stablehlo.add",
                   b.Binary("stablehlo.multiply", a[3], b.Constant(Ty(DType::kF64), {0.999})),
                   b.Constant(Ty(DType::kF64), {1.0}));
      if (call_in == 2) z = b.Binary("stablehlo.add", z, b.Unary("stablehlo.sine", a[4]));
      const ValueId w = b.Binary("stablehlo.subtract", a[4], z);
      const ValueId y2 =
          b.Binary("stablehlo.subtract",
                   b.Binary("stablehlo.multiply", x, b.Constant(Ty(DType::kF32), {1.5})), y);
      return std::vector<ValueId>{b.Binary("stablehlo.add", a[0], b.Constant(Ty(DType::kS32), {1})),
                                  y, y2, z, w};
    };
    AddFunction(m, "cond", carries, cond);
    AddFunction(m, "body", carries, body);
    AddFunction(m, "main", carries,
                [&](OpList& b, const std::vector<ValueId>& a) { return b.While(a, cond, body); });
    const CompiledLoop loop(std::move(m), carries, {});
    ASSERT_TRUE(loop.ok()) << loop.text;
    ASSERT_EQ(loop.native != nullptr, LoopCodeExpected());
    LoopStats stats;
    std::mt19937 rng(5);
    const Values captures(std::vector<ir::Type>{});
    for (int run = 0; run < 40; ++run) {
      Values init(carries);
      FillRandom(init, rng, 20, run % 2 == 1);
      const int32_t start = run % 5 == 0 ? 7 : run % 4;  // zero trips, or up to seven
      std::memcpy(init.Data(0), &start, 4);
      const std::string d = CheckLoop(loop, init, captures, stats);
      ASSERT_EQ(d, "") << "call in " << call_in << ", run " << run << "\n" << loop.text;
    }
    EXPECT_GT(stats.iterations, 40);
  }
}

}  // namespace
}  // namespace kiln::testing
