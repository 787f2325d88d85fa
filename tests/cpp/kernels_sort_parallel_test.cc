// stablehlo.sort split over threads (kernels/sort_parallel.h, kernels/sort_radix.cc): the merge
// sort split into 1-4 parts gives the serial permutation bit for bit under any predicate (IEEE `<`
// with NaNs included), the radix sort equals std::stable_sort for every part count, and the kernel
// on long slices (split over the pool) matches a serial reference with NaNs, -0/+0, many ties and
// a payload operand, under TOTALORDER (radix) and FLOAT (merge sort: NaN has no order).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "indexing_test_util.h"
#include "kernels/families.h"
#include "kernels/lowering.h"
#include "kernels/sort_parallel.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;
using kernels::sorting::KeyedIndex;
using kernels::sorting::RadixSortByKey;
using kernels::sorting::RadixSortPacked;
using kernels::sorting::StableSortIndices;
using kiln::UninitVector;

lower::LowerFn Sort() { return FindLowering(&kernels::RegisterIndexingOps, "stablehlo.sort"); }

const std::vector<int64_t> kLengths = {1, 2, 15, 16, 17, 100, 1000, 4097, 40000, 65537};

// Floats with many ties, NaNs of both signs, -0 and +0, infinities.
std::vector<float> TieHeavyFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  const float special[] = {std::numeric_limits<float>::quiet_NaN(),
                           -std::numeric_limits<float>::quiet_NaN(),
                           0.0f,
                           -0.0f,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity()};
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) {
    uint32_t r = rng() % 64;
    x = r < 6 ? special[r] : static_cast<float>(static_cast<int>(rng() % 41) - 20) * 0.5f;
  }
  return v;
}

std::vector<int64_t> Iota(int64_t n) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  return p;
}

TEST(SortParallelTest, MergeSortInPartsIsTheSerialPermutationEvenWithNaNs) {
  for (int64_t n : kLengths) {
    std::vector<float> key = TieHeavyFloats(n, static_cast<uint32_t>(n));
    // IEEE `<`: NaN is unordered, so the result depends on the exact merges performed.
    auto less = [&key](int64_t x, int64_t y) { return key[x] < key[y]; };
    std::vector<int64_t> serial = Iota(n), scratch;
    std::vector<decltype(less)> one(1, less);
    StableSortIndices(serial.data(), n, scratch, one);
    for (int64_t parts = 2; parts <= 4; ++parts) {
      SCOPED_TRACE("n " + std::to_string(n) + " parts " + std::to_string(parts));
      std::vector<int64_t> perm = Iota(n);
      std::vector<decltype(less)> many(static_cast<size_t>(parts), less);
      StableSortIndices(perm.data(), n, scratch, many);
      EXPECT_EQ(perm, serial);
    }
    // Without NaNs `<` is a strict weak order: the serial sort is std::stable_sort's answer.
    for (float& x : key)
      if (std::isnan(x)) x = 1.5f;
    std::vector<int64_t> want = Iota(n);
    std::stable_sort(want.begin(), want.end(), less);
    for (int64_t parts = 1; parts <= 4; ++parts) {
      std::vector<int64_t> perm = Iota(n);
      std::vector<decltype(less)> many(static_cast<size_t>(parts), less);
      StableSortIndices(perm.data(), n, scratch, many);
      EXPECT_EQ(perm, want) << "n " << n << " parts " << parts;
    }
  }
}

TEST(SortParallelTest, RadixSortIsStableForEveryPartCount) {
  std::mt19937_64 rng(7);
  for (int64_t n : kLengths) {
    for (int spread : {0, 3, 16, 40, 64}) {  // bits of key range: ties, few digits, every digit
      std::vector<KeyedIndex> items(static_cast<size_t>(n));
      uint64_t base = rng();
      for (int64_t i = 0; i < n; ++i) {
        uint64_t r = spread == 64 ? rng() : spread == 0 ? 0 : rng() % (uint64_t{1} << spread);
        items[i] = KeyedIndex{spread == 64 ? r : base / 2 + r, i};
      }
      std::vector<KeyedIndex> want = items;
      std::stable_sort(want.begin(), want.end(),
                       [](const KeyedIndex& a, const KeyedIndex& b) { return a.key < b.key; });
      for (int64_t parts = 1; parts <= 4; ++parts) {
        SCOPED_TRACE("n " + std::to_string(n) + " spread " + std::to_string(spread) + " parts " +
                     std::to_string(parts));
        std::vector<KeyedIndex> got = items;
        UninitVector<KeyedIndex> scratch;
        RadixSortByKey(got.data(), n, scratch, parts);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(got[i].key, want[i].key) << i;
          ASSERT_EQ(got[i].index, want[i].index) << i;
        }
      }
    }
  }
}

TEST(SortParallelTest, PackedRadixSortIsStableForEveryPartCount) {
  std::mt19937_64 rng(9);
  for (int64_t n : kLengths) {
    const int index_bits = kernels::sorting::BitWidth(static_cast<uint64_t>(n - 1));
    for (int key_bits : {0, 3, 16, 64 - index_bits}) {
      std::vector<uint64_t> keys(static_cast<size_t>(n)), values(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        keys[i] = key_bits == 0 ? 0 : rng() >> (64 - key_bits);
        values[i] = (keys[i] << index_bits) | static_cast<uint64_t>(i);
      }
      std::vector<int64_t> want = Iota(n);
      std::stable_sort(want.begin(), want.end(),
                       [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
      for (int64_t parts = 1; parts <= 4; ++parts) {
        SCOPED_TRACE("n " + std::to_string(n) + " key bits " + std::to_string(key_bits) +
                     " parts " + std::to_string(parts));
        std::vector<uint64_t> got = values;
        UninitVector<uint64_t> scratch;
        RadixSortPacked(got.data(), n, scratch, parts, index_bits, key_bits);
        const uint64_t mask = (uint64_t{1} << index_bits) - 1;
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(static_cast<int64_t>(got[i] & mask), want[i]);
      }
    }
  }
}

TEST(SortParallelTest, WideIntegerKeysTakeThePairRadixSort) {
  // s64 keys over the whole range: key and index do not fit one uint64 together.
  std::mt19937_64 rng(5);
  const int64_t n = 50000;
  std::vector<int64_t> keys(static_cast<size_t>(n));
  for (int64_t& k : keys) k = static_cast<int64_t>(rng()) >> (rng() % 2 ? 0 : 40);
  for (int64_t i = 0; i < n; i += 7) keys[i] = keys[i / 2];  // ties
  for (const char* dir : {"LT", "GT"}) {
    OpBuilder b("stablehlo.sort");
    b.Operand(DType::kS64, {n});
    b.Result(DType::kS64, {n});
    b.Int("dimension", 0);
    b.Region({DType::kS64, DType::kS64}, [&](const std::vector<ir::ValueId>& args, ir::Block& blk) {
      ir::ValueId r = b.NewValue(DType::kPred);
      ir::Op cmp = MakeOp("stablehlo.compare", {args[0], args[1]}, {r});
      cmp.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
      cmp.attrs.push_back({"compare_type", ir::Attr::Enum("SIGNED")});
      blk.ops.push_back(cmp);
      blk.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
    });
    FakeLowerContext ctx(b);
    auto out = LowerAndRun(Sort(), ctx, {MakeArray(DType::kS64, {n}, keys)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    std::vector<int64_t> want = keys;
    if (std::string(dir) == "LT") {
      std::sort(want.begin(), want.end());
    } else {
      std::sort(want.begin(), want.end(), std::greater<int64_t>());
    }
    EXPECT_EQ(ToVector<int64_t>((*out)[0]), want) << dir;
  }
}

// sort((keys f32, payload s32), dimension) with `compare <dir>(a, b), <type>` on the keys.
void BuildSort(OpBuilder& b, const std::vector<int64_t>& dims, int64_t dimension, const char* dir,
               const char* type) {
  b.Operand(DType::kF32, dims);
  b.Operand(DType::kS32, dims);
  b.Result(DType::kF32, dims);
  b.Result(DType::kS32, dims);
  b.Int("dimension", dimension);
  b.Bool("is_stable", true);
  b.Region({DType::kF32, DType::kF32, DType::kS32, DType::kS32},
           [&](const std::vector<ir::ValueId>& args, ir::Block& block) {
             ir::ValueId r = b.NewValue(DType::kPred);
             ir::Op cmp = MakeOp("stablehlo.compare", {args[0], args[1]}, {r});
             cmp.attrs.push_back({"comparison_direction", ir::Attr::Enum(dir)});
             cmp.attrs.push_back({"compare_type", ir::Attr::Enum(type)});
             block.ops.push_back(cmp);
             block.ops.push_back(MakeOp("stablehlo.return", {r}, {}));
           });
}

int32_t TotalKey(float x) {
  int32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits < 0 ? bits ^ 0x7fffffff : bits;
}

TEST(SortParallelTest, LongSlicesMatchTheSerialSortWithPayload) {
  // [2, 40000] sorted along 1 (two slices, each split when the pool has more threads than
  // slices) and [40000] along 0 (one slice, split).
  for (auto [dims, dimension] : {std::pair{std::vector<int64_t>{40000}, int64_t{0}},
                                 std::pair{std::vector<int64_t>{2, 40000}, int64_t{1}},
                                 std::pair{std::vector<int64_t>{40000, 2}, int64_t{0}}}) {
    for (const char* dir : {"LT", "GT"}) {
      for (const char* type : {"TOTALORDER", "FLOAT"}) {
        SCOPED_TRACE(std::string(dir) + " " + type + " rank " + std::to_string(dims.size()) +
                     " dim " + std::to_string(dimension));
        int64_t total = 1;
        for (int64_t d : dims) total *= d;
        std::vector<float> keys = TieHeavyFloats(total, 11);
        std::vector<int32_t> payload(static_cast<size_t>(total));
        std::iota(payload.begin(), payload.end(), 0);
        OpBuilder b("stablehlo.sort");
        BuildSort(b, dims, dimension, dir, type);
        FakeLowerContext ctx(b);
        auto out = LowerAndRun(
            Sort(), ctx,
            {MakeArray(DType::kF32, dims, keys), MakeArray(DType::kS32, dims, payload)});
        ASSERT_TRUE(out.ok()) << out.status().ToString();
        EXPECT_EQ(ctx.compile_region_calls, 0);
        std::vector<float> got_keys = ToVector<float>((*out)[0]);
        std::vector<int32_t> got = ToVector<int32_t>((*out)[1]);
        // Reference: the serial merge sort (one part) on each slice with the region's predicate.
        bool gt = std::string(dir) == "GT", total_order = std::string(type) == "TOTALORDER";
        int64_t length = dims[static_cast<size_t>(dimension)];
        int64_t inner = dimension == 0 && dims.size() == 2 ? dims[1] : 1;
        int64_t slices = total / length;
        for (int64_t s = 0; s < slices; ++s) {
          int64_t base = (s / inner) * length * inner + s % inner;
          auto at = [&](int64_t k) { return keys[static_cast<size_t>(base + k * inner)]; };
          auto less = [&](int64_t x, int64_t y) {
            float a = at(x), c = at(y);
            if (total_order) return gt ? TotalKey(a) > TotalKey(c) : TotalKey(a) < TotalKey(c);
            return gt ? a > c : a < c;
          };
          std::vector<int64_t> perm = Iota(length), scratch;
          std::vector<decltype(less)> one(1, less);
          StableSortIndices(perm.data(), length, scratch, one);
          for (int64_t k = 0; k < length; ++k) {
            size_t pos = static_cast<size_t>(base + k * inner);
            ASSERT_EQ(got[pos], base + perm[k] * inner) << "slice " << s << " position " << k;
            uint32_t want_bits, got_bits;
            float w = at(perm[k]);
            std::memcpy(&want_bits, &w, 4);
            std::memcpy(&got_bits, &got_keys[pos], 4);
            ASSERT_EQ(got_bits, want_bits);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace kiln::testing
