// Scatters of one window in loops (kernels/scatter_one.h, lower/drop_update.h,
// codegen/native_scatter.cc): x.at[i].set(v) with a scalar i, the form diffrax's SaveAt buffers
// take, on rows of f32, single s32 and pred elements, an f64 window with no inserted axis, and
// rows too large to emit inline (a call of the direct form), with start indices of several types
// running out of range on both sides (an update whose window does not fit is dropped, never
// clamped), and gathers of one row (clamped, negative starts wrapped or not). Carries read only by
// their scatter are updated in place, the others copied. Run four ways (loop_test_util.h) bit for
// bit, and against a reference written from the spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "lower/drop_update.h"
#include "tests/cpp/loop_test_util.h"
#include "tests/cpp/program_test_util.h"

namespace kiln::testing {
namespace {

// scatter(x, [start], update) with the replace body, start index axis 0.
ValueId ScatterOne(OpList& b, ValueId x, ValueId start, ValueId update,
                   const std::vector<int64_t>& window_dims, const std::vector<int64_t>& inserted) {
  const ValueId index = b.Reshape(start, {1});
  std::vector<ir::NamedAttr> attrs = {
      {"scatter_dims_to_operand_dims", ir::Attr::IntArray({0})},
      {"index_vector_dim", ir::Attr::Int(0)},
  };
  if (!window_dims.empty())
    attrs.push_back({"update_window_dims", ir::Attr::IntArray(window_dims)});
  if (!inserted.empty()) attrs.push_back({"inserted_window_dims", ir::Attr::IntArray(inserted)});
  ir::Op& op = b.Add("stablehlo.scatter", {x, index, update}, {b.TypeOf(x)}, std::move(attrs));
  ir::Region region;
  region.blocks.emplace_back();
  OpList r(b.module(), region.blocks.back());
  const ir::Type t = Ty(b.TypeOf(x).dtype);
  r.Arg(t);
  const ValueId replacement = r.Arg(t);
  r.Return({replacement}, "stablehlo.return");
  op.regions.push_back(std::move(region));
  return op.results[0];
}

// gather(x, [start]) of one row of a [rows, 2] x (clamped; negative starts first wrapped by the
// row count when `wrap`, as compiler/gather_indices.h marks JAX's x[i]).
ValueId GatherRow(OpList& b, ValueId x, ValueId start, bool wrap) {
  const ir::Type& t = b.TypeOf(x);
  std::vector<ir::NamedAttr> attrs = {
      {"offset_dims", ir::Attr::IntArray({0})},
      {"collapsed_slice_dims", ir::Attr::IntArray({0})},
      {"start_index_map", ir::Attr::IntArray({0})},
      {"index_vector_dim", ir::Attr::Int(0)},
      {"slice_sizes", ir::Attr::IntArray({1, t.dims[1]})},
  };
  if (wrap) attrs.push_back({"kiln.wrap_negative_indices", ir::Attr::Bool(true)});
  return b.Op("stablehlo.gather", {x, b.Reshape(start, {1})}, Ty(t.dtype, {t.dims[1]}),
              std::move(attrs));
}

const std::vector<ir::Type> kCarries = {
    Ty(DType::kS32),           // 0: the counter
    Ty(DType::kF32, {7, 2}),   // 1: rows, updated in place
    Ty(DType::kS32, {9}),      // 2: elements, also read by carry 6 (copied)
    Ty(DType::kPred, {5}),     // 3: predicates
    Ty(DType::kF64, {4, 3}),   // 4: a [1, 3] window, no inserted axis
    Ty(DType::kF32, {3, 80}),  // 5: rows of 320 bytes (the direct form called)
    Ty(DType::kS32, {9}),      // 6: the sum of carry 2 over the iterations
    Ty(DType::kF32, {2}),      // 7: carry 1's row at n - 5, clamped
    Ty(DType::kF32, {2}),      // 8: carry 1's row at n - 9, wrapped, then clamped
};
constexpr int32_t kTrips = 12;

std::vector<ValueId> Body(OpList& b, const std::vector<ValueId>& c) {
  const ValueId n = c[0];
  const ValueId start = b.Binary("stablehlo.subtract", n, b.Constant(Ty(DType::kS32), {3}));
  const ValueId nf = b.Convert(n, DType::kF32);
  // 1: a[n - 3] = n * [1.5, -0.25]
  const ValueId row = b.Binary("stablehlo.multiply", b.Broadcast(nf, {2}, {}),
                               b.Constant(Ty(DType::kF32, {2}), {1.5, -0.25}));
  const ValueId a = ScatterOne(b, c[1], start, row, {0}, {0});
  // 2: b[u32(n - 3)] = 7 n (negative starts are huge unsigned ones)
  const ValueId seven = b.Binary("stablehlo.multiply", n, b.Constant(Ty(DType::kS32), {7}));
  const ValueId e = ScatterOne(b, c[2], b.Convert(start, DType::kU32), seven, {}, {0});
  // 3: c[2n - 9] = n > 5
  const ValueId twice = b.Binary("stablehlo.subtract", b.Binary("stablehlo.add", n, n),
                                 b.Constant(Ty(DType::kS32), {9}));
  const ValueId p =
      ScatterOne(b, c[3], twice, b.Compare("GT", n, b.Constant(Ty(DType::kS32), {5})), {}, {0});
  // 4: d[s64(n - 3), :] = [[n / 2 + 1, n / 2 + 2, n / 2 + 3]]
  const ValueId half =
      b.Binary("stablehlo.multiply", b.Convert(n, DType::kF64), b.Constant(Ty(DType::kF64), {0.5}));
  const ValueId window = b.Binary("stablehlo.add", b.Broadcast(half, {1, 3}, {}),
                                  b.Constant(Ty(DType::kF64, {1, 3}), {1, 2, 3}));
  const ValueId d = ScatterOne(b, c[4], b.Convert(start, DType::kS64), window, {0, 1}, {});
  // 5: e[u8(n - 3)] = n - 0.5 (rows of 80)
  const ValueId long_row =
      b.Broadcast(b.Binary("stablehlo.subtract", nf, b.Constant(Ty(DType::kF32), {0.5})), {80}, {});
  const ValueId l = ScatterOne(b, c[5], b.Convert(start, DType::kU8), long_row, {0}, {0});
  const ValueId g = GatherRow(
      b, c[1], b.Binary("stablehlo.subtract", n, b.Constant(Ty(DType::kS32), {5})), false);
  const ValueId w =
      GatherRow(b, c[1], b.Binary("stablehlo.subtract", n, b.Constant(Ty(DType::kS32), {9})), true);
  return {b.Binary("stablehlo.add", n, b.Constant(Ty(DType::kS32), {1})),
          a,
          e,
          p,
          d,
          l,
          b.Binary("stablehlo.add", c[6], c[2]),
          g,
          w};
}

// The loop's results from `init`, from the spec: a window that does not fit is dropped.
Values Reference(const Values& init) {
  Values v(kCarries);
  for (size_t i = 0; i < kCarries.size(); ++i) std::memcpy(v.Data(i), init.Data(i), v.Bytes(i));
  auto* n = reinterpret_cast<int32_t*>(v.Data(0));
  auto* a = reinterpret_cast<float*>(v.Data(1));
  auto* e = reinterpret_cast<int32_t*>(v.Data(2));
  auto* p = reinterpret_cast<uint8_t*>(v.Data(3));
  auto* d = reinterpret_cast<double*>(v.Data(4));
  auto* l = reinterpret_cast<float*>(v.Data(5));
  auto* sum = reinterpret_cast<int32_t*>(v.Data(6));
  auto* g = reinterpret_cast<float*>(v.Data(7));
  auto* w = reinterpret_cast<float*>(v.Data(8));
  for (; *n < kTrips; ++*n) {
    const int64_t s = *n - 3;
    // The gathers read carry 1 before this iteration's scatter.
    const int64_t gi = std::clamp<int64_t>(*n - 5, 0, 6);
    int64_t wi = *n - 9;
    wi = std::clamp<int64_t>(wi < 0 ? wi + 7 : wi, 0, 6);
    for (int k = 0; k < 2; ++k) {
      g[k] = a[2 * gi + k];
      w[k] = a[2 * wi + k];
    }
    for (int k = 0; k < 9; ++k) {  // wrapping, as the loop's s32 add
      sum[k] = static_cast<int32_t>(static_cast<uint32_t>(sum[k]) + static_cast<uint32_t>(e[k]));
    }
    if (s >= 0 && s <= 6) {
      a[2 * s] = static_cast<float>(*n) * 1.5f;
      a[2 * s + 1] = static_cast<float>(*n) * -0.25f;
    }
    if (static_cast<uint32_t>(s) <= 8) e[static_cast<uint32_t>(s)] = *n * 7;
    if (const int64_t t = 2 * *n - 9; t >= 0 && t <= 4) p[t] = *n > 5 ? 1 : 0;
    if (s >= 0 && s <= 3) {
      for (int k = 0; k < 3; ++k) d[3 * s + k] = static_cast<double>(*n) * 0.5 + (k + 1);
    }
    if (const auto u = static_cast<uint8_t>(s); u <= 2) {
      for (int k = 0; k < 80; ++k) l[80 * u + k] = static_cast<float>(*n) - 0.5f;
    }
  }
  return v;
}

TEST(CodegenLoopScatterTest, OneWindowScattersMatchTheInterpretersAndTheSpec) {
  const Watchdog watchdog(60);
  ir::Module m;
  auto cond = [](OpList& b, const std::vector<ValueId>& a) {
    return std::vector<ValueId>{b.Compare("LT", a[0], b.Constant(Ty(DType::kS32), {kTrips}))};
  };
  AddFunction(m, "cond", kCarries, cond);
  AddFunction(m, "body", kCarries, Body);
  AddFunction(m, "main", kCarries,
              [&](OpList& b, const std::vector<ValueId>& a) { return b.While(a, cond, Body); });
  const CompiledLoop loop(std::move(m), kCarries, {});
  ASSERT_TRUE(loop.ok()) << loop.text;
  ASSERT_EQ(loop.native != nullptr, LoopCodeExpected());
  // Every scatter took the one-window form, and the gathers a direct form (the one that does not
  // wrap an inline dynamic_slice).
  int one_window = 0, gathers = 0, inline_gathers = 0;
  for (const lower::Step& s : loop.compiled.programs[1]->steps) {
    one_window += s.kernel.direct.fn == &lower::RunDropUpdate;
    if (s.what.find("gather") != std::string::npos) {
      gathers += s.kernel.direct.fn != nullptr;
      inline_gathers += s.kernel.direct.slice != nullptr;
    }
  }
  EXPECT_EQ(one_window, 5);
  EXPECT_EQ(gathers, 2);
  EXPECT_EQ(inline_gathers, 1);
  // Carries read only by their scatter are updated in place; those read again are not.
  EXPECT_TRUE(loop.flat_body->UpdatesInPlace(3));
  EXPECT_TRUE(loop.flat_body->UpdatesInPlace(4));
  EXPECT_TRUE(loop.flat_body->UpdatesInPlace(5));
  EXPECT_FALSE(loop.flat_body->UpdatesInPlace(1));  // the gathers read it too
  EXPECT_FALSE(loop.flat_body->UpdatesInPlace(2));  // the sum reads it too
  LoopStats stats;
  std::mt19937 rng(5);
  const Values captures(std::vector<ir::Type>{});
  for (int run = 0; run < 24; ++run) {
    Values init(kCarries);
    FillRandom(init, rng, 20, run % 2 == 1);
    const int32_t start = run % 6 == 0 ? kTrips : run % 4;  // zero trips, or 9 to 12
    std::memcpy(init.Data(0), &start, 4);
    const std::string d = CheckLoop(loop, init, captures, stats);
    ASSERT_EQ(d, "") << "run " << run << "\n" << loop.text;
    Values got(kCarries);
    ASSERT_TRUE(RunLoop(*loop.compiled.programs[0], *loop.compiled.programs[1], loop.native.get(),
                        *loop.flat_cond, *loop.flat_body,
                        loop.native != nullptr ? Mode::kNative : Mode::kFlat, init, captures, got)
                    .ok());
    const Values want = Reference(init);
    for (size_t v = 0; v < kCarries.size(); ++v) {
      EXPECT_EQ(Difference(want, got, v, false), "") << "run " << run << " carry " << v;
    }
  }
  EXPECT_GT(stats.iterations, 100);
}

}  // namespace
}  // namespace kiln::testing
