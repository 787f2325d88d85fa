// stablehlo.gather, stablehlo.scatter and stablehlo.sort against reference loops written from the
// StableHLO spec's formulas.
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

#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;
using kernels::NextIndex;

compiler::LowerFn Gather() {
  return FindLowering(&compiler::RegisterIndexingOps, "stablehlo.gather");
}
compiler::LowerFn Scatter() {
  return FindLowering(&compiler::RegisterIndexingOps, "stablehlo.scatter");
}
compiler::LowerFn Sort() { return FindLowering(&compiler::RegisterIndexingOps, "stablehlo.sort"); }

int64_t Numel(const std::vector<int64_t>& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

int64_t Flat(const std::vector<int64_t>& dims, const std::vector<int64_t>& idx) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}

bool Has(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

ir::Op MakeOp(const std::string& name, std::vector<ir::ValueId> operands,
              std::vector<ir::ValueId> results) {
  ir::Op op;
  op.name = name;
  op.operands = std::move(operands);
  op.results = std::move(results);
  return op;
}

// ---------------------------------------------------------------------------------------------
// Gather

struct GatherConfig {
  std::vector<int64_t> operand_dims, index_dims;
  std::vector<int64_t> offset_dims, collapsed, operand_batching, index_batching, start_map;
  int64_t index_vector_dim;
  std::vector<int64_t> slice_sizes;
};

std::vector<int64_t> GatherResultDims(const GatherConfig& c) {
  std::vector<int64_t> batch;
  for (size_t d = 0; d < c.index_dims.size(); ++d) {
    if (static_cast<int64_t>(d) != c.index_vector_dim) batch.push_back(c.index_dims[d]);
  }
  std::vector<int64_t> offsets;
  for (size_t d = 0; d < c.operand_dims.size(); ++d) {
    if (!Has(c.collapsed, d) && !Has(c.operand_batching, d)) offsets.push_back(c.slice_sizes[d]);
  }
  std::vector<int64_t> out(batch.size() + offsets.size());
  size_t bi = 0, oi = 0;
  for (size_t d = 0; d < out.size(); ++d)
    out[d] = Has(c.offset_dims, d) ? offsets[oi++] : batch[bi++];
  return out;
}

// result[result_index] = operand[operand_index], exactly as the spec's Semantics section says.
template <typename T>
std::vector<T> ReferenceGather(const GatherConfig& c, const std::vector<T>& operand,
                               const std::vector<int32_t>& indices) {
  std::vector<int64_t> rdims = GatherResultDims(c);
  std::vector<T> out(static_cast<size_t>(Numel(rdims)));
  if (out.empty()) return out;
  std::vector<int64_t> ri(rdims.size(), 0);
  int64_t irank = static_cast<int64_t>(c.index_dims.size());
  do {
    std::vector<int64_t> batch_dims, batch_index, offset_index;
    for (size_t d = 0; d < rdims.size(); ++d) {
      if (Has(c.offset_dims, d))
        offset_index.push_back(ri[d]);
      else
        batch_index.push_back(ri[d]);
    }
    std::vector<int64_t> start_index;
    if (c.index_vector_dim < irank) {
      for (int64_t k = 0; k < c.index_dims[c.index_vector_dim]; ++k) {
        std::vector<int64_t> ii = batch_index;
        ii.insert(ii.begin() + c.index_vector_dim, k);
        start_index.push_back(indices[Flat(c.index_dims, ii)]);
      }
    } else {
      start_index.push_back(indices[Flat(c.index_dims, batch_index)]);
    }
    size_t orank = c.operand_dims.size();
    std::vector<int64_t> full_start(orank, 0), full_batching(orank, 0), full_offset(orank, 0);
    for (size_t ds = 0; ds < c.start_map.size(); ++ds) {
      int64_t d = c.start_map[ds];
      full_start[d] = std::clamp<int64_t>(start_index[ds], 0, c.operand_dims[d] - c.slice_sizes[d]);
    }
    for (size_t i = 0; i < c.operand_batching.size(); ++i) {
      int64_t ds = c.index_batching[i];
      full_batching[c.operand_batching[i]] = batch_index[ds - (ds < c.index_vector_dim ? 0 : 1)];
    }
    for (size_t d = 0, k = 0; d < orank; ++d) {
      if (!Has(c.collapsed, d) && !Has(c.operand_batching, d)) full_offset[d] = offset_index[k++];
    }
    std::vector<int64_t> oi(orank);
    for (size_t d = 0; d < orank; ++d) oi[d] = full_start[d] + full_batching[d] + full_offset[d];
    out[Flat(rdims, ri)] = operand[Flat(c.operand_dims, oi)];
  } while (NextIndex(ri, rdims));
  return out;
}

OpBuilder BuildGather(const GatherConfig& c, DType dtype,
                      std::optional<std::vector<int64_t>> result_dims = {},
                      DType index_dtype = DType::kS32) {
  OpBuilder b("stablehlo.gather");
  b.Operand(dtype, c.operand_dims);
  b.Operand(index_dtype, c.index_dims);
  b.Result(dtype, result_dims ? *result_dims : GatherResultDims(c));
  b.Ints("offset_dims", c.offset_dims);
  b.Ints("collapsed_slice_dims", c.collapsed);
  b.Ints("operand_batching_dims", c.operand_batching);
  b.Ints("start_indices_batching_dims", c.index_batching);
  b.Ints("start_index_map", c.start_map);
  b.Int("index_vector_dim", c.index_vector_dim);
  b.Ints("slice_sizes", c.slice_sizes);
  b.Bool("indices_are_sorted", false);
  return b;
}

std::vector<int32_t> RandomIndices(size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<int32_t> v(n);
  for (int32_t& x : v) x = dist(rng);
  return v;
}

std::vector<GatherConfig> GatherConfigs() {
  return {
      // take_along_axis(x[64,10], i[64,1], axis=1), as in the MLP's loss.
      {{64, 10}, {64, 1, 1}, {}, {1}, {0}, {0}, {1}, 2, {1, 1}},
      // Embedding lookup x[idx] of rows of x[8,3].
      {{8, 3}, {5, 1}, {1}, {0}, {}, {}, {0}, 1, {1, 3}},
      // Same, implicit index vector (index_vector_dim == rank).
      {{8, 3}, {5}, {1}, {0}, {}, {}, {0}, 1, {1, 3}},
      // x[:, idx] (offset axis before the batch axis in the result).
      {{6, 5}, {3, 1}, {0}, {1}, {}, {}, {1}, 1, {6, 1}},
      // x[i, :, j] with two index components on a 3-D operand.
      {{4, 5, 6}, {3, 2}, {1}, {0, 2}, {}, {}, {0, 2}, 1, {1, 5, 1}},
      // Dynamic-slice-like windows of 2x3 that must be clamped into bounds.
      {{5, 6}, {4, 2}, {1, 2}, {}, {}, {}, {0, 1}, 1, {2, 3}},
      // 2-D index grid x[i2] with index_vector_dim in the middle.
      {{6, 5}, {2, 1, 2}, {2}, {0}, {}, {}, {0}, 1, {1, 5}},
      // take_along_axis on axis 0 of [4,6] with a [1,6] index (batching over axis 1).
      {{4, 6}, {1, 6, 1}, {}, {0}, {1}, {1}, {0}, 2, {1, 1}},
  };
}

TEST(GatherTest, ConfigsMatchTheSpecFormula) {
  for (const GatherConfig& c : GatherConfigs()) {
    SCOPED_TRACE("operand " + ::testing::PrintToString(c.operand_dims) + " indices " +
                 ::testing::PrintToString(c.index_dims));
    std::vector<float> x(static_cast<size_t>(Numel(c.operand_dims)));
    std::iota(x.begin(), x.end(), 0.0f);
    // Include negative and too-large indices: both are clamped.
    std::vector<int32_t> idx = RandomIndices(static_cast<size_t>(Numel(c.index_dims)), -3, 12, 17);
    OpBuilder b = BuildGather(c, DType::kF32);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(
        Gather(), ctx,
        {MakeArray(DType::kF32, c.operand_dims, x), MakeArray(DType::kS32, c.index_dims, idx)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ((*out)[0].dims, GatherResultDims(c));
    EXPECT_EQ(ToVector<float>((*out)[0]), ReferenceGather(c, x, idx));
  }
}

TEST(GatherTest, SpecExampleWithBatchingDims) {
  GatherConfig c{{2, 3, 4, 2}, {2, 2, 3, 2}, {3, 4}, {1}, {0}, {1}, {2, 1}, 3, {1, 1, 2, 2}};
  std::vector<int32_t> x(48);
  std::iota(x.begin(), x.end(), 1);
  std::vector<int32_t> idx = {0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 0, 9,
                              0, 0, 2, 1, 2, 2, 1, 2, 0, 1, 1, 0};
  OpBuilder b = BuildGather(c, DType::kS32);
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(
      Gather(), ctx,
      {MakeArray(DType::kS32, c.operand_dims, x), MakeArray(DType::kS32, c.index_dims, idx)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<int32_t> want = {1,  2,  3,  4,  3,  4,  5,  6,  13, 14, 15, 16, 33, 34, 35, 36,
                               35, 36, 37, 38, 41, 42, 43, 44, 1,  2,  3,  4,  13, 14, 15, 16,
                               21, 22, 23, 24, 43, 44, 45, 46, 33, 34, 35, 36, 27, 28, 29, 30};
  EXPECT_EQ(ToVector<int32_t>((*out)[0]), want);
}

// Start indices of every integer type are read as values and clamped: negative ones to 0, large
// unsigned ones (beyond int64 for u64) to the last start; one index per position (the in-place
// path's single-index loop) and two (its general loop), and the same two with the index vector
// not last (the path that reads the indices as int64 first).
template <typename I>
void CheckIndexType(DType index_dtype, std::vector<I> idx1, std::vector<I> idx2) {
  std::vector<float> x(6 * 4);
  std::iota(x.begin(), x.end(), 0.0f);
  auto as_int = [](const std::vector<I>& v) {
    std::vector<int32_t> out;
    for (I i : v) {
      out.push_back(static_cast<int32_t>(
          std::clamp<long double>(static_cast<long double>(i), -100.0L, 100.0L)));
    }
    return out;
  };
  struct Case {
    GatherConfig c;
    const std::vector<I>* idx;
  };
  const Case cases[] = {
      {{{6, 4}, {5, 1}, {1}, {0}, {}, {}, {0}, 1, {1, 4}}, &idx1},       // x[i]
      {{{6, 4}, {5, 2}, {}, {0, 1}, {}, {}, {0, 1}, 1, {1, 1}}, &idx2},  // x[i, j]
  };
  for (const Case& k : cases) {
    OpBuilder b = BuildGather(k.c, DType::kF32, {}, index_dtype);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(Gather(), ctx,
                           {MakeArray(DType::kF32, k.c.operand_dims, x),
                            MakeArray(index_dtype, k.c.index_dims, *k.idx)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<float>((*out)[0]), ReferenceGather(k.c, x, as_int(*k.idx)));
  }
  // x[i, j] with the index vector first: indices [2, 5] hold i in row 0 and j in row 1.
  GatherConfig c{{6, 4}, {2, 5}, {}, {0, 1}, {}, {}, {0, 1}, 0, {1, 1}};
  std::vector<I> t(10);
  for (size_t p = 0; p < 5; ++p) {
    t[p] = idx2[2 * p];
    t[5 + p] = idx2[2 * p + 1];
  }
  OpBuilder b = BuildGather(c, DType::kF32, {}, index_dtype);
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(
      Gather(), ctx,
      {MakeArray(DType::kF32, c.operand_dims, x), MakeArray(index_dtype, c.index_dims, t)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[0]), ReferenceGather(c, x, as_int(t)));
}

TEST(GatherTest, IndicesOfEveryIntegerTypeAreClamped) {
  CheckIndexType<int8_t>(DType::kS8, {5, -1, 2, 127, -128}, {1, 3, -2, 9, 5, -1, 0, 0, 127, -128});
  CheckIndexType<uint8_t>(DType::kU8, {5, 255, 2, 0, 6}, {1, 3, 255, 9, 5, 200, 0, 0, 6, 4});
  CheckIndexType<int64_t>(DType::kS64, {5, INT64_MIN, 2, INT64_MAX, -3},
                          {1, 3, INT64_MIN, 9, 5, INT64_MAX, 0, 0, -7, 2});
  CheckIndexType<uint64_t>(DType::kU64, {5, UINT64_MAX, 2, uint64_t{1} << 63, 1},
                           {1, 3, UINT64_MAX, 9, 5, uint64_t{1} << 63, 0, 0, 6, 2});
}

TEST(GatherTest, MovesBytesOfEveryElementSize) {
  GatherConfig c{{8, 3}, {5, 1}, {1}, {0}, {}, {}, {0}, 1, {1, 3}};
  std::vector<int32_t> idx = {7, 0, 3, 3, -1};
  {
    std::vector<uint8_t> x(24);
    std::iota(x.begin(), x.end(), 0);
    OpBuilder b = BuildGather(c, DType::kPred);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(
        Gather(), ctx,
        {MakeArray(DType::kPred, c.operand_dims, x), MakeArray(DType::kS32, c.index_dims, idx)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<uint8_t>((*out)[0]), ReferenceGather(c, x, idx));
  }
  {
    std::vector<uint16_t> x(24);
    std::iota(x.begin(), x.end(), 100);
    OpBuilder b = BuildGather(c, DType::kBF16);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(
        Gather(), ctx,
        {MakeArray(DType::kBF16, c.operand_dims, x), MakeArray(DType::kS32, c.index_dims, idx)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<uint16_t>((*out)[0]), ReferenceGather(c, x, idx));
  }
  {
    using C128 = std::array<uint64_t, 2>;  // 16-byte elements, moved as opaque bytes
    std::vector<C128> x(24);
    for (size_t i = 0; i < x.size(); ++i) x[i] = {i, 1000 + i};
    OpBuilder b = BuildGather(c, DType::kC128);
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(
        Gather(), ctx,
        {MakeArray(DType::kC128, c.operand_dims, x), MakeArray(DType::kS32, c.index_dims, idx)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<C128>((*out)[0]), ReferenceGather(c, x, idx));
  }
}

TEST(GatherTest, RejectsInvalidDimensionNumbers) {
  GatherConfig good{{8, 3}, {5, 1}, {1}, {0}, {}, {}, {0}, 1, {1, 3}};
  auto expect_invalid = [](GatherConfig c, std::vector<int64_t> result_dims) {
    OpBuilder b = BuildGather(c, DType::kF32, std::move(result_dims));
    FakeLowerContext ctx(b);
    auto k = Gather()(ctx);
    ASSERT_FALSE(k.ok());
    EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument) << k.status().ToString();
  };
  GatherConfig c = good;
  c.slice_sizes = {1, 4};  // larger than the operand
  expect_invalid(c, {5, 4});
  c = good;
  c.start_map = {2};  // not an operand axis
  expect_invalid(c, {5, 3});
  c = good;
  c.index_vector_dim = 3;
  expect_invalid(c, {5, 3});
  c = good;
  c.collapsed = {};  // ranks no longer add up
  expect_invalid(c, {5, 1, 3});
  expect_invalid(good, {5, 2});  // wrong result shape
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

// ---------------------------------------------------------------------------------------------
// Sort

// JAX's comparator for one float key (sort_f32 fixture): canonicalise -0 -> 0 and NaN -> NaN,
// then compare under TOTALORDER. `direction` LT sorts ascending, GT descending. With
// `hoisted_constants` the NaN and zero constants live outside the region, as in the fixture.
void JaxFloatComparator(OpBuilder& b, DType dtype, size_t num_operands,
                        const std::string& direction, bool hoisted_constants = false,
                        size_t key_operand = 0) {
  std::vector<DType> arg_types;
  for (size_t i = 0; i < num_operands; ++i) {
    DType t = i == key_operand ? dtype : DType::kS32;
    arg_types.push_back(t);
    arg_types.push_back(t);
  }
  b.Region(arg_types, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
    ir::ValueId nan = b.NewValue(dtype), zero = b.NewValue(dtype);
    ir::Op cnan = MakeOp("stablehlo.constant", {}, {nan});
    cnan.attrs.push_back(
        {"value", ScalarLiteral<float>(dtype, std::numeric_limits<float>::quiet_NaN())});
    ir::Op czero = MakeOp("stablehlo.constant", {}, {zero});
    czero.attrs.push_back({"value", ScalarLiteral<float>(dtype, 0.0f)});
    if (hoisted_constants) {
      b.OuterOp(cnan);
      b.OuterOp(czero);
    } else {
      block.ops.push_back(cnan);
      block.ops.push_back(czero);
    }
    auto compare = [&](const char* dir, ir::ValueId x, ir::ValueId y, const char* type) {
      ir::ValueId r = b.NewValue(DType::kPred);
      ir::Op op = MakeOp("stablehlo.compare", {x, y}, {r});
      op.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
      op.attrs.push_back({"compare_type", ir::Attr::Enum(type)});
      block.ops.push_back(op);
      return r;
    };
    auto select = [&](ir::ValueId p, ir::ValueId t, ir::ValueId f) {
      ir::ValueId r = b.NewValue(dtype);
      block.ops.push_back(MakeOp("stablehlo.select", {p, t, f}, {r}));
      return r;
    };
    auto canon = [&](ir::ValueId x) {
      ir::ValueId z = select(compare("EQ", x, zero, "FLOAT"), zero, x);
      return select(compare("NE", x, x, "FLOAT"), nan, z);
    };
    ir::ValueId a = canon(args[2 * key_operand]), c = canon(args[2 * key_operand + 1]);
    ir::ValueId r = compare(direction.c_str(), a, c, "TOTALORDER");
    block.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
  });
}

// What JAX's comparator computes, for the general path's hand-made region program.
bool JaxLess(float a, float b, bool descending) {
  auto canon = [](float x) {
    return std::isnan(x) ? std::numeric_limits<float>::quiet_NaN() : (x == 0 ? 0.0f : x);
  };
  auto key = [](float x) {
    int32_t bits;
    std::memcpy(&bits, &x, 4);
    return bits < 0 ? bits ^ 0x7fffffff : bits;
  };
  int32_t ka = key(canon(a)), kb = key(canon(b));
  return descending ? ka > kb : ka < kb;
}

std::vector<uint32_t> Bits(const std::vector<float>& v) {
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * 4);
  return out;
}

const std::vector<float> kSpecial = {3.0f, NAN,   -1.0f, 0.0f, -0.0f, INFINITY, 2.5f, -INFINITY,
                                     1.0f, -1.0f, -NAN,  0.0f, -3.5f, 0.5f,     1.0f, -0.0f};

TEST(SortTest, JaxFloatComparatorFastPathMatchesRegionSemantics) {
  for (auto [dir, hoisted] :
       {std::pair{"LT", false}, std::pair{"GT", false}, std::pair{"LT", true}}) {
    SCOPED_TRACE(std::string(dir) + (hoisted ? " with captured constants" : ""));
    bool descending = std::string(dir) == "GT";
    auto build = [&](OpBuilder& b) {
      b.Operand(DType::kF32, {16});
      b.Result(DType::kF32, {16});
      b.Int("dimension", 0);
      b.Bool("is_stable", true);
      JaxFloatComparator(b, DType::kF32, 1, dir, hoisted);
    };
    OpBuilder fast_b("stablehlo.sort");
    build(fast_b);
    FakeLowerContext fast_ctx(fast_b);
    auto fast = LowerAndRun(Sort(), fast_ctx, {MakeArray(DType::kF32, {16}, kSpecial)});
    ASSERT_TRUE(fast.ok()) << fast.status().ToString();
    EXPECT_EQ(fast_ctx.compile_region_calls, 0) << "expected the JAX comparator to be recognised";

    // Expected: std::stable_sort with the same predicate (it is a strict weak order).
    std::vector<float> want = kSpecial;
    std::stable_sort(want.begin(), want.end(),
                     [&](float a, float b) { return JaxLess(a, b, descending); });
    EXPECT_EQ(Bits(ToVector<float>((*fast)[0])), Bits(want));

    // The general path (the region run per comparison) gives the same bits.
    OpBuilder gen_b("stablehlo.sort");
    build(gen_b);
    std::vector<ir::Op>& ops = gen_b.op().regions[0].blocks[0].ops;
    ops[ops.size() - 2].name = "test.compare";  // the final comparison, unrecognisable
    FakeLowerContext gen_ctx(gen_b);
    gen_ctx.region_programs = {MakeProgram(
        {DType::kF32, DType::kF32}, {DType::kPred},
        [descending](std::span<const Array> in, std::span<Array> out) {
          out[0] = Scalar<uint8_t>(DType::kPred, JaxLess(ScalarValue<float>(in[0]),
                                                         ScalarValue<float>(in[1]), descending));
          return Status::Ok();
        })};
    auto general = LowerAndRun(Sort(), gen_ctx, {MakeArray(DType::kF32, {16}, kSpecial)});
    ASSERT_TRUE(general.ok()) << general.status().ToString();
    EXPECT_EQ(gen_ctx.compile_region_calls, 1);
    EXPECT_EQ(Bits(ToVector<float>((*general)[0])), Bits(want));
  }
}

TEST(SortTest, ArgsortCarriesPayloadStably) {
  // lax.sort((x, iota), num_keys=1): the comparator reads only the keys; ties keep iota order.
  std::vector<float> keys = {2, 1, 2, NAN, 1, -0.0f, 0.0f, 2};
  std::vector<int32_t> iota(8);
  std::iota(iota.begin(), iota.end(), 0);
  OpBuilder b("stablehlo.sort");
  b.Operand(DType::kF32, {8});
  b.Operand(DType::kS32, {8});
  b.Result(DType::kF32, {8});
  b.Result(DType::kS32, {8});
  b.Int("dimension", 0);
  b.Bool("is_stable", true);
  JaxFloatComparator(b, DType::kF32, 2, "LT");
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(Sort(), ctx,
                         {MakeArray(DType::kF32, {8}, keys), MakeArray(DType::kS32, {8}, iota)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ctx.compile_region_calls, 0);
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), (std::vector<int32_t>{5, 6, 1, 4, 0, 2, 7, 3}));

  // The same with the key as the second operand: not the single-key fast path, but the
  // comparator still only compares and selects, so the ScalarEvaluator runs it.
  OpBuilder b2("stablehlo.sort");
  b2.Operand(DType::kS32, {8});
  b2.Operand(DType::kF32, {8});
  b2.Result(DType::kS32, {8});
  b2.Result(DType::kF32, {8});
  b2.Int("dimension", 0);
  b2.Bool("is_stable", true);
  JaxFloatComparator(b2, DType::kF32, 2, "LT", /*hoisted_constants=*/true, /*key_operand=*/1);
  FakeLowerContext ctx2(b2);
  out = LowerAndRun(Sort(), ctx2,
                    {MakeArray(DType::kS32, {8}, iota), MakeArray(DType::kF32, {8}, keys)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ctx2.compile_region_calls, 0);
  EXPECT_EQ(ToVector<int32_t>((*out)[0]), (std::vector<int32_t>{5, 6, 1, 4, 0, 2, 7, 3}));
}

// Region `compare <dir>(%a, %b), <type>` over the first operand's pair.
void SimpleComparator(OpBuilder& b, const std::vector<DType>& operand_types, const char* dir,
                      const char* type, bool swapped = false) {
  std::vector<DType> arg_types;
  for (DType t : operand_types) {
    arg_types.push_back(t);
    arg_types.push_back(t);
  }
  b.Region(arg_types, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
    ir::ValueId r = b.NewValue(DType::kPred);
    ir::Op cmp =
        MakeOp("stablehlo.compare",
               swapped ? std::vector{args[1], args[0]} : std::vector{args[0], args[1]}, {r});
    cmp.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
    if (type != nullptr) cmp.attrs.push_back({"compare_type", ir::Attr::Enum(type)});
    block.ops.push_back(cmp);
    block.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
  });
}

TEST(SortTest, IntegerKeysAlongEachAxis) {
  const std::vector<int64_t> dims = {3, 4, 5};
  std::vector<int32_t> x = RandomIndices(60, -5, 5, 9);
  for (int64_t dim : {0, 1, 2, -1}) {
    for (bool swapped : {false, true}) {
      SCOPED_TRACE("dimension " + std::to_string(dim) + (swapped ? " swapped" : ""));
      OpBuilder b("stablehlo.sort");
      b.Operand(DType::kS32, dims);
      b.Result(DType::kS32, dims);
      b.Int("dimension", dim);
      SimpleComparator(b, {DType::kS32}, "LT", "SIGNED", swapped);
      FakeLowerContext ctx(b);
      auto out = LowerAndRun(Sort(), ctx, {MakeArray(DType::kS32, dims, x)});
      ASSERT_TRUE(out.ok()) << out.status().ToString();
      EXPECT_EQ(ctx.compile_region_calls, 0);
      // Reference: sort each 1-D slice along `d` (descending when the comparator's arguments are
      // swapped: compare LT(b, a) means a > b).
      int64_t d = dim < 0 ? dim + 3 : dim;
      std::vector<int32_t> want = x;
      std::vector<int64_t> idx(3, 0);
      std::vector<int64_t> outer_dims = dims;
      outer_dims[d] = 1;
      do {
        std::vector<int32_t> slice;
        for (int64_t k = 0; k < dims[d]; ++k) {
          std::vector<int64_t> i = idx;
          i[d] = k;
          slice.push_back(x[Flat(dims, i)]);
        }
        if (swapped)
          std::stable_sort(slice.begin(), slice.end(), std::greater<>());
        else
          std::stable_sort(slice.begin(), slice.end());
        for (int64_t k = 0; k < dims[d]; ++k) {
          std::vector<int64_t> i = idx;
          i[d] = k;
          want[Flat(dims, i)] = slice[k];
        }
      } while (NextIndex(idx, outer_dims));
      EXPECT_EQ(ToVector<int32_t>((*out)[0]), want);
    }
  }
}

TEST(SortTest, UnsignedAndPredKeys) {
  {
    OpBuilder b("stablehlo.sort");
    b.Operand(DType::kU32, {5});
    b.Result(DType::kU32, {5});
    b.Int("dimension", 0);
    SimpleComparator(b, {DType::kU32}, "LT", "UNSIGNED");
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(
        Sort(), ctx, {MakeArray<uint32_t>(DType::kU32, {5}, {3, 0xFFFFFFFFu, 0, 0x80000000u, 7})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<uint32_t>((*out)[0]),
              (std::vector<uint32_t>{0, 3, 7, 0x80000000u, 0xFFFFFFFFu}));
  }
  {
    OpBuilder b("stablehlo.sort");
    b.Operand(DType::kPred, {6});
    b.Result(DType::kPred, {6});
    b.Int("dimension", 0);
    SimpleComparator(b, {DType::kPred}, "GT", nullptr);
    FakeLowerContext ctx(b);
    auto out =
        LowerAndRun(Sort(), ctx, {MakeArray<uint8_t>(DType::kPred, {6}, {0, 1, 0, 1, 1, 0})});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ctx.compile_region_calls, 0);
    EXPECT_EQ(ToVector<uint8_t>((*out)[0]), (std::vector<uint8_t>{1, 1, 1, 0, 0, 0}));
  }
}

TEST(SortTest, TwoKeyLexsortRunsTheRegion) {
  std::vector<int32_t> k1 = {2, 1, 2, 1, 0, 2}, k2 = {5, 3, 1, 3, 9, 1};
  std::vector<float> v = {0, 1, 2, 3, 4, 5};
  OpBuilder b("stablehlo.sort");
  b.Operand(DType::kS32, {6});
  b.Operand(DType::kS32, {6});
  b.Operand(DType::kF32, {6});
  b.Result(DType::kS32, {6});
  b.Result(DType::kS32, {6});
  b.Result(DType::kF32, {6});
  b.Int("dimension", 0);
  b.Bool("is_stable", true);
  b.Region({DType::kS32, DType::kS32, DType::kS32, DType::kS32, DType::kF32, DType::kF32},
           [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
             ir::ValueId r = b.NewValue(DType::kPred);
             block.ops.push_back(
                 MakeOp("test.lexicographic", {args[0], args[1], args[2], args[3]}, {r}));
             block.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
           });
  FakeLowerContext ctx(b);
  ctx.region_programs = {
      MakeProgram({DType::kS32, DType::kS32, DType::kS32, DType::kS32, DType::kF32, DType::kF32},
                  {DType::kPred}, [](std::span<const Array> in, std::span<Array> out) {
                    int32_t a1 = ScalarValue<int32_t>(in[0]), b1 = ScalarValue<int32_t>(in[1]);
                    int32_t a2 = ScalarValue<int32_t>(in[2]), b2 = ScalarValue<int32_t>(in[3]);
                    out[0] = Scalar<uint8_t>(DType::kPred, a1 < b1 || (a1 == b1 && a2 < b2));
                    return Status::Ok();
                  })};
  auto out = LowerAndRun(Sort(), ctx,
                         {MakeArray(DType::kS32, {6}, k1), MakeArray(DType::kS32, {6}, k2),
                          MakeArray(DType::kF32, {6}, v)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ToVector<float>((*out)[2]), (std::vector<float>{4, 1, 3, 2, 5, 0}));
  EXPECT_EQ(ToVector<int32_t>((*out)[0]), (std::vector<int32_t>{0, 1, 1, 2, 2, 2}));
}

TEST(SortTest, JaxTwoKeyComparatorIsEvaluatedDirectly) {
  // lax.sort((k1, k2, v), num_keys=2): or(lt(k1), and(eq(k1), lt(k2))), as JAX emits it.
  std::vector<int32_t> k1 = {2, 1, 2, 1, 0, 2}, k2 = {5, 3, 1, 3, 9, 1};
  std::vector<float> v = {0, 1, 2, 3, 4, 5};
  OpBuilder b("stablehlo.sort");
  b.Operand(DType::kS32, {6});
  b.Operand(DType::kS32, {6});
  b.Operand(DType::kF32, {6});
  b.Result(DType::kS32, {6});
  b.Result(DType::kS32, {6});
  b.Result(DType::kF32, {6});
  b.Int("dimension", 0);
  b.Bool("is_stable", true);
  b.Region({DType::kS32, DType::kS32, DType::kS32, DType::kS32, DType::kF32, DType::kF32},
           [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
             auto cmp = [&](const char* dir, ir::ValueId x, ir::ValueId y) {
               ir::ValueId r = b.NewValue(DType::kPred);
               ir::Op op = MakeOp("stablehlo.compare", {x, y}, {r});
               op.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
               op.attrs.push_back({"compare_type", ir::Attr::Enum("SIGNED")});
               block.ops.push_back(op);
               return r;
             };
             auto logic = [&](const char* name, ir::ValueId x, ir::ValueId y) {
               ir::ValueId r = b.NewValue(DType::kPred);
               block.ops.push_back(MakeOp(name, {x, y}, {r}));
               return r;
             };
             ir::ValueId lt2 = cmp("LT", args[2], args[3]);
             ir::ValueId lt1 = cmp("LT", args[0], args[1]);
             ir::ValueId eq1 = cmp("EQ", args[0], args[1]);
             ir::ValueId r = logic("stablehlo.or", lt1, logic("stablehlo.and", eq1, lt2));
             block.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
           });
  FakeLowerContext ctx(b);
  auto out = LowerAndRun(Sort(), ctx,
                         {MakeArray(DType::kS32, {6}, k1), MakeArray(DType::kS32, {6}, k2),
                          MakeArray(DType::kF32, {6}, v)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(ctx.compile_region_calls, 0) << "expected the ScalarEvaluator";
  EXPECT_EQ(ToVector<float>((*out)[2]), (std::vector<float>{4, 1, 3, 2, 5, 0}));
  EXPECT_EQ(ToVector<int32_t>((*out)[1]), (std::vector<int32_t>{9, 3, 3, 1, 1, 5}));
}

TEST(SortTest, InconsistentComparatorStaysInBounds) {
  // A comparator answering at random is not a strict weak order; the sort must still terminate
  // with a permutation of the input.
  std::vector<int32_t> x(200);
  std::iota(x.begin(), x.end(), 0);
  OpBuilder b("stablehlo.sort");
  b.Operand(DType::kS32, {200});
  b.Result(DType::kS32, {200});
  b.Int("dimension", 0);
  b.Region({DType::kS32, DType::kS32}, [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
    ir::ValueId r = b.NewValue(DType::kPred);
    block.ops.push_back(MakeOp("test.random", {args[0], args[1]}, {r}));
    block.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
  });
  FakeLowerContext ctx(b);
  auto rng = std::make_shared<std::mt19937>(1);
  ctx.region_programs = {MakeProgram({DType::kS32, DType::kS32}, {DType::kPred},
                                     [rng](std::span<const Array>, std::span<Array> out) {
                                       out[0] = Scalar<uint8_t>(DType::kPred, (*rng)() & 1);
                                       return Status::Ok();
                                     })};
  auto out = LowerAndRun(Sort(), ctx, {MakeArray(DType::kS32, {200}, x)});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::vector<int32_t> got = ToVector<int32_t>((*out)[0]);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, x);
}

TEST(SortTest, RejectsBadDimension) {
  OpBuilder b("stablehlo.sort");
  b.Operand(DType::kS32, {4});
  b.Result(DType::kS32, {4});
  b.Int("dimension", 1);
  SimpleComparator(b, {DType::kS32}, "LT", "SIGNED");
  FakeLowerContext ctx(b);
  auto k = Sort()(ctx);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::testing
