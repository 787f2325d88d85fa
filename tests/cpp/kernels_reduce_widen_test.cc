// Column reductions of widened bf16/f16 codes (kernels/reduce_widen.cc) against ReduceFast over the
// f32 array a convert makes of the same codes: the same bits, on random shapes and axis sets whose
// inner axis is kept or that reduce the last axis with outer ones, every reducer, codes with
// infinities, NaNs and signed zeros; and the shapes it declines (rows alone, a single reduced
// row, other types).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/float16.h"
#include "kernels/reduce_fast.h"
#include "kernels_test_util.h"

namespace kiln::testing {
namespace {

using ir::DType;
using kernels::ReducerKind;
using kernels::reduce::AnalyzeReduce;
using kernels::reduce::ReduceGeometry;

// Random 16-bit codes: mostly ordinary values, some infinities, NaNs and zeros of both signs.
std::vector<uint16_t> RandomCodes(size_t n, bool bf16, std::mt19937& rng) {
  std::uniform_int_distribution<int> kind(0, 40);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<uint16_t> codes(n);
  const uint16_t inf = bf16 ? 0x7f80 : 0x7c00, nan = bf16 ? 0x7fc1 : 0x7e01;
  for (uint16_t& c : codes) {
    const int k = kind(rng);
    if (k == 0) {
      c = inf;
    } else if (k == 1) {
      c = static_cast<uint16_t>(inf | 0x8000);
    } else if (k == 2) {
      c = nan;
    } else if (k == 3) {
      c = 0x8000;
    } else {
      const float v = value(rng);
      c = bf16 ? kernels::FloatToBf16Bits(v) : kernels::FloatToHalfBits(v);
    }
  }
  return codes;
}

// segments: the last axis reduced too, rows of 32 to 2,100 elements (ReduceSegmentRows' leaves of
// one or several rows; 2,100 is past kLeaf, which the kernel declines).
template <ReducerKind K>
void CheckKind(DType narrow, uint32_t seed, bool specials, bool segments = false) {
  std::mt19937 rng(seed);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const bool bf16 = narrow == DType::kBF16;
  int checked = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const int rank = pick(2, 4);
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d) dims.push_back(pick(1, rank == 4 ? 12 : 40));
    if (trial % 5 == 0) dims[0] = 300;       // long columns: blocks of kRowBlock rows
    if (trial % 10 == 0) dims.back() = 150;  // strips of 64 columns and a tail
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    std::vector<int64_t> out_dims;
    for (int d = 0; d < rank - 1; ++d) reduced[static_cast<size_t>(d)] = pick(0, 1) == 1;
    if (segments) {  // [reduced, kept, (reduced,) reduced rows]
      const int lengths[] = {32, 33, 65, 100, 127, 700, 2048, 2100};
      dims = {pick(2, 9), pick(2, 9), lengths[pick(0, 7)]};
      if (trial % 5 == 0) dims = {60, 3, lengths[pick(0, 4)]};  // several leaves per output
      reduced = {true, false, true};
      if (trial % 4 == 1) {
        dims.insert(dims.begin() + 2, pick(2, 5));
        reduced.insert(reduced.begin() + 2, true);
      }
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) out_dims.push_back(dims[d]);
    }
    const ReduceGeometry g = AnalyzeReduce(dims, reduced);
    std::vector<ir::Type> types = {ir::Type::Tensor(DType::kF32, dims),
                                   ir::Type::Tensor(DType::kF32, {})};
    auto kernel = kernels::reduce::WideningColumnReduce(K, narrow, g, types);
    if ((g.inner_reduced || g.outer_reduced < 2) && !kernels::reduce::UsesSegmentRows<float>(g)) {
      EXPECT_EQ(kernel, nullptr);
      continue;
    }
    ASSERT_NE(kernel, nullptr);
    SCOPED_TRACE("dims " + ::testing::PrintToString(dims) + " reduced " +
                 ::testing::PrintToString(reduced));
    int64_t n = 1, out_n = 1;
    for (int64_t d : dims) n *= d;
    for (int64_t d : out_dims) out_n *= d;
    std::vector<uint16_t> codes;
    if (specials) {
      codes = RandomCodes(static_cast<size_t>(n), bf16, rng);
    } else {
      // Finite values only, so sums and products keep their rounding differences visible.
      std::vector<float> v = RandomFloats(static_cast<size_t>(n), seed + trial, -2.0f, 2.0f);
      for (float f : v)
        codes.push_back(bf16 ? kernels::FloatToBf16Bits(f) : kernels::FloatToHalfBits(f));
    }
    std::vector<float> wide(codes.size());
    for (size_t i = 0; i < codes.size(); ++i) {
      wide[i] = bf16 ? kernels::Bf16BitsToFloat(codes[i]) : kernels::HalfBitsToFloat(codes[i]);
    }
    const float init = K == ReducerKind::kMultiply ? 1.0f : 0.25f;
    std::vector<float> want(static_cast<size_t>(out_n));
    kernels::reduce::ReduceFast<K, float>(g, wide.data(), init, want.data());

    OpBuilder b("stablehlo.reduce");
    b.Operand(narrow, dims);
    b.Operand(DType::kF32, {});
    b.Result(DType::kF32, out_dims);
    auto out = RunKernel(*kernel, b.module(), b.op(),
                         {MakeArray(narrow, dims, codes), Scalar(DType::kF32, init)});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    const std::vector<float> got = ToVector<float>((*out)[0]);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      // Bit for bit; a NaN as any NaN (which of two NaN operands an add returns may differ
      // between two correct operand orders: docs/engine.md).
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << "at " << i;
      } else {
        EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "at " << i;
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

TEST(ReduceWidenTest, SameBitsAsReducingTheConvertedArray) {
  for (DType narrow : {DType::kBF16, DType::kF16}) {
    for (bool specials : {false, true}) {
      SCOPED_TRACE(std::string(ir::DTypeName(narrow)) + (specials ? " with specials" : ""));
      CheckKind<ReducerKind::kAdd>(narrow, 11, specials);
      CheckKind<ReducerKind::kMultiply>(narrow, 12, specials);
      CheckKind<ReducerKind::kMaximum>(narrow, 13, specials);
      CheckKind<ReducerKind::kMinimum>(narrow, 14, specials);
    }
  }
}

TEST(ReduceWidenTest, LastAndOuterAxesSameBitsAsReducingTheConvertedArray) {
  for (DType narrow : {DType::kBF16, DType::kF16}) {
    for (bool specials : {false, true}) {
      SCOPED_TRACE(std::string(ir::DTypeName(narrow)) + (specials ? " with specials" : ""));
      CheckKind<ReducerKind::kAdd>(narrow, 21, specials, true);
      CheckKind<ReducerKind::kMultiply>(narrow, 22, specials, true);
      CheckKind<ReducerKind::kMaximum>(narrow, 23, specials, true);
      CheckKind<ReducerKind::kMinimum>(narrow, 24, specials, true);
    }
  }
}

TEST(ReduceWidenTest, DeclinesOtherReducersAndTypes) {
  const ReduceGeometry g = AnalyzeReduce({8, 5}, {true, false});
  std::vector<ir::Type> types = {ir::Type::Tensor(DType::kF32, {8, 5}),
                                 ir::Type::Tensor(DType::kF32, {})};
  EXPECT_NE(kernels::reduce::WideningColumnReduce(ReducerKind::kAdd, DType::kBF16, g, types),
            nullptr);
  EXPECT_EQ(kernels::reduce::WideningColumnReduce(ReducerKind::kAdd, DType::kF32, g, types),
            nullptr);
  EXPECT_EQ(kernels::reduce::WideningColumnReduce(ReducerKind::kAnd, DType::kBF16, g, types),
            nullptr);
  const ReduceGeometry rows = AnalyzeReduce({8, 5}, {false, true});
  EXPECT_EQ(kernels::reduce::WideningColumnReduce(ReducerKind::kAdd, DType::kBF16, rows, types),
            nullptr);
}

}  // namespace
}  // namespace kiln::testing
