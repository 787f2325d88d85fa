// stablehlo.gather against a reference loop written from the StableHLO spec's formula.
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

lower::LowerFn Gather() { return FindLowering(&kernels::RegisterIndexingOps, "stablehlo.gather"); }

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

// Gathers of one element per index (take_along_axis on every axis, x[i] of a vector): the element
// gather (kernels/gather_element.cc), its vector loop (4-byte elements, int32 indices) and scalar
// one, against the spec's formula on random shapes (rows not a multiple of 8) and indices (out of
// range both ways, the int32 extremes); and its index map (MapInfo::absolute) on random ranges.
template <typename T>
void CheckElementGathers(DType dtype, uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int trial = 0; trial < 40; ++trial) {
    const int64_t a = pick(1, 5), b = pick(1, 37), k = pick(1, 37), c = pick(1, 4);
    GatherConfig cfg;
    switch (trial % 4) {
      case 0:  // take_along_axis(x[a, b], i[a, k], axis=1)
        cfg = {{a, b}, {a, k, 1}, {}, {1}, {0}, {0}, {1}, 2, {1, 1}};
        break;
      case 1:  // take_along_axis(x[b, a], i[k, a], axis=0)
        cfg = {{b, a}, {k, a, 1}, {}, {0}, {1}, {1}, {0}, 2, {1, 1}};
        break;
      case 2:  // take_along_axis(x[a, b, c], i[a, k, c], axis=1)
        cfg = {{a, b, c}, {a, k, c, 1}, {}, {1}, {0, 2}, {0, 2}, {1}, 3, {1, 1, 1}};
        break;
      default:  // x[i] of a vector
        cfg = {{b}, {k * a, 1}, {}, {0}, {}, {}, {0}, 1, {1}};
        break;
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + " operand " +
                 ::testing::PrintToString(cfg.operand_dims) + " indices " +
                 ::testing::PrintToString(cfg.index_dims));
    std::vector<T> x(static_cast<size_t>(Numel(cfg.operand_dims)));
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(i * 7 + 3);
    const int axis_size = static_cast<int>(cfg.operand_dims[cfg.start_map[0]]);
    std::vector<int32_t> idx(static_cast<size_t>(Numel(cfg.index_dims)));
    for (int32_t& v : idx) {
      const int r = pick(0, 20);
      v = r == 0 ? INT32_MIN : r == 1 ? INT32_MAX : pick(-3, axis_size + 3);
    }
    OpBuilder builder = BuildGather(cfg, dtype);
    FakeLowerContext ctx(builder);
    const std::vector<T> want = ReferenceGather(cfg, x, idx);
    auto out = LowerAndRun(
        Gather(), ctx,
        {MakeArray(dtype, cfg.operand_dims, x), MakeArray(DType::kS32, cfg.index_dims, idx)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(ToVector<T>((*out)[0]), want);
    // The index map: any range of the result, into the start of `got`.
    FakeLowerContext ctx2(builder);
    auto kernel = Gather()(ctx2);
    ASSERT_TRUE(kernel.ok()) << kernel.status().ToString();
    ASSERT_NE(kernel->map, nullptr);
    ASSERT_TRUE(kernel->map->absolute);
    const int64_t n = static_cast<int64_t>(want.size());
    const int64_t begin = pick(0, static_cast<int>(n - 1)),
                  end = pick(static_cast<int>(begin) + 1, static_cast<int>(n));
    std::vector<T> got(static_cast<size_t>(end - begin));
    const void* in[3] = {x.data(), idx.data(), nullptr};
    kernel->map->range(in, got.data(), begin, end, kernel->map->state.get());
    EXPECT_EQ(got, std::vector<T>(want.begin() + begin, want.begin() + end));
  }
}

TEST(GatherTest, ElementGathersMatchTheSpecFormula) {
  CheckElementGathers<float>(DType::kF32, 1);
  CheckElementGathers<int32_t>(DType::kS32, 2);
  CheckElementGathers<uint16_t>(DType::kBF16, 3);
  CheckElementGathers<double>(DType::kF64, 4);
  CheckElementGathers<uint8_t>(DType::kU8, 5);
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

}  // namespace
}  // namespace kiln::testing
