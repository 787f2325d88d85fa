// Tiny dot_generals and bitwise reductions in loops (lower/small_ops.h), which the
// loop code generator emits inline (codegen/native_dots.cc): an ODE step's [7] x [7, 2] tableau
// product and its transposes, small matrix products (plain, transposed, batched, outer products),
// a vector's dot with itself (f32: one fused chain; f64: MatVec's lanes, left to the kernel), and
// jnp.all / jnp.any / integer xor reductions feeding selects, run four ways (loop_test_util.h):
// the same bits as RunProgram's kernels but for which NaN comes out of an op on two NaNs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lower/small_ops.h"
#include "tests/cpp/loop_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

using I = std::vector<int64_t>;

ValueId Dot(OpList& b, ValueId x, ValueId y, const I& out, const I& lb, const I& rb, const I& lc,
            const I& rc) {
  return b.Op("stablehlo.dot_general", {x, y}, Ty(b.TypeOf(x).dtype, out),
              {{"lhs_batching_dimensions", ir::Attr::IntArray(lb)},
               {"rhs_batching_dimensions", ir::Attr::IntArray(rb)},
               {"lhs_contracting_dimensions", ir::Attr::IntArray(lc)},
               {"rhs_contracting_dimensions", ir::Attr::IntArray(rc)}});
}

ValueId Scaled(OpList& b, ValueId x, double c) {
  const ir::Type t = b.TypeOf(x);
  return b.Binary("stablehlo.multiply", x, b.Broadcast(b.Constant(Ty(t.dtype), {c}), t.dims, {}));
}

// Carries: counter, y[7], w[7, 2], a[3, 4], bm[4, 3], x[2, 3, 2], o[2, 7], s[], bits s32[4].
std::vector<ir::Type> Carries(DType t) {
  return {Ty(DType::kS32),  Ty(t, {7}),    Ty(t, {7, 2}), Ty(t, {3, 4}),       Ty(t, {4, 3}),
          Ty(t, {2, 3, 2}), Ty(t, {2, 7}), Ty(t),         Ty(DType::kS32, {4})};
}

std::vector<ValueId> Body(OpList& b, const std::vector<ValueId>& c, DType t) {
  const ValueId y = c[1], w = c[2], a = c[3], bm = c[4], x = c[5], o = c[6], s = c[7];
  // The tableau products: y . w (m = 1), w . d (n = 1), w^T . y (transposed matrix).
  const ValueId d = Dot(b, y, w, {2}, {}, {}, {0}, {0});
  const ValueId e = Dot(b, w, d, {7}, {}, {}, {1}, {0});
  const ValueId f = Dot(b, w, y, {2}, {}, {}, {0}, {0});
  const ValueId yy = Dot(b, y, y, {}, {}, {}, {0}, {0});
  // Matrix products: plain, transposed lhs, batched, an outer product (k = 1).
  const ValueId p = Dot(b, a, bm, {3, 3}, {}, {}, {1}, {0});
  const ValueId a2 =
      b.Binary("stablehlo.add", a, Scaled(b, Dot(b, p, a, {3, 4}, {}, {}, {1}, {0}), 0.125));
  const ValueId q = Dot(b, a, a, {4, 4}, {}, {}, {0}, {0});
  const ValueId b2 =
      b.Binary("stablehlo.subtract", bm, Scaled(b, Dot(b, q, bm, {4, 3}, {}, {}, {1}, {0}), 0.125));
  const ValueId z = Dot(b, x, x, {2, 2, 2}, {0}, {0}, {1}, {1});
  const ValueId x2 =
      b.Binary("stablehlo.add", x, Scaled(b, Dot(b, x, z, {2, 3, 2}, {0}, {0}, {2}, {1}), 0.1));
  const ValueId outer =
      Dot(b, b.Reshape(f, {2, 1}), b.Reshape(y, {1, 7}), {2, 7}, {}, {}, {1}, {0});
  const ValueId o2 = b.Binary("stablehlo.add", Scaled(b, o, 0.5), outer);
  // Reductions: all(y > 0), any(a < 0) per row (pred's add is or), xor of a's integer parts.
  const ValueId zero7 = b.Broadcast(b.Constant(Ty(t), {0.0}), {7}, {});
  const ValueId all =
      b.Reduce(b.Compare("GT", y, zero7), b.Constant(Ty(DType::kPred), {1}), {0}, "stablehlo.and");
  const ValueId neg = b.Compare("LT", a, b.Broadcast(b.Constant(Ty(t), {0.0}), {3, 4}, {}));
  const ValueId any = b.Reduce(neg, b.Constant(Ty(DType::kPred), {0}), {1}, "stablehlo.add");
  const ValueId any_all = b.Reduce(any, b.Constant(Ty(DType::kPred), {0}), {0}, "stablehlo.or");
  const ValueId ints = b.Convert(Scaled(b, a, 16.0), DType::kS32);
  const ValueId bits =
      b.Binary("stablehlo.add", c[8],
               b.Reduce(ints, b.Constant(Ty(DType::kS32), {5}), {0}, "stablehlo.xor"));
  const ValueId y2 = b.Binary("stablehlo.add", Scaled(b, y, 0.5), Scaled(b, e, 0.25));
  const ValueId y3 = b.Select(b.Broadcast(all, {7}, {}), y2, Scaled(b, y2, -0.75));
  const ValueId s2 = b.Select(any_all, b.Binary("stablehlo.add", s, Scaled(b, yy, 0.01)), s);
  return {b.Binary("stablehlo.add", c[0], b.Constant(Ty(DType::kS32), {1})),
          y3,
          w,
          a2,
          b2,
          x2,
          o2,
          s2,
          bits};
}

TEST(CodegenLoopDotsTest, TinyDotsAndBitReductionsMatchTheInterpreters) {
  const Watchdog watchdog(120);
  for (DType t : {DType::kF32, DType::kF64}) {
    const std::vector<ir::Type> carries = Carries(t);
    ir::Module m;
    auto cond = [](OpList& b, const std::vector<ValueId>& a) {
      return std::vector<ValueId>{b.Compare("LT", a[0], b.Constant(Ty(DType::kS32), {3}))};
    };
    auto body = [&](OpList& b, const std::vector<ValueId>& a) { return Body(b, a, t); };
    AddFunction(m, "cond", carries, cond);
    AddFunction(m, "body", carries, body);
    AddFunction(m, "main", carries,
                [&](OpList& b, const std::vector<ValueId>& a) { return b.While(a, cond, body); });
    const CompiledLoop loop(std::move(m), carries, {});
    ASSERT_TRUE(loop.ok()) << loop.text;
    ASSERT_EQ(loop.native != nullptr, LoopCodeExpected());
    // The body's dots and bitwise reductions have their inline forms (all eleven dots in f32; in
    // f64 y . y sums in MatVec's lanes and stays a kernel call; three reductions: any's rows are
    // left to Direct::rows).
    int dots = 0, reductions = 0;
    for (const lower::Step& step : loop.compiled.programs[1]->steps) {
      dots += lower::SmallDotOf(step.kernel.direct) != nullptr;
      reductions += lower::BitReduceOf(step.kernel.direct) != nullptr;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
      EXPECT_EQ(dots, t == DType::kF32 ? 11 : 10);
    }
    EXPECT_EQ(reductions, 3);
    LoopStats stats;
    std::mt19937 rng(17);
    const Values captures(std::vector<ir::Type>{});
    for (int run = 0; run < 40; ++run) {
      Values init(carries);
      FillRandom(init, rng, 20, run % 2 == 1);
      const int32_t start = run % 5 == 0 ? 3 : run % 3;  // zero trips, or one to three
      std::memcpy(init.Data(0), &start, 4);
      const std::string diff = CheckLoop(loop, init, captures, stats);
      ASSERT_EQ(diff, "") << ir::DTypeName(t) << ", run " << run << "\n" << loop.text;
    }
    EXPECT_GT(stats.iterations, 40);
  }
}

}  // namespace
}  // namespace kiln::testing
