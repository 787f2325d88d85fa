// stablehlo.scatter against a reference loop written from the StableHLO spec's formula.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "indexing_test_util.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;
using kernels::NextIndex;

lower::LowerFn Scatter() {
  return FindLowering(&kernels::RegisterIndexingOps, "stablehlo.scatter");
}

// ---------------------------------------------------------------------------------------------
// Scatter

struct ScatterConfig {
  std::vector<int64_t> operand_dims, index_dims, update_dims;
  std::vector<int64_t> window_dims, inserted, input_batching, index_batching, start_map;
  int64_t index_vector_dim;
};

// Applies `combine` per spec, skipping every update whose whole window is not inside the operand
// (XLA's behaviour, which JAX's mode="drop" relies on).
template <typename T, typename Combine>
std::vector<T> ReferenceScatter(const ScatterConfig& c, std::vector<T> operand,
                                const std::vector<int32_t>& indices, const std::vector<T>& updates,
                                Combine combine) {
  size_t orank = c.operand_dims.size();
  int64_t irank = static_cast<int64_t>(c.index_dims.size());
  std::vector<int64_t> window_operand_axes;
  for (size_t d = 0; d < orank; ++d) {
    if (!Has(c.inserted, d) && !Has(c.input_batching, d)) window_operand_axes.push_back(d);
  }
  std::vector<int64_t> extent(orank, 1);
  for (size_t k = 0; k < c.window_dims.size(); ++k)
    extent[window_operand_axes[k]] = c.update_dims[c.window_dims[k]];
  std::vector<int64_t> ui(c.update_dims.size(), 0);
  if (Numel(c.update_dims) == 0) return operand;
  do {
    std::vector<int64_t> scatter_index, window_index;
    for (size_t d = 0; d < ui.size(); ++d) {
      if (Has(c.window_dims, d))
        window_index.push_back(ui[d]);
      else
        scatter_index.push_back(ui[d]);
    }
    std::vector<int64_t> start_index;
    if (c.index_vector_dim < irank) {
      for (int64_t k = 0; k < c.index_dims[c.index_vector_dim]; ++k) {
        std::vector<int64_t> ii = scatter_index;
        ii.insert(ii.begin() + c.index_vector_dim, k);
        start_index.push_back(indices[Flat(c.index_dims, ii)]);
      }
    } else {
      start_index.push_back(indices[Flat(c.index_dims, scatter_index)]);
    }
    std::vector<int64_t> full_start(orank, 0), full_batching(orank, 0), full_window(orank, 0);
    for (size_t ds = 0; ds < c.start_map.size(); ++ds)
      full_start[c.start_map[ds]] = start_index[ds];
    for (size_t i = 0; i < c.input_batching.size(); ++i) {
      int64_t ds = c.index_batching[i];
      full_batching[c.input_batching[i]] = scatter_index[ds - (ds < c.index_vector_dim ? 0 : 1)];
    }
    for (size_t k = 0; k < window_operand_axes.size(); ++k)
      full_window[window_operand_axes[k]] = window_index[k];
    bool fits = true;
    std::vector<int64_t> ri(orank);
    for (size_t d = 0; d < orank; ++d) {
      int64_t start = full_start[d] + full_batching[d];
      if (start < 0 || start + extent[d] > c.operand_dims[d]) fits = false;
      ri[d] = start + full_window[d];
    }
    if (!fits) continue;
    T& target = operand[Flat(c.operand_dims, ri)];
    target = combine(target, updates[Flat(c.update_dims, ui)]);
  } while (NextIndex(ui, c.update_dims));
  return operand;
}

OpBuilder BuildScatter(const ScatterConfig& c, DType dtype) {
  OpBuilder b("stablehlo.scatter");
  b.Operand(dtype, c.operand_dims);
  b.Operand(DType::kS32, c.index_dims);
  b.Operand(dtype, c.update_dims);
  b.Result(dtype, c.operand_dims);
  b.Ints("update_window_dims", c.window_dims);
  b.Ints("inserted_window_dims", c.inserted);
  b.Ints("input_batching_dims", c.input_batching);
  b.Ints("scatter_indices_batching_dims", c.index_batching);
  b.Ints("scatter_dims_to_operand_dims", c.start_map);
  b.Int("index_vector_dim", c.index_vector_dim);
  b.Bool("indices_are_sorted", false);
  b.Bool("unique_indices", false);
  return b;
}

std::vector<ScatterConfig> ScatterConfigs() {
  return {
      // x.at[idx].add(u) over rows of x[8,3] (duplicates combine).
      {{8, 3}, {6, 1}, {6, 3}, {1}, {0}, {}, {}, {0}, 1},
      // The MLP's take_along_axis gradient: batching over axis 0.
      {{64, 10}, {64, 1, 1}, {64, 1}, {}, {1}, {0}, {0}, {1}, 2},
      // x.at[i, j] with two index components, scalar updates.
      {{4, 5, 3}, {3, 2}, {3, 3}, {1}, {0, 1}, {}, {}, {0, 1}, 1},
      // Windows of 2 rows: some overflow the operand and must be skipped whole.
      {{5, 3}, {4, 1}, {4, 2, 3}, {1, 2}, {}, {}, {}, {0}, 1},
      // 1-D with implicit index vector.
      {{5}, {7}, {7}, {}, {0}, {}, {}, {0}, 1},
  };
}

TEST(ScatterTest, ReducersMatchTheReference) {
  struct Op {
    const char* name;
    float (*fn)(float, float);
  };
  const Op ops[] = {
      {"stablehlo.add", [](float a, float b) { return a + b; }},
      {"stablehlo.multiply", [](float a, float b) { return a * b; }},
      {"stablehlo.maximum", [](float a, float b) { return std::max(a, b); }},
      {"stablehlo.minimum", [](float a, float b) { return std::min(a, b); }},
  };
  for (const ScatterConfig& c : ScatterConfigs()) {
    std::vector<float> x(static_cast<size_t>(Numel(c.operand_dims)));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 7) - 3.0f;
    std::vector<float> u(static_cast<size_t>(Numel(c.update_dims)));
    for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<float>(i % 5) * 0.5f - 1.0f;
    // Indices with duplicates, negatives and values past the end.
    std::vector<int32_t> idx = RandomIndices(static_cast<size_t>(Numel(c.index_dims)), -2, 9, 5);
    if (c.operand_dims.size() == 2 && c.operand_dims[0] == 64) {
      idx = RandomIndices(idx.size(), 0, 9, 5);
    }
    for (const Op& op : ops) {
      SCOPED_TRACE(std::string(op.name) + " operand " + ::testing::PrintToString(c.operand_dims));
      OpBuilder b = BuildScatter(c, DType::kF32);
      b.BinaryRegion(DType::kF32, op.name);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(
          Scatter(), ctx,
          {MakeArray(DType::kF32, c.operand_dims, x), MakeArray(DType::kS32, c.index_dims, idx),
           MakeArray(DType::kF32, c.update_dims, u)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(ctx.compile_region_calls, 0);
      EXPECT_EQ(ToVector<float>((*out)[0]), ReferenceScatter(c, x, idx, u, op.fn));
    }
    {
      SCOPED_TRACE("replace");
      OpBuilder b = BuildScatter(c, DType::kS32);
      b.ReplaceRegion(DType::kS32);
      std::vector<int32_t> xi(x.begin(), x.end()), ui(u.size());
      std::iota(ui.begin(), ui.end(), 100);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(
          Scatter(), ctx,
          {MakeArray(DType::kS32, c.operand_dims, xi), MakeArray(DType::kS32, c.index_dims, idx),
           MakeArray(DType::kS32, c.update_dims, ui)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      std::vector<int32_t> want =
          ReferenceScatter(c, xi, idx, ui, [](int32_t, int32_t b) { return b; });
      EXPECT_EQ(ToVector<int32_t>((*out)[0]), want);
    }
  }
}

TEST(ScatterTest, AddWithDuplicateIndicesAndDroppedOutOfBounds) {
  // x.at[[1, 9, -9, 4, 5, 1]].add(10): 9, -9 and 5 are dropped, 1 is hit twice.
  ScatterConfig c{{5}, {6, 1}, {6}, {}, {0}, {}, {}, {0}, 1};
  OpBuilder b = BuildScatter(c, DType::kF32);
  b.BinaryRegion(DType::kF32, "stablehlo.add");
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(Scatter(), ctx,
                         {MakeArray<float>(DType::kF32, {5}, {0, 1, 2, 3, 4}),
                          MakeArray<int32_t>(DType::kS32, {6, 1}, {1, 9, -9, 4, 5, 1}),
                          MakeArray<float>(DType::kF32, {6}, {10, 10, 10, 10, 10, 10})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{0, 21, 2, 3, 14}));
}

TEST(ScatterTest, LongIntegerBincountMatchesTheReference) {
  // jnp.bincount's scatter, long enough to split over private copies (kernels/scatter_row.h):
  // indices in [-8, 264) into 256 bins, out-of-range ones dropped, wrapping int32 sums.
  const int64_t n = 300000, bins = 256;
  ScatterConfig c{{bins}, {n, 1}, {n}, {}, {0}, {}, {}, {0}, 1};
  OpBuilder b = BuildScatter(c, DType::kS32);
  b.BinaryRegion(DType::kS32, "stablehlo.add");
  FakeLowerContext ctx(b);
  std::mt19937 rng(3);
  std::uniform_int_distribution<int32_t> dist(-8, static_cast<int32_t>(bins) + 7);
  std::vector<int32_t> idx(n), upd(n), operand(bins, 1);
  for (int64_t j = 0; j < n; ++j) {
    idx[j] = dist(rng);
    upd[j] = static_cast<int32_t>(rng());
  }
  std::vector<int32_t> expect =
      ReferenceScatter<int32_t>(c, operand, idx, upd, [](int32_t a, int32_t u) {
        return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(u));
      });
  auto out = LowerAndRun(
      Scatter(), ctx,
      {MakeArray<int32_t>(DType::kS32, {bins}, operand),
       MakeArray<int32_t>(DType::kS32, {n, 1}, idx), MakeArray<int32_t>(DType::kS32, {n}, upd)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<int32_t>((*out)[0]), expect);
}

TEST(ScatterTest, VariadicGeneralPathRunsTheRegion) {
  // Two inputs updated together: (a, b) <- (a + u, max(b, v)), via a hand-written region program.
  ScatterConfig c{{4, 2}, {3, 1}, {3, 2}, {1}, {0}, {}, {}, {0}, 1};
  OpBuilder b("stablehlo.scatter");
  b.Operand(DType::kF32, c.operand_dims);
  b.Operand(DType::kS32, c.operand_dims);
  b.Operand(DType::kS32, c.index_dims);
  b.Operand(DType::kF32, c.update_dims);
  b.Operand(DType::kS32, c.update_dims);
  b.Result(DType::kF32, c.operand_dims);
  b.Result(DType::kS32, c.operand_dims);
  b.Ints("update_window_dims", c.window_dims);
  b.Ints("inserted_window_dims", c.inserted);
  b.Ints("scatter_dims_to_operand_dims", c.start_map);
  b.Int("index_vector_dim", c.index_vector_dim);
  b.Region(
      {DType::kF32, DType::kS32, DType::kF32, DType::kS32},
      [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
        ir::ValueId f = b.NewValue(DType::kF32), i = b.NewValue(DType::kS32);
        block.ops.push_back(MakeOp("test.combine", {args[0], args[1], args[2], args[3]}, {f, i}));
        block.ops.push_back(MakeOp("stablehlo.return", {f, i}, {}));
      });
  FakeLowerContext ctx(b);
  ctx.region_programs = {MakeProgram(
      {DType::kF32, DType::kS32, DType::kF32, DType::kS32}, {DType::kF32, DType::kS32},
      [](std::span<const Array> in, std::span<Array> out) -> Status {
        out[0] = Scalar(DType::kF32, ScalarValue<float>(in[0]) + ScalarValue<float>(in[2]));
        out[1] =
            Scalar(DType::kS32, std::max(ScalarValue<int32_t>(in[1]), ScalarValue<int32_t>(in[3])));
        return Status::Ok();
      })};
  auto out = LowerAndRun(Scatter(), ctx,
                         {MakeArray<float>(DType::kF32, {4, 2}, {0, 0, 0, 0, 0, 0, 0, 0}),
                          MakeArray<int32_t>(DType::kS32, {4, 2}, {5, 5, 5, 5, 5, 5, 5, 5}),
                          MakeArray<int32_t>(DType::kS32, {3, 1}, {2, 0, 2}),
                          MakeArray<float>(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6}),
                          MakeArray<int32_t>(DType::kS32, {3, 2}, {9, 1, 2, 7, 3, 8})});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), (std::vector<float>{3, 4, 0, 0, 6, 8, 0, 0}));
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), (std::vector<int32_t>{5, 7, 5, 5, 9, 8, 5, 5}));
}

TEST(ScatterTest, RejectsMismatchedUpdates) {
  ScatterConfig c{{8, 3}, {6, 1}, {6, 4}, {1}, {0}, {}, {}, {0}, 1};  // window 4 > 3 columns
  OpBuilder b = BuildScatter(c, DType::kF32);
  b.BinaryRegion(DType::kF32, "stablehlo.add");
  FakeLowerContext ctx(b);
  auto k = Scatter()(ctx);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::testing
