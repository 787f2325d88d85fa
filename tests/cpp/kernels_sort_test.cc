// stablehlo.sort: JAX's comparators, stability, key types and the general region path.
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

lower::LowerFn Sort() { return FindLowering(&kernels::RegisterIndexingOps, "stablehlo.sort"); }

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
    // Explicit copies: capturing a structured binding needs clang 16 (C++20 allows it).
    auto build = [&, dir = dir, hoisted = hoisted](OpBuilder& b) {
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
